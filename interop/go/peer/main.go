package peer

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// Config describes the frisbee-go version a binary is built against.
type Config struct {
	// Name is "v0.10.2" or "v0.11.0".
	Name string
	// ErrTooLarge is frisbee's ContentLengthExceeded (nil in v0.10, which has no limit).
	ErrTooLarge error
}

const usage = `usage:
  %[1]s server [--addr 127.0.0.1:0]
      serves EchoService; prints "LISTENING <addr>" first and serves until stdin closes
  %[1]s client --addr ADDR --scenario NAME
      scenarios: %[2]s, idle, mismatch, upload-early, all (everything but the last three)
`

// Main runs the command line.
func Main(cfg Config) {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, usage, os.Args[0], strings.Join(scenarioNames(), ", "))
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on (server) or connect to (client)")
	scenario := fs.String("scenario", "all", "client scenario")
	timeout := fs.Duration("timeout", 60*time.Second, "client: fail if the scenario takes longer")
	_ = fs.Parse(os.Args[2:])
	switch os.Args[1] {
	case "server":
		if err := runServer(*addr); err != nil {
			fmt.Fprintf(os.Stderr, "server (frisbee-go %s): %v\n", cfg.Name, err)
			os.Exit(1)
		}
	case "client":
		done := make(chan error, 1)
		go func() { done <- runScenario(cfg, *addr, *scenario) }()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintf(os.Stderr, "FAIL scenario %s (frisbee-go %s): %v\n", *scenario, cfg.Name, err)
				os.Exit(1)
			}
			fmt.Printf("PASS %s (frisbee-go %s)\n", *scenario, cfg.Name)
		case <-time.After(*timeout):
			fmt.Fprintf(os.Stderr, "FAIL scenario %s (frisbee-go %s): timed out after %s\n", *scenario, cfg.Name, *timeout)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, usage, os.Args[0], strings.Join(scenarioNames(), ", "))
		os.Exit(2)
	}
}

func runServer(addr string) error {
	srv, err := NewServer()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "LISTENING %s\n", ln.Addr())
	if err = out.Flush(); err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.StartWithListener(ln) }()
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-stdinClosed:
		shut := make(chan error, 1)
		go func() { shut <- srv.Shutdown() }()
		select {
		case err = <-shut:
			return err
		case <-time.After(3 * time.Second):
			return nil // do not hang the test harness on a stuck handler
		}
	case err = <-served:
		return err
	}
}
