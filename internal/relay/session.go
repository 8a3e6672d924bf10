package relay

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is the relay's session with the child, as it must replay it to
// each new child: the protocol era, the legacy handshake and state
// (initialize, initialized, logging level, resource subscriptions) and
// the modern listen streams. The clients (ports) share it: the first
// client's initialize opens it, the others are answered from it; every
// client's setLevel, subscriptions and listens go into it. What differs
// between the eras is in two strategies, legacyEra and modernEra. It has
// no lock: its owner's lock guards it.
type session struct {
	era        era
	initReq    []byte // the initialize request that opened the session, as sent
	initResult []byte // the child's initialize (or discover) result, forced
	selfInit   bool   // the relay answered initialize itself (no child did yet)
	clientInit bool   // notifications/initialized is part of the session
	childCaps  caps   // what the current child declared
	childInit  bool   // the current child was sent initialize
	// childDiscover: the current child answered (or is answering)
	// server/discover.
	childDiscover bool
	// selfDiscover: the relay answered server/discover itself (from the
	// record, or for mcpflow), so the next child's era is unknown.
	selfDiscover bool
	// childInitResult and childDiscoverResult are the child's answers to
	// the handshake, as the client got them, for the record.
	childInitResult     []byte
	childDiscoverResult []byte
	// firstGrace: the grace for the first server is armed.
	firstGrace  bool
	lastMeta    []byte // the _meta triple of the latest modern request of any client
	lastMetaRaw []byte // that request's whole _meta, to skip recomputing it
	logLevel    []byte // params of the last logging/setLevel
	subs        map[string][]byte
	listens     map[string]*listen // by the id the child knows
}

type era int

const (
	eraUnknown era = iota
	eraLegacy
	eraModern
)

type caps struct{ prompts, resources bool }

// listen is an open subscriptions/listen request (modern era).
type listen struct {
	msg         []byte // as the child gets it
	orig        []byte // as the client sent it
	port        *Port  // the client's; nil for one the relay holds itself
	clientID    []byte // the client's id when the child knows another; nil: the same
	tools       bool
	prompts     bool
	resources   bool
	awaitingAck bool // re-sent to a new child: its ack is consumed
}

// clientMsg is the listen request as the client sent it.
func (l *listen) clientMsg(key string) []byte {
	if l.orig != nil {
		return l.orig
	}
	return l.msg
}

// replyID is the client's id of the listen the child knows as key.
func (l *listen) replyID(key string) []byte {
	if l.clientID != nil {
		return l.clientID
	}
	return []byte(key)
}

// restore puts the client's own listen id in a notification's subscription
// id, where the child wrote the one it knows.
func (l *listen) restore(msg []byte) []byte {
	if l.clientID == nil {
		return msg
	}
	env, err := wire.Peek(msg)
	if err != nil {
		return msg
	}
	ms, me, ok := jsonscan.MemberSpan(env.Params, "_meta")
	if !ok {
		return msg
	}
	vs, ve, ok := jsonscan.MemberSpan(env.Params[ms:me], mcp.MetaKeySubscriptionID)
	if !ok {
		return msg
	}
	at := env.ParStart + ms
	return wire.Splice(msg, at+vs, at+ve, l.clientID)
}

func newSession() session {
	return session{subs: map[string][]byte{}, listens: map[string]*listen{}}
}

// eraStrategy is the era-specific part of bringing a child into the
// session and telling a client about a new child.
type eraStrategy interface {
	// ready reports whether the session lets the relay send requests of
	// its own to child c (c may be nil).
	ready(s *session, c *child) bool
	// established reports whether port p's session existed before a new
	// child, so that it is told its lists changed.
	established(s *session, p *Port) bool
	// replay returns the messages that bring child gen to the session's
	// state, after its handshake, registering in rt what they expect back.
	replay(s *session, rt *router, gen int) [][]byte
	// listChanged returns the notifications that tell port p's client the
	// lists of these kinds changed, each with the id of the request it
	// belongs to (its listen stream's; nil: none).
	listChanged(s *session, p *Port, kinds []string) []item
}

// strategy returns the era's strategy; nil while the era is unknown.
func (s *session) strategy() eraStrategy { return strategyOf(s.era) }

// strategyOf is era e's strategy; nil for eraUnknown. A client is told of
// changes in its own era's way, whatever the session with the child.
func strategyOf(e era) eraStrategy {
	switch e {
	case eraLegacy:
		return legacyEra{}
	case eraModern:
		return modernEra{}
	}
	return nil
}

// eraOf is the era a client request decides: initialize, legacy; one
// whose _meta names a protocol version of 2026-07-28 or later (other than
// server/discover, which a client sends before it knows), modern.
func eraOf(env wire.Envelope) era {
	if env.Method == "initialize" {
		return eraLegacy
	}
	if env.Method == "server/discover" || !wire.IsModern(metaVersion(env.Params)) {
		return eraUnknown
	}
	return eraModern
}

// metaVersion is the protocol version a request's _meta names; "" when
// none.
func metaVersion(params []byte) string {
	pv := jsonscan.Member(jsonscan.Member(params, "_meta"), mcp.MetaKeyProtocolVersion)
	if len(pv) == 0 || pv[0] != '"' {
		return ""
	}
	v, _ := jsonscan.Unquote(pv)
	return v
}

