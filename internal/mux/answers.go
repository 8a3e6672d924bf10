package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The requests the mux answers for itself: the handshake, the merged
// lists, a listen stream. Each waits for the servers at most as long as
// the client waits for a server.

// wait is how long the client's handshake waits for servers still
// starting: Config.StartWait, else as long as the client waits by its
// name.
func (s *session) wait(env wire.Envelope) time.Duration {
	if w := s.m.cfg.StartWait; w > 0 {
		return w
	}
	name := env.ClientName()
	if name == "" {
		name = s.clientInfo().Name
	}
	return relay.ClientWait(name)
}

// startDeadline is closed when the session's requests stop waiting for
// the servers still starting: wait after the session's first request that
// waits (one deadline for the handshake and the lists read with it), or,
// when the client's input ended by then, InputWait after it.
func (s *session) startDeadline(wait time.Duration) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.startBy != nil {
		return s.startBy
	}
	ch := make(chan struct{})
	s.startBy = ch
	start := time.Now()
	go func() {
		defer close(ch)
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.m.ctx.Done():
			return
		}
		select {
		case <-s.m.ended:
		default:
			return
		}
		t.Reset(s.m.cfg.InputWait - time.Since(start))
		select {
		case <-t.C:
		case <-s.m.ctx.Done():
		}
	}()
	return ch
}

// awaitStarting waits, at most until deadline, for the servers still
// starting, and returns every server.
func (s *session) awaitStarting(ctx context.Context, deadline <-chan struct{}) []*server {
	s.m.mu.Lock()
	var all []*server
	for _, n := range s.m.namesLocked() {
		all = append(all, s.m.servers[n])
	}
	s.m.mu.Unlock()
	for _, srv := range all {
		select {
		case <-srv.up:
		case <-srv.fromRec: // answered from its record
		case <-deadline:
			return all
		case <-ctx.Done():
			return all
		}
	}
	return all
}

// openAll opens the session on every server, waiting at most until
// deadline for those still starting, and then for the answers to the
// handshakes sent.
func (s *session) openAll(ctx context.Context, deadline <-chan struct{}) {
	for _, srv := range s.awaitStarting(ctx, deadline) {
		s.port(srv.spec.Name)
	}
	s.mu.Lock()
	var pend []chan struct{}
	for _, ch := range s.pending {
		pend = append(pend, ch)
	}
	s.mu.Unlock()
	for _, ch := range pend {
		select {
		case <-ch:
		case <-deadline:
			return
		case <-ctx.Done():
			return
		}
	}
}

// initialize answers a legacy client's handshake: the mux's own
// capabilities, and the instructions of the servers up by then.
func (s *session) initialize(ctx context.Context, env wire.Envelope) {
	s.openAll(ctx, s.startDeadline(s.wait(env)))
	var asked struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(env.Params, &asked)
	version := latestLegacy()
	if slices.Contains(mcp.SupportedProtocolVersions(), asked.ProtocolVersion) && !wire.IsModern(asked.ProtocolVersion) {
		version = asked.ProtocolVersion
	}
	res := map[string]any{
		"protocolVersion": version,
		"capabilities":    s.m.capabilities(),
		"serverInfo":      s.m.serverInfo(),
		"instructions":    s.instructions(),
	}
	b, _ := json.Marshal(res)
	s.reply(env.ID, b)
}

// latestLegacy is the newest protocol version of the legacy era.
func latestLegacy() string {
	v := ""
	for _, x := range mcp.SupportedProtocolVersions() {
		if !wire.IsModern(x) && x > v {
			v = x
		}
	}
	return v
}

// capabilities are the mux's: every list, changes announced, resource
// subscriptions, logging and completion routed to the servers.
func (m *Mux) capabilities() map[string]any {
	return map[string]any{
		"tools":       map[string]bool{"listChanged": true},
		"prompts":     map[string]bool{"listChanged": true},
		"resources":   map[string]bool{"listChanged": true, "subscribe": true},
		"logging":     map[string]any{},
		"completions": map[string]any{},
	}
}

