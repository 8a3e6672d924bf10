package relay

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestOutboxOrderUnderBacklog: messages pushed while the writer is behind
// come out whole, once, in order.
func TestOutboxOrderUnderBacklog(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	o := lineOutbox(pw)
	go o.run(func() { pw.Close() })
	const n = 20000
	go func() {
		for i := range n {
			o.send([]byte(fmt.Sprintf(`{"n":%d}`, i)), nil)
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
	t.Parallel()
	g := &gateWriter{gate: make(chan struct{})}
	o := lineOutbox(g)
	go o.run(nil)
	msg := bytes.Repeat([]byte("x"), 100<<10) // larger than the writer's buffer: every message reaches g
	const behind, more = 100, 5000
	for range behind {
		o.send(msg, nil)
	}
	for k := range more {
		// Let the writer through until it has written one more message,
		// then queue one more: it stays ~behind messages behind.
		for g.n.Load() < int64(k+1)*int64(len(msg)+1) {
			g.gate <- struct{}{}
		}
		o.send(msg, nil)
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

// TestOutboxInlineAndQueuedOrder: goroutines that write inline
// (beginInline, send under a shared lock, endInline after it) and
// goroutines that only queue (send, written by run) interleave; every
// message comes out once, whole, in the order the sends happened, while a
// slow reader keeps the writers contending for the token.
func TestOutboxInlineAndQueuedOrder(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	o := lineOutbox(pw)
	go o.run(func() { pw.Close() })

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
					o.beginInline()
				}
				lock.Lock()
				o.send([]byte(fmt.Sprintf(`{"n":%d}`, seq)), nil)
				seq++
				lock.Unlock()
				if inline {
					o.endInline()
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		o.close()
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
	case <-o.done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after close")
	}
}

// TestOutboxEndInlineWrites: a message sent inline is written by
// endInline itself, before it returns, when no other writer holds the
// token: the hot path needs no hand-off to run.
func TestOutboxEndInlineWrites(t *testing.T) {
	t.Parallel()
	var buf testkit.Buffer
	o := lineOutbox(&buf)
	go o.run(nil)
	defer o.close()
	// Wait for run to own the writer, so endInline may write.
	testkit.Eventually(t, 5*time.Second, "run to start", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.started
	})
	for i := range 100 {
		o.beginInline()
		o.send([]byte(fmt.Sprintf(`{"n":%d}`, i)), nil)
		o.endInline()
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
func lineOutbox(w io.Writer) *outbox {
	bw := bufio.NewWriterSize(w, 64<<10)
	return newOutbox(func(it item) error {
		if _, err := bw.Write(it.msg); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}, bw.Flush)
}
