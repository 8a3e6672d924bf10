package wire

import (
	"errors"
	"sync"
	"time"
)

// Outbox is an ordered, bounded queue of messages to one peer (a client,
// a child's stdin, an SDK peer in memory): the one queue toward a peer in
// mcpflow.
//
// Senders never block on the peer: Send only queues, so no lock of the
// sender's is held across a write that could wait on a peer that is
// itself waiting on mcpflow. Whoever holds the outbox's write token
// writes. Two kinds of writers take it: the outbox's own goroutine (Run)
// writes what other goroutines queue; and on the hot path the goroutine
// that read a message from one peer and queued it for the other brackets
// its work with BeginInline and EndInline: while inline, Send does not
// wake Run, and EndInline, called once the sender's locks are released,
// writes the queue itself. That saves a goroutine hand-off per message
// and gives the back-pressure of a plain copy loop: a reader that cannot
// write waits, holding no lock.
//
// Bounds: an inline writer that finds more than Soft bytes queued waits
// until there are fewer before EndInline returns, so the reader behind it
// stops reading its own peer. A peer that lets more than Hard bytes pile
// up (it reads nothing while others keep sending), or takes no message
// for Stall while some wait, fails the outbox: what is queued is
// dropped, Send reports false and OnFail is called once, so that the
// owner ends that peer's session.
type Outbox struct {
	// Write writes one message; Flush, when set, is called once the queue
	// is empty (a buffered writer's). Sent, when set, sees every message
	// as it is written, on the writer's goroutine (a traffic capture).
	Write func(msg, rel []byte) error
	Flush func() error
	Sent  func(msg []byte)
	// Hard and Stall are bounds (0 = DefaultHard, DefaultStall; Stall < 0:
	// a peer busy for long is not stalled, as a child that computes before
	// it reads its input again); OnFail is told why the outbox failed.
	Hard   int
	Stall  time.Duration
	OnFail func(err error)

	once    sync.Once
	mu      sync.Mutex
	cond    *sync.Cond
	q       backlog
	closed  bool
	err     error
	writing bool // the write token is taken
	inline  int  // goroutines between BeginInline and EndInline
	roomers int  // inline writers waiting for room
	started bool // Run is running
	since   time.Time
	done    chan struct{}
	timer   *time.Timer
}

type item struct {
	msg, rel []byte
	n        int // its size as written (Size)
}

// backlog is an Outbox's queue: q[head:] waits to be written; bytes
// counts it, and the message being written.
type backlog struct {
	q     []item
	head  int
	bytes int
}

func (b *backlog) len() int { return len(b.q) - b.head }

func (b *backlog) push(it item) {
	if b.head > 0 && b.head >= b.len() {
		// As many slots written as queued: move the queue to the front,
		// so a steady flow reuses one array and a backlog does not keep
		// the slots of what it wrote.
		n := copy(b.q, b.q[b.head:])
		clear(b.q[n:])
		b.q, b.head = b.q[:n], 0
	}
	b.q = append(b.q, it)
	b.bytes += it.n
}

// discard empties the queue, letting go of what its messages hold.
func (b *backlog) discard() {
	for _, it := range b.q[b.head:] {
		Discard(it.msg)
	}
	*b = backlog{}
}

func (b *backlog) pop() item {
	it := b.q[b.head]
	b.q[b.head] = item{}
	b.head++
	return it
}

// The bounds of an Outbox (Soft: for every one).
const (
	Soft         = 4 << 20
	DefaultHard  = 2*DefaultMaxMessage + 32<<20
	DefaultStall = 30 * time.Second
)

// ErrStalled fails an outbox whose peer takes nothing.
var ErrStalled = errors.New("the peer took nothing of what waits for it")

func (o *Outbox) init() {
	o.once.Do(func() {
		o.cond = sync.NewCond(&o.mu)
		o.done = make(chan struct{})
		if o.Hard <= 0 {
			o.Hard = DefaultHard
		}
		if o.Stall == 0 {
			o.Stall = DefaultStall
		}
	})
}

