package relay

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// Stats is what the relay is doing now, for a person (mcpflow status).
type Stats struct {
	// State is "starting" (the first server is not up yet, its build
	// running or not begun), "running", "restarting", "crashed" (the
	// server exited on its own and none runs), "down" (no server runs: a
	// failed build or start) or "stopped" (closed).
	State    string
	Gen      int       // the last process's generation: processes started, from 1; 0 before the first
	Pid      int       // the most recently active session's child (an HTTP server's process); 0 when none runs
	Started  time.Time // when that process started; zero when none runs
	Restarts int       // restarts (a build's, or after a crash) after the first start
	Crashes  int       // times a child exited on its own
	Served   uint64    // tools/call requests answered (by the server or by mcpflow)
	InFlight int       // tools/call requests waiting for an answer, held ones included
	// Tools is how many tools the server lists (mcpflow's own not
	// counted), as of the last list read; ToolsKnown is false until one
	// was.
	Tools      int
	ToolsKnown bool
	Client     wire.ClientInfo // the most recently active session's client
}

// counters are the figures Stats reports that the relay's state does not
// hold.
type counters struct {
	mu      sync.Mutex
	starts  int // restarts completed, the first start included
	served  uint64
	crashes int
	crashed bool // the last child exited on its own
	// junkWarned: a line of a child's stdout that is no message was
	// warned of; the next ones are logged at debug level.
	junkWarned atomic.Bool
}

func (c *counters) started() {
	c.mu.Lock()
	c.starts++
	c.mu.Unlock()
}

func (c *counters) callServed() {
	c.mu.Lock()
	c.served++
	c.mu.Unlock()
}

// event notes what an Event says, as it is posted.
func (c *counters) event(ev Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Kind {
	case Starting, Up:
		c.crashed = false
	case Crashed:
		c.crashes++
		c.crashed = true
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
	r.stats.mu.Lock()
	st.Served, st.Crashes, st.Restarts = r.stats.served, r.stats.crashes, max(r.stats.starts-1, 0)
	crashed := r.stats.crashed
	r.stats.mu.Unlock()
	st.State = map[state]string{stateStarting: "starting", stateUp: "running", stateRestarting: "restarting", stateClosed: "stopped"}[h.state]
	if h.state == stateDown || h.state == stateUp && down {
		switch {
		case crashed:
			st.State = "crashed"
		case st.Gen == 0 && !h.lastBuildFailed:
			st.State = "starting" // the first build outlasted the client's grace
		default:
			st.State = "down"
		}
	}
	return st
}
