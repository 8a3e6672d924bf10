package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// handshake is what the child, or mcpflow, answered of the handshake.
type handshake struct {
	initResult    []byte // the initialize (or server/discover) result the client got, forced
	selfInit      bool   // mcpflow answered initialize itself (no child did yet)
	selfDiscover  bool   // mcpflow answered server/discover itself: the child's era is unknown
	childDiscover bool   // the current child answered server/discover
	caps          []byte // the capabilities the current child declared
	// initID: the client's first initialize, unanswered, if it may be bridged
	initID      []byte
	initDecided bool
	probing     bool // mcpflow asks the child whether it speaks 2026-07-28
}

// methodKinds are the requests the relay acts on when their answer comes.
var methodKinds = map[string]kind{"initialize": kindInitialize, "server/discover": kindDiscover,
	"tools/list": kindToolsList, "tools/call": kindToolsCall, "subscriptions/listen": kindListen}

// forward sends a client request to the session's child. s.mu is held.
func (s *Session) forward(msg []byte, env wire.Envelope) {
	c := s.child
	switch env.Method {
	case "initialize":
		if s.hs.childDiscover && c.own {
			// A Go SDK server that answered server/discover refuses initialize.
			s.r.log.Info("initialize after server/discover: starting a fresh server for the legacy handshake")
			s.hold(msg, env)
			s.phase = phaseHold
			s.r.wg.Go(func() { s.respawn(c) })
			return
		}
		s.hs.selfInit = false
	case "server/discover":
		s.hs.childDiscover = true
	}
	pd := &pending{kind: methodKinds[env.Method], gen: c.gen, method: env.Method}
	if s.r.tracing {
		pd.sent = time.Now()
	}
	if strings.HasSuffix(env.Method, "/list") {
		pd.firstPage = jsonscan.Member(env.Params, "cursor") == nil
	}
	if pd.kind == kindInitialize || pd.kind == kindDiscover {
		pd.msg = msg // answered by mcpflow should the child die first
	}
	if key := c.request(msg, env, pd); pd.msg != nil {
		c.boundHandshake(key)
	}
}

// probeFirst reports whether a 2026-07-28 client's request must wait
// while mcpflow asks a child of unknown era which it speaks (probeEra).
// s.mu is held.
func (s *Session) probeFirst(env wire.Envelope) bool {
	if s.hs.probing {
		return true
	}
	c := s.child
	if !s.modern() || env.Method == "server/discover" || c.speaks != wire.EraUnknown || !s.bridgeable() {
		return false
	}
	s.hs.probing = true
	s.r.wg.Go(c.probeEra)
	return true
}

// probeEra asks the child whether it speaks 2026-07-28: if not, the
// session goes to the era bridge.
func (c *conn) probeEra() {
	s := c.s
	s.mu.Lock()
	params := withMeta(&s.st, nil)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.r.ctx, s.r.cfg.HandshakeTimeout)
	defer cancel()
	res, err := c.call(ctx, "server/discover", params)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hs.probing = false
	if s.child == c && err != nil && c.exited() {
		return // it ended first (a restart, a crash): what waits is flushed to the next child, who is asked, or answered down
	}
	if s.child == c && (err != nil || !speaksModern(res)) {
		c.speaks = wire.EraLegacy
		s.r.log.Info("the server does not speak the 2026-07-28 era of its client: the client goes to the era bridge", "err", err)
		s.handOff(nil, nil) // what it sent waits in the hold queue
		return
	}
	if s.child == c {
		c.speaks = wire.EraModern
		s.hs.childDiscover = true
	}
	s.flush()
}

// speaksModern reports whether a server/discover result names 2026-07-28.
func speaksModern(result []byte) bool {
	var r struct{ SupportedVersions []string }
	_ = json.Unmarshal(result, &r)
	return slices.ContainsFunc(r.SupportedVersions, wire.IsModern)
}

// withMeta is params with the client's _meta, for mcpflow's own requests.
func withMeta(st *wire.State, params map[string]any) []byte {
	if params == nil {
		params = map[string]any{}
	}
	if st.Era == wire.EraModern && st.Meta != nil {
		params["_meta"] = json.RawMessage(metaTriple(st.Meta))
	}
	return mustJSON(params)
}

// ready reports whether mcpflow may send the child requests of its own:
// the session is open (legacy: initialized; 2026-07-28: the client's
// _meta is known). s.mu is held.
func (s *Session) ready() bool {
	switch s.st.Era {
	case wire.EraLegacy:
		held := s.held.has(wire.Envelope{Method: "notifications/initialized"})
		if env, err := wire.Peek(s.st.Init); err == nil && s.held.has(env) {
			held = true
		}
		return s.st.Initialized && !s.hs.selfInit && !held
	case wire.EraModern:
		return s.st.Meta != nil
	}
	return false
}

// declares reports whether capabilities caps declare the list kind.
func declares(caps []byte, kind string) bool {
	v := jsonscan.Member(caps, kind)
	return v != nil && string(v) != "null"
}

// bridged is the era bridge's session of a client; answered are the ids
// of the requests mcpflow answered before, whose answers it drops.
type bridged struct {
	wire.Session
	mu       sync.Mutex
	answered [][]byte
}

// drop reports, once, whether the client has its answer to id already.
func (b *bridged) drop(id []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.answered, func(a []byte) bool { return bytes.Equal(a, id) })
	if i >= 0 {
		b.answered = slices.Delete(b.answered, i, i+1)
	}
	return i >= 0
}

// opening is what opened session st: its initialize, or its listens.
func opening(st *wire.State) [][]byte {
	var first [][]byte
	if st.Init != nil {
		first = append(first, st.Init)
		if st.Initialized {
			first = append(first, wire.Request(nil, "notifications/initialized", nil))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(st.Listens())) {
		first = append(first, st.Listens()[id].Msg)
	}
	return first
}

// handOff gives the session to the era bridge: first, then what it held.
func (s *Session) handOff(first, answered [][]byte) {
	r, c := s.r, s.child
	s.child, s.hs.initID, s.phase = nil, nil, phaseHold
	b := &bridged{answered: answered}
	deliver := wire.ClientFunc(func(msg, rel []byte) {
		if rel == nil || !wire.IsResponse(msg) || !b.drop(rel) {
			s.out.Send(msg, rel)
		}
	})
	r.log.Info("the server speaks the other protocol era: the session is handed to the era bridge")
	r.wg.Go(func() {
		if c != nil {
			c.stop(min(r.cfg.Child.StopTimeout, shutdownStep), r.ctx)
		}
		b.Session = r.cfg.Bridge(wire.OpenerFunc(r.Open), deliver)
		for _, m := range first {
			b.Send(m)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.phase == phaseClosed {
			b.Close()
			return
		}
		s.bridge, s.phase = b, phaseUp
		s.flush()
	})
}
