// fRPC's conventions (/work/shared/spec/wire.md §3) implemented by hand on top of frisbee-go,
// as frpc-go's generated code does: unary methods are packet operations (request and response
// share Id and Operation); streaming methods open a frisbee stream with `09 <varint method>`,
// send one message per STREAM packet, end with the Error "EOF", and report handler errors as an
// Error message followed by EOF.

package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/loopholelabs/frisbee-go"
	"github.com/loopholelabs/frisbee-go/pkg/packet"
	"github.com/loopholelabs/polyglot/v2"
)

// Method numbers of capture.proto (one counter for the file, from 10, in declaration order).
const (
	OpEcho       = uint16(10)
	OpEchoStream = uint16(11)
	OpTesty      = uint16(12)
	OpSearch     = uint16(13)
	OpUpload     = uint16(14)
)

// errEOF is what ends a stream: polyglot Error "EOF".
var errEOF = polyglot.Error(io.EOF.Error())

// isEOF reports whether a message's error is the end-of-stream marker.
func isEOF(err error) bool {
	return err != nil && err.Error() == io.EOF.Error()
}

// ------------------------------------------------------------------------------ client side

// Client is a hand-rolled fRPC client of EchoService.
type Client struct {
	fc       *frisbee.Client
	mu       sync.Mutex
	inflight map[uint16]map[uint16]chan []byte
	counters map[uint16]*atomic.Uint32
	streamID atomic.Uint32
}

// Dial connects to addr.
func Dial(addr string) (*Client, error) {
	c := &Client{
		inflight: map[uint16]map[uint16]chan []byte{},
		counters: map[uint16]*atomic.Uint32{},
	}
	table := frisbee.HandlerTable{}
	for _, op := range []uint16{OpEcho, OpTesty} {
		c.inflight[op] = map[uint16]chan []byte{}
		c.counters[op] = new(atomic.Uint32)
		table[op] = c.onResponse
	}
	fc, err := frisbee.NewClient(table, context.Background())
	if err != nil {
		return nil, err
	}
	// Like frpc-go: a do-nothing stream handler, so packets of our own streams are not dropped.
	if err = fc.Connect(addr, func(*frisbee.Stream) {}); err != nil {
		return nil, err
	}
	c.fc = fc
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.fc.Close() }

func (c *Client) onResponse(_ context.Context, p *packet.Packet) (*packet.Packet, frisbee.Action) {
	c.mu.Lock()
	ch := c.inflight[p.Metadata.Operation][p.Metadata.Id]
	delete(c.inflight[p.Metadata.Operation], p.Metadata.Id)
	c.mu.Unlock()
	if ch != nil {
		// The packet goes back to a pool after the handler returns: copy the content.
		ch <- append([]byte(nil), p.Content.Bytes()...)
	}
	return nil, frisbee.NONE
}

// Call runs one unary call: the response's error, if it carries one, is returned as the error.
func (c *Client) Call(ctx context.Context, op uint16, req, res Message) error {
	id := uint16(c.counters[op].Add(1))
	ch := make(chan []byte, 1)
	c.mu.Lock()
	c.inflight[op][id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.inflight[op], id)
		c.mu.Unlock()
	}

	p := packet.Get()
	p.Metadata.Id = id
	p.Metadata.Operation = op
	req.Encode(p.Content)
	p.Metadata.ContentLength = uint32(p.Content.Len())
	err := c.fc.WritePacket(p)
	packet.Put(p)
	if err != nil {
		forget()
		return err
	}

	select {
	case b := <-ch:
		if err := res.Decode(b); err != nil {
			return fmt.Errorf("decoding response: %w", err)
		}
		return res.Err()
	case <-c.fc.CloseChannel():
		forget()
		return fmt.Errorf("connection closed (%v)", c.fc.Error())
	case <-ctx.Done():
		forget()
		return ctx.Err()
	}
}

// Echo calls EchoService.Echo.
func (c *Client) Echo(ctx context.Context, req *Request) (*Response, error) {
	res := &Response{}
	return res, c.Call(ctx, OpEcho, req, res)
}

// Testy calls EchoService.Testy.
func (c *Client) Testy(ctx context.Context, req *SearchResponse) (*StockPricesWrapper, error) {
	res := &StockPricesWrapper{}
	return res, c.Call(ctx, OpTesty, req, res)
}

// Stream is one side of an fRPC stream (client or server).
type Stream struct {
	s *frisbee.Stream
}

