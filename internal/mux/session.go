package mux

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is one client's session with the mux (a wire.Session): it
// answers what the mux answers for itself (the handshake, the merged
// lists, its own tools) and routes the rest to the servers, each through
// a session of the server's own (a port: Backend.Open, a child of its own
// behind a relay), the bytes as the client wrote them but for the name
// the mux prefixes. What it lists is its own catalog, read through its
// ports: what one client's servers list reaches no other client.
type session struct {
	m      *Mux
	c      wire.Client
	ctx    context.Context // ends with the session (Close) or the mux
	cancel context.CancelFunc

	dmu sync.Mutex // one message at a time to the client

	mu      sync.Mutex
	closed  bool
	st      wire.State // the client's session, as its messages set it up
	seen    time.Time  // its last message
	startBy <-chan struct{}
	ports   map[string]*port       // by server name
	calls   map[string]string      // the client's requests in flight on a server: id -> server
	own     map[string]func()      // the client's requests the mux answers itself: id -> cancel
	reqs    map[string]serverReq   // servers' requests to the client, by the mux's id
	waits   map[string]chan []byte // the mux's own requests to a server, by id
	cat     catalog
	instr   map[string]string // each server's instructions, from its handshake
	notify  *time.Timer       // a list_changed to the client, coalesced
}

// port is a session's part on one server. Its session with the server is
// opened at first use (open), never with a lock of the mux's held.
type port struct {
	srv    *server
	client wire.Client
	once   sync.Once
	sess   wire.Session  // once opened
	opened bool          // the client's handshake was sent (legacy), or the mux's listen (2026-07-28)
	fresh  bool          // its lists in the catalog are current
	asked  int           // times they were marked stale: a read under way that sees it change reads again
	ready  chan struct{} // closed once the server answered the handshake
	read   chan struct{} // closed when the lists being read are in; nil when none is
}

// open is the port's session with its server, opened at the first call.
func (p *port) open() wire.Session {
	p.once.Do(func() { p.sess = p.srv.b.Open(p.client) })
	if p.sess == nil {
		return closedSession{} // closed before it was ever opened
	}
	return p.sess
}

// close closes the port's session, if it was opened; it is never opened
// afterwards.
func (p *port) close() {
	p.once.Do(func() {})
	if p.sess != nil {
		p.sess.Close()
	}
}

// closedSession is the session of a port closed before it opened.
type closedSession struct{}

func (closedSession) Send([]byte) {}
func (closedSession) Close()      {}

// serverReq is a server's request to the client: the server and the id
// the client's answer goes back under.
type serverReq struct {
	server string
	id     []byte
}

// ownPrefix starts every id the mux invents (wire.ReservedPrefix with
// the mux's tag).
const ownPrefix = `"mcpflow:m`

