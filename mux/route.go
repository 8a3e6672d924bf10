package mux

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// front is the mux's side toward the client: the front server and the
// handlers of the client's requests, which it routes to the children.
type front struct{ *Mux }

// childSide is the mux's side toward each child: the handlers of the
// child's requests and notifications, which it passes to the client.
type childSide struct{ *Mux }

// newFront builds the MCP server the client talks to.
func (m front) newFront() *mcp.Server {
	srv := mcp.NewServer(m.impl(), &mcp.ServerOptions{
		Instructions: m.instructions(),
		Logger:       m.sdkLogger(),
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler: m.complete,
		InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
			childSide(m).rootsChanged(req.Session)
		},
		RootsListChangedHandler: func(ctx context.Context, req *mcp.RootsListChangedRequest) {
			childSide(m).rootsChanged(req.Session)
		},
		SubscribeHandler:   m.subscribe,
		UnsubscribeHandler: m.unsubscribe,
	})
	srv.AddReceivingMiddleware(m.frontMiddleware)
	if m.cfg.Single {
		admin(m).addSingleTool(srv)
	} else {
		admin(m).addManagementTools(srv)
	}
	return srv
}

// impl is the front server's implementation info.
func (m front) impl() *mcp.Implementation {
	return &mcp.Implementation{Name: "mcpflow-mux", Version: m.cfg.Version}
}

// instructions combines the children's instructions under their names.
func (m front) instructions() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	if m.cfg.Single {
		if s := m.servers[m.only()]; s != nil && s.cs != nil && s.cs.InitializeResult() != nil && !standIn(s.cs.InitializeResult()) {
			return s.cs.InitializeResult().Instructions
		}
		return ""
	}
	b.WriteString("mcpflow serves several MCP servers here. Their tools and prompts are named SERVER" + m.sep + "NAME. list_servers shows them; reload_server rebuilds and restarts one.")
	for _, n := range m.namesLocked() {
		s := m.servers[n]
		if s.cs == nil || s.cs.InitializeResult() == nil || standIn(s.cs.InitializeResult()) {
			continue
		}
		if in := strings.TrimSpace(s.cs.InitializeResult().Instructions); in != "" {
			fmt.Fprintf(&b, "\n\n## %s\n%s", n, in)
		}
	}
	return b.String()
}

// frontMiddleware answers calls to tools that do not exist with a tool
// error naming the servers that do, and sends logging/setLevel to every
// child.
func (m front) frontMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			m.sess.touch(ss, method, req)
		}
		switch method {
		case "tools/call":
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && !m.knownTool(p.Name) {
				return m.unknownTool(p.Name), nil
			}
		case "logging/setLevel":
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok {
				m.setLevel(ctx, p)
			}
		}
		return next(ctx, method, req)
	}
}

func (m front) knownTool(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.cat.tools[name]; ok {
		return true
	}
	if m.cfg.Single {
		return name == m.cfg.SingleTool
	}
	switch name {
	case "add_server":
		return !m.cfg.DisableAddServer
	case "remove_server", "reload_server", "list_servers":
		return true
	}
	return m.cfg.CallTool != "" && name == m.cfg.CallTool
}

// ownTool returns name when it is the name of one of mcpflow's own tools
// (the management tools, the call tool; in single mode, the rebuild tool),
// else "". m.mu is held or not needed: it reads only the config.
func (m front) ownTool(name string) string {
	own := ManagementTools()
	if m.cfg.Single {
		own = []string{m.cfg.SingleTool}
	}
	if slices.Contains(own, name) || m.cfg.CallTool != "" && name == m.cfg.CallTool {
		return name
	}
	return ""
}

