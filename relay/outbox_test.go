package relay

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// TestOutboxOrderUnderBacklog: messages pushed while the writer is behind
// come out whole, once, in order.
func TestOutboxOrderUnderBacklog(t *testing.T) {
	pr, pw := io.Pipe()
	o := newOutbox()
	go o.run(pw, func() { pw.Close() })
	const n = 20000
	go func() {
		for i := range n {
			o.send([]byte(fmt.Sprintf(`{"n":%d}`, i)))
		}
		o.close()
	}()
	sc := bufio.NewScanner(pr)
	i := 0
	for sc.Scan() {
		if want := fmt.Sprintf(`{"n":%d}`, i); sc.Text() != want {
			t.Fatalf("message %d: got %q, want %q", i, sc.Text(), want)
		}
		i++
		if i%500 == 0 {
			time.Sleep(200 * time.Microsecond) // a slow reader: a backlog builds
		}
	}
	if i != n {
		t.Fatalf("got %d messages, want %d", i, n)
	}
}

// TestOutboxBacklogBounded: a queue that never drains (the writer always a
// hundred messages behind) does not keep the slots of what it wrote.
func TestOutboxBacklogBounded(t *testing.T) {
	g := &gateWriter{gate: make(chan struct{})}
	o := newOutbox()
	go o.run(g, nil)
	msg := bytes.Repeat([]byte("x"), 100<<10) // larger than the writer's buffer: every message reaches g
	const behind, more = 100, 5000
	for range behind {
		o.send(msg)
	}
	for k := range more {
		// Let the writer through until it has written one more message,
		// then queue one more: it stays ~behind messages behind.
		for g.n.Load() < int64(k+1)*int64(len(msg)+1) {
			g.gate <- struct{}{}
		}
		o.send(msg)
	}
	o.mu.Lock()
	slots, queued := cap(o.q), o.queued()
	o.mu.Unlock()
	if queued == 0 || slots > 1024 {
		t.Fatalf("after %d messages with ~%d queued: %d queued, %d slots; want the written slots reused", behind+more, behind, queued, slots)
	}
	o.close()
	go func() {
		for {
			select {
			case g.gate <- struct{}{}:
			case <-o.done:
				return
			}
		}
	}()
	<-o.done
	if got, want := g.n.Load(), int64((behind+more)*(len(msg)+1)); got != want {
		t.Fatalf("wrote %d bytes, want %d", got, want)
	}
}

// gateWriter lets one Write through per receive on gate.
type gateWriter struct {
	gate chan struct{}
	n    atomic.Int64
}

func (g *gateWriter) Write(p []byte) (int, error) {
	<-g.gate
	g.n.Add(int64(len(p)))
	return len(p), nil
}
