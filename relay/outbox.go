package relay

import (
	"bufio"
	"io"
	"sync"
)

// outbox is an ordered, unbounded queue of messages to one peer, drained by
// its own goroutine. Senders never block on a slow peer, so the relay never
// holds its lock across a write that could wait on a peer that is itself
// waiting on the relay.
type outbox struct {
	mu     sync.Mutex
	cond   *sync.Cond
	q      [][]byte
	closed bool
	err    error
	done   chan struct{}
}

func newOutbox() *outbox {
	o := &outbox{done: make(chan struct{})}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// send queues msg (no trailing newline). It reports false once the outbox
// is closed or its writer failed.
func (o *outbox) send(msg []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.err != nil {
		return false
	}
	o.q = append(o.q, msg)
	o.cond.Signal()
	return true
}

// close lets the writer finish what is queued, then stops it.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Signal()
	o.mu.Unlock()
}

// run writes queued messages to w, one line each, until close. closeW, if
// set, is called at the end (to close a child's stdin).
func (o *outbox) run(w io.Writer, closeW func()) {
	defer close(o.done)
	if closeW != nil {
		defer closeW()
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for {
		o.mu.Lock()
		for len(o.q) == 0 && !o.closed {
			o.cond.Wait()
		}
		if len(o.q) == 0 {
			o.mu.Unlock()
			return
		}
		msg := o.q[0]
		o.q[0] = nil
		o.q = o.q[1:]
		more := len(o.q) > 0
		o.mu.Unlock()

		_, err := bw.Write(msg)
		if err == nil {
			err = bw.WriteByte('\n')
		}
		if err == nil && !more {
			err = bw.Flush()
		}
		if err != nil {
			o.mu.Lock()
			o.err = err
			o.q = nil
			o.mu.Unlock()
			return
		}
	}
}