// unknownTool explains a call to a tool the mux does not list.
func (m front) unknownTool(name string) *mcp.CallToolResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cfg.Single {
		return errResult(m.singleUnknownTool(name))
	}
	srvName, tool, ok := splitName(name, m.sep)
	var msg string
	switch s, exists := m.servers[srvName]; {
	case name == "add_server":
		msg = "add_server is turned off here ([mux] add_server = false in mcpflow.toml); " + m.existingLocked()
	case !ok:
		msg = fmt.Sprintf("unknown tool %q: tools of the servers behind mcpflow are named SERVER%sTOOL; %s", name, m.sep, m.existingLocked())
	case !exists:
		msg = fmt.Sprintf("no server named %q (it was removed, or never added): %s", srvName, m.existingLocked())
	case s.status == StatusCrashed || s.status == StatusBuildFailed:
		msg = fmt.Sprintf("server %q is down (%s): %s\n\nWhat to do: fix it, then call reload_server {\"name\": %q}.", srvName, s.status, s.report, srvName)
	case s.status == StatusStarting:
		msg = fmt.Sprintf("server %q is still starting; call list_servers to see when it runs, then call %q again", srvName, name)
	default:
		msg = fmt.Sprintf("server %q has no tool %q; its tools are: %s", srvName, tool, strings.Join(s.front, ", "))
	}
	return errResult(msg)
}

func errResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func (m front) setLevel(ctx context.Context, p *mcp.SetLoggingLevelParams) {
	m.mu.Lock()
	m.level = p
	var all []*mcp.ClientSession
	for _, s := range m.servers {
		if s.cs != nil {
			all = append(all, s.cs)
		}
	}
	m.mu.Unlock()
	for _, cs := range all {
		_ = cs.SetLoggingLevel(ctx, p)
	}
}

// session returns the client session of a running server, or the tool
// error a call to it gets.
func (m front) session(name string) (*mcp.ClientSession, *mcp.CallToolResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[name]
	if !ok {
		return nil, errResult(fmt.Sprintf("no server named %q (it was removed, or never added): %s", name, m.existingLocked()))
	}
	if s.status == StatusCrashed {
		return nil, errResult(m.downText(s))
	}
	if s.cs == nil {
		return nil, errResult(fmt.Sprintf("server %q is not connected (%s): call %s", name, s.status, m.reloadHint(name)))
	}
	return s.cs, nil
}

func (m front) downText(s *server) string {
	return fmt.Sprintf("server %q crashed: %s\n\nWhat to do: fix it, then call %s.", s.spec.Name, s.report, m.reloadHint(s.spec.Name))
}

// toolHandler forwards a call to the child's own tool name.
func (m front) toolHandler(server, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return m.callChild(ctx, req.Session, server, tool, req.Params)
	}
}

// callChild calls tool on server for the client session ss.
func (m front) callChild(ctx context.Context, ss *mcp.ServerSession, server, tool string, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	cs, bad := m.session(server)
	if bad != nil {
		return bad, nil
	}
	meta, end := m.sess.begin(ctx, ss, server, childMeta(p.Meta))
	defer end()
	if caps, ok := p.Meta[mcp.MetaKeyClientCapabilities]; ok && modernSession(cs) {
		// The child's input_required requests reach the client as they
		// are: it must ask only for what the client can do, not for what
		// the mux's own session declares.
		meta = withKey(meta, mcp.MetaKeyClientCapabilities, caps)
	}
	params := &mcp.CallToolParams{Meta: m.withLevel(meta), Name: tool, InputResponses: p.InputResponses, RequestState: p.RequestState}
	if len(p.Arguments) > 0 {
		params.Arguments = p.Arguments
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return m.callError(ctx, server, err)
	}
	if res.IsError {
		m.fixRelayTool(server, res)
	}
	return res, nil
}

// fixRelayTool names reload_server where a relay's text names its own
// rebuild tool, which the mux hides.
func (m front) fixRelayTool(server string, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			t.Text = strings.ReplaceAll(t.Text, relayTool, m.reloadHint(server))
		}
	}
}

// sessionMetaKeys are the _meta keys by which a 2026-07-28 peer describes
// its own session. The client's describe its session with the mux, not the
// mux's session with the child (whose era may differ: a legacy-only child
// refuses a request that names 2026-07-28), so they are not forwarded; the
// mux's client sets its own.
var sessionMetaKeys = []string{
	mcp.MetaKeyProtocolVersion,
	mcp.MetaKeyClientInfo,
	mcp.MetaKeyClientCapabilities,
	mcp.MetaKeyServerInfo,
	mcp.MetaKeySubscriptionID,
}