// instructions combines the servers' instructions under their names.
func (s *session) instructions() string {
	var b strings.Builder
	b.WriteString(texts.MuxInstructions(s.m.sep))
	s.m.mu.Lock()
	names := s.m.namesLocked()
	s.m.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if in := strings.TrimSpace(s.instr[n]); in != "" {
			fmt.Fprintf(&b, "\n\n## %s\n%s", n, in)
		}
	}
	return b.String()
}

// discover answers a 2026-07-28 client's server/discover: the mux speaks
// that era when there are servers and every server up does; when one does
// not (a legacy-only server refuses server/discover), or none runs yet (a
// server added later may not), the client is told the method is not
// found, and falls back to the legacy handshake, which every server takes
// (one of 2026-07-28 only through the era bridge).
func (s *session) discover(ctx context.Context, env wire.Envelope) {
	deadline := s.startDeadline(s.wait(env))
	var names []string
	for _, srv := range s.awaitStarting(ctx, deadline) {
		s.m.mu.Lock()
		if srv.status == StatusRunning && !srv.removed {
			names = append(names, srv.spec.Name)
		}
		s.m.mu.Unlock()
	}
	type answer struct {
		name string
		msg  []byte
	}
	answers := make(chan answer, len(names))
	asked := 0
	for _, n := range names {
		p := s.port(n)
		if p == nil {
			continue
		}
		id := s.newID()
		ch := make(chan []byte, 1)
		s.mu.Lock()
		s.waits[string(id)] = ch
		s.mu.Unlock()
		p.sess.Send(wire.Request(id, "server/discover", env.Params))
		asked++
		go func() {
			select {
			case msg := <-ch:
				answers <- answer{n, msg}
			case <-deadline:
				answers <- answer{n, nil}
			case <-ctx.Done():
				answers <- answer{n, nil}
			}
		}()
	}
	modern := asked > 0
	for range asked {
		a := <-answers
		res := jsonscan.Member(a.msg, "result")
		var d struct {
			SupportedVersions []string `json:"supportedVersions"`
			Instructions      string   `json:"instructions"`
		}
		if res == nil || json.Unmarshal(res, &d) != nil || !slices.ContainsFunc(d.SupportedVersions, wire.IsModern) {
			modern = false
			continue
		}
		s.mu.Lock()
		s.instr[a.name] = d.Instructions
		s.mu.Unlock()
	}
	if !modern {
		s.fail(env.ID, wire.CodeMethodNotFound, "Method not found: a server behind mcpflow speaks only the legacy protocol; use initialize")
		return
	}
	res := map[string]any{
		"supportedVersions": mcp.SupportedProtocolVersions(),
		"capabilities":      s.m.capabilities(),
		"instructions":      s.instructions(),
		"_meta":             map[string]any{mcp.MetaKeyServerInfo: s.m.serverInfo()},
	}
	b, _ := json.Marshal(res)
	s.reply(env.ID, b)
}

// listWait bounds how long a */list waits for the servers up to be read.
const listWait = 5 * time.Second

// answerList answers a */list from the catalog, once the servers up were
// read (at most listWait); the mux lists everything on one page.
func (s *session) answerList(ctx context.Context, env wire.Envelope) {
	s.awaitStarting(ctx, s.startDeadline(s.wait(env)))
	deadline := time.Now().Add(listWait)
	for {
		s.m.mu.Lock()
		waiting := false
		for _, srv := range s.m.servers {
			waiting = waiting || srv.status == StatusRunning && !srv.listed
		}
		ch := s.m.listedCh()
		s.m.mu.Unlock()
		if !waiting || time.Now().After(deadline) {
			break
		}
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		case <-ctx.Done():
			return
		}
	}
	field := map[string]string{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}[env.Method]
	var own [][]byte
	if field == "tools" {
		own = s.m.ownTools()
	}
	s.m.mu.Lock()
	res := s.m.list(field, own)
	s.m.mu.Unlock()
	s.reply(env.ID, res)
}

