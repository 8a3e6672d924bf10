package relay

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// EventKind says what happened to the child.
type EventKind int

const (
	// Starting: a new child process was started (Gen, Pid).
	Starting EventKind = iota + 1
	// Up: a child answered its handshake and serves (Gen, Pid, Restart).
	Up
	// RestartFailed: a child did not come up (Gen, Pid, Report, Restart).
	RestartFailed
	// Crashed: a child exited on its own (Gen, Pid; Report: exit, stderr).
	Crashed
)

// Event is what Config.OnEvent receives.
type Event struct {
	Kind    EventKind
	Gen     int             // the child's generation, from 1
	Pid     int             // the child's process id, 0 if none
	Report  string          // Crashed, RestartFailed: what a person reads
	Restart *result.Restart // Up, RestartFailed: what the restart did
}

// eventQueue delivers events in order from a goroutine holding no lock.
type eventQueue struct {
	fn  func(Event)
	tap func(Event) // told of each event as it is posted; nil = none

	mu      sync.Mutex
	q       []Event
	running bool
	closed  bool
	wg      sync.WaitGroup
}

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

// close delivers what is queued, then stops.
func (e *eventQueue) close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.wg.Wait()
}

// Stats is what the relay is doing now, for a person (mcpflow status).
type Stats struct {
	// State is "starting" (the first server is not up yet), "running",
	// "restarting", "crashed" (the server exited on its own and none runs),
	// "down" (a failed build or start) or "stopped" (closed).
	State      string
	Gen        int             // the last process's generation: processes started, from 1; 0 before the first
	Pid        int             // the most recently active session's child (an HTTP server's process); 0 when none runs
	Started    time.Time       // when that process started; zero when none runs
	Restarts   int             // restarts (a build's, or after a crash) after the first start
	Crashes    int             // times a child exited on its own
	Served     uint64          // tools/call requests answered (by the server or by mcpflow)
	InFlight   int             // tools/call requests waiting for an answer, held ones included
	Tools      int             // the server's tools (not mcpflow's) as of the last list read
	ToolsKnown bool            // false until one was
	Client     wire.ClientInfo // the most recently active session's client
}

// counters are the figures of Stats that the relay's state does not hold.
type counters struct {
	starts     atomic.Int64 // restarts completed, the first start included
	served     atomic.Uint64
	crashes    atomic.Int64
	crashed    atomic.Bool // the last child exited on its own
	junkWarned atomic.Bool // junk on a child's stdout was warned of (then: debug)
}

func (c *counters) event(ev Event) {
	switch ev.Kind {
	case Starting, Up:
		c.crashed.Store(false)
	case Crashed:
		c.crashes.Add(1)
		c.crashed.Store(true)
	}
}

// Stats reports what the relay is doing now, from any goroutine.
func (r *Relay) Stats() Stats {
	var st Stats
	var newest time.Time
	down := false // the most recently active session is answered alone
	for _, s := range r.openSessions() {
		s.mu.Lock()
		if s.seen.After(newest) || newest.IsZero() {
			newest, st.Client, down = s.seen, s.st.Client, s.phase == phaseDown
			if c := s.child; c != nil && !c.p.exited() {
				st.Pid, st.Started = c.p.pid, c.p.started
			}
		}
		for _, pd := range s.ids.pending {
			if pd.kind == kindToolsCall {
				st.InFlight++
			}
		}
		for _, q := range s.held.q {
			if q.env.Method == "tools/call" {
				st.InFlight++
			}
		}
		st.InFlight += len(s.recompiles.running)
		s.mu.Unlock()
	}
	r.mu.Lock()
	if srv := r.server; srv != nil && !srv.exited() {
		st.Pid, st.Started = srv.pid, srv.started
	}
	h := r.health
	r.mu.Unlock()
	st.Gen = int(r.gen.Load())
	r.known.mu.Lock()
	st.Tools, st.ToolsKnown = r.known.count, r.known.first != nil
	r.known.mu.Unlock()
	st.Served, st.Crashes, st.Restarts = r.stats.served.Load(), int(r.stats.crashes.Load()), int(max(r.stats.starts.Load()-1, 0))
	st.State = map[state]string{stateStarting: "starting", stateUp: "running", stateRestarting: "restarting", stateClosed: "stopped"}[h.state]
	if h.state == stateDown || h.state == stateUp && down {
		switch {
		case r.stats.crashed.Load():
			st.State = "crashed"
		case st.Gen == 0 && !h.lastBuildFailed:
			st.State = "starting" // the first build outlasted the client's grace
		default:
			st.State = "down"
		}
	}
	return st
}
