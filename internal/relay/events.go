package relay

import (
	"sync"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// EventKind says what happened to the child.
type EventKind int

const (
	// Starting: a new child process was started (Gen, Pid).
	Starting EventKind = iota + 1
	// Up: a child answered its handshake and serves (Gen, Pid, Restart).
	Up
	// RestartFailed: a child did not come up (Gen, Pid if it started,
	// Report, Restart).
	RestartFailed
	// Crashed: a child exited on its own (Gen, Pid; Report is the exit
	// status and the tail of its stderr).
	Crashed
	// BuildFailed: a build failed (Report holds the compiler errors).
	BuildFailed
	// Stopped: a child exited because the relay stopped it, for a restart
	// or at shutdown (Gen, Pid).
	Stopped
)

func (k EventKind) String() string {
	switch k {
	case Starting:
		return "starting"
	case Up:
		return "up"
	case RestartFailed:
		return "restart-failed"
	case Crashed:
		return "crashed"
	case BuildFailed:
		return "build-failed"
	case Stopped:
		return "stopped"
	}
	return "unknown"
}

// Event is what Config.OnEvent receives.
type Event struct {
	Kind    EventKind
	Gen     int             // the child's generation, from 1; 0 for BuildFailed
	Pid     int             // the child's process id, 0 if none
	Report  string          // Crashed, RestartFailed, BuildFailed: what a person reads
	Restart *result.Restart // Up, RestartFailed: what the restart did
}

// eventQueue delivers events to one callback in the order they were
// posted, from a goroutine of its own, so that the callback never runs
// with a relay lock held and never holds up the relay.
type eventQueue struct {
	fn  func(Event)
	tap func(Event) // told of each event as it is posted; nil = none

	mu      sync.Mutex
	cond    *sync.Cond
	q       []Event
	running bool
	closed  bool
	done    chan struct{}
}

func newEventQueue(fn func(Event)) *eventQueue {
	e := &eventQueue{fn: fn, done: make(chan struct{})}
	e.cond = sync.NewCond(&e.mu)
	return e
}

// post queues ev; with no callback it does nothing.
func (e *eventQueue) post(ev Event) {
	if e.tap != nil {
		e.tap(ev) // Stats: at once, in the poster's goroutine
	}
	if e.fn == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.q = append(e.q, ev)
	if !e.running {
		e.running = true
		go e.run()
	}
	e.cond.Signal()
}

func (e *eventQueue) run() {
	defer close(e.done)
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		for len(e.q) == 0 && !e.closed {
			e.cond.Wait()
		}
		if len(e.q) == 0 {
			return
		}
		ev := e.q[0]
		e.q[0] = Event{}
		e.q = e.q[1:]
		e.mu.Unlock()
		e.fn(ev)
		e.mu.Lock()
	}
}

// close delivers what is queued, then stops; it returns once the callback
// has returned for the last time.
func (e *eventQueue) close() {
	e.mu.Lock()
	e.closed = true
	running := e.running
	e.cond.Broadcast()
	e.mu.Unlock()
	if running {
		<-e.done
	}
}