// listen holds a 2026-07-28 client's subscriptions/listen: the mux sends
// its list_changed there; each server up gets a listen of the mux's own,
// whose notifications tell the mux to read its lists again.
func (s *session) listen(env wire.Envelope) {
	s.mu.Lock()
	s.listens[string(env.ID)] = true
	s.mu.Unlock()
	ack := `{"_meta":{"` + mcp.MetaKeySubscriptionID + `":` + string(env.ID) + `},"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}`
	s.deliver(wire.Request(nil, "notifications/subscriptions/acknowledged", []byte(ack)), env.ID)
	s.m.mu.Lock()
	var names []string
	for _, n := range s.m.namesLocked() {
		if s.m.servers[n].status == StatusRunning {
			names = append(names, n)
		}
	}
	s.m.mu.Unlock()
	for _, n := range names {
		s.listenOn(n)
	}
}

// listenOn opens the mux's own listen on server name, once.
func (s *session) listenOn(name string) {
	s.mu.Lock()
	if s.listening[name] || len(s.listens) == 0 {
		s.mu.Unlock()
		return
	}
	s.listening[name] = true
	meta := s.meta
	s.mu.Unlock()
	p := s.port(name)
	if p == nil {
		return
	}
	params := map[string]any{"notifications": map[string]bool{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}}
	if meta != nil {
		params["_meta"] = meta
	}
	b, _ := json.Marshal(params)
	s.ownRequest(p, "subscriptions/listen", b)
}

// call routes a tools/call: the mux's own tools, the call tool, or a
// server's tool under its own name.
func (s *session) call(msg []byte, env wire.Envelope) {
	name := stringMember(env.Params, "name")
	if s.m.isOwnTool(name) {
		args := jsonscan.Member(env.Params, "arguments")
		if name == s.m.cfg.CallTool {
			s.callTool(msg, env, args)
			return
		}
		s.goOwn(env.ID, func(ctx context.Context) { s.reply(env.ID, s.m.runOwnTool(ctx, s, name, args, s.isModern())) })
		return
	}
	if _, ok := s.m.route(name); !ok {
		// A server up and not read yet, or in its first start, may have
		// it: its lists are waited for (bounded), off the client's read.
		if srvName, _, split := splitName(name, s.m.sep); split {
			s.m.mu.Lock()
			srv := s.m.servers[srvName]
			s.m.mu.Unlock()
			if srv != nil {
				s.goOwn(env.ID, func(ctx context.Context) {
					s.m.waitListed(ctx, srv)
					s.mu.Lock()
					delete(s.own, string(env.ID))
					s.mu.Unlock()
					if ctx.Err() == nil {
						s.routeCall(msg, env, name)
					}
				})
				return
			}
		}
	}
	s.routeCall(msg, env, name)
}

// routeCall sends a call of a server's tool to it under the tool's own
// name, or answers why it cannot.
func (s *session) routeCall(msg []byte, env wire.Envelope, name string) {
	r, ok := s.m.route(name)
	if !ok {
		s.reply(env.ID, errToolResult(s.m.unknownTool(name), s.isModern()))
		return
	}
	if s.port(r.server) == nil {
		s.reply(env.ID, errToolResult(s.m.notRunning(r.server), s.isModern()))
		return
	}
	s.forward(r.server, withName(msg, env, r.name), env)
}

// callTool is Config.CallTool: a call of {name, arguments} becomes a
// tools/call of that tool.
func (s *session) callTool(msg []byte, env wire.Envelope, args []byte) {
	p := map[string]json.RawMessage{"name": jsonscan.Member(args, "name")}
	if p["name"] == nil {
		s.reply(env.ID, errToolResult(s.m.cfg.CallTool+": give the tool's full name, SERVER"+s.m.sep+"tool", s.isModern()))
		return
	}
	if a := jsonscan.Member(args, "arguments"); a != nil {
		p["arguments"] = a
	}
	if m := jsonscan.Member(env.Params, "_meta"); m != nil {
		p["_meta"] = m
	}
	b, _ := json.Marshal(p)
	out := wire.Request(env.ID, "tools/call", b)
	ne, err := wire.Peek(out)
	if err != nil {
		return
	}
	if s.m.isOwnTool(stringMember(b, "name")) {
		s.reply(env.ID, errToolResult(s.m.cfg.CallTool+" calls the servers' tools, not mcpflow's", s.isModern()))
		return
	}
	s.call(out, ne)
}

func (s *session) isModern() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.era == eraModern
}

