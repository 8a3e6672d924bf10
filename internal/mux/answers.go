package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The requests the mux answers for itself: the handshake, the merged
// lists, a listen stream. Each waits for the servers at most as long as
// the client waits for a server.

// wait is how long the client's first requests wait for servers still
// starting: Config.StartWait, else as long as the client waits by its
// name.
func (s *session) wait(env wire.Envelope) time.Duration {
	if w := s.m.cfg.StartWait; w > 0 {
		return w
	}
	name := env.ClientName()
	if name == "" {
		s.mu.Lock()
		name = s.st.Client.Name
		s.mu.Unlock()
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
	s.m.wg.Go(func() {
		defer close(ch)
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
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
		case <-s.ctx.Done():
		}
	})
	return ch
}

// allPorts opens the session on every server, waiting at most until
// deadline for those still being made, and returns the ports by name.
func (s *session) allPorts(ctx context.Context, deadline <-chan struct{}) map[string]*port {
	return s.portsOf(ctx, s.m.names(), deadline)
}

// portsOf opens the session on the servers named, waiting at most until
// deadline (nil: none) for those still being made.
func (s *session) portsOf(ctx context.Context, names []string, deadline <-chan struct{}) map[string]*port {
	out := map[string]*port{}
	for _, n := range names {
		s.m.mu.Lock()
		srv := s.m.servers[n]
		s.m.mu.Unlock()
		if srv == nil {
			continue
		}
		select {
		case <-srv.made:
		case <-deadline:
			return out
		case <-ctx.Done():
			return out
		}
		if p := s.port(n); p != nil {
			out[n] = p
		}
	}
	return out
}

// openAll opens the session on every server and waits, at most until
// deadline, for their first start to end (but for a server whose record
// answers at once) and, with handshake, for their answers to the
// client's handshake; it returns the ports.
func (s *session) openAll(ctx context.Context, deadline <-chan struct{}, handshake bool) map[string]*port {
	ports := s.allPorts(ctx, deadline)
	for _, p := range ports {
		up, ready := p.srv.up, p.ready
		if r, ok := p.srv.b.(recorder); ok && r.HasRecord() {
			up = nil
		}
		if !handshake {
			ready = nil
		}
		for _, ch := range []chan struct{}{ready, up} {
			if ch == nil {
				continue
			}
			select {
			case <-ch:
			case <-deadline:
				return ports
			case <-ctx.Done():
				return ports
			}
		}
	}
	return ports
}