// Send queues msg (and rel, the id of the request it belongs to). It
// reports false once the outbox is closed or failed.
func (o *Outbox) Send(msg, rel []byte) bool {
	o.init()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.err != nil {
		return false
	}
	if o.q.len() == 0 && o.Stall > 0 {
		o.since = time.Now()
		o.armStall()
	}
	o.q.push(item{msg, rel, Size(msg)})
	if o.q.bytes > o.Hard && o.q.len() > 1 {
		o.fail(ErrStalled)
		return false
	}
	if o.inline == 0 {
		o.cond.Signal()
	}
	return true
}

// armStall fails the outbox if nothing is written for Stall while
// something waits. o.mu is held.
func (o *Outbox) armStall() {
	if o.timer != nil {
		o.timer.Reset(o.Stall)
		return
	}
	o.timer = time.AfterFunc(o.Stall, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.q.len() == 0 || o.err != nil || o.closed {
			return
		}
		if left := o.Stall - time.Since(o.since); left > 0 {
			o.timer.Reset(left)
		} else {
			o.fail(ErrStalled)
		}
	})
}

// BeginInline announces that the caller will call EndInline soon, and
// write what is queued until then itself.
func (o *Outbox) BeginInline() {
	o.init()
	o.mu.Lock()
	o.inline++
	o.mu.Unlock()
}

// EndInline writes the queue from the calling goroutine, unless another
// writer holds the token (it writes what is queued before it lets go);
// then it waits while more than Soft bytes are queued. It must be called
// with no lock of the caller's held: it may block on the peer.
func (o *Outbox) EndInline() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inline--
	switch {
	case o.q.len() == 0 || o.err != nil:
	case !o.started:
		o.cond.Signal()
	case !o.writing:
		o.drainLocked()
	}
	for o.q.bytes > Soft && o.err == nil && !o.closed {
		o.roomers++
		o.cond.Wait()
		o.roomers--
	}
}

// drainLocked takes the token and writes until the queue is empty. o.mu
// is held on entry and exit, and released while writing.
func (o *Outbox) drainLocked() {
	o.writing = true
	for o.err == nil {
		if o.q.len() == 0 {
			if o.Flush == nil {
				break
			}
			o.mu.Unlock()
			err := o.Flush()
			o.mu.Lock()
			o.fail(err)
			if o.q.len() == 0 {
				break
			}
			continue
		}
		it := o.q.pop()
		o.mu.Unlock()
		if o.Sent != nil {
			o.Sent(it.msg)
		}
		err := o.Write(it.msg, it.rel)
		o.mu.Lock()
		o.q.bytes -= it.n
		o.since = time.Now()
		o.fail(err)
	}
	o.writing = false
	if o.roomers > 0 || o.closed || o.err != nil {
		o.cond.Broadcast()
	}
}

// fail records the first error: the queue is dropped. o.mu is held.
func (o *Outbox) fail(err error) {
	if err == nil || o.err != nil {
		return
	}
	o.err = err
	o.q.discard()
	o.cond.Broadcast()
	if o.OnFail != nil {
		go o.OnFail(err)
	}
}

// Close lets the writers finish what is queued, then stops Run.
func (o *Outbox) Close() { o.close(false) }

// Drop empties the queue and stops every writer after its current
// message: what is queued is never written.
func (o *Outbox) Drop() { o.close(true) }

func (o *Outbox) close(drop bool) {
	o.init()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if drop {
		o.q.discard()
	}
	o.cond.Broadcast()
}

// Done is closed once Run has returned.
func (o *Outbox) Done() <-chan struct{} {
	o.init()
	return o.done
}

// Run writes what other goroutines queue, until Close (what is queued is
// written first), Drop or a failure; then closeW, when set, is called
// (to close a child's stdin).
func (o *Outbox) Run(closeW func()) {
	o.init()
	defer close(o.done)
	if closeW != nil {
		defer closeW()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	defer func() {
		if o.timer != nil {
			o.timer.Stop()
		}
	}()
	o.started = true
	for {
		for !o.closed && (o.q.len() == 0 || o.writing || o.inline > 0) && o.err == nil {
			o.cond.Wait()
		}
		if o.err != nil {
			return
		}
		if o.writing {
			o.cond.Wait() // closing: wait for the inline writer to let go
			continue
		}
		if o.q.len() == 0 && o.closed {
			return
		}
		o.drainLocked()
	}
}

// WaitClosed waits for ch to be closed, at most d; it reports whether it was.
func WaitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