// complete routes completion/complete by its ref: a prompt's server
// (under its own name), or the owner of a resource.
func (s *session) complete(msg []byte, env wire.Envelope) {
	ref := jsonscan.Member(env.Params, "ref")
	switch stringMember(ref, "type") {
	case "ref/prompt":
		name := stringMember(ref, "name")
		s.m.mu.Lock()
		r, ok := s.m.cat.prompts[name]
		s.m.mu.Unlock()
		if !ok {
			s.fail(env.ID, wire.CodeInvalidParams, fmt.Sprintf("no prompt %q: %s", name, s.m.existing()))
			return
		}
		rs, re, _ := jsonscan.MemberSpan(env.Params, "ref")
		ns, ne, ok := jsonscan.MemberSpan(env.Params[rs:re], "name")
		if ok {
			q, _ := json.Marshal(r.name)
			at := env.ParStart + rs
			msg = wire.Splice(msg, at+ns, at+ne, q)
		}
		s.forward(r.server, msg, env)
	case "ref/resource":
		uri := stringMember(ref, "uri")
		s.m.mu.Lock()
		owner, ok := s.m.cat.owner(uri)
		s.m.mu.Unlock()
		if !ok {
			s.fail(env.ID, wire.CodeInvalidParams, texts.NoResource(uri))
			return
		}
		s.forward(owner, msg, env)
	default:
		s.fail(env.ID, wire.CodeInvalidParams, "completion/complete: unknown ref type")
	}
}

// notRunning says why server name takes no call now, and what to do.
func (m *Mux) notRunning(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[name]
	if !ok {
		return texts.ServerState(name, "", "", m.existingLocked(), false)
	}
	return texts.ServerState(name, s.status, s.report, "", true)
}

// unknownTool explains a call to a tool the mux does not list.
func (m *Mux) unknownTool(name string) string {
	srvName, tool, ok := splitName(name, m.sep)
	m.mu.Lock()
	s, exists := m.servers[srvName]
	var front []string
	if exists {
		front = s.published.names
	}
	running := exists && s.status == StatusRunning
	m.mu.Unlock()
	switch {
	case name == "add_server" || !ok:
		return texts.UnknownTool(name, m.sep, m.existing())
	case !exists || !running:
		return m.notRunning(srvName)
	}
	return texts.NoSuchTool(srvName, tool, front)
}

// listedCh is closed the next time a server's lists are read. m.mu is
// held.
func (m *Mux) listedCh() chan struct{} {
	if m.listed == nil {
		m.listed = make(chan struct{})
	}
	return m.listed
}

// noteListed wakes who waits for a server's lists. m.mu is held.
func (m *Mux) noteListed() {
	if m.listed != nil {
		close(m.listed)
		m.listed = nil
	}
}

// route finds the server and own name of a tool as clients name it.
func (m *Mux) route(name string) (route, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.cat.tools[name]
	return r, ok
}

// opened waits until srv, just added, answered this session's handshake
// (at most relay.DefaultHandshake) and was read; it returns the report of
// a server that went down meanwhile: one that never answers is stopped
// by its relay (relay.handshake_timeout) and reported.
func (s *session) opened(ctx context.Context, srv *server) error {
	name := srv.spec.Name
	s.port(name)
	s.mu.Lock()
	done := s.pending[name]
	s.mu.Unlock()
	if done != nil {
		t := time.NewTimer(relay.DefaultHandshake)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	lctx, cancel := context.WithTimeout(ctx, relay.DefaultHandshake)
	err := (lifecycle{s.m}).relist(lctx, srv)
	cancel()
	if err == nil {
		return nil
	}
	// Not ready: it went down; its report comes with the crash event.
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	for {
		s.m.mu.Lock()
		status, report := srv.status, srv.report
		ch := s.m.listedCh()
		s.m.mu.Unlock()
		if status == StatusCrashed || status == StatusBuildFailed {
			if srv.spec.Source != "config" {
				s.m.remove(name)
			}
			return fmt.Errorf("server %q: %s", name, report)
		}
		select {
		case <-ch:
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// serverInfo is the mux's Implementation: mcpflow and its version, each
// followed by Config.ServerSuffix.
func (m *Mux) serverInfo() map[string]string {
	return map[string]string{"name": "mcpflow" + m.cfg.ServerSuffix, "version": m.cfg.Version + m.cfg.ServerSuffix}
}
