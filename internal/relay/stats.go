package relay

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stats is what the relay is doing now, for a person (mcpflow status).
type Stats struct {
	// State is "starting" (the first server is not up yet, its build
	// running or not begun), "running",
	// "restarting", "crashed" (the server exited on its own and none runs),
	// "down" (no server runs: a failed build or start) or "stopped" (Serve
	// returned).
	State    string
	Gen      int       // the current (or last) child's generation, from 1; 0 before the first
	Pid      int       // the running child's process id; 0 when none runs
	Started  time.Time // when the running child started; zero when none runs
	Restarts int       // children started after the first
	Crashes  int       // times a child exited on its own
	Served   uint64    // tools/call requests answered (by the server or by the relay)
	InFlight int       // tools/call requests waiting for an answer, held ones included
	// Tools is how many tools the server lists (the relay's own not
	// counted), as of its last tools/list; ToolsKnown is false until one
	// was seen.
	Tools      int
	ToolsKnown bool
	Client     ClientStats
}

// ClientStats is the client as its messages describe it.
type ClientStats struct {
	Name     string // clientInfo.name; "" until the client said
	Version  string // clientInfo.version
	Protocol string // the protocol revision it asked for
	Era      string // "legacy" | "modern"; "" until decided
}

// relayStats holds the counters Stats reports that the relay's state does
// not already hold. Its mutex is a leaf: it may be taken with sw.mu held,
// never the reverse.
type relayStats struct {
	mu         sync.Mutex
	served     uint64
	crashes    int
	crashed    bool // the last child exited on its own
	tools      int
	toolsKnown bool
	toolsPage  int // tools on the earlier pages of a paginated tools/list
}

// answered notes a child's answer to a client request of this kind.
func (s *relayStats) answered(k kind, result []byte) {
	switch k {
	case kindToolsList:
		s.toolsListed(result)
	case kindToolsCall:
		s.callServed()
	}
}

// callServed counts a tools/call answered.
func (s *relayStats) callServed() {
	s.mu.Lock()
	s.served++
	s.mu.Unlock()
}

// event notes what an Event says, as it is posted.
func (s *relayStats) event(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Kind {
	case Starting:
		s.crashed = false
	case Crashed:
		s.crashes++
		s.crashed = true
	case Up:
		if r := ev.Restart; r != nil && (r.Tools.Known || len(r.Tools.Current) > 0) {
			s.tools, s.toolsKnown, s.toolsPage = len(r.Tools.Current), true, 0
		}
	}
}

// toolsListed counts the tools of one page of a child's tools/list
// result; the last page (no nextCursor) sets the count.
func (s *relayStats) toolsListed(result []byte) {
	var page struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor"`
	}
	if json.Unmarshal(result, &page) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if page.NextCursor != "" {
		s.toolsPage += len(page.Tools)
		return
	}
	s.tools, s.toolsKnown, s.toolsPage = s.toolsPage+len(page.Tools), true, 0
}

// Stats reports what the relay is doing now. It is safe to call at any
// time, from any goroutine, also before Serve and after it returns.
func (r *Relay) Stats() Stats {
	sw := r.sw
	sw.mu.Lock()
	defer sw.mu.Unlock()
	st := Stats{Gen: sw.gen}
	if p := sw.latestPort(); p != nil {
		st.Client = p.client
	}
	if sw.gen > 1 {
		st.Restarts = sw.gen - 1
	}
	if c := sw.child; c != nil && !c.exited() {
		st.Pid, st.Started = c.pid, c.started
	}
	for _, p := range sw.ids.pending {
		if p.kind == kindToolsCall {
			st.InFlight++
		}
	}
	st.InFlight += len(sw.recompiles)
	for _, q := range sw.held.q {
		if q.env.Method == "tools/call" {
			st.InFlight++
		}
	}
	s := &sw.stats
	s.mu.Lock()
	st.Served, st.Crashes, st.Tools, st.ToolsKnown = s.served, s.crashes, s.tools, s.toolsKnown
	crashed := s.crashed
	s.mu.Unlock()
	switch sw.state {
	case stateStarting:
		st.State = "starting"
	case stateUp:
		st.State = "running"
	case stateRestarting:
		st.State = "restarting"
	case stateDown:
		switch {
		case crashed:
			st.State = "crashed"
		case sw.gen == 0 && !sw.health.lastBuildFailed:
			st.State = "starting" // the first build outlasted StartupGrace
		default:
			st.State = "down"
		}
	case stateClosed:
		st.State = "stopped"
	}
	return st
}

// clientOf reads the client's name and protocol from a request that
// decides era e: the initialize request (legacy) or the request's _meta
// (modern).
func clientOf(env wire.Envelope, e era) ClientStats {
	var cs ClientStats
	type info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	switch e {
	case eraLegacy:
		cs.Era = "legacy"
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
			ClientInfo      info   `json:"clientInfo"`
		}
		_ = json.Unmarshal(env.Params, &p)
		cs.Name, cs.Version, cs.Protocol = p.ClientInfo.Name, p.ClientInfo.Version, p.ProtocolVersion
	case eraModern:
		cs.Era = "modern"
		var m map[string]json.RawMessage
		_ = json.Unmarshal(jsonscan.Member(env.Params, "_meta"), &m)
		var in info
		_ = json.Unmarshal(m[mcp.MetaKeyClientInfo], &in)
		_ = json.Unmarshal(m[mcp.MetaKeyProtocolVersion], &cs.Protocol)
		cs.Name, cs.Version = in.Name, in.Version
	}
	return cs
}
