package wire

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOutboxOrderUnderBacklog: messages pushed while the writer is behind
// come out whole, once, in order.
func TestOutboxOrderUnderBacklog(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	o := lineOutbox(pw)
	go o.Run(func() { pw.Close() })
	const n = 20000
	go func() {
		for i := range n {
			o.Send([]byte(fmt.Sprintf(`{"n":%d}`, i)), nil)
		}
		o.Close()
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
	t.Parallel()
	g := &gateWriter{gate: make(chan struct{})}
	o := lineOutbox(g)
	go o.Run(nil)
	msg := bytes.Repeat([]byte("x"), 100<<10) // larger than the writer's buffer: every message reaches g
	const behind, more = 100, 5000
	for range behind {
		o.Send(msg, nil)
	}
	for k := range more {
		// Let the writer through until it has written one more message,
		// then queue one more: it stays ~behind messages behind.
		for g.n.Load() < int64(k+1)*int64(len(msg)+1) {
			g.gate <- struct{}{}
		}
		o.Send(msg, nil)
	}
	o.mu.Lock()
	slots, queued := cap(o.q.q), o.q.len()
	o.mu.Unlock()
	if queued == 0 || slots > 1024 {
		t.Fatalf("after %d messages with ~%d queued: %d queued, %d slots; want the written slots reused", behind+more, behind, queued, slots)
	}
	o.Close()
	go func() {
		for {
			select {
			case g.gate <- struct{}{}:
			case <-o.Done():
				return
			}
		}
	}()
	<-o.Done()
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

// TestOutboxInlineAndQueuedOrder: goroutines that write inline
// (beginInline, send under a shared lock, endInline after it) and
// goroutines that only queue (send, written by run) interleave; every
// message comes out once, whole, in the order the sends happened, while a
// slow reader keeps the writers contending for the token.
func TestOutboxInlineAndQueuedOrder(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	o := lineOutbox(pw)
	go o.Run(func() { pw.Close() })

	var lock sync.Mutex // plays the relay's lock: it orders the sends
	seq := 0
	const writers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inline := w%2 == 0
			for range each {
				if inline {
					o.BeginInline()
				}
				lock.Lock()
				o.Send([]byte(fmt.Sprintf(`{"n":%d}`, seq)), nil)
				seq++
				lock.Unlock()
				if inline {
					o.EndInline()
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		o.Close()
	}()
	sc := bufio.NewScanner(pr)
	i := 0
	for sc.Scan() {
		if want := fmt.Sprintf(`{"n":%d}`, i); sc.Text() != want {
			t.Fatalf("message %d: got %q, want %q", i, sc.Text(), want)
		}
		i++
		if i%300 == 0 {
			time.Sleep(100 * time.Microsecond) // a slow reader: writers wait on the pipe
		}
	}
	if i != writers*each {
		t.Fatalf("got %d messages, want %d", i, writers*each)
	}
	select {
	case <-o.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after close")
	}
}

// TestOutboxEndInlineWrites: a message sent inline is written by
// endInline itself, before it returns, when no other writer holds the
// token: the hot path needs no hand-off to run.
func TestOutboxEndInlineWrites(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	o := lineOutbox(&buf)
	go o.Run(nil)
	defer o.Close()
	// Wait for run to own the writer, so endInline may write.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		o.mu.Lock()
		started := o.started
		o.mu.Unlock()
		if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("run did not start")
		}
	}
	for i := range 100 {
		o.BeginInline()
		o.Send([]byte(fmt.Sprintf(`{"n":%d}`, i)), nil)
		o.EndInline()
		if want := fmt.Sprintf("{\"n\":%d}\n", i); !bytes.HasSuffix([]byte(buf.String()), []byte(want)) {
			t.Fatalf("after endInline %d the output ends with %q", i, lastN(buf.String(), 20))
		}
	}
}

func lastN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// lineOutbox is an outbox that writes each message to w as one line, as a
// stdio link's does.
func lineOutbox(w io.Writer) *Outbox {
	bw := bufio.NewWriterSize(w, 64<<10)
	o := &Outbox{Write: func(msg, _ []byte) error {
		if _, err := bw.Write(msg); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}, Flush: bw.Flush}
	o.init()
	return o
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A peer that takes nothing while more than Hard bytes pile up, or for
// Stall while something waits, fails the outbox: Send reports false and
// OnFail is told, once.
func TestOutboxBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		o    *Outbox
		n    int
	}{
		{"hard", &Outbox{Hard: 1000, Stall: -1}, 20},
		{"stall", &Outbox{Stall: 50 * time.Millisecond}, 2},
	} {
		block := make(chan struct{})
		failed := make(chan error, 2)
		o := c.o
		o.Write = func([]byte, []byte) error { <-block; return nil }
		o.OnFail = func(err error) { failed <- err }
		go o.Run(nil)
		ok := true
		for range c.n {
			ok = o.Send(make([]byte, 100), nil)
		}
		select {
		case err := <-failed:
			if err != ErrStalled {
				t.Errorf("%s: failed with %v", c.name, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the outbox did not fail", c.name)
		}
		if o.Send([]byte("x"), nil) || c.name == "hard" && ok {
			t.Errorf("%s: Send took a message after the outbox failed", c.name)
		}
		close(block)
		<-o.Done()
	}
}