// childMeta is a request's _meta as forwarded to a child: everything but
// sessionMetaKeys (a progress token included).
func childMeta(meta mcp.Meta) mcp.Meta {
	found := false
	for _, k := range sessionMetaKeys {
		if _, ok := meta[k]; ok {
			found = true
			break
		}
	}
	if !found {
		return meta
	}
	out := make(mcp.Meta, len(meta))
	for k, v := range meta {
		if !slices.Contains(sessionMetaKeys, k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// withKey returns meta with key set to v (a copy when meta has members).
func withKey(meta mcp.Meta, key string, v any) mcp.Meta {
	out := mcp.Meta{key: v}
	for k, x := range meta {
		if k != key {
			out[k] = x
		}
	}
	return out
}

// modernSession reports whether the mux's session with a child is in the
// 2026-07-28 era.
func modernSession(cs *mcp.ClientSession) bool {
	init := cs.InitializeResult()
	return init != nil && wire.IsModern(init.ProtocolVersion)
}

// withLevel adds the log level the client set with logging/setLevel to a
// request's _meta, where a 2026-07-28 child looks for it.
func (m front) withLevel(meta mcp.Meta) mcp.Meta {
	m.mu.Lock()
	level := m.level
	m.mu.Unlock()
	if level == nil {
		return meta
	}
	if _, ok := meta[mcp.MetaKeyLogLevel]; ok {
		return meta
	}
	return withKey(meta, mcp.MetaKeyLogLevel, level.Level)
}

// callError turns a failed child call into one tool error (or the
// cancellation the client asked for).
func (m front) callError(ctx context.Context, server string, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	m.mu.Lock()
	s, exists := m.servers[server]
	removed := !exists || s.removed
	m.mu.Unlock()
	if removed {
		return errResult(fmt.Sprintf("server %q was removed before it answered: %s", server, m.existing())), nil
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code == codeServerDown {
		msg := strings.TrimPrefix(werr.Message, "mcpflow: ")
		return errResult(fmt.Sprintf("server %q crashed before it answered: %s\n\nWhat to do: fix it, then call %s.", server, msg, m.reloadHint(server))), nil
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return errResult(fmt.Sprintf("server %q went away before it answered: %s", server, m.existing())), nil
	}
	if errors.As(err, &werr) {
		return nil, err // the child's own protocol error, passed on
	}
	return errResult(fmt.Sprintf("server %q: %v", server, err)), nil
}

// codeServerDown is the JSON-RPC error code with which a backend answers
// calls pending on a child that exited.
const codeServerDown = -32002

func (m front) promptHandler(server, prompt string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		cs, bad := m.session(server)
		if bad != nil {
			return nil, fmt.Errorf("%s", bad.Content[0].(*mcp.TextContent).Text)
		}
		p := *req.Params
		var end func()
		p.Name = prompt
		p.Meta, end = m.sess.begin(ctx, req.Session, server, childMeta(p.Meta))
		defer end()
		return cs.GetPrompt(ctx, &p)
	}
}

func (m front) resourceHandler(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		cs, bad := m.session(server)
		if bad != nil {
			return nil, fmt.Errorf("%s", bad.Content[0].(*mcp.TextContent).Text)
		}
		p := *req.Params
		var end func()
		p.Meta, end = m.sess.begin(ctx, req.Session, server, childMeta(p.Meta))
		defer end()
		return cs.ReadResource(ctx, &p)
	}
}

// owner finds the server that listed a resource URI, or whose template
// matches it.
func (m front) owner(uri string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cat.owner(uri)
}

// matchTemplate reports whether uri fits an RFC 6570 template's literal
// parts, in order.
func matchTemplate(tmpl, uri string) bool {
	rest := uri
	first := true
	for tmpl != "" {
		lit, after, _ := strings.Cut(tmpl, "{")
		if first {
			if !strings.HasPrefix(rest, lit) {
				return false
			}
			rest = rest[len(lit):]
			first = false
		} else if lit != "" {
			i := strings.Index(rest, lit)
			if i < 0 {
				return false
			}
			rest = rest[i+len(lit):]
		}
		_, tmpl, _ = strings.Cut(after, "}")
		if after == "" {
			return rest == ""
		}
	}
	return true
}

func (m front) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	p.Meta = childMeta(p.Meta)
	if p.Ref == nil {
		return nil, errors.New("completion/complete: no ref")
	}
	ref := *p.Ref
	var server string
	switch ref.Type {
	case "ref/prompt":
		m.mu.Lock()
		r, ok := m.cat.prompts[ref.Name]
		m.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("no prompt %q: %s", ref.Name, m.existing())
		}
		server, ref.Name = r.server, r.name
	case "ref/resource":
		n, ok := m.owner(ref.URI)
		if !ok {
			return nil, fmt.Errorf("no server lists resource %q", ref.URI)
		}
		server = n
	default:
		return nil, fmt.Errorf("completion/complete: unknown ref type %q", ref.Type)
	}
	cs, bad := m.session(server)
	if bad != nil {
		return nil, fmt.Errorf("%s", bad.Content[0].(*mcp.TextContent).Text)
	}
	p.Ref = &ref
	return cs.Complete(ctx, &p)
}

