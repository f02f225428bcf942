package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

type scenario func(cfg Config, addr string) error

var scenarios = map[string]scenario{
	"echo":         withClient(scenarioEcho),
	"testy":        withClient(scenarioTesty),
	"search":       withClient(scenarioSearch),
	"search-fail":  withClient(scenarioSearchFail),
	"upload":       withClient(scenarioUpload),
	"upload-burst": withClient(scenarioUploadBurst),
	"echostream":   withClient(scenarioEchoStream),
	"concurrent":   withClient(scenarioConcurrent),
	"big4":         withClient(scenarioBig4),
	"big6":         scenarioBig6,
}

// Scenarios outside "all": idle takes 12 s; mismatch expects a peer with the other framing.
var extraScenarios = map[string]scenario{
	"idle":     withClient(scenarioIdle),
	"mismatch": scenarioMismatch,
	// Needs a server whose Upload answers a first message "early" at once (the Rust interop
	// server does; the Go capture server reads to the end).
	"upload-early": withClient(scenarioUploadEarly),
	// Needs a server that answers `slow-*` echoes slowly and shuts down gracefully while they
	// run (the Rust interop test does).
	"shutdown-slow": withClient(scenarioShutdownSlow),
}

func scenarioNames() []string {
	names := make([]string, 0, len(scenarios))
	for name := range scenarios {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func runScenario(cfg Config, addr, name string) error {
	if name == "all" {
		// Each scenario on its own connection, in a fixed order.
		for _, n := range []string{"echo", "testy", "search", "search-fail", "upload", "echostream", "concurrent", "big4", "big6"} {
			start := time.Now()
			if err := scenarios[n](cfg, addr); err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
			fmt.Printf("ok %s (%s)\n", n, time.Since(start).Round(time.Millisecond))
		}
		return nil
	}
	if s, ok := scenarios[name]; ok {
		return s(cfg, addr)
	}
	if s, ok := extraScenarios[name]; ok {
		return s(cfg, addr)
	}
	return fmt.Errorf("unknown scenario %q (known: %s, idle, mismatch, upload-early, all)", name, strings.Join(scenarioNames(), ", "))
}

func withClient(f func(cfg Config, c *Client) error) scenario {
	return func(cfg Config, addr string) error {
		c, err := Dial(addr)
		if err != nil {
			return fmt.Errorf("connecting to %s: %w", addr, err)
		}
		defer func() { _ = c.Close() }()
		return f(cfg, c)
	}
}

func callTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 20*time.Second)
}

func echoOnce(c *Client, msg string) error {
	ctx, cancel := callTimeout()
	defer cancel()
	res, err := c.Echo(ctx, &Request{Message: msg, Corpus: RequestWEB})
	if err != nil {
		return fmt.Errorf("Echo(%.20q): %w", msg, err)
	}
	if res.Message != msg {
		return fmt.Errorf("Echo(%.20q): got message %.20q (%d bytes)", msg, res.Message, len(res.Message))
	}
	if res.Test == nil || res.Test.Message != "d" || res.Test.Checker != TestMonkey {
		return fmt.Errorf("Echo(%.20q): got Test %+v, want {Message:d Checker:Monkey(1)}", msg, res.Test)
	}
	return nil
}

func scenarioEcho(_ Config, c *Client) error {
	for _, m := range []string{"hi", "", "héllo wörld"} {
		if err := echoOnce(c, m); err != nil {
			return err
		}
	}
	return nil
}

func scenarioTesty(_ Config, c *Client) error {
	ctx, cancel := callTimeout()
	defer cancel()
	_, err := c.Testy(ctx, &SearchResponse{
		Results:  []*SearchResponseResult{{Url: "u"}},
		Snippets: []string{"a"},
	})
	if err == nil || err.Error() != "boom" {
		return fmt.Errorf("Testy: got error %v, want \"boom\"", err)
	}
	// The connection is still usable after an error reply.
	return echoOnce(c, "after boom")
}

// recvAll reads a server stream to its end: the messages, then the non-EOF error, if any,
// the server sent before EOF.
func recvAll(st *Stream) (messages []string, streamErr error, err error) {
	for i := 0; i < 100; i++ {
		res := &Response{}
		switch err = st.Recv(res); {
		case errors.Is(err, io.EOF):
			return messages, streamErr, nil
		case err != nil:
			return messages, streamErr, err
		case res.Err() != nil:
			if streamErr != nil {
				return messages, streamErr, fmt.Errorf("second error %q after %q", res.Err(), streamErr)
			}
			streamErr = res.Err()
		case streamErr != nil:
			return messages, streamErr, fmt.Errorf("message %q after the error %q", res.Message, streamErr)
		default:
			messages = append(messages, res.Message)
		}
	}
	return messages, streamErr, errors.New("no EOF after 100 messages")
}

