package wire

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Era is a session's protocol era, as its client's messages decide it.
type Era int

const (
	EraUnknown Era = iota
	EraLegacy      // initialize, a session of its own (2024-11-05 … 2025-11-25)
	EraModern      // 2026-07-28: every request carries its session in _meta
)

func (e Era) String() string {
	switch e {
	case EraLegacy:
		return "legacy"
	case EraModern:
		return "modern"
	}
	return ""
}

// ClientInfo is who a client says it is: initialize's clientInfo and
// protocolVersion, or a 2026-07-28 request's _meta.
type ClientInfo struct {
	Name, Version, Protocol string
	Era                     Era
}

// ReservedPrefix starts every request id mcpflow invents (each part with
// a tag of its own after it: "mcpflow:r1" the relay's, "mcpflow:m1" the
// mux's, "mcpflow:f1" FanIn's, "mcpflow:w1" Swap's). A client's request
// that uses it is refused by the front it comes through (Serve, the HTTP
// front: TextReserved), so that no id of mcpflow's own can meet a
// client's.
const ReservedPrefix = `"mcpflow:`

// TextReserved refuses a client's request that uses mcpflow's ids.
const TextReserved = `Invalid Request: ids starting with "mcpflow:" are mcpflow's own`

// State is one client session as the client's own messages set it up:
// what must be given to whatever serves the session next (a restarted
// server, the engine of an edited config, a server the mux adds later)
// for the session to go on, and the client's requests in flight. It is
// the one model of a session: relay's sessions, the mux's and Swap's keep
// one each, updated by Note and Answered and given on by Replay and
// ListChanged. It has no lock: its owner's guards it.
type State struct {
	Era    Era
	Client ClientInfo
	// Init is the client's initialize request as it sent it (legacy).
	Init        []byte
	Initialized bool
	Level       []byte            // the params of its last logging/setLevel
	Meta        []byte            // the _meta of its latest 2026-07-28 request
	subs        map[string][]byte // resources/subscribe params, by URI
	listens     map[string]Listen // open subscriptions/listen, by raw id
	inFlight    map[string]string // raw id -> method, until answered
}

// Listen is an open subscriptions/listen request and what it asked for.
type Listen struct {
	Msg                       []byte // as the client sent it
	Tools, Prompts, Resources bool   // the list_changed kinds it opted in to
}

// Refusal texts of Note.
const (
	TextInFlight  = "Invalid Request: a request with this id is already in flight"
	TextNoKind    = "Invalid Request: a message needs a method, a result or an error"
	TextAmbiguous = "Invalid Request: a member of this message is named twice, or in another case, so peers would read it differently"
)

// Note records one message of the client's and reports whether it is
// refused: then answer (nil for a notification) is its error answer, and
// it must not be passed on. A request is refused when its id is no
// string or number or is already in flight, or when the message is
// Ambiguous.
func (s *State) Note(msg []byte, env Envelope) (answer []byte, refused bool) {
	id := env.ID
	if IDProblem(id) != "" {
		id = nil
	}
	switch {
	case env.Ambiguous:
		if env.ID == nil && PartialID(msg) == nil || env.Method == "" && (env.Result != nil || env.HasError) {
			return nil, true // a notification or a response: nothing to answer
		}
		return ErrorResponse(id, CodeInvalidRequest, TextAmbiguous, nil), true
	case env.ID != nil && env.Method != "" && IDProblem(env.ID) != "":
		return ErrorResponse(nil, CodeInvalidRequest, IDProblem(env.ID), nil), true
	case env.IsRequest() && s.inFlight[string(env.ID)] != "":
		return ErrorResponse(env.ID, CodeInvalidRequest, TextInFlight, nil), true
	case !env.IsRequest() && !env.IsNotification() && !env.IsResponse():
		return ErrorResponse(id, CodeInvalidRequest, TextNoKind, nil), true // under null when its id is bad (JSON-RPC 2.0, 5.1)
	}
	if env.IsRequest() {
		if s.inFlight == nil {
			s.inFlight = map[string]string{}
		}
		s.inFlight[string(env.ID)] = env.Method
		s.noteRequest(msg, env)
	}
	switch env.Method {
	case "notifications/initialized":
		s.Initialized = true
	case "notifications/cancelled":
		id := string(jsonscan.Member(env.Params, "requestId"))
		delete(s.inFlight, id)
		delete(s.listens, id)
	}
	return nil, false
}