func (m front) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	cs, err := m.resourceSession(req.Params.URI)
	if err != nil {
		return err
	}
	p := *req.Params
	p.Meta = childMeta(p.Meta)
	return cs.Subscribe(ctx, &p)
}

func (m front) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	cs, err := m.resourceSession(req.Params.URI)
	if err != nil {
		return err
	}
	p := *req.Params
	p.Meta = childMeta(p.Meta)
	return cs.Unsubscribe(ctx, &p)
}

func (m front) resourceSession(uri string) (*mcp.ClientSession, error) {
	n, ok := m.owner(uri)
	if !ok {
		return nil, fmt.Errorf("no server lists resource %q", uri)
	}
	cs, bad := m.session(n)
	if bad != nil {
		return nil, fmt.Errorf("%s", bad.Content[0].(*mcp.TextContent).Text)
	}
	return cs, nil
}

// clientOptions are the handlers of the mux's client toward one child:
// requests from the child go to the client session route picks (with the
// context of the call they belong to, so that an HTTP front sends them on
// that call's stream), notifications are passed on.
func (m childSide) clientOptions(s *server) *mcp.ClientOptions {
	name := s.spec.Name
	return &mcp.ClientOptions{
		Logger: m.sdkLogger().With("server", name),
		CreateMessageWithToolsHandler: func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			ss, rctx, done, err := m.sess.routeRequest(ctx, name)
			if err != nil {
				return nil, err
			}
			defer done()
			return ss.CreateMessageWithTools(rctx, req.Params)
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			ss, rctx, done, err := m.sess.routeRequest(ctx, name)
			if err != nil {
				return nil, err
			}
			defer done()
			return ss.Elicit(rctx, req.Params)
		},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { s.markRelist() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { s.markRelist() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { s.markRelist() },
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			m.mu.Lock()
			srv := m.cat.srv
			m.mu.Unlock()
			if srv != nil {
				_ = srv.ResourceUpdated(ctx, req.Params)
			}
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			ss, rctx, ok := m.sess.route(name)
			if !ok {
				return
			}
			if !m.sess.multi {
				// One stream: the level is the session's, as the client set
				// it, not a 2026-07-28 call's _meta (which may not say).
				rctx = ctx
			}
			p := *req.Params
			p.Logger = name + loggerSuffix(p.Logger)
			_ = ss.Log(rctx, &p)
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			ss, rctx, token, ok := m.sess.progress(name, req.Params.ProgressToken)
			if !ok {
				return
			}
			p := *req.Params
			p.ProgressToken = token
			_ = ss.NotifyProgress(rctx, &p)
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
}

func loggerSuffix(l string) string {
	if l == "" {
		return ""
	}
	return "/" + l
}

// rootsTimeout bounds a roots/list request to a client.
const rootsTimeout = 5 * time.Second

// rootsChanged syncs the children's roots from ss (syncRoots), in the
// order the events came: a sync that finishes after a later one's is
// dropped.
func (m childSide) rootsChanged(ss *mcp.ServerSession) {
	seq := m.rootsSeq.Add(1)
	go m.syncRoots(ss, seq)
}

// syncRoots copies a legacy client's roots to every child client, which
// answers its child's roots/list from them (and tells it when they
// change), unless a sync of a later event (seq) was applied first. A
// 2026-07-28 client's roots reach children through their input_required
// results instead.
func (m childSide) syncRoots(ss *mcp.ServerSession, seq uint64) {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil && !ip.Capabilities.Roots.ListChanged {
		return
	}
	// A session that closes meanwhile waits for this call to end: bounded,
	// and ended with the serving.
	ctx, cancel := context.WithTimeout(m.served, rootsTimeout)
	defer cancel()
	stop := context.AfterFunc(m.ctx, cancel)
	defer stop()
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		m.log.Warn("asking the client for its roots failed", "err", err)
		return
	}
	m.rootsMu.Lock()
	defer m.rootsMu.Unlock()
	if seq < m.rootsApplied {
		return // a later event's roots are in place
	}
	m.rootsApplied = seq
	m.sess.setRootsFrom(ss)
	m.mu.Lock()
	old := m.roots
	m.roots = res.Roots
	var clients []*mcp.Client
	for _, s := range m.servers {
		if s.client != nil {
			clients = append(clients, s.client)
		}
	}
	m.mu.Unlock()
	var uris []string
	for _, r := range old {
		uris = append(uris, r.URI)
	}
	for _, c := range clients {
		if len(uris) > 0 {
			c.RemoveRoots(uris...)
		}
		c.AddRoots(res.Roots...)
	}
}

// sessions are the front server's client sessions: Run's one (stdio), or
// the many an HTTP front brings (Serve), with the calls each has in flight
// on each server, so that what a child sends the client reaches the
// session it belongs to. It has its own lock, never held while calling
// out.
type sessions struct {
	multi bool                     // Serve: many sessions; set before any
	ended func(*mcp.ServerSession) // after a session ends (the mux's roots rule)

	mu          sync.Mutex
	all         map[*mcp.ServerSession]*session
	calls       []*call          // in flight, oldest first
	recent      []*call          // ended within callLinger, oldest first
	tokens      map[string]*call // the progress tokens children were given
	sessionless map[string]*SessionInfo
	rootsFrom   *mcp.ServerSession
	seq         uint64
}

// session is one client session the front server has.
type session struct {
	info SessionInfo
	seen uint64 // sessions.seq at its last request: recency
}

// call is a client request in flight on a server.
type call struct {
	server string
	ss     *mcp.ServerSession
	ctx    context.Context // the front handler's: an HTTP front answers on its stream
	token  any             // the client's progress token, restored on the way back
	ended  time.Time
}

// SessionInfo is one client session of the front, as status shows it.
type SessionInfo struct {
	ID       string     // Mcp-Session-Id; "" on stdio and for a session-less (2026-07-28 HTTP) client
	Client   ClientInfo // as the client said: initialize, or each request's _meta
	Era      string     // "legacy" (initialize) or "modern"
	Started  time.Time
	LastSeen time.Time
	Requests uint64 // requests received
	InFlight int    // of them, calls to servers not answered yet
}

// sessionlessKeep is how long a session-less client stays in Sessions
// after its last request.
const sessionlessKeep = 10 * time.Minute

// touch notes a request of ss (method "" when Run connects it). A new
// session is watched until it ends; the requests of a session-less HTTP
// client (each its own short session) count under its name instead.
func (s *sessions) touch(ss *mcp.ServerSession, method string, req mcp.Request) {
	now := time.Now()
	var meta mcp.Meta
	if req != nil {
		// A notification without params holds a nil pointer.
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			meta = p.GetMeta()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if s.all == nil {
		s.all = map[*mcp.ServerSession]*session{}
	}
	if x, ok := s.all[ss]; ok {
		x.seen, x.info.LastSeen = s.seq, now
		if method != "" {
			x.info.Requests++
		}
		fillClient(&x.info, ss, meta)
		return
	}
	if s.multi && ss.ID() == "" && modernRequest(method, meta) {
		info := SessionInfo{Era: "modern", Started: now}
		fillClient(&info, nil, meta)
		key := info.Client.Name + "/" + info.Client.Version
		if s.sessionless == nil {
			s.sessionless = map[string]*SessionInfo{}
		}
		if old, ok := s.sessionless[key]; ok {
			info.Started, info.Requests = old.Started, old.Requests
		}
		info.LastSeen = now
		if method != "" {
			info.Requests++
		}
		s.sessionless[key] = &info
		for k, v := range s.sessionless {
			if now.Sub(v.LastSeen) > sessionlessKeep {
				delete(s.sessionless, k)
			}
		}
		return
	}
	x := &session{info: SessionInfo{ID: ss.ID(), Started: now, LastSeen: now}, seen: s.seq}
	if method != "" {
		x.info.Requests++
	}
	fillClient(&x.info, ss, meta)
	s.all[ss] = x
	go func() {
		ss.Wait()
		s.drop(ss)
	}()
}

// modernRequest reports whether a request is of the 2026-07-28 era,
// where each request says its version in _meta.
func modernRequest(method string, meta mcp.Meta) bool {
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	return method == "server/discover" || wire.IsModern(v)
}

// fillClient completes what info says of the client from its session's
// initialize (ss nil: none) or a request's _meta.
func fillClient(info *SessionInfo, ss *mcp.ServerSession, meta mcp.Meta) {
	if ss == nil {
		// A session-less request's short session: what its _meta says.
	} else if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
		info.Era, info.Client.Protocol = "legacy", ip.ProtocolVersion
		if ip.ClientInfo != nil {
			info.Client.Name, info.Client.Version = ip.ClientInfo.Name, ip.ClientInfo.Version
		}
		return
	}
	if v, ok := meta[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
		info.Era, info.Client.Protocol = "modern", v
	}
	if ci, ok := meta[mcp.MetaKeyClientInfo].(map[string]any); ok {
		if n, ok := ci["name"].(string); ok {
			info.Client.Name = n
		}
		if v, ok := ci["version"].(string); ok {
			info.Client.Version = v
		}
	}
}

// drop forgets an ended session.
func (s *sessions) drop(ss *mcp.ServerSession) {
	s.mu.Lock()
	delete(s.all, ss)
	wasRoots := s.rootsFrom == ss
	if wasRoots {
		s.rootsFrom = nil
	}
	s.mu.Unlock()
	if wasRoots && s.ended != nil {
		s.ended(ss)
	}
}

// begin records a call of ss on server until end is called, and returns
// meta as the child gets it: a progress token is replaced by one of the
// mux's own (two sessions may use the same token), restored on the
// progress notifications that come back.
func (s *sessions) begin(ctx context.Context, ss *mcp.ServerSession, server string, meta mcp.Meta) (mcp.Meta, func()) {
	// What is sent for the call keeps its context's values (an HTTP
	// front's stream) but not its end: a child's progress may arrive after
	// the call's answer.
	c := &call{server: server, ss: ss, ctx: context.WithoutCancel(ctx)}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	if x := s.all[ss]; x != nil {
		x.info.InFlight++
	}
	var key string
	if tok, ok := meta["progressToken"]; ok && tok != nil {
		s.seq++
		key = fmt.Sprintf("%s%d", tokenPrefix, s.seq)
		c.token = tok
		if s.tokens == nil {
			s.tokens = map[string]*call{}
		}
		s.tokens[key] = c
		meta = withKey(meta, "progressToken", key)
	}
	s.mu.Unlock()
	return meta, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if i := slices.Index(s.calls, c); i >= 0 {
			s.calls = slices.Delete(s.calls, i, i+1)
		}
		c.ended = time.Now()
		s.recent = append(s.recent, c)
		if len(s.recent) > maxRecent {
			s.recent = slices.Delete(s.recent, 0, len(s.recent)-maxRecent)
		}
		if x := s.all[ss]; x != nil {
			x.info.InFlight--
		}
		if key != "" {
			time.AfterFunc(tokenLinger, func() {
				s.mu.Lock()
				delete(s.tokens, key)
				s.mu.Unlock()
			})
		}
	}
}

