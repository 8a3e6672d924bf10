package mux

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is one client's session with the mux (a wire.Session): it
// answers what the mux answers for itself (the handshake, the merged
// lists, its own tools) and routes the rest to the servers, each through
// a session of the server's own (a port: Backend.Open), the bytes as the
// client wrote them but for the name the mux prefixes.
type session struct {
	m    *Mux
	c    wire.Client
	keep bool // the servers see the client's ids as they are (stdio)

	dmu sync.Mutex // one message at a time to the client

	mu          sync.Mutex
	closed      bool
	era         era
	initMsg     []byte // the client's initialize, for the servers that come up later
	initialized bool
	meta        json.RawMessage // the latest 2026-07-28 request's _meta
	seen        int64
	client      ClientInfo
	startBy     <-chan struct{}          // closed when the session stops waiting for servers still starting (startDeadline)
	ports       map[string]*port         // by server name
	calls       map[string]string        // the client's requests in flight on a server: id -> server
	own         map[string]func()        // the client's requests the mux answers itself: id -> cancel
	reqs        map[string]serverReq     // servers' requests to the client, by the mux's id
	waits       map[string]chan []byte   // the mux's own requests to a server, by id
	listens     map[string]bool          // the client's subscriptions/listen ids the mux holds
	instr       map[string]string        // each server's instructions, from its handshake
	level       []byte                   // the params of the client's last logging/setLevel
	notify      *time.Timer              // a list_changed to the client, coalesced
	listening   map[string]bool          // servers the mux holds a listen of its own on
	pending     map[string]chan struct{} // servers whose handshake answer is awaited, closed once it came
}

type era int

const (
	eraUnknown era = iota
	eraLegacy
	eraModern
)

// port is a session's part on one server.
type port struct {
	srv    *server
	sess   wire.Session
	opened bool // the client's handshake was sent (legacy)
}

// serverReq is a server's request to the client: the server and the id
// its port gave it.
type serverReq struct {
	server string
	id     []byte
}

// ownPrefix starts every id the mux invents; the client may not use it.
const ownPrefix = `"mcpflow:m`

func newSession(m *Mux, c wire.Client) *session {
	return &session{
		m:         m,
		c:         c,
		ports:     map[string]*port{},
		calls:     map[string]string{},
		own:       map[string]func(){},
		reqs:      map[string]serverReq{},
		waits:     map[string]chan []byte{},
		listens:   map[string]bool{},
		instr:     map[string]string{},
		listening: map[string]bool{},
		pending:   map[string]chan struct{}{},
	}
}

// deliver sends one message to the client.
func (s *session) deliver(msg, rel []byte) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if !closed {
		s.c.Deliver(msg, rel)
	}
}

// reply answers the client's request id with result (raw JSON), marked
// complete for a 2026-07-28 client.
func (s *session) reply(id, result []byte) {
	s.mu.Lock()
	modern := s.era == eraModern
	delete(s.own, string(id))
	s.mu.Unlock()
	if modern && len(result) > 1 && result[0] == '{' && jsonscan.Member(result, "resultType") == nil {
		if len(bytes.TrimSpace(result[1:])) == 1 {
			result = []byte(`{"resultType":"complete"}`)
		} else {
			result = append([]byte(`{"resultType":"complete",`), result[1:]...)
		}
	}
	s.deliver(wire.ResultResponse(id, result), id)
}

func (s *session) fail(id []byte, code int, text string) {
	s.mu.Lock()
	delete(s.own, string(id))
	s.mu.Unlock()
	s.deliver(wire.ErrorResponse(id, code, text, nil), id)
}

// newID is an id of the mux's own.
func (s *session) newID() []byte {
	return []byte(fmt.Sprintf(`%s%d"`, ownPrefix, s.m.seq.Add(1)))
}