func newSession(m *Mux, c wire.Client) *session {
	ctx, cancel := context.WithCancel(m.ctx)
	return &session{
		m:      m,
		c:      c,
		ctx:    ctx,
		cancel: cancel,
		ports:  map[string]*port{},
		calls:  map[string]string{},
		own:    map[string]func(){},
		reqs:   map[string]serverReq{},
		waits:  map[string]chan []byte{},
		cat:    newCatalog(m.sep, m.ownNames()),
		instr:  map[string]string{},
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
	modern := s.st.Era == wire.EraModern
	s.mu.Unlock()
	if modern && len(result) > 1 && result[0] == '{' && jsonscan.Member(result, "resultType") == nil {
		if len(bytes.TrimSpace(result[1:])) == 1 {
			result = []byte(`{"resultType":"complete"}`)
		} else {
			result = append([]byte(`{"resultType":"complete",`), result[1:]...)
		}
	}
	s.answer(wire.ResultResponse(id, result), id)
}

func (s *session) fail(id []byte, code int, text string) {
	s.answer(wire.ErrorResponse(id, code, text, nil), id)
}

// answer delivers the answer to the client's request id, once.
func (s *session) answer(msg, id []byte) {
	s.mu.Lock()
	delete(s.own, string(id))
	open := s.st.InFlight(id)
	s.st.Answered(id)
	s.mu.Unlock()
	if open {
		s.deliver(msg, id)
	}
}

// newID is an id of the mux's own.
func (s *session) newID() []byte {
	return []byte(ownPrefix + strconv.FormatInt(s.m.seq.Add(1), 10) + `"`)
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
	s.seen = time.Now()
	answer, refused := s.st.Note(msg, env)
	s.mu.Unlock()
	if refused {
		if answer != nil {
			s.deliver(answer, env.ID)
		}
		return
	}
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
		s.deliver(wire.ErrorResponse(id, wire.CodeInvalidRequest, texts.ErrNoKind, nil), id)
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
	s.cancel()
	ports := s.ports
	s.ports = map[string]*port{}
	if s.notify != nil {
		s.notify.Stop()
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ports {
		wg.Go(p.close)
	}
	wg.Wait()
	s.m.mu.Lock()
	delete(s.m.sessions, s)
	s.m.mu.Unlock()
}

func (s *session) clientRequest(msg []byte, env wire.Envelope) {
	id := env.ID
	switch env.Method {
	case "initialize":
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
		s.mu.Lock()
		r, ok := s.cat.prompts[name]
		s.mu.Unlock()
		if !ok {
			s.fail(id, wire.CodeInvalidParams, texts.UnknownPrompt(name, s.m.sep, s.m.existing()))
			return
		}
		s.forward(r.server, withName(msg, env, r.name), env)
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		uri := stringMember(env.Params, "uri")
		s.mu.Lock()
		owner, ok := s.cat.owner(uri)
		s.mu.Unlock()
		if !ok {
			s.fail(id, codeResourceNotFound, texts.NoResource(uri))
			return
		}
		s.forward(owner, msg, env)
	case "completion/complete":
		s.complete(msg, env)
	case "logging/setLevel":
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
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.own[string(id)] = cancel
	s.mu.Unlock()
	s.m.wg.Go(func() {
		defer cancel()
		f(ctx)
	})
}

// port returns the session's port on server name, opening it when the
// server exists (and, for a legacy client whose handshake came, sending
// that handshake; for a 2026-07-28 client, a listen of the mux's own, by
// which it hears of changes); nil when it does not.
func (s *session) port(name string) *port {
	s.m.mu.Lock()
	srv, ok := s.m.servers[name]
	usable := ok && srv.b != nil && !srv.removed
	s.m.mu.Unlock()
	if !usable {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	p := s.ports[name]
	var stale *port
	if p != nil && p.srv != srv {
		// The server was removed and added again: a new backend.
		stale, p = p, nil
	}
	if p == nil {
		p = &port{srv: srv, ready: make(chan struct{}), client: wire.ClientFunc(func(msg, rel []byte) { s.fromServer(name, msg, rel) })}
		s.ports[name] = p
	}
	var open [][]byte
	if !p.opened && (s.st.Era == wire.EraLegacy && s.st.Init != nil || s.st.Era == wire.EraModern) {
		p.opened = true
		open = s.opening(p)
	}
	s.mu.Unlock()
	if stale != nil {
		stale.close()
	}
	sess := p.open() // the server's child for this session starts now
	for _, m := range open {
		sess.Send(m)
	}
	return p
}

// opening is what opens port p for the client's session: a legacy
// client's handshake (initialize under an id of the mux's, whose answer
// is awaited for the server's instructions; initialized; the log level);
// for a 2026-07-28 client, a listen of the mux's own, on which the server
// says its lists changed. s.mu is held.
func (s *session) opening(p *port) [][]byte {
	if s.st.Era == wire.EraModern {
		close(p.ready)
		params := map[string]any{"notifications": map[string]bool{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}}
		if s.st.Meta != nil {
			params["_meta"] = json.RawMessage(s.st.Meta)
		}
		b, _ := json.Marshal(params)
		return [][]byte{wire.Request(s.newID(), "subscriptions/listen", b)}
	}
	env, err := wire.Peek(s.st.Init)
	if err != nil {
		close(p.ready)
		return nil
	}
	id := s.newID()
	ch := make(chan []byte, 1)
	s.waits[string(id)] = ch
	name := p.srv.spec.Name
	s.m.wg.Go(func() {
		defer close(p.ready)
		select {
		case ans := <-ch:
			if in := stringMember(jsonscan.Member(ans, "result"), "instructions"); in != "" {
				s.mu.Lock()
				s.instr[name] = in
				s.mu.Unlock()
			}
		case <-s.ctx.Done():
		case <-time.After(handshakeWait):
		}
	})
	out := [][]byte{wire.Request(id, "initialize", env.Params)}
	if s.st.Initialized {
		out = append(out, wire.Request(nil, "notifications/initialized", nil))
	}
	if s.st.Level != nil {
		out = append(out, wire.Request(s.newID(), "logging/setLevel", s.st.Level))
	}
	return out
}

// handshakeWait bounds the wait for a server's answer to the handshake
// the mux gave it.
const handshakeWait = 30 * time.Second

// ask sends a request of the mux's own to p and waits for its answer.
func (s *session) ask(ctx context.Context, p *port, method string, params []byte) ([]byte, error) {
	id := s.newID()
	ch := make(chan []byte, 1)
	s.mu.Lock()
	s.waits[string(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waits, string(id))
		s.mu.Unlock()
	}()
	p.open().Send(wire.Request(id, method, params))
	select {
	case msg := <-ch:
		return msg, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
	p.open().Send(msg)
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
		_, client := s.calls[string(rel)]
		delete(s.calls, string(rel))
		s.mu.Unlock()
		if client {
			s.answer(msg, rel)
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
		s.stale(name)
	case bytes.HasPrefix(jsonscan.Member(jsonscan.Member(env.Params, "_meta"), mcp.MetaKeySubscriptionID), []byte(ownPrefix)):
		// On a listen of the mux's own (its acknowledgement).
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
	p.open().Send(wire.Splice(msg, env.IDStart, env.IDEnd, sr.id))
}

func (s *session) clientNotification(msg []byte, env wire.Envelope) {
	switch env.Method {
	case "notifications/initialized":
		for _, p := range s.openPorts() {
			p.open().Send(msg)
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
			p.open().Send(msg)
		}
		return
	}
	for _, p := range s.openPorts() {
		p.open().Send(msg)
	}
}

// openPorts are the ports the client's session reached.
func (s *session) openPorts() []*port {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*port
	for _, p := range s.ports {
		if p.opened {
			out = append(out, p)
		}
	}
	return out
}

// serverUp opens the session's part on a server that was added or came
// up, and reads what it lists once the client's session is set up.
func (s *session) serverUp(srv *server) {
	s.port(srv.spec.Name)
	s.mu.Lock()
	set := s.st.Era == wire.EraLegacy && s.st.Init != nil || s.st.Era == wire.EraModern
	s.mu.Unlock()
	if set {
		s.stale(srv.spec.Name)
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
	modern := s.st.Era == wire.EraModern
	changed := s.cat.pub[name] != nil
	s.cat.unpublish(name)
	s.mu.Unlock()
	if p != nil {
		p.close()
	}
	if changed {
		s.listsChanged()
	}
	text := texts.RemovedBeforeAnswer(name, s.m.existing())
	for _, id := range ids {
		s.answer(wire.ResultResponse([]byte(id), errToolResult(text, modern)), []byte(id))
	}
}

// listsChanged tells the client its lists changed (coalesced; in its
// era's way, once its session is established: wire.State.ListChanged).
func (s *session) listsChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.notify != nil {
		return
	}
	s.notify = time.AfterFunc(10*time.Millisecond, func() {
		s.mu.Lock()
		s.notify = nil
		out := s.st.ListChanged("tools", "prompts", "resources")
		s.mu.Unlock()
		for _, m := range out {
			s.deliver(m.Msg, m.Rel)
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