// initialize answers a legacy client's handshake: the mux's own
// capabilities, and the instructions of the servers that answered theirs
// by then.
func (s *session) initialize(ctx context.Context, env wire.Envelope) {
	s.openAll(ctx, s.startDeadline(s.wait(env)), true)
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
		"capabilities":    capabilities(),
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
func capabilities() map[string]any {
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
	names := s.m.names()
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
// that era when there are servers and every one of them does (each asked
// through the client's own session with it, by the deadline); otherwise
// the client is told the method is not found, and falls back to the
// legacy handshake, which every server takes (one of 2026-07-28 only
// through the era bridge).
func (s *session) discover(ctx context.Context, env wire.Envelope) {
	deadline := s.startDeadline(s.wait(env))
	ports := s.openAll(ctx, deadline, false)
	type answer struct {
		name string
		msg  []byte
	}
	answers := make(chan answer, len(ports))
	asked := 0
	for n, p := range ports {
		asked++
		s.m.wg.Go(func() {
			actx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
			go func() {
				select {
				case <-deadline:
					cancel()
				case <-actx.Done():
				}
			}()
			msg, _ := s.ask(actx, p, "server/discover", env.Params)
			answers <- answer{n, msg}
		})
	}
	modern := asked > 0
	for range asked {
		a := <-answers
		var d struct {
			SupportedVersions []string `json:"supportedVersions"`
			Instructions      string   `json:"instructions"`
		}
		if res := jsonscan.Member(a.msg, "result"); res == nil || json.Unmarshal(res, &d) != nil || !slices.ContainsFunc(d.SupportedVersions, wire.IsModern) {
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
		"capabilities":      capabilities(),
		"instructions":      s.instructions(),
		"_meta":             map[string]any{mcp.MetaKeyServerInfo: s.m.serverInfo()},
	}
	b, _ := json.Marshal(res)
	s.reply(env.ID, b)
}

// listWait bounds how long a */list waits for the servers' lists, past
// the servers' start.
const listWait = 5 * time.Second

// answerList answers a */list from the session's catalog, once the lists
// of every server are read (at most until the deadline: one that answers
// later is published then, and the client told); the mux lists
// everything on one page.
func (s *session) answerList(ctx context.Context, env wire.Envelope) {
	deadline := s.startDeadline(s.wait(env))
	names := s.m.names()
	s.refresh(ctx, names, deadline)
	field := map[string]string{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}[env.Method]
	var own [][]byte
	if field == "tools" {
		own = s.m.ownTools()
	}
	s.mu.Lock()
	res := s.cat.list(field, names, own)
	s.mu.Unlock()
	s.reply(env.ID, res)
}

// refresh reads the lists of the servers named whose catalog entry is
// not current, and waits until they are in, the deadline passes (nil:
// listWait does) or ctx ends.
func (s *session) refresh(ctx context.Context, names []string, deadline <-chan struct{}) {
	var waits []chan struct{}
	for n := range s.portsOf(ctx, names, deadline) {
		if ch := s.readLists(n); ch != nil {
			waits = append(waits, ch)
		}
	}
	var timeout <-chan time.Time
	if deadline == nil {
		t := time.NewTimer(listWait)
		defer t.Stop()
		timeout = t.C
	}
	for _, ch := range waits {
		select {
		case <-ch:
		case <-deadline:
			return
		case <-timeout:
			return
		case <-ctx.Done():
			return
		}
	}
}

// readLists starts reading server name's lists through the session's
// port, unless they are current; it returns a channel closed once they
// are in (nil: nothing to read).
func (s *session) readLists(name string) chan struct{} {
	p := s.port(name)
	if p == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.read != nil || p.fresh {
		return p.read
	}
	done := make(chan struct{})
	p.read, p.fresh = done, true
	s.m.wg.Go(func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(s.ctx, readTimeout)
		defer cancel()
		select {
		case <-p.ready:
		case <-ctx.Done():
		}
		for ctx.Err() == nil {
			s.mu.Lock()
			asked := p.asked
			s.mu.Unlock()
			l, err := s.fetchLists(ctx, p)
			s.mu.Lock()
			again := p.asked != asked // marked stale while it was read
			changed := err == nil && s.ports[name] == p && s.cat.publish(name, l)
			if !again {
				p.read, p.fresh = nil, err == nil
			}
			s.mu.Unlock()
			if err != nil {
				s.m.log.Debug("reading a server's lists", "server", name, "err", err)
			}
			if changed {
				s.listsChanged()
			}
			if !again {
				return
			}
		}
		s.mu.Lock()
		p.read, p.fresh = nil, false
		s.mu.Unlock()
	})
	return done
}

// readTimeout bounds one reading of a server's lists (a server still
// starting answers once it is up).
const readTimeout = 10 * time.Minute

// stale marks server name's lists in the catalog as no longer current
// (the server said they changed, or it came up): they are read again.
func (s *session) stale(name string) {
	s.mu.Lock()
	p := s.ports[name]
	if p != nil {
		p.fresh = false
		p.asked++
	}
	s.mu.Unlock()
	if p != nil {
		s.readLists(name)
	}
}

// fetchLists reads every page of each of a server's lists through p.
func (s *session) fetchLists(ctx context.Context, p *port) (Lists, error) {
	var l Lists
	for _, k := range []struct {
		method, field string
		into          *[]json.RawMessage
	}{{"tools/list", "tools", &l.Tools}, {"prompts/list", "prompts", &l.Prompts}, {"resources/list", "resources", &l.Resources}, {"resources/templates/list", "resourceTemplates", &l.Templates}} {
		cursor := ""
		for page := 0; page < 100; page++ {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			s.mu.Lock()
			if s.st.Era == wire.EraModern && s.st.Meta != nil {
				params["_meta"] = json.RawMessage(s.st.Meta)
			}
			s.mu.Unlock()
			b, _ := json.Marshal(params)
			msg, err := s.ask(ctx, p, k.method, b)
			if err != nil {
				return Lists{}, err
			}
			res := jsonscan.Member(msg, "result")
			if res == nil {
				if k.method == "tools/list" {
					return Lists{}, fmt.Errorf("tools/list: %s", jsonscan.Member(msg, "error"))
				}
				break // a server without that list
			}
			var items []json.RawMessage
			_ = json.Unmarshal(jsonscan.Member(res, k.field), &items)
			*k.into = append(*k.into, items...)
			if cursor = stringMember(res, "nextCursor"); cursor == "" {
				break
			}
		}
	}
	return l, nil
}

// listen answers a 2026-07-28 client's subscriptions/listen: the mux
// sends its list_changed there (the listen is in the session's State).
func (s *session) listen(env wire.Envelope) {
	ack := `{"_meta":{"` + mcp.MetaKeySubscriptionID + `":` + string(env.ID) + `},"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}`
	s.deliver(wire.Request(nil, "notifications/subscriptions/acknowledged", []byte(ack)), env.ID)
	for _, n := range s.m.names() {
		s.readLists(n)
	}
}

// setLevel gives each server the client's logging level and answers once
// every server took it (or answered otherwise: a server that refuses it
// keeps serving), at most listWait: a call the client makes next finds
// the level set.
func (s *session) setLevel(ctx context.Context, env wire.Envelope) {
	var wg sync.WaitGroup
	wctx, cancel := context.WithTimeout(ctx, listWait)
	defer cancel()
	for _, p := range s.openPorts() {
		wg.Go(func() { _, _ = s.ask(wctx, p, "logging/setLevel", env.Params) })
	}
	wg.Wait()
	if ctx.Err() == nil {
		s.reply(env.ID, []byte(`{}`))
	}
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
	if _, ok := s.route(name); !ok {
		// A server not read yet, or in its first start, may have it: its
		// lists are read (bounded), off the client's read.
		if srvName, _, split := splitName(name, s.m.sep); split && s.m.exists(srvName) {
			s.goOwn(env.ID, func(ctx context.Context) {
				s.refresh(ctx, []string{srvName}, s.startDeadline(s.wait(env)))
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
	s.routeCall(msg, env, name)
}

// route finds the server and own name of a tool as the client names it.
func (s *session) route(name string) (route, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.cat.tools[name]
	return r, ok
}

// routeCall sends a call of a server's tool to it under the tool's own
// name, or answers why it cannot.
func (s *session) routeCall(msg []byte, env wire.Envelope, name string) {
	r, ok := s.route(name)
	if !ok {
		s.reply(env.ID, errToolResult(s.unknownTool(name), s.isModern()))
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
	return s.st.Era == wire.EraModern
}

// complete routes completion/complete by its ref: a prompt's server
// (under its own name), or the owner of a resource.
func (s *session) complete(msg []byte, env wire.Envelope) {
	ref := jsonscan.Member(env.Params, "ref")
	switch stringMember(ref, "type") {
	case "ref/prompt":
		name := stringMember(ref, "name")
		s.mu.Lock()
		r, ok := s.cat.prompts[name]
		s.mu.Unlock()
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
		s.mu.Lock()
		owner, ok := s.cat.owner(uri)
		s.mu.Unlock()
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

// unknownTool explains a call to a tool the session does not list.
func (s *session) unknownTool(name string) string {
	m := s.m
	srvName, tool, ok := splitName(name, m.sep)
	m.mu.Lock()
	srv, exists := m.servers[srvName]
	running := exists && srv.status == StatusRunning
	m.mu.Unlock()
	switch {
	case name == "add_server" || !ok:
		return texts.UnknownTool(name, m.sep, m.existing())
	case !exists || !running:
		return m.notRunning(srvName)
	}
	s.mu.Lock()
	var front []string
	if p := s.cat.pub[srvName]; p != nil {
		front = p.names
	}
	s.mu.Unlock()
	return texts.NoSuchTool(srvName, tool, front)
}

// opened waits until srv, just added, answered this session's handshake
// and its lists were read; it returns the report of a server that went
// down meanwhile.
func (s *session) opened(ctx context.Context, srv *server) error {
	name := srv.spec.Name
	if p := s.port(name); p != nil {
		select {
		case <-p.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.stale(name)
	s.refresh(ctx, []string{name}, nil)
	s.m.mu.Lock()
	status, report := srv.status, srv.report
	s.m.mu.Unlock()
	if status == StatusCrashed || status == StatusBuildFailed {
		if srv.spec.Source != "config" {
			s.m.remove(name)
		}
		return fmt.Errorf("server %q: %s", name, report)
	}
	return nil
}

// serverInfo is the mux's Implementation: mcpflow and its version, each
// followed by Config.ServerSuffix.
func (m *Mux) serverInfo() map[string]string {
	return map[string]string{"name": "mcpflow" + m.cfg.ServerSuffix, "version": m.cfg.Version + m.cfg.ServerSuffix}
}