func expectStream(st *Stream, want []string, wantErr string) error {
	got, streamErr, err := recvAll(st)
	if err != nil {
		return fmt.Errorf("after %q: %w", got, err)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		return fmt.Errorf("got messages %q, want %q", got, want)
	}
	gotErr := ""
	if streamErr != nil {
		gotErr = streamErr.Error()
	}
	if gotErr != wantErr {
		return fmt.Errorf("got stream error %q, want %q", gotErr, wantErr)
	}
	return nil
}

func scenarioSearch(_ Config, c *Client) error {
	st, err := c.OpenStream(OpSearch, &SearchResponse{})
	if err != nil {
		return err
	}
	if err = expectStream(st, []string{"r0", "r1"}, ""); err != nil {
		return fmt.Errorf("Search: %w", err)
	}
	return nil
}

func scenarioSearchFail(_ Config, c *Client) error {
	st, err := c.OpenStream(OpSearch, &SearchResponse{Snippets: []string{"fail"}})
	if err != nil {
		return err
	}
	// Go-style: "partial", then an Error message "search failed", then EOF.
	if err = expectStream(st, []string{"partial"}, "search failed"); err != nil {
		return fmt.Errorf("Search(fail): %w", err)
	}
	return echoOnce(c, "after search failed")
}

func scenarioUpload(_ Config, c *Client) error {
	st, err := c.OpenStream(OpUpload, &Data{Message: "a"})
	if err != nil {
		return err
	}
	if err = st.Send(&Data{Message: "b", Checker: TestMonkey}); err != nil {
		return err
	}
	for i := 0; i < 8; i++ {
		if err = st.Send(&Data{Message: fmt.Sprint(i)}); err != nil {
			return err
		}
	}
	if err = st.CloseSend(); err != nil {
		return err
	}
	if err = expectStream(st, []string{"got 10"}, ""); err != nil {
		return fmt.Errorf("Upload: %w", err)
	}
	return nil
}

// scenarioUploadBurst sends 5,000 small messages as fast as Send queues them: a server that
// cannot keep up must hold the connection's reading (Go's reader blocks on a full stream
// queue), not fail the stream.
func scenarioUploadBurst(_ Config, c *Client) error {
	st, err := c.OpenStream(OpUpload, &Data{Message: "a"})
	if err != nil {
		return err
	}
	for i := 1; i < 5000; i++ {
		if err = st.Send(&Data{Message: "a"}); err != nil {
			return fmt.Errorf("Upload(burst): send %d: %w", i, err)
		}
	}
	if err = st.CloseSend(); err != nil {
		return err
	}
	if err = expectStream(st, []string{"got 5000"}, ""); err != nil {
		return fmt.Errorf("Upload(burst): %w", err)
	}
	return nil
}

func scenarioEchoStream(_ Config, c *Client) error {
	st, err := c.OpenStream(OpEchoStream, &Request{Message: "x"})
	if err != nil {
		return err
	}
	recvOne := func(want string) error {
		res := &Response{}
		if err := st.Recv(res); err != nil {
			return fmt.Errorf("EchoStream: waiting for %q: %w", want, err)
		}
		if res.Err() != nil || res.Message != want {
			return fmt.Errorf("EchoStream: got %q (error %v), want %q", res.Message, res.Err(), want)
		}
		return nil
	}
	if err = recvOne("x"); err != nil {
		return err
	}
	if err = st.Send(&Request{Message: "y"}); err != nil {
		return err
	}
	if err = recvOne("y"); err != nil {
		return err
	}
	// A burst, then the replies in order.
	var want []string
	for i := 0; i < 50; i++ {
		m := fmt.Sprintf("burst-%d", i)
		want = append(want, m)
		if err = st.Send(&Request{Message: m}); err != nil {
			return err
		}
	}
	if err = st.CloseSend(); err != nil {
		return err
	}
	if err = expectStream(st, want, ""); err != nil {
		return fmt.Errorf("EchoStream: %w", err)
	}
	return nil
}

func scenarioConcurrent(_ Config, c *Client) error {
	const n = 1000
	if failed, first := echoAtOnce(c, n, "call"); failed > 0 {
		return fmt.Errorf("%d of %d concurrent calls failed; first: %w", failed, n, first)
	}
	return nil
}

// echoAtOnce makes n echo calls at once (messages prefix-0 … prefix-(n-1)) and reports how
// many failed, and the first failure.
func echoAtOnce(c *Client, n int, prefix string) (failed int, first error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := echoOnce(c, fmt.Sprintf("%s-%d", prefix, i)); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if first == nil {
			first = err
		}
		failed++
	}
	return failed, first
}

func bigString(size int) string {
	var b strings.Builder
	b.Grow(size)
	for i := 0; b.Len() < size; i++ {
		b.WriteByte(byte('a' + i%26))
	}
	return b.String()
}

func scenarioBig4(_ Config, c *Client) error {
	if err := echoOnce(c, bigString(4<<20)); err != nil {
		return err
	}
	return echoOnce(c, "after 4 MiB")
}

