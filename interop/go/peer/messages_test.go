package peer

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopholelabs/polyglot/v2"
)

type capture struct {
	HeaderSize int `json:"header_size"`
	Scenarios  []struct {
		Scenario string `json:"scenario"`
		Packets  []struct {
			Dir        string `json:"dir"`
			ID         uint16 `json:"id"`
			Op         uint16 `json:"op"`
			Len        int    `json:"len"`
			ContentHex string `json:"content_hex"`
		} `json:"packets"`
	} `json:"scenarios"`
}

// messageFor picks the message type of a captured packet: unary by op and direction, stream
// packets by the method their stream was opened with.
func messageFor(op uint16, toServer bool) (Message, error) {
	switch {
	case op == OpEcho && toServer, op == OpEchoStream && toServer:
		return &Request{}, nil
	case op == OpTesty && toServer, op == OpSearch && toServer:
		return &SearchResponse{}, nil
	case op == OpUpload && toServer:
		return &Data{}, nil
	case op == OpTesty:
		return &StockPricesWrapper{}, nil
	case op == OpEcho, op == OpEchoStream, op == OpSearch, op == OpUpload:
		return &Response{}, nil
	}
	return nil, fmt.Errorf("no message type for op %d", op)
}

// TestCapturesRoundTrip decodes every message the real Go fRPC peers put on the wire and
// re-encodes it with these hand-written codecs: the bytes must come out identical.
func TestCapturesRoundTrip(t *testing.T) {
	for _, file := range []string{"capture-frisbee-v0.11.json", "capture-frisbee-v0.10.json"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "vectors", file))
			if err != nil {
				t.Fatal(err)
			}
			var c capture
			if err = json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			checked, opens := 0, 0
			for _, sc := range c.Scenarios {
				streams := map[uint16]uint16{} // stream id -> method
				for i, p := range sc.Packets {
					where := fmt.Sprintf("%s, packet %d (%s id %d op %d)", sc.Scenario, i, p.Dir, p.ID, p.Op)
					content, err := hex.DecodeString(p.ContentHex)
					if err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					if len(content) != p.Len {
						t.Fatalf("%s: content is %d bytes, header says %d", where, len(content), p.Len)
					}
					if p.Op < 2 || len(content) == 0 {
						continue // PING / PONG
					}
					op := p.Op
					if p.Op == 2 {
						method, known := streams[p.ID]
						if !known {
							m, err := polyglot.Decoder(content).Uint16()
							if err != nil {
								t.Fatalf("%s: stream open: %v", where, err)
							}
							re := polyglot.NewBuffer()
							polyglot.Encoder(re).Uint16(m)
							if !bytes.Equal(re.Bytes(), content) {
								t.Fatalf("%s: stream open re-encodes as %x, want %x", where, re.Bytes(), content)
							}
							streams[p.ID] = m
							opens++
							continue
						}
						op = method
					}
					msg, err := messageFor(op, p.Dir == "C->S")
					if err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					if err = msg.Decode(content); err != nil {
						t.Fatalf("%s: decode %x: %v", where, content, err)
					}
					out := polyglot.NewBuffer()
					msg.Encode(out)
					if !bytes.Equal(out.Bytes(), content) {
						t.Fatalf("%s: %#v re-encodes as\n  %x\nwant\n  %x", where, msg, out.Bytes(), content)
					}
					checked++
				}
			}
			if checked < 25 || opens != 4 {
				t.Fatalf("only %d messages and %d stream opens checked", checked, opens)
			}
			t.Logf("%d messages and %d stream opens round-trip byte for byte", checked, opens)
		})
	}
}

// TestDecodedCaptureContents checks the decoded values of a few captured messages (wire.md §4.8).
func TestDecodedCaptureContents(t *testing.T) {
	mustHex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := &Request{}
	if err := req.Decode(mustHex("0800050a0268690a01")); err != nil || req.Message != "hi" || req.Corpus != RequestWEB {
		t.Fatalf("Request: %+v, %v", req, err)
	}
	res := &Response{}
	if err := res.Decode(mustHex("0800050a0268690800050a01640a01")); err != nil || res.Message != "hi" ||
		res.Test == nil || res.Test.Message != "d" || res.Test.Checker != TestMonkey {
		t.Fatalf("Response: %+v, %v", res, err)
	}
	sr := &SearchResponse{}
	if err := sr.Decode(mustHex("080001030a010800050a0175050a0001050a0001030a0001050a01050a016101050a00")); err != nil ||
		len(sr.Results) != 1 || sr.Results[0].Url != "u" || len(sr.Snippets) != 1 || sr.Snippets[0] != "a" {
		t.Fatalf("SearchResponse: %+v, %v", sr, err)
	}
	boom := &StockPricesWrapper{}
	if err := boom.Decode(mustHex("06050a04626f6f6d")); err != nil || boom.Err() == nil || boom.Err().Error() != "boom" {
		t.Fatalf("error reply: %+v, %v", boom, err)
	}
	eof := &Response{}
	if err := eof.Decode(mustHex("06050a03454f46")); err != nil || !isEOF(eof.Err()) {
		t.Fatalf("EOF: %+v, %v", eof, err)
	}
	// Encoding a message carrying an error writes the Error alone.
	out := polyglot.NewBuffer()
	WithError(errEOF).Encode(out)
	if hex.EncodeToString(out.Bytes()) != "06050a03454f46" {
		t.Fatalf("EOF encodes as %x", out.Bytes())
	}
	// StockPrices maps (not in the captures): a nil map is written as an empty map.
	out.Reset()
	(&StockPricesWrapper{SPrices: []*StockPrices{{}, {Prices: map[string]float64{"a": 1.5}}}}).Encode(out)
	want := "0800" + "01030a02" + "0800" + "02050f0a00" + "0800" + "02050f0a01" + "050a0161" + "0f3ff8000000000000"
	if hex.EncodeToString(out.Bytes()) != want {
		t.Fatalf("StockPricesWrapper encodes as %x, want %s", out.Bytes(), want)
	}
	back := &StockPricesWrapper{}
	if err := back.Decode(out.Bytes()); err != nil || len(back.SPrices) != 2 || back.SPrices[1].Prices["a"] != 1.5 {
		t.Fatalf("StockPricesWrapper decodes as %+v, %v", back, err)
	}
}

// negativeZeroPrices is capture.StockPrices{prices: {"x": -0.0}} in polyglot, as frpc writes
// it (codegen-tests/tests/values.rs checks frpc's side against the same bytes).
const negativeZeroPrices = "080002050f0a01050a01780f8000000000000000"

// TestNegativeZeroSurvives: Go's polyglot writes -0.0 as frpc does, and reads it back negative.
func TestNegativeZeroSurvives(t *testing.T) {
	b := polyglot.NewBuffer()
	(&StockPrices{Prices: map[string]float64{"x": math.Copysign(0, -1)}}).Encode(b)
	if got := hex.EncodeToString(b.Bytes()); got != negativeZeroPrices {
		t.Fatalf("Go writes %s, frpc %s", got, negativeZeroPrices)
	}
	raw, _ := hex.DecodeString(negativeZeroPrices)
	var back StockPrices
	if err := back.Decode(raw); err != nil {
		t.Fatal(err)
	}
	if v := back.Prices["x"]; v != 0 || !math.Signbit(v) {
		t.Fatalf("read back %v (sign bit %v)", v, math.Signbit(v))
	}
}