// tokenLinger is how long a progress token given to a child is still
// known after its call ended: the mux's client may handle a child's
// notification after the answer it preceded.
const tokenLinger = 10 * time.Second

// callLinger is how long after its answer a call still counts as the
// one what its child sends belongs to; maxRecent bounds how many are kept.
const (
	callLinger = 2 * time.Second
	maxRecent  = 16
)

// tokenPrefix starts the progress tokens the mux gives children.
const tokenPrefix = "mcpflow-"

// route picks the session for what server's child sends the client, and
// the context to send it with: the session of the newest call in flight
// on server, with that call's context; else of the newest call on server
// answered less than callLinger ago (the mux's client may handle a
// child's notification after the answer it preceded); else the most
// recently active
// session that opened with initialize (the one kind that takes requests
// outside a call), else the most recently active one.
func (s *sessions) route(server string) (*mcp.ServerSession, context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.calls) - 1; i >= 0; i-- {
		if c := s.calls[i]; c.server == server {
			return c.ss, c.ctx, true
		}
	}
	for i := len(s.recent) - 1; i >= 0; i-- {
		if c := s.recent[i]; c.server == server && time.Since(c.ended) < callLinger {
			return c.ss, c.ctx, true
		}
	}
	var best *session
	var bestSS *mcp.ServerSession
	for ss, x := range s.all {
		if best != nil {
			legacy, bestLegacy := ss.InitializeParams() != nil, bestSS.InitializeParams() != nil
			if legacy != bestLegacy && !legacy || legacy == bestLegacy && x.seen < best.seen {
				continue
			}
		}
		best, bestSS = x, ss
	}
	if best == nil {
		return nil, nil, false
	}
	return bestSS, context.Background(), true
}

