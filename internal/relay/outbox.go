package relay

import (
	"sync"
)

// outbox is an ordered queue of messages to one peer: a stdio child's
// stdin, or a port's client.
//
// Senders never block on the peer: send only queues, so the relay never
// holds its lock across a write that could wait on a peer that is itself
// waiting on the relay. Whoever holds the outbox's write token writes.
//
// Two kinds of writers take the token. The outbox's own goroutine (run)
// writes what other goroutines queue. On the hot path, the goroutine that
// read a message from one peer and queued it for the other brackets its
// work with beginInline/endInline: while inline, send does not wake run,
// and endInline, called after the relay's lock is released, writes the
// queue itself. That saves a goroutine hand-off per message, and gives
// the same back-pressure as a plain io.Copy relay: a reader that cannot
// write waits, holding no lock.
//
// The queue is bounded: an inline writer that finds more than maxQueued
// bytes queued (another writer holds the token and its peer is slow)
// waits until the queue is below that before it returns, so the reader
// behind it stops reading its own peer. Messages other goroutines queue
// (the relay's own answers, list_changed) are few and never wait.
type outbox struct {
	mu      sync.Mutex
	cond    *sync.Cond
	q       []item // queued: q[head:]
	head    int
	bytes   int // queued bytes
	closed  bool
	err     error
	writing bool // the write token is taken
	inline  int  // goroutines between beginInline and endInline
	roomers int  // inline writers waiting for room (endInline)
	started bool // run is running
	done    chan struct{}

	// write writes one message to the peer; flush, when set, is called
	// once the queue is empty (a buffered writer's).
	write func(item) error
	flush func() error
	// sent, when set, sees every message sent (Config.Traffic); set it
	// before the first send.
	sent func(msg []byte)
}

// item is one queued message and the request it belongs to (rel, see
// wire.Client).
type item struct{ msg, rel []byte }

// maxQueued bounds what an inline writer leaves queued behind it.
const maxQueued = 4 << 20

func newOutbox(write func(item) error, flush func() error) *outbox {
	o := &outbox{done: make(chan struct{}), write: write, flush: flush}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// send queues msg (no trailing newline). It reports false once the outbox
// is closed or its writer failed.
func (o *outbox) send(msg, rel []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.err != nil {
		return false
	}
	if o.sent != nil {
		o.sent(msg)
	}
	if o.head > 0 && o.head >= o.queued() {
		// As many slots written as queued: move the queue to the front of
		// the array. A steady flow (the queue drained before each push)
		// then reuses one array, and a backlog that never drains does not
		// keep the slots of what it wrote. A move copies no more messages
		// than were written since the last one: O(1) per message.
		n := copy(o.q, o.q[o.head:])
		clear(o.q[n:])
		o.q, o.head = o.q[:n], 0
	}
	o.q = append(o.q, item{msg, rel})
	o.bytes += len(msg)
	if o.inline == 0 {
		o.cond.Signal()
	}
	return true
}

// beginInline announces that the caller will call endInline soon, and
// write what is queued until then itself.
func (o *outbox) beginInline() {
	o.mu.Lock()
	o.inline++
	o.mu.Unlock()
}

// endInline writes the queue from the calling goroutine, unless another
// writer holds the token (it writes everything queued before it lets go);
// it then waits while more than maxQueued bytes are queued. It must be
// called without the relay's lock held: it may block on the peer.
func (o *outbox) endInline() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inline--
	switch {
	case o.queued() == 0 || o.err != nil:
	case !o.started: // run has not started: let it write
		o.cond.Signal()
	case !o.writing:
		o.drainLocked()
	}
	for o.bytes > maxQueued && o.err == nil && !o.closed {
		o.roomers++
		o.cond.Wait()
		o.roomers--
	}
}

// drainLocked takes the token and writes until the queue is empty. o.mu is
// held on entry and exit, and released while writing.
func (o *outbox) drainLocked() {
	o.writing = true
	for o.err == nil {
		if o.queued() == 0 {
			if o.flush == nil {
				break
			}
			o.mu.Unlock()
			err := o.flush()
			o.mu.Lock()
			o.fail(err)
			if o.queued() == 0 {
				break
			}
			continue
		}
		it := o.q[o.head]
		o.q[o.head] = item{}
		o.head++
		o.mu.Unlock()
		err := o.write(it)
		o.mu.Lock()
		o.bytes -= len(it.msg)
		o.fail(err)
	}
	o.writing = false
	// The queue is empty or the writer failed. Wake those who wait for
	// that: an inline writer waiting for room, run when it must stop
	// (closing, failed). Waking run for an empty queue would cost a
	// context switch per message for nothing.
	if o.roomers > 0 || o.closed || o.err != nil {
		o.cond.Broadcast()
	}
}

// queued is the number of queued messages. o.mu is held.
func (o *outbox) queued() int { return len(o.q) - o.head }

func (o *outbox) fail(err error) {
	if err != nil && o.err == nil {
		o.err = err
		o.q, o.head, o.bytes = nil, 0, 0
	}
}

// close lets the writers finish what is queued, then stops run.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Broadcast()
	o.mu.Unlock()
}

// drop empties the queue and stops every writer after its current
// message: what is queued is never written.
func (o *outbox) drop() {
	o.mu.Lock()
	o.closed = true
	o.q, o.head, o.bytes = nil, 0, 0
	o.cond.Broadcast()
	o.mu.Unlock()
}

// run writes what other goroutines queue, until close. closeW, if set, is
// called at the end (to close a child's stdin).
func (o *outbox) run(closeW func()) {
	defer close(o.done)
	if closeW != nil {
		defer closeW()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = true
	for {
		for !o.closed && (o.queued() == 0 || o.writing || o.inline > 0) && o.err == nil {
			o.cond.Wait()
		}
		if o.err != nil {
			return
		}
		if o.writing {
			o.cond.Wait() // closing: wait for the inline writer to let go
			continue
		}
		if o.queued() == 0 && o.closed {
			return
		}
		o.drainLocked()
	}
}