// Send handles one message from the client (see wire.Session).
func (s *session) Send(msg []byte) {
	env, err := wire.Peek(msg)
	if err != nil || env.IsArray {
		s.deliver(wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.TextNotAnRPC, nil), nil)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.seen = time.Now().UnixNano()
	s.mu.Unlock()
	switch {
	case env.IsResponse():
		s.clientResponse(msg, env)
	case env.IsNotification():
		s.clientNotification(msg, env)
	case env.IsRequest():
		s.clientRequest(msg, env)
	default:
		id := env.ID
		if wire.IDProblem(id) != "" {
			id = nil
		}
		s.deliver(wire.ErrorResponse(id, wire.CodeInvalidRequest, "Invalid Request: not a request, a notification or a response", nil), id)
	}
}

// Close ends the session: its ports are closed (their requests canceled
// toward the servers), nothing more is delivered.
func (s *session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	ports := s.ports
	s.ports = map[string]*port{}
	for _, cancel := range s.own {
		cancel()
	}
	if s.notify != nil {
		s.notify.Stop()
	}
	s.mu.Unlock()
	for _, p := range ports {
		p.sess.Close()
	}
	s.m.mu.Lock()
	delete(s.m.sessions, s)
	s.m.mu.Unlock()
}

func (s *session) lastSeen() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

func (s *session) clientInfo() ClientInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// note records what a request says of the client: its era, who it is,
// its _meta.
func (s *session) note(env wire.Envelope) {
	if meta := s.noteLocked(env); meta != nil {
		s.m.metaFrom(meta)
	}
}

// noteLocked is note's part under s.mu; it returns the _meta of a
// 2026-07-28 client's request (nil: none).
func (s *session) noteLocked(env wire.Envelope) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if env.Method == "initialize" {
		if s.era == eraUnknown {
			s.era = eraLegacy
		}
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
			ClientInfo      struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"clientInfo"`
		}
		_ = json.Unmarshal(env.Params, &p)
		s.client = ClientInfo{Name: p.ClientInfo.Name, Version: p.ClientInfo.Version, Protocol: p.ProtocolVersion}
		return nil
	}
	meta := jsonscan.Member(env.Params, "_meta")
	v := stringMember(meta, mcp.MetaKeyProtocolVersion)
	if !wire.IsModern(v) || env.Method == "server/discover" {
		return nil // server/discover decides nothing: the client may fall back
	}
	s.meta = bytes.Clone(meta)
	if s.era == eraUnknown {
		s.era = eraModern
	}
	s.client.Protocol = v
	if ci := jsonscan.Member(meta, mcp.MetaKeyClientInfo); ci != nil {
		s.client.Name, s.client.Version = stringMember(ci, "name"), stringMember(ci, "version")
	}
	if s.era != eraModern {
		return nil
	}
	return s.meta
}

func (s *session) clientRequest(msg []byte, env wire.Envelope) {
	id := env.ID
	key := string(id)
	if p := wire.IDProblem(id); p != "" {
		s.deliver(wire.ErrorResponse(nil, wire.CodeInvalidRequest, p, nil), nil)
		return
	}
	if strings.HasPrefix(key, `"mcpflow:`) {
		s.fail(id, wire.CodeInvalidRequest, `Invalid Request: ids starting with "mcpflow:" are mcpflow's own`)
		return
	}
	s.mu.Lock()
	_, busy := s.calls[key]
	_, busyOwn := s.own[key]
	s.mu.Unlock()
	if busy || busyOwn {
		s.fail(id, wire.CodeInvalidRequest, "Invalid Request: a request with this id is already in flight")
		return
	}
	s.note(env)
	switch env.Method {
	case "initialize":
		s.mu.Lock()
		s.initMsg = msg
		s.mu.Unlock()
		s.goOwn(id, func(ctx context.Context) { s.initialize(ctx, env) })
	case "server/discover":
		s.goOwn(id, func(ctx context.Context) { s.discover(ctx, env) })
	case "ping":
		s.reply(id, []byte(`{}`))
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		s.goOwn(id, func(ctx context.Context) { s.answerList(ctx, env) })
	case "tools/call":
		s.call(msg, env)
	case "prompts/get":
		name := stringMember(env.Params, "name")
		s.m.mu.Lock()
		r, ok := s.m.cat.prompts[name]
		s.m.mu.Unlock()
		if !ok {
			s.fail(id, wire.CodeInvalidParams, texts.UnknownPrompt(name, s.m.sep, s.m.existing()))
			return
		}
		s.forward(r.server, withName(msg, env, r.name), env)
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		uri := stringMember(env.Params, "uri")
		s.m.mu.Lock()
		owner, ok := s.m.cat.owner(uri)
		s.m.mu.Unlock()
		if !ok {
			s.fail(id, codeResourceNotFound, texts.NoResource(uri))
			return
		}
		s.forward(owner, msg, env)
	case "completion/complete":
		s.complete(msg, env)
	case "logging/setLevel":
		s.mu.Lock()
		s.level = bytes.Clone(env.Params)
		s.mu.Unlock()
		s.goOwn(id, func(ctx context.Context) { s.setLevel(ctx, env) })
	case "subscriptions/listen":
		s.listen(env)
	default:
		s.fail(id, wire.CodeMethodNotFound, fmt.Sprintf("Method not found: %s", env.Method))
	}
}