// OpenStream opens a stream for method, sending initial as its first message when not nil.
func (c *Client) OpenStream(method uint16, initial Message) (*Stream, error) {
	// One counter shared by the service's streaming methods; the first stream is 1.
	id := uint16(c.streamID.Add(1))
	st := &Stream{s: c.fc.Stream(id)}
	p := packet.Get()
	polyglot.Encoder(p.Content).Uint16(method)
	p.Metadata.ContentLength = uint32(p.Content.Len())
	err := st.s.WritePacket(p)
	packet.Put(p)
	if err != nil {
		return nil, err
	}
	if initial != nil {
		if err = st.Send(initial); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// Send writes one message as one STREAM packet.
func (st *Stream) Send(m Message) error {
	p := packet.Get()
	m.Encode(p.Content)
	p.Metadata.ContentLength = uint32(p.Content.Len())
	err := st.s.WritePacket(p)
	packet.Put(p)
	return err
}

// SendError writes an Error message (a handler error, or EOF).
func (st *Stream) SendError(err error) error { return st.Send(WithError(err)) }

// CloseSend ends this side of the stream (Error "EOF").
func (st *Stream) CloseSend() error { return st.SendError(errEOF) }

// Recv reads the next message into m. It returns io.EOF at end of stream. A non-EOF Error
// message is returned with a nil error and m.Err() set, like frpc-go's Recv.
func (st *Stream) Recv(m Message) error {
	p, err := st.s.ReadPacket()
	if err != nil {
		return err
	}
	defer packet.Put(p)
	if err = m.Decode(p.Content.Bytes()); err != nil {
		return fmt.Errorf("decoding stream message: %w", err)
	}
	if isEOF(m.Err()) {
		return io.EOF
	}
	return nil
}

// ------------------------------------------------------------------------------ server side

// NewServer returns a frisbee server running EchoService with the capture behaviour.
func NewServer() (*frisbee.Server, error) {
	table := frisbee.HandlerTable{
		OpEcho: unary(func() Message { return &Request{} }, func(m Message) (Message, error) {
			req := m.(*Request)
			return &Response{Message: req.Message, Test: &Data{Message: "d", Checker: TestMonkey}}, nil
		}),
		OpTesty: unary(func() Message { return &SearchResponse{} }, func(Message) (Message, error) {
			return nil, errors.New("boom")
		}),
	}
	srv, err := frisbee.NewServer(table, context.Background())
	if err != nil {
		return nil, err
	}
	if err = srv.SetStreamHandler(func(_ context.Context, s *frisbee.Stream) { serveStream(s) }); err != nil {
		return nil, err
	}
	return srv, nil
}

func unary(newReq func() Message, impl func(Message) (Message, error)) frisbee.Handler {
	return func(_ context.Context, p *packet.Packet) (*packet.Packet, frisbee.Action) {
		req := newReq()
		if err := req.Decode(p.Content.Bytes()); err != nil {
			return nil, frisbee.NONE // like frpc-go: no reply at all
		}
		res, err := impl(req)
		p.Content.Reset()
		if err != nil {
			polyglot.Encoder(p.Content).Error(err)
		} else if res == nil {
			polyglot.Encoder(p.Content).Nil()
		} else {
			res.Encode(p.Content)
		}
		p.Metadata.ContentLength = uint32(p.Content.Len())
		return p, frisbee.NONE // same Id and Operation as the request
	}
}

func serveStream(s *frisbee.Stream) {
	p, err := s.ReadPacket()
	if err != nil {
		return
	}
	method, err := polyglot.Decoder(p.Content.Bytes()).Uint16()
	packet.Put(p)
	if err != nil {
		_ = s.Close()
		return
	}
	st := &Stream{s: s}
	var handlerErr error
	switch method {
	case OpSearch:
		req := &SearchResponse{}
		_ = st.Recv(req) // a decode error is ignored, as in frpc-go
		handlerErr = search(st, req)
	case OpUpload:
		handlerErr = upload(st)
	case OpEchoStream:
		handlerErr = echoStream(st)
	default:
		return // unknown method: the stream stays open and silent
	}
	if handlerErr != nil {
		_ = st.SendError(handlerErr)
	}
	_ = st.CloseSend()
}

func search(st *Stream, req *SearchResponse) error {
	for _, s := range req.Snippets {
		if s == "fail" {
			if err := st.Send(&Response{Message: "partial"}); err != nil {
				return err
			}
			return errors.New("search failed")
		}
	}
	for _, m := range []string{"r0", "r1"} {
		if err := st.Send(&Response{Message: m}); err != nil {
			return err
		}
	}
	return nil
}

func upload(st *Stream) error {
	n := 0
	for {
		err := st.Recv(&Data{})
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		n++
	}
	// frpc-go's `return srv.CloseAndSend(resp)`: the response, then EOF; serveStream then sends
	// the second EOF real Go servers send (see the Upload capture).
	if err := st.Send(&Response{Message: fmt.Sprintf("got %d", n)}); err != nil {
		return err
	}
	return st.CloseSend()
}

func echoStream(st *Stream) error {
	for {
		req := &Request{}
		err := st.Recv(req)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err = st.Send(&Response{Message: req.Message}); err != nil {
			return err
		}
	}
}