// routeRequest is route for a child's request handled under ctx: the
// context it returns ends when ctx does, and done releases it.
func (s *sessions) routeRequest(ctx context.Context, server string) (*mcp.ServerSession, context.Context, func(), error) {
	ss, rctx, ok := s.route(server)
	if !ok {
		return nil, nil, nil, errors.New("mcpflow: no client is connected yet")
	}
	rctx, cancel := context.WithCancel(rctx)
	stop := context.AfterFunc(ctx, cancel)
	return ss, rctx, func() { stop(); cancel() }, nil
}

// progress finds the call a child's progress token belongs to: its
// session, context and the client's own token. A token the mux did not
// give (a child's own) goes where route sends it, unchanged; one it gave
// for a call over for longer than tokenLinger is dropped.
func (s *sessions) progress(server string, token any) (*mcp.ServerSession, context.Context, any, bool) {
	if key, ok := token.(string); ok {
		s.mu.Lock()
		c := s.tokens[key]
		s.mu.Unlock()
		if c != nil {
			return c.ss, c.ctx, c.token, true
		}
		if strings.HasPrefix(key, tokenPrefix) {
			return nil, nil, nil, false // a call long over
		}
	}
	ss, ctx, ok := s.route(server)
	return ss, ctx, token, ok
}

// setRootsFrom notes the session the children's roots came from.
func (s *sessions) setRootsFrom(ss *mcp.ServerSession) {
	s.mu.Lock()
	s.rootsFrom = ss
	s.mu.Unlock()
}

