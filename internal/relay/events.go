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
	if k < Starting || k > Stopped {
		return "unknown"
	}
	return [...]string{"starting", "up", "restart-failed", "crashed", "build-failed", "stopped"}[k-Starting]
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
// posted, from a goroutine of its own (one at a time), so that the
// callback never runs with a relay lock held and never holds up the
// relay.
type eventQueue struct {
	fn  func(Event)
	tap func(Event) // told of each event as it is posted; nil = none

	mu      sync.Mutex
	q       []Event
	running bool
	closed  bool
	wg      sync.WaitGroup
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
		e.wg.Go(e.run)
	}
}

func (e *eventQueue) run() {
	for {
		e.mu.Lock()
		if len(e.q) == 0 {
			e.running = false
			e.mu.Unlock()
			return
		}
		ev := e.q[0]
		e.q = e.q[1:]
		e.mu.Unlock()
		e.fn(ev)
	}
}

// close delivers what is queued, then stops; it returns once the callback
// has returned for the last time.
func (e *eventQueue) close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.wg.Wait()
}
