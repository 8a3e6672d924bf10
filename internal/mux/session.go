package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// session is one client's session with the mux (a wire.Session): it
// answers what the mux answers for itself and routes the rest through its
// port on each server. What it lists is its own catalog: what one
// client's servers list reaches no other client.
type session struct {
	m      *Mux
	c      wire.Client
	ctx    context.Context // ends with the session (Close) or the mux
	cancel context.CancelFunc
	dmu    sync.Mutex // one message at a time to the client

	mu      sync.Mutex
	closed  bool
	st      wire.State // the client's session, as its messages set it up
	seen    time.Time  // its last message
	startBy <-chan struct{}
	ports   map[string]*port     // by server name
	calls   map[string]string    // the client's requests in flight on a server: id -> server
	own     map[string]func()    // the client's requests the mux answers itself: id -> cancel
	reqs    map[string]serverReq // servers' requests to the client, by the mux's id
	cat     catalog
	notify  *time.Timer // a list_changed to the client, coalesced
}

// serverReq is a server's request to the client: who asked, under what id.
type serverReq struct {
	server string
	id     []byte
}

func newSession(m *Mux, c wire.Client) *session {
	ctx, cancel := context.WithCancel(m.ctx)
	return &session{
		m: m, c: c, ctx: ctx, cancel: cancel,
		ports: map[string]*port{}, calls: map[string]string{}, own: map[string]func(){}, reqs: map[string]serverReq{},
		cat: catalog{sep: m.sep, own: m.tools.names(), tools: map[string]route{}, prompts: map[string]route{}, res: map[string]string{}, tmpls: map[string]string{}, pub: map[string]*published{}},
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
	s.answer(wire.ResultResponse(id, wire.Complete(result, modern)), id)
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
	default:
		s.clientRequest(msg, env)
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
	case "initialize", "server/discover":
		s.goOwn(id, func(ctx context.Context) { s.handshake(ctx, env) })
	case "ping":
		s.reply(id, []byte(`{}`))
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		s.goOwn(id, func(ctx context.Context) { s.answerList(ctx, env) })
	case "tools/call":
		s.call(msg, env)
	case "prompts/get", "resources/read", "resources/subscribe", "resources/unsubscribe", "completion/complete":
		s.toOwner(msg, env)
	case "logging/setLevel":
		// Answered once every server took it (or answered otherwise: one
		// that refuses it keeps serving), at most listWait: a call the
		// client makes next finds the level set.
		s.goOwn(id, func(ctx context.Context) {
			wctx, cancel := context.WithTimeout(ctx, listWait)
			defer cancel()
			askAll(wctx, nil, s.openPorts(), "logging/setLevel", env.Params)
			if ctx.Err() == nil {
				s.reply(id, []byte(`{}`))
			}
		})
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

// call routes a tools/call: a tool of the mux's own (the call tool's
// call becomes the call of the tool it names), or a server's tool. A
// server that is not read yet, or in its first start, may have a tool
// not listed: its lists are read first (bounded), off the client's read.
func (s *session) call(msg []byte, env wire.Envelope) {
	name := stringMember(env.Params, "name")
	if s.m.tools.has(name) {
		if name != s.m.cfg.CallTool {
			args := jsonscan.Member(env.Params, "arguments")
			s.goOwn(env.ID, func(ctx context.Context) { s.reply(env.ID, s.m.tools.run(ctx, s, name, args)) })
			return
		}
		var refusal string
		if msg, env, refusal = s.m.tools.unwrap(env); refusal != "" {
			s.reply(env.ID, toolError(refusal))
			return
		}
		name = stringMember(env.Params, "name")
	}
	s.mu.Lock()
	_, listed := s.cat.tools[name]
	s.mu.Unlock()
	if srv, _, ok := splitName(name, s.m.sep); !listed && ok && s.m.server(srv) != nil {
		s.goOwn(env.ID, func(ctx context.Context) {
			s.await(ctx, []string{srv}, s.startDeadline(env), true)
			s.mu.Lock()
			delete(s.own, string(env.ID))
			s.mu.Unlock()
			if ctx.Err() == nil {
				s.toOwner(msg, env)
			}
		})
		return
	}
	s.toOwner(msg, env)
}

// toOwner sends a request that names a tool, a prompt or a resource
// (tools/call, prompts/get, resources/*, completion/complete by its ref)
// to the server that listed it, a tool or prompt under its own name; one
// that none listed is refused.
func (s *session) toOwner(msg []byte, env wire.Envelope) {
	obj, at := env.Params, env.ParStart // the object that names it
	kind := map[string]string{"tools/call": "tool", "prompts/get": "prompt"}[env.Method]
	if env.Method == "completion/complete" {
		rs, re, _ := jsonscan.MemberSpan(env.Params, "ref")
		obj, at = env.Params[rs:re], at+rs
		switch stringMember(obj, "type") {
		case "ref/prompt":
			kind = "prompt"
		case "ref/resource":
		default:
			s.fail(env.ID, wire.CodeInvalidParams, "completion/complete: unknown ref type")
			return
		}
	}
	name, uri := stringMember(obj, "name"), stringMember(obj, "uri")
	var r route
	var ok bool
	s.mu.Lock()
	switch kind {
	case "tool":
		r, ok = s.cat.tools[name]
	case "prompt":
		r, ok = s.cat.prompts[name]
	default:
		r.server, ok = s.cat.owner(uri)
	}
	s.mu.Unlock()
	switch {
	case ok:
		if r.name != "" {
			ns, ne, _ := jsonscan.MemberSpan(obj, "name")
			q, _ := json.Marshal(r.name)
			msg = wire.Splice(msg, at+ns, at+ne, q)
		}
		s.forward(r.server, msg, env)
	case kind == "tool":
		s.reply(env.ID, toolError(s.unknownTool(name)))
	case kind == "prompt":
		s.fail(env.ID, wire.CodeInvalidParams, texts.UnknownPrompt(name, s.m.sep, s.m.existing()))
	case env.Method == "completion/complete":
		s.fail(env.ID, wire.CodeInvalidParams, texts.NoResource(uri))
	default:
		s.fail(env.ID, codeResourceNotFound, texts.NoResource(uri))
	}
}

// unknownTool explains a call to a tool the session does not list.
func (s *session) unknownTool(name string) string {
	srvName, tool, ok := splitName(name, s.m.sep)
	if !ok || name == "add_server" {
		return texts.UnknownTool(name, s.m.sep, s.m.existing())
	}
	if srv := s.m.server(srvName); srv == nil || srv.state().status != StatusRunning {
		return s.m.notRunning(srvName)
	}
	return texts.NoSuchTool(srvName, tool, s.published(srvName).names)
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

// clientNotification passes a notification to every server the session
// reached; a cancellation only to the server its request went to (or it
// cancels the mux's own answer).
func (s *session) clientNotification(msg []byte, env wire.Envelope) {
	if env.Method != "notifications/cancelled" {
		for _, p := range s.openPorts() {
			p.open().Send(msg)
		}
		return
	}
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

// port returns the session's port on server name, opening it when the
// server exists (and, once the client's session is set up, greeting it);
// nil when it does not.
func (s *session) port(name string) *port {
	srv := s.m.server(name)
	if srv == nil || srv.backend() == nil {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	p := s.ports[name]
	var old *port
	if p != nil && p.srv != srv {
		// The server was removed and added again: a new backend.
		old, p = p, nil
	}
	if p == nil {
		p = &port{s: s, srv: srv, ready: make(chan struct{}), waits: map[string]chan []byte{}}
		s.ports[name] = p
	}
	var greet [][]byte
	if !p.opened && (s.st.Era == wire.EraLegacy && s.st.Init != nil || s.st.Era == wire.EraModern) {
		greet = p.greet()
	}
	s.mu.Unlock()
	if old != nil {
		old.close()
	}
	sess := p.open() // the server's child for this session starts now
	for _, m := range greet {
		sess.Send(m)
	}
	return p
}

// serverGone closes the session's port on a server that was removed; its
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
		s.reply([]byte(id), toolError(text))
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

// published is what the session lists of server name (nothing for no
// session).
func (s *session) published(name string) published {
	if s == nil {
		return published{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.cat.pub[name]; p != nil {
		return *p
	}
	return published{}
}