// rootsCandidate is the most recently active session that has roots, for
// when the one they came from ends.
func (s *sessions) rootsCandidate() *mcp.ServerSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *session
	var bestSS *mcp.ServerSession
	for ss, x := range s.all {
		if !hasRoots(ss) || best != nil && x.seen < best.seen {
			continue
		}
		best, bestSS = x, ss
	}
	return bestSS
}

func hasRoots(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && (ip.Capabilities.RootsV2 != nil || ip.Capabilities.Roots.ListChanged)
}

// list is every session, oldest first, then the session-less clients.
func (s *sessions) list() []SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SessionInfo
	for ss, x := range s.all {
		info := x.info
		fillClient(&info, ss, nil)
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	var less []SessionInfo
	for _, v := range s.sessionless {
		if time.Since(v.LastSeen) <= sessionlessKeep {
			less = append(less, *v)
		}
	}
	sort.Slice(less, func(i, j int) bool { return less[i].Started.Before(less[j].Started) })
	return append(out, less...)
}

// latest is the most recently active session's info.
func (s *sessions) latest() (SessionInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *session
	var bestSS *mcp.ServerSession
	for ss, x := range s.all {
		if best == nil || x.seen > best.seen {
			best, bestSS = x, ss
		}
	}
	if best == nil {
		return SessionInfo{}, false
	}
	info := best.info
	fillClient(&info, bestSS, nil)
	return info, true
}