// note decides the session's era on the first client request that
// decides it (see eraOf) and remembers the _meta triple of modern
// requests.
func (s *session) note(env wire.Envelope, log *slog.Logger) {
	if env.Method == "initialize" {
		if s.era == eraUnknown {
			s.era = eraLegacy
			log.Debug("protocol era: legacy (initialize)")
		}
		return
	}
	if !wire.IsModern(metaVersion(env.Params)) {
		return
	}
	meta := jsonscan.Member(env.Params, "_meta")
	if !bytes.Equal(meta, s.lastMetaRaw) { // the same on every request, as a rule
		s.lastMetaRaw = bytes.Clone(meta)
		s.lastMeta = metaTriple(meta)
	}
	if s.era == eraUnknown && env.Method != "server/discover" {
		s.era = eraModern
		log.Debug("protocol era: modern (per-request _meta)")
	}
}

// ready reports whether the relay may send requests of its own to c.
func (s *session) ready(c *child) bool {
	if st := s.strategy(); st != nil {
		return st.ready(s, c)
	}
	return false
}

// newChild forgets what the session knew of the previous child.
func (s *session) newChild() {
	s.childCaps, s.childInit, s.childDiscover = caps{}, false, false
}

// hearsOf reports whether the client may hear of changes to the prompts
// or resources list: in the legacy era, if the initialize result it got
// declared them; in the modern era, its listen streams say.
func (s *session) hearsOf(kind string) bool {
	if s.era != eraLegacy {
		return true
	}
	v := jsonscan.Member(jsonscan.Member(s.initResult, "capabilities"), kind)
	return v != nil && string(v) != "null"
}

// withMeta returns params (a JSON object or nil) with the client's _meta
// triple added, for the relay's own requests in the modern era.
func (s *session) withMeta(params map[string]any) []byte {
	if s.era == eraModern && s.lastMeta != nil {
		if params == nil {
			params = map[string]any{}
		}
		params["_meta"] = json.RawMessage(s.lastMeta)
	}
	if params == nil {
		return []byte("{}")
	}
	return mustJSON(params)
}

// withResultType marks a result complete for a modern-era client.
func withResultType(result []byte, modern bool) []byte {
	if !modern || len(result) < 2 {
		return result
	}
	if len(result) == 2 {
		return []byte(`{"resultType":"complete"}`)
	}
	return append([]byte(`{"resultType":"complete",`), result[1:]...)
}

// legacyEra: the session is the initialize handshake and its state.
type legacyEra struct{}

func (legacyEra) ready(s *session, c *child) bool {
	return s.initReq != nil && s.clientInit && !s.selfInit || c != nil && s.childInit && s.clientInit
}

func (legacyEra) established(_ *session, p *Port) bool { return p.initialized }

func (legacyEra) replay(s *session, rt *router, _ int) [][]byte {
	var out [][]byte
	if s.clientInit {
		out = append(out, wire.Request(nil, "notifications/initialized", nil))
	}
	if s.logLevel != nil {
		out = append(out, wire.Request(rt.newID(""), "logging/setLevel", s.logLevel))
	}
	for _, u := range slices.Sorted(maps.Keys(s.subs)) {
		out = append(out, wire.Request(rt.newID(""), "resources/subscribe", s.subs[u]))
	}
	return out
}

func (legacyEra) listChanged(_ *session, p *Port, kinds []string) []item {
	if !p.initialized {
		return nil
	}
	var out []item
	for _, k := range kinds {
		out = append(out, item{msg: wire.Request(nil, "notifications/"+k+"/list_changed", nil)})
	}
	return out
}

// modernEra: the session is the open subscriptions/listen streams.
type modernEra struct{}

func (modernEra) ready(s *session, _ *child) bool { return s.lastMeta != nil }

func (modernEra) established(s *session, p *Port) bool {
	for _, l := range s.listens {
		if l.port == p {
			return true
		}
	}
	return false
}

func (modernEra) replay(s *session, rt *router, gen int) [][]byte {
	var out [][]byte
	for _, k := range slices.Sorted(maps.Keys(s.listens)) {
		l := s.listens[k]
		l.awaitingAck = true
		if l.port != nil {
			rt.track(l.port, k, &pending{kind: kindListen, gen: gen, method: "subscriptions/listen", port: l.port, clientID: l.clientID})
		}
		out = append(out, l.msg)
	}
	return out
}

func (modernEra) listChanged(s *session, p *Port, kinds []string) []item {
	var out []item
	for _, key := range slices.Sorted(maps.Keys(s.listens)) {
		l := s.listens[key]
		if l.port != p {
			continue
		}
		id := l.replyID(key)
		for _, k := range kinds {
			if k == "tools" && l.tools || k == "prompts" && l.prompts || k == "resources" && l.resources {
				params := map[string]any{"_meta": map[string]json.RawMessage{mcp.MetaKeySubscriptionID: json.RawMessage(id)}}
				out = append(out, item{msg: wire.Request(nil, "notifications/"+k+"/list_changed", mustJSON(params)), rel: id})
			}
		}
	}
	return out
}
