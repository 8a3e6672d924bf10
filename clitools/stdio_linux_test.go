//go:build linux

package clitools

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	var errno syscall.Errno
	raw.Control(func(fd uintptr) {
		flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	})
	if errno != 0 {
		t.Fatal(errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// Serve on a blocking stdin pipe (as a client starts mcpflow) reads it
// through the runtime's poller while it serves, and leaves it blocking
// again when the client goes.
func TestServeBlockingPipe(t *testing.T) {
	forEra(t, func(t *testing.T, era string) {
		s := New(Config{Schema: []string{exampleBin, "schema", "--json"}})
		if _, err := s.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		sr, cw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cr, sw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer sr.Close()
		defer cr.Close()
		defer sw.Close()
		sr.Fd() // makes it blocking, as an inherited stdin is
		if nonblocking(t, sr) {
			t.Fatal("the test's stdin is not blocking")
		}
		served := make(chan error, 1)
		go func() { served <- s.Serve(context.Background(), sr, sw) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
		if err != nil || structured(t, res)["sum"] != 5.0 {
			t.Fatal(err, text(res))
		}
		if !nonblocking(t, sr) {
			t.Error("stdin is read blocking while serving")
		}
		cs.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return when the client went")
		}
		if nonblocking(t, sr) {
			t.Error("stdin left non-blocking")
		}
	})
}

// BenchmarkServePipeRoundTrip times a ping over a blocking stdin pipe, read
// through the poller or blocking (pollStdin false): the read-side hand-off
// every request pays.
func BenchmarkServePipeRoundTrip(b *testing.B) {
	for _, poll := range []bool{false, true} {
		b.Run(map[bool]string{false: "blocking", true: "poller"}[poll], func(b *testing.B) {
			pollStdin = poll
			defer func() { pollStdin = true }()
			s := New(Config{})
			sr, cw, _ := os.Pipe()
			cr, sw, _ := os.Pipe()
			defer sr.Close()
			defer cr.Close()
			defer sw.Close()
			sr.Fd()
			served := make(chan error, 1)
			go func() { served <- s.Serve(context.Background(), sr, sw) }()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
			if err != nil {
				b.Fatal(err)
			}
			var ds []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := cs.Ping(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			b.ReportMetric(med(ds), "p50-µs")
			cs.Close()
			<-served
		})
	}
}