// codeResourceNotFound is MCP's error code for an unknown resource.
const codeResourceNotFound = -32002

// goOwn answers the client's request id itself, in the background, with
// a context canceled by the client's cancellation or the session's end.
func (s *session) goOwn(id []byte, f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(s.m.ctx)
	s.mu.Lock()
	s.own[string(id)] = cancel
	s.mu.Unlock()
	go func() {
		defer cancel()
		f(ctx)
	}()
}

// openPorts are the ports the client's handshake reached.
func (s *session) openPorts() []*port {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*port
	for _, p := range s.ports {
		if p.opened || s.era != eraLegacy {
			out = append(out, p)
		}
	}
	return out
}

// port returns the session's port on server name, opening it (and, for
// a legacy client whose handshake came, sending that handshake) when the
// server runs; nil when it does not.
func (s *session) port(name string) *port {
	s.m.mu.Lock()
	srv, ok := s.m.servers[name]
	running := ok && srv.b != nil && (srv.status == StatusRunning || srv.recorded && srv.status == StatusStarting)
	s.m.mu.Unlock()
	if !running {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	p := s.ports[name]
	if p != nil && p.srv != srv {
		// The server was removed and added again: a new backend.
		p.sess.Close()
		p = nil
	}
	if p == nil {
		p = &port{srv: srv}
		s.ports[name] = p
		p.sess = srv.b.Open(wire.ClientFunc(func(msg, rel []byte) { s.fromServer(name, msg, rel) }), s.keep)
	}
	handshake := s.era == eraLegacy && s.initMsg != nil && !p.opened
	initMsg, initialized, level := s.initMsg, s.initialized, s.level
	if handshake {
		p.opened = true
	}
	s.mu.Unlock()
	if handshake {
		s.handshake(name, p, initMsg, initialized, level)
	}
	return p
}

// handshake opens the server's session for a legacy client: its
// initialize under an id of the mux's (the answer is the mux's: its
// instructions), initialized when it came, the log level.
func (s *session) handshake(name string, p *port, initMsg []byte, initialized bool, level []byte) {
	env, err := wire.Peek(initMsg)
	if err != nil {
		return
	}
	id := s.newID()
	ch := make(chan []byte, 1)
	done := make(chan struct{})
	s.mu.Lock()
	s.waits[string(id)] = ch
	s.pending[name] = done
	s.mu.Unlock()
	go func() {
		defer close(done)
		select {
		case ans := <-ch:
			if in := stringMember(jsonscan.Member(ans, "result"), "instructions"); in != "" {
				s.mu.Lock()
				s.instr[name] = in
				s.mu.Unlock()
			}
		case <-s.m.ctx.Done():
		case <-time.After(relay.DefaultHandshake):
		}
	}()
	p.sess.Send(wire.Splice(initMsg, env.IDStart, env.IDEnd, id))
	if initialized {
		p.sess.Send(wire.Request(nil, "notifications/initialized", nil))
	}
	if level != nil {
		s.ownRequest(p, "logging/setLevel", level)
	}
}

// setLevel gives each server the client's logging level and answers once
// every server took it (or answered otherwise: a server that refuses it
// keeps serving), at most listWait: a call the client makes next finds
// the level set.
func (s *session) setLevel(ctx context.Context, env wire.Envelope) {
	var waits []chan []byte
	for _, p := range s.openPorts() {
		id := s.newID()
		ch := make(chan []byte, 1)
		s.mu.Lock()
		s.waits[string(id)] = ch
		s.mu.Unlock()
		p.sess.Send(wire.Request(id, "logging/setLevel", env.Params))
		waits = append(waits, ch)
	}
	t := time.NewTimer(listWait)
	defer t.Stop()
	for _, ch := range waits {
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
	s.reply(env.ID, []byte(`{}`))
}

// ownRequest sends a request of the mux's own to a server; its answer is
// dropped.
func (s *session) ownRequest(p *port, method string, params []byte) {
	p.sess.Send(wire.Request(s.newID(), method, params))
}

// forward sends the client's request to server name.
func (s *session) forward(name string, msg []byte, env wire.Envelope) {
	p := s.port(name)
	if p == nil {
		s.fail(env.ID, wire.CodeServerDown, s.m.notRunning(name))
		return
	}
	s.mu.Lock()
	s.calls[string(env.ID)] = name
	s.mu.Unlock()
	p.sess.Send(msg)
}

// fromServer handles one message a server delivers to this session.
func (s *session) fromServer(name string, msg, rel []byte) {
	if wire.IsResponse(msg) {
		s.mu.Lock()
		if ch, ok := s.waits[string(rel)]; ok {
			delete(s.waits, string(rel))
			s.mu.Unlock()
			ch <- msg
			return
		}
		_, own := s.calls[string(rel)]
		delete(s.calls, string(rel))
		s.mu.Unlock()
		if own || !bytes.HasPrefix(rel, []byte(ownPrefix)) {
			s.deliver(msg, rel)
		}
		return
	}
	env, err := wire.Peek(msg)
	if err != nil {
		return
	}
	switch {
	case env.IsRequest():
		id := s.newID()
		s.mu.Lock()
		s.reqs[string(id)] = serverReq{server: name, id: bytes.Clone(env.ID)}
		s.mu.Unlock()
		s.deliver(wire.Splice(msg, env.IDStart, env.IDEnd, id), rel)
	case strings.HasSuffix(env.Method, "/list_changed") && env.Method != "notifications/roots/list_changed":
		s.m.mu.Lock()
		srv := s.m.servers[name]
		s.m.mu.Unlock()
		if srv != nil {
			srv.markRelist()
		}
	case env.Method == "notifications/subscriptions/acknowledged" && bytes.HasPrefix(jsonscan.Member(jsonscan.Member(env.Params, "_meta"), mcp.MetaKeySubscriptionID), []byte(ownPrefix)):
		// The answer to a listen of the mux's own.
	default:
		s.deliver(msg, rel)
	}
}

// clientResponse passes the client's answer to a server's request back to
// that server.
func (s *session) clientResponse(msg []byte, env wire.Envelope) {
	s.mu.Lock()
	sr, ok := s.reqs[string(env.ID)]
	delete(s.reqs, string(env.ID))
	p := s.ports[sr.server]
	s.mu.Unlock()
	if !ok || p == nil {
		s.m.log.Debug("dropped a client answer to a request that is no longer open", "id", string(env.ID))
		return
	}
	p.sess.Send(wire.Splice(msg, env.IDStart, env.IDEnd, sr.id))
}

func (s *session) clientNotification(msg []byte, env wire.Envelope) {
	switch env.Method {
	case "notifications/initialized":
		s.mu.Lock()
		s.initialized = true
		s.mu.Unlock()
		for _, p := range s.openPorts() {
			p.sess.Send(msg)
		}
		// The servers' sessions are open: the catalog is read.
		s.m.mu.Lock()
		var all []*server
		for _, srv := range s.m.servers {
			all = append(all, srv)
		}
		s.m.mu.Unlock()
		for _, srv := range all {
			srv.markRelist()
		}
		return
	case "notifications/cancelled":
		id := jsonscan.Member(env.Params, "requestId")
		s.mu.Lock()
		cancel, own := s.own[string(id)]
		name, ok := s.calls[string(id)]
		p := s.ports[name]
		s.mu.Unlock()
		if own {
			cancel()
		}
		if ok && p != nil {
			p.sess.Send(msg)
		}
		return
	}
	for _, p := range s.openPorts() {
		p.sess.Send(msg)
	}
}

// serverUp opens the session's part on a server that came up, once the
// client's handshake came.
func (s *session) serverUp(srv *server) {
	s.mu.Lock()
	open := s.era == eraLegacy && s.initMsg != nil
	listening := len(s.listens) > 0
	s.mu.Unlock()
	if open {
		s.port(srv.spec.Name)
	}
	if listening {
		s.listenOn(srv.spec.Name)
	}
}

// serverGone closes the session's part on a server that was removed; its
// calls in flight are answered.
func (s *session) serverGone(srv *server) {
	name := srv.spec.Name
	s.mu.Lock()
	p := s.ports[name]
	if p != nil && p.srv == srv {
		delete(s.ports, name)
	} else {
		p = nil
	}
	var ids []string
	for id, n := range s.calls {
		if n == name {
			delete(s.calls, id)
			ids = append(ids, id)
		}
	}
	modern := s.era == eraModern
	s.mu.Unlock()
	if p != nil {
		p.sess.Close()
	}
	if len(ids) == 0 {
		return
	}
	text := texts.RemovedBeforeAnswer(name, s.m.existing())
	for _, id := range ids {
		s.deliver(wire.ResultResponse([]byte(id), errToolResult(text, modern)), []byte(id))
	}
}

// catalogChanged tells the client its lists changed (coalesced).
func (s *session) catalogChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.notify != nil {
		return
	}
	s.notify = time.AfterFunc(10*time.Millisecond, func() {
		s.mu.Lock()
		s.notify = nil
		legacy := s.era == eraLegacy && s.initialized
		var listens [][]byte
		for id := range s.listens {
			listens = append(listens, []byte(id))
		}
		s.mu.Unlock()
		kinds := []string{"tools", "prompts", "resources"}
		for _, k := range kinds {
			switch {
			case legacy:
				s.deliver(wire.Request(nil, "notifications/"+k+"/list_changed", nil), nil)
			default:
				for _, id := range listens {
					params := `{"_meta":{"` + mcp.MetaKeySubscriptionID + `":` + string(id) + `}}`
					s.deliver(wire.Request(nil, "notifications/"+k+"/list_changed", []byte(params)), id)
				}
			}
		}
	})
}

// withName is a request with params.name replaced by name.
func withName(msg []byte, env wire.Envelope, name string) []byte {
	vs, ve, ok := jsonscan.MemberSpan(env.Params, "name")
	if !ok {
		return msg
	}
	q, _ := json.Marshal(name)
	return wire.Splice(msg, env.ParStart+vs, env.ParStart+ve, q)
}

// errToolResult is a tool result that reports an error to the agent.
func errToolResult(text string, modern bool) []byte {
	res := map[string]any{"content": []map[string]string{{"type": "text", "text": text}}, "isError": true}
	if modern {
		res["resultType"] = "complete"
	}
	b, _ := json.Marshal(res)
	return b
}
