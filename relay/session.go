package relay

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/mcpflow/mcpflow/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is the client's side of the conversation as the relay must
// replay it to each new child: the protocol era, the legacy handshake and
// state (initialize, initialized, logging level, resource subscriptions)
// and the modern listen streams. What differs between the eras is in two
// strategies, legacyEra and modernEra. It has no lock: its owner's lock
// guards it.
type session struct {
	era        era
	initReq    []byte // the client's initialize request, as sent
	initResult []byte // the child's initialize (or discover) result, forced
	selfInit   bool   // the relay answered initialize itself
	clientInit bool   // the client sent notifications/initialized
	childCaps  caps   // what the current child declared
	childInit  bool   // the current child was sent initialize
	// childDiscover: the current child answered (or is answering)
	// server/discover.
	childDiscover bool
	// initID is the id of the client's first initialize while it is
	// unanswered and Config.Handoff may take the session; initDecided
	// once it was answered.
	initID      []byte
	initDecided bool
	handedOff   bool // the session went to Config.Handoff
	// selfDiscover: the relay answered server/discover itself (from the
	// record, or for mcpflow), so the next child's era is unknown.
	selfDiscover bool
	// childInitResult and childDiscoverResult are the child's answers to
	// the handshake, as the client got them, for the record.
	childInitResult     []byte
	childDiscoverResult []byte
	// firstGrace: the grace for the first server is armed.
	firstGrace  bool
	lastMeta    []byte // the _meta triple of the client's latest modern request
	lastMetaRaw []byte // that request's whole _meta, to skip recomputing it
	logLevel    []byte // params of the last logging/setLevel
	subs        map[string][]byte
	listens     map[string]*listen
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
	msg         []byte
	tools       bool
	prompts     bool
	resources   bool
	awaitingAck bool // re-sent to a new child: its ack is consumed
}

func newSession() session {
	return session{subs: map[string][]byte{}, listens: map[string]*listen{}}
}

// eraStrategy is the era-specific part of bringing a child into the
// client's session and telling the client about a new child.
type eraStrategy interface {
	// ready reports whether the session lets the relay send requests of
	// its own to child c (c may be nil).
	ready(s *session, c *child) bool
	// established reports whether a session existed before a new child,
	// so that the client is told its lists changed.
	established(s *session) bool
	// replay returns the messages that bring child gen to the session's
	// state, after its handshake, registering in rt what they expect back.
	replay(s *session, rt *router, gen int) [][]byte
	// listChanged returns the notifications that tell the client the
	// lists of these kinds changed.
	listChanged(s *session, kinds []string) [][]byte
}

// strategy returns the era's strategy; nil while the era is unknown.
func (s *session) strategy() eraStrategy {
	switch s.era {
	case eraLegacy:
		return legacyEra{}
	case eraModern:
		return modernEra{}
	}
	return nil
}

// note decides the protocol era on the first client request that decides
// it (initialize: legacy; _meta protocolVersion of the modern era on a
// request other than server/discover: modern) and remembers the _meta
// triple of modern requests.
func (s *session) note(env wire.Envelope, log *slog.Logger) {
	if env.Method == "initialize" {
		if s.era == eraUnknown {
			s.era = eraLegacy
			log.Debug("protocol era: legacy (initialize)")
		}
		return
	}
	meta := jsonscan.Member(env.Params, "_meta")
	if meta == nil {
		return
	}
	pv := jsonscan.Member(meta, mcp.MetaKeyProtocolVersion)
	if len(pv) == 0 || pv[0] != '"' {
		return
	}
	if v, _ := jsonscan.Unquote(pv); !wire.IsModern(v) {
		return
	}
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

// withResultType marks a result complete for modern-era clients.
func (s *session) withResultType(result []byte) []byte {
	if s.era != eraModern || len(result) < 2 {
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

func (legacyEra) established(s *session) bool { return s.clientInit }

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

func (legacyEra) listChanged(s *session, kinds []string) [][]byte {
	if !s.clientInit {
		return nil
	}
	var out [][]byte
	for _, k := range kinds {
		out = append(out, wire.Request(nil, "notifications/"+k+"/list_changed", nil))
	}
	return out
}

// modernEra: the session is the open subscriptions/listen streams.
type modernEra struct{}

func (modernEra) ready(s *session, _ *child) bool { return s.lastMeta != nil }

func (modernEra) established(s *session) bool { return len(s.listens) > 0 }

func (modernEra) replay(s *session, rt *router, gen int) [][]byte {
	var out [][]byte
	for _, k := range slices.Sorted(maps.Keys(s.listens)) {
		l := s.listens[k]
		l.awaitingAck = true
		rt.track(k, &pending{kind: kindListen, gen: gen, method: "subscriptions/listen"})
		out = append(out, l.msg)
	}
	return out
}

func (modernEra) listChanged(s *session, kinds []string) [][]byte {
	var out [][]byte
	for _, key := range slices.Sorted(maps.Keys(s.listens)) {
		l := s.listens[key]
		for _, k := range kinds {
			if k == "tools" && l.tools || k == "prompts" && l.prompts || k == "resources" && l.resources {
				p := map[string]any{"_meta": map[string]json.RawMessage{mcp.MetaKeySubscriptionID: json.RawMessage(key)}}
				out = append(out, wire.Request(nil, "notifications/"+k+"/list_changed", mustJSON(p)))
			}
		}
	}
	return out
}