// scenarioBig6 sends a 6 MiB Echo request.
//
// frisbee-go v0.11 refuses it before sending (ContentLengthExceeded) and the connection stays
// usable. frisbee-go v0.10 has no limit and sends it: the Rust server (5 MiB limit) skips the
// content and answers the call with an error naming the limit, and the connection stays usable.
func scenarioBig6(cfg Config, addr string) error {
	c, err := Dial(addr)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := callTimeout()
	defer cancel()
	_, err = c.Echo(ctx, &Request{Message: bigString(6 << 20)})
	if cfg.ErrTooLarge != nil {
		if !errors.Is(err, cfg.ErrTooLarge) {
			return fmt.Errorf("6 MiB Echo: got error %v, want %v", err, cfg.ErrTooLarge)
		}
		return echoOnce(c, "after 6 MiB refused")
	}
	if err == nil {
		return errors.New("6 MiB Echo succeeded: the peer accepted a packet over its 5 MiB limit")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("6 MiB Echo: no answer")
	}
	if !strings.Contains(err.Error(), "exceeds the limit of 5242880 bytes") {
		return fmt.Errorf("6 MiB Echo: got error %v, want one naming the 5 MiB limit", err)
	}
	fmt.Printf("6 MiB Echo over frisbee-go %s (no local limit) was answered with an error: %v\n", cfg.Name, err)
	return echoOnce(c, "same connection after 6 MiB")
}

func scenarioIdle(_ Config, c *Client) error {
	if err := echoOnce(c, "before idle"); err != nil {
		return err
	}
	time.Sleep(12 * time.Second) // the subject of the test: heartbeats keep the connection up
	return echoOnce(c, "after 12 s idle")
}

// scenarioMismatch runs against a peer with the other framing: the call must fail (the
// connection is dropped), not succeed and not hang.
func scenarioMismatch(_ Config, addr string) error {
	c, err := Dial(addr)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = c.Echo(ctx, &Request{Message: "hi"})
	switch {
	case err == nil:
		return errors.New("Echo succeeded against a peer with the other framing")
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("Echo against a peer with the other framing hung for 15 s")
	}
	fmt.Printf("refused as expected: %v\n", err)
	return nil
}

// scenarioUploadEarly client-streams to an Upload handler that replies to its first message
// before reading the rest. The late messages, EOF included, must be dropped by the server, not
// answered with a stream close: the client's sends keep working and its CloseAndRecv gets the
// reply that already arrived.
func scenarioUploadEarly(_ Config, c *Client) error {
	// As an application does it: keep sending, then CloseAndRecv. Echo round trips between the
	// sends give the server time to finish the stream while messages are still coming.
	st, err := c.OpenStream(OpUpload, &Data{Message: "early"})
	if err != nil {
		return err
	}
	for i := 0; i < 20; i++ {
		if err = st.Send(&Data{Message: fmt.Sprint(i)}); err != nil {
			return fmt.Errorf("Upload(early): send %d after the reply: %w", i, err)
		}
		if err = echoOnce(c, fmt.Sprintf("between %d", i)); err != nil {
			return err
		}
	}
	if err = st.CloseSend(); err != nil {
		return fmt.Errorf("Upload(early): CloseSend: %w", err)
	}
	if err = expectStream(st, []string{"early"}, ""); err != nil {
		return fmt.Errorf("Upload(early), CloseAndRecv: %w", err)
	}
	// Deterministic: read the reply and the server's EOF first, so every later packet is late.
	st, err = c.OpenStream(OpUpload, &Data{Message: "early"})
	if err != nil {
		return err
	}
	if err = expectStream(st, []string{"early"}, ""); err != nil {
		return fmt.Errorf("Upload(early), second stream: %w", err)
	}
	for i := 0; i < 3; i++ {
		if err = st.Send(&Data{Message: fmt.Sprint(i)}); err != nil {
			return fmt.Errorf("Upload(early): late send %d: %w", i, err)
		}
	}
	if err = st.CloseSend(); err != nil {
		return fmt.Errorf("Upload(early): late CloseSend: %w", err)
	}
	// The server handles a connection's packets in order: once this reply is here, a stream
	// close it sent for the late packets would have closed our stream already.
	if err = echoOnce(c, "after the late packets"); err != nil {
		return err
	}
	if err = st.Send(&Data{Message: "still open"}); err != nil {
		return fmt.Errorf("Upload(early): the server closed the finished stream: %w", err)
	}
	return nil
}

// scenarioShutdownSlow makes five calls at once that the server answers slowly while it shuts
// down gracefully: every reply must arrive. This client waits for a reply and for the
// connection's end at once, so a server that closes right behind its last replies loses them.
func scenarioShutdownSlow(_ Config, c *Client) error {
	const n = 5
	if failed, first := echoAtOnce(c, n, "slow"); failed > 0 {
		return fmt.Errorf("%d of %d replies lost at the server's shutdown; first: %w", failed, n, first)
	}
	return nil
}