func (s *State) noteRequest(msg []byte, env Envelope) {
	switch env.Method {
	case "initialize":
		s.Init = bytes.Clone(msg)
		if s.Era == EraUnknown {
			s.Era = EraLegacy
		}
		var p struct {
			ProtocolVersion string
			ClientInfo      struct{ Name, Version string }
		}
		_ = json.Unmarshal(env.Params, &p)
		s.Client = ClientInfo{Name: Clip(p.ClientInfo.Name), Version: Clip(p.ClientInfo.Version), Protocol: Clip(p.ProtocolVersion), Era: EraLegacy}
		return
	case "logging/setLevel":
		s.Level = bytes.Clone(env.Params)
	case "resources/subscribe", "resources/unsubscribe":
		uri, _ := jsonscan.Unquote(jsonscan.Member(env.Params, "uri"))
		if s.subs == nil {
			s.subs = map[string][]byte{}
		}
		if env.Method == "resources/subscribe" {
			s.subs[uri] = bytes.Clone(env.Params)
		} else {
			delete(s.subs, uri)
		}
	case "subscriptions/listen":
		var p struct {
			Notifications struct {
				Tools     bool `json:"toolsListChanged"`
				Prompts   bool `json:"promptsListChanged"`
				Resources bool `json:"resourcesListChanged"`
			} `json:"notifications"`
		}
		_ = json.Unmarshal(env.Params, &p)
		if s.listens == nil {
			s.listens = map[string]Listen{}
		}
		n := p.Notifications
		s.listens[string(env.ID)] = Listen{Msg: bytes.Clone(msg), Tools: n.Tools, Prompts: n.Prompts, Resources: n.Resources}
	}
	meta := jsonscan.Member(env.Params, "_meta")
	v := jsonscan.Member(meta, mcp.MetaKeyProtocolVersion)
	version, _ := jsonscan.Unquote(v)
	if !IsModern(version) {
		return
	}
	s.Meta = bytes.Clone(meta)
	if env.Method == "server/discover" {
		return // decides nothing: the client may fall back to initialize
	}
	if s.Era == EraUnknown {
		s.Era = EraModern
	}
	if s.Era == EraModern {
		var ci struct{ Name, Version string }
		_ = json.Unmarshal(jsonscan.Member(meta, mcp.MetaKeyClientInfo), &ci)
		s.Client = ClientInfo{Name: Clip(ci.Name), Version: Clip(ci.Version), Protocol: Clip(version), Era: EraModern}
	}
}

// Answered records that the client got its answer to request id: it is
// no longer in flight (and a listen it answers is over).
func (s *State) Answered(id []byte) {
	delete(s.inFlight, string(id))
	delete(s.listens, string(id))
}

// InFlight reports whether the client's request id awaits its answer.
func (s *State) InFlight(id []byte) bool { return s.inFlight[string(id)] != "" }

// Pending lists the client's requests in flight, listens aside (they last
// as long as the session), by raw id.
func (s *State) Pending() [][]byte {
	var out [][]byte
	for _, id := range slices.Sorted(maps.Keys(s.inFlight)) {
		if _, listen := s.listens[id]; !listen {
			out = append(out, []byte(id))
		}
	}
	return out
}

// Listens lists the open listen requests, by raw id.
func (s *State) Listens() map[string]Listen { return s.listens }

// Established reports whether the client's session is set up, so that
// it is told of changes: a legacy client once initialized, a 2026-07-28
// client once it listens.
func (s *State) Established() bool {
	if s.Era == EraLegacy {
		return s.Initialized
	}
	return len(s.listens) > 0
}

// Replay is what brings a new serving side to where the session is, in
// order: the initialize (under id()), notifications/initialized, the last
// setLevel and each live subscription (each under id()), and the open
// listens as the client sent them, so that their streams go on. The
// answers to the ids made by id() are the caller's to drop.
func (s *State) Replay(id func() []byte) [][]byte {
	var out [][]byte
	if s.Init != nil {
		if env, err := Peek(s.Init); err == nil {
			out = append(out, Request(id(), "initialize", env.Params))
		}
	}
	if s.Initialized {
		out = append(out, Request(nil, "notifications/initialized", nil))
	}
	if s.Level != nil {
		out = append(out, Request(id(), "logging/setLevel", s.Level))
	}
	for _, u := range slices.Sorted(maps.Keys(s.subs)) {
		out = append(out, Request(id(), "resources/subscribe", s.subs[u]))
	}
	for _, k := range slices.Sorted(maps.Keys(s.listens)) {
		out = append(out, s.listens[k].Msg)
	}
	return out
}

// Out is one message for the client and the id of the request it belongs
// to (rel, see Client).
type Out struct{ Msg, Rel []byte }

// ListChanged is how the client is told that lists of these kinds
// ("tools", "prompts", "resources") changed, in its era's way: a bare
// notification each once a legacy client is initialized; for a
// 2026-07-28 client, one on each listen stream that opted in to the kind,
// tagged with that listen's id. Nothing for a session not Established.
func (s *State) ListChanged(kinds ...string) []Out {
	var out []Out
	if s.Era == EraLegacy {
		if s.Initialized {
			for _, k := range kinds {
				out = append(out, Out{Msg: Request(nil, "notifications/"+k+"/list_changed", nil)})
			}
		}
		return out
	}
	for _, id := range slices.Sorted(maps.Keys(s.listens)) {
		l := s.listens[id]
		for _, k := range kinds {
			if k == "tools" && l.Tools || k == "prompts" && l.Prompts || k == "resources" && l.Resources {
				params := `{"_meta":{"` + mcp.MetaKeySubscriptionID + `":` + id + `}}`
				out = append(out, Out{Msg: Request(nil, "notifications/"+k+"/list_changed", []byte(params)), Rel: []byte(id)})
			}
		}
	}
	return out
}

// Reserved reports whether a request id is of mcpflow's own namespace.
func Reserved(id []byte) bool { return strings.HasPrefix(string(id), ReservedPrefix) }

// maxClientField bounds a client's name, version and protocol as mcpflow
// remembers them.
const maxClientField = 200

// Clip cuts s to maxClientField bytes, on a rune boundary.
func Clip(s string) string {
	if len(s) <= maxClientField {
		return s
	}
	s = s[:maxClientField]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
