package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"math"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// DefaultHandshake bounds the opening of the bridge's session with the
// upstream when Options.Handshake is zero: relay.DefaultHandshake's value
// (an internal package does not import the relay).
const DefaultHandshake = 30 * time.Second

const (
	// closeWait bounds how long Close waits for a delivery to the client
	// under way.
	closeWait = 2 * time.Second
	// rootsTimeout bounds the client's answer to roots/list.
	rootsTimeout = 5 * time.Second
	// relistTimeout bounds one listing of the child's lists after a
	// list_changed.
	relistTimeout = 30 * time.Second
	// maxHeld bounds the messages held during the handshake.
	maxHeld = 1024
)

// Options configure a bridge; the zero value is the default.
type Options struct {
	Log       *slog.Logger  // nil = discard; the SDK's own logs go here at warning level and above
	Handshake time.Duration // bounds opening the upstream session; 0 = DefaultHandshake
}

// New returns the session of a client c whose era the child does not
// speak, served through a session of upstream in the child's era (see the
// package documentation). Nothing is opened until the client's first
// message.
func (o Options) New(upstream wire.Opener, c wire.Client) wire.Session {
	o.Log = cmp.Or(o.Log, slog.New(slog.DiscardHandler))
	if o.Handshake <= 0 {
		o.Handshake = DefaultHandshake
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &bridge{
		opts:   o,
		sdkLog: slog.New(minLevel{o.Log.Handler(), slog.LevelWarn}),
		up:     upstream,
		ctx:    ctx,
		cancel: cancel,
		reroot: make(chan struct{}, 1),
		cat:    &catalog{tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{}, relist: make(chan struct{}, 1)},
		// Unbounded: neither the bridge nor the SDK's peers wait on the
		// client.
		out: &wire.Outbox{Write: func(msg, rel []byte) error { c.Deliver(msg, rel); return nil }, Hard: math.MaxInt, Stall: -1},
	}
	go b.out.Run(nil)
	return b
}

type phase int

const (
	holding phase = iota // the client's messages wait for the upstream session
	live                 // the SDK server serves the client
	failed               // the upstream session could not be opened: requests get an error
	closed
)

// bridge is one client's session. Its goroutines open and work are
// counted in wg and end once ctx is canceled (Close); the outbox's
// goroutine ends when the outbox is dropped.
type bridge struct {
	opts   Options
	sdkLog *slog.Logger
	up     wire.Opener
	out    *wire.Outbox // to the client, in order
	calls  calls        // the client's requests in flight, for rel
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	reroot chan struct{} // the client's roots may have changed
	cat    *catalog      // work's and sync's

	mu     sync.Mutex
	phase  phase
	held   [][]byte
	reason string // why the upstream session failed
	front  wire.Session
	ch     *child      // the upstream session, once open
	srv    *mcp.Server // once made
	ss     *mcp.ServerSession
}

// Send takes one message of the client's (see wire.Session).
func (b *bridge) Send(msg []byte) {
	b.calls.sent(msg)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.phase {
	case holding:
		if len(b.held) >= maxHeld {
			b.refuse(msg, wire.CodeQueueFull, "mcpflow: too many messages while the era bridge opens its session with the MCP server; this one was dropped")
			return
		}
		if len(b.held) == 0 { // the first message
			b.wg.Add(2)
			go b.open(msg)
			go b.work()
		}
		b.held = append(b.held, msg)
	case live:
		b.front.Send(msg)
	case failed:
		b.refuse(msg, wire.CodeServerDown, "mcpflow: the era bridge could not open a session with the MCP server: "+b.reason)
	}
}

// deliver queues a message for the client: it never reaches the client
// before the caller returns.
func (b *bridge) deliver(msg, rel []byte) {
	if rel != nil && wire.IsResponse(msg) {
		b.calls.end(rel) // an answer ends its call
	}
	b.out.Send(msg, rel)
}

// refuse answers msg, when it is a request, with an error.
func (b *bridge) refuse(msg []byte, code int, text string) {
	env, err := wire.Peek(msg)
	if err != nil || !env.IsRequest() || wire.IDProblem(env.ID) != "" {
		return
	}
	b.deliver(wire.ErrorResponse(env.ID, code, text, nil), env.ID)
}

// Close ends the client's session (see the package documentation).
func (b *bridge) Close() {
	b.mu.Lock()
	if b.phase == closed {
		b.mu.Unlock()
		return
	}
	b.phase = closed
	front, ch := b.front, b.ch
	b.held = nil
	b.mu.Unlock()
	b.out.Drop() // first: what the cancellations below answer is not delivered
	b.cancel()
	if front != nil {
		front.Close()
	}
	if ch != nil {
		_ = ch.cs.Close()
	}
	b.wg.Wait()
	if !wire.WaitClosed(b.out.Done(), closeWait) {
		b.opts.Log.Warn("a client took no message for a while; its session was closed under a delivery", "after", closeWait)
	}
}

// open opens the upstream session, then serves the client on it; first is
// the client's first message.
func (b *bridge) open(first []byte) {
	defer b.wg.Done()
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.Handshake)
	defer cancel()
	err := b.connect(ctx, first)
	if err == nil || b.ctx.Err() != nil {
		return
	}
	reason := err.Error()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = fmt.Sprintf("the server did not complete the handshake within %s", b.opts.Handshake)
	}
	b.opts.Log.Warn("the era bridge could not open a session with the MCP server", "reason", reason)
	b.mu.Lock()
	if b.phase != holding {
		b.mu.Unlock()
		return
	}
	b.phase, b.reason = failed, reason
	for _, m := range b.held {
		b.refuse(m, wire.CodeServerDown, "mcpflow: the era bridge could not open a session with the MCP server: "+reason)
	}
	b.held = nil
	ch := b.ch
	b.ch, b.srv = nil, nil
	b.mu.Unlock()
	if ch != nil {
		_ = ch.cs.Close()
	}
}

// connect opens the upstream session as the client described itself in
// first, lists the child's lists, and connects the SDK server to the
// client with what was held.
func (b *bridge) connect(ctx context.Context, first []byte) error {
	fc := frontOf(first)
	client := mcp.NewClient(fc.impl(), b.clientOptions(fc))
	client.AddReceivingMiddleware(b.bounded)
	cs, err := client.Connect(ctx, wire.SessionTransport(wire.OpenerFunc(b.openUpstream), b.opts.Log), nil)
	if err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	ir := cmp.Or(cs.InitializeResult(), &mcp.InitializeResult{})
	ch := &child{cs: cs, client: client, modern: wire.IsModern(ir.ProtocolVersion), done: b.ctx, roots: map[string]string{}}
	srv := b.newServer(ir, ch)
	b.mu.Lock()
	if b.phase != holding {
		b.mu.Unlock()
		_ = cs.Close()
		return nil
	}
	b.ch, b.srv = ch, srv
	b.mu.Unlock()

	b.sync(ctx, listAll)
	if ctx.Err() != nil {
		return ctx.Err()
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.phase != holding {
		return nil // Close closes cs
	}
	b.front = wire.SDKServer{Server: srv, Log: b.opts.Log}.Open(wire.ClientFunc(b.deliver))
	for ss := range srv.Sessions() {
		b.ss = ss
	}
	for _, m := range b.held {
		b.front.Send(m)
	}
	b.held = nil
	b.phase = live
	var name string
	if ir.ServerInfo != nil {
		name = ir.ServerInfo.Name
	}
	b.opts.Log.Info("the era bridge serves the client", "server", name, "server_protocol", ir.ProtocolVersion)
	return nil
}

// work relists what changed and syncs the client's roots, until Close.
func (b *bridge) work() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.cat.relist:
			ctx, cancel := context.WithTimeout(b.ctx, relistTimeout)
			b.sync(ctx, b.cat.dirty.Swap(0))
			cancel()
		case <-b.reroot:
			if ch, _, ss := b.session(); ch != nil && ss != nil {
				ch.syncRoots(ss, b.opts.Log)
			}
		}
	}
}

// poke wakes the goroutine that waits on ch (of capacity 1), unless it is
// woken already.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// session is the upstream session, the SDK server and its session with
// the client (nil until they exist).
func (b *bridge) session() (*child, *mcp.Server, *mcp.ServerSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch, b.srv, b.ss
}

// bounded gives a handler a context that also ends when the bridge
// closes, so that Close never waits on a peer.
func (b *bridge) bounded(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(b.ctx, cancel)
		defer stop()
		return next(ctx, method, req)
	}
}

// openUpstream opens the bridge client's sessions with the relay: what
// the relay delivers goes to the SDK client, but for the progress
// notifications and log messages, which go to the client as they are.
func (b *bridge) openUpstream(c wire.Client) wire.Session {
	return b.up.Open(wire.ClientFunc(func(msg, rel []byte) {
		if !wire.IsResponse(msg) {
			if env, err := wire.Peek(msg); err == nil && env.IsNotification() {
				switch env.Method {
				case "notifications/progress": // on the stream of the call whose token it names
					t := normalize(jsonscan.Member(env.Params, "progressToken"))
					b.toClient(msg, b.calls.last(func(c call) bool { return t != "" && c.token == t }))
					return
				case "notifications/message": // on the newest call's, listens aside
					b.toClient(msg, b.calls.last(func(c call) bool { return !c.listen }))
					return
				}
			}
		}
		c.Deliver(msg, rel)
	}))
}

// toClient delivers a message of the child's to a client the SDK server
// serves; before that there is no request it could belong to.
func (b *bridge) toClient(msg, rel []byte) {
	b.mu.Lock()
	live := b.phase == live
	b.mu.Unlock()
	if live {
		b.deliver(msg, rel)
	}
}

// frontInfo is what the client's first message says of it (as
// initialize's params).
type frontInfo struct {
	Info *mcp.Implementation `json:"clientInfo"`
	Caps struct {
		Roots       *mcp.RootCapabilities        `json:"roots"`
		Sampling    *mcp.SamplingCapabilities    `json:"sampling"`
		Elicitation *mcp.ElicitationCapabilities `json:"elicitation"`
	} `json:"capabilities"`
	legacy bool // it opened with initialize: it may be sent requests
}

// frontOf reads the client's name and capabilities from its first
// message: a legacy client's initialize, or a 2026-07-28 request's _meta.
func frontOf(msg []byte) frontInfo {
	env, err := wire.Peek(msg)
	if err != nil {
		return frontInfo{}
	}
	var fi frontInfo
	if env.Method == "initialize" {
		_ = json.Unmarshal(env.Params, &fi)
		fi.legacy = true
		return fi
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(env.Params, &p)
	_ = json.Unmarshal(p.Meta[mcp.MetaKeyClientInfo], &fi.Info)
	return fi
}

// impl is the clientInfo the bridge's client gives: the client's own.
func (f frontInfo) impl() *mcp.Implementation {
	if f.Info == nil || f.Info.Name == "" {
		return &mcp.Implementation{Name: "mcpflow-bridge"}
	}
	return f.Info
}

// clientOptions are the bridge client's: the client's capabilities, with
// the handlers that carry them to the client, and the list_changed
// handlers that relist.
func (b *bridge) clientOptions(fc frontInfo) *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{}
	o := &mcp.ClientOptions{
		Logger:                     b.sdkLog,
		Capabilities:               caps,
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { b.cat.changed(listTools) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { b.cat.changed(listPrompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { b.cat.changed(listResources) },
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if _, srv, _ := b.session(); srv != nil && req.Params != nil {
				_ = srv.ResourceUpdated(ctx, req.Params)
			}
		},
		ElicitationCompleteHandler: func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			if _, _, ss := b.session(); ss != nil && req.Params != nil {
				_ = ss.NotifyElicitationComplete(ctx, req.Params)
			}
		},
		// input_required results reach the SDK server's handlers as they
		// are: it fulfils them with the client, in the client's era.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
	if !fc.legacy {
		return o
	}
	caps.RootsV2 = fc.Caps.Roots
	if fc.Caps.Sampling != nil {
		caps.Sampling = fc.Caps.Sampling
		o.CreateMessageWithToolsHandler = askClient(b, (*mcp.ServerSession).CreateMessageWithTools)
	}
	if fc.Caps.Elicitation != nil {
		caps.Elicitation = fc.Caps.Elicitation
		o.ElicitationHandler = askClient(b, (*mcp.ServerSession).Elicit)
	}
	return o
}

// askClient is a handler of the bridge's client that forwards the child's
// request to the client, with call, once the SDK server serves it.
func askClient[P mcp.Params, R any](b *bridge, call func(*mcp.ServerSession, context.Context, P) (R, error)) func(context.Context, *mcp.ClientRequest[P]) (R, error) {
	return func(ctx context.Context, req *mcp.ClientRequest[P]) (res R, err error) {
		if _, _, ss := b.session(); ss != nil {
			return call(ss, ctx, req.Params)
		}
		return res, errors.New("mcpflow: the client is not connected to the era bridge yet")
	}
}

// newServer makes the server the client sees: the child, as the upstream
// session's handshake described it (ir), served by ch.
func (b *bridge) newServer(ir *mcp.InitializeResult, ch *child) *mcp.Server {
	subscribe := ir.Capabilities != nil && ir.Capabilities.Resources != nil && ir.Capabilities.Resources.Subscribe
	opts := &mcp.ServerOptions{
		Instructions: ir.Instructions,
		Logger:       b.sdkLog,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: subscribe},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler:       ch.complete,
		InitializedHandler:      func(context.Context, *mcp.InitializedRequest) { poke(b.reroot) },
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { poke(b.reroot) },
	}
	if subscribe {
		opts.SubscribeHandler = ch.subscribe
		opts.UnsubscribeHandler = ch.unsubscribe
	}
	srv := mcp.NewServer(cmp.Or(ir.ServerInfo, &mcp.Implementation{Name: "mcpflow-bridge"}), opts)
	srv.AddReceivingMiddleware(b.frontMiddleware(ch))
	return srv
}

// frontMiddleware bounds every handler by the bridge's life, carries the
// client's log level to the child, and relists the tools before a call to
// one the server does not list yet.
func (b *bridge) frontMiddleware(ch *child) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return b.bounded(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			params := paramsOf(req)
			switch p := params.(type) {
			case *mcp.SetLoggingLevelParams:
				if method == "logging/setLevel" {
					if err := ch.setLevel(ctx, p.Level, true); err != nil {
						return nil, upstreamErr(ctx, err)
					}
				}
			case *mcp.CallToolParamsRaw:
				if !b.cat.lists(p.Name) {
					b.sync(ctx, listTools)
				}
			}
			if params != nil {
				if lvl, ok := params.GetMeta()[mcp.MetaKeyLogLevel].(string); ok && lvl != "" {
					if err := ch.setLevel(ctx, mcp.LoggingLevel(lvl), false); err != nil {
						b.opts.Log.Warn("setting the MCP server's log level failed", "err", err)
					}
				}
			}
			return next(ctx, method, req)
		})
	}
}

// paramsOf is a request's params; nil when it has none.
func paramsOf(req mcp.Request) mcp.Params {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p
}

// sync lists the child's lists of kind (listTools, ...) and makes the SDK
// server's the same (see catalog).
func (b *bridge) sync(ctx context.Context, kind int32) {
	if ch, srv, _ := b.session(); ch != nil && srv != nil {
		b.cat.sync(ctx, kind, ch, srv, b.opts.Log, b.ctx)
	}
}

// child is the bridge client's session with the upstream, in the child's
// era: the SDK server's handlers forward to it.
type child struct {
	cs     *mcp.ClientSession
	client *mcp.Client
	modern bool              // it speaks 2026-07-28
	done   context.Context   // the bridge's life
	roots  map[string]string // the client's roots as client has them: URI → JSON; the bridge's work's

	mu    sync.Mutex
	level mcp.LoggingLevel // the client's, as last said; "" = none
}

// setLevel notes the client's log level. A legacy child is told with
// logging/setLevel (when it changed, or always when force: the client
// said so itself); a 2026-07-28 child reads it in each request's _meta.
func (ch *child) setLevel(ctx context.Context, level mcp.LoggingLevel, force bool) error {
	ch.mu.Lock()
	changed := ch.level != level
	ch.level = level
	ch.mu.Unlock()
	if ch.modern || !changed && !force {
		return nil
	}
	return ch.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
}

// sessionMetaKeys are the _meta keys by which a 2026-07-28 peer describes
// its session: the client's describe its session with the bridge, and the
// bridge's client sets its own.
var sessionMetaKeys = []string{
	mcp.MetaKeyProtocolVersion,
	mcp.MetaKeyClientInfo,
	mcp.MetaKeyClientCapabilities,
	mcp.MetaKeyServerInfo,
	mcp.MetaKeySubscriptionID,
	mcp.MetaKeyLogLevel,
}

// meta is a request's _meta as forwarded: without sessionMetaKeys (the
// progress token kept), with the client's log level for a 2026-07-28
// child.
func (ch *child) meta(m mcp.Meta) mcp.Meta {
	out := mcp.Meta{}
	maps.Copy(out, m)
	for _, k := range sessionMetaKeys {
		delete(out, k)
	}
	ch.mu.Lock()
	if ch.modern && ch.level != "" {
		out[mcp.MetaKeyLogLevel] = string(ch.level)
	}
	ch.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	return out
}

// forward calls the child with a copy of params whose _meta is as
// forwarded (meta); a failure is upstreamErr's.
func forward[T any, P interface {
	*T
	mcp.Params
}, R any](ctx context.Context, ch *child, params P, call func(*mcp.ClientSession, context.Context, P) (R, error)) (R, error) {
	p := P(new(T))
	*p = *params
	p.SetMeta(ch.meta(params.GetMeta()))
	res, err := call(ch.cs, ctx, p)
	if err != nil {
		err = upstreamErr(ctx, err)
	}
	return res, err
}

// upstreamErr is the error a request gets when its forwarding failed: the
// child's (or the relay's) protocol error as it is, the cancellation the
// client asked for, else CodeServerDown naming what happened.
func upstreamErr(ctx context.Context, err error) error {
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		return werr
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return &jsonrpc.Error{Code: wire.CodeServerDown, Message: "mcpflow: the era bridge could not reach the MCP server: " + err.Error()}
}

// The results of the forwarding handlers are new ones: their resultType
// is the client's era's, set by the SDK server (a legacy client gets none).

// callTool forwards a tool call to the child's tool of that name.
func (ch *child) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	params := &mcp.CallToolParams{Meta: ch.meta(p.Meta), Name: p.Name, InputResponses: p.InputResponses, RequestState: p.RequestState}
	if len(p.Arguments) > 0 {
		params.Arguments = p.Arguments
	}
	res, err := ch.cs.CallTool(ctx, params)
	if err != nil {
		err = upstreamErr(ctx, err)
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == wire.CodeServerDown {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: werr.Message}}}, nil
		}
		return nil, err
	}
	return &mcp.CallToolResult{Meta: res.Meta, Content: res.Content, StructuredContent: res.StructuredContent,
		IsError: res.IsError, InputRequests: res.InputRequests, RequestState: res.RequestState}, nil
}

// getPrompt forwards prompts/get.
func (ch *child) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	res, err := forward(ctx, ch, req.Params, (*mcp.ClientSession).GetPrompt)
	if err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{Meta: res.Meta, Description: res.Description, Messages: res.Messages,
		InputRequests: res.InputRequests, RequestState: res.RequestState}, nil
}

// readResource forwards resources/read.
func (ch *child) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	res, err := forward(ctx, ch, req.Params, (*mcp.ClientSession).ReadResource)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Meta: res.Meta, Cacheable: res.Cacheable, Contents: res.Contents,
		InputRequests: res.InputRequests, RequestState: res.RequestState}, nil
}

// complete forwards completion/complete.
func (ch *child) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return forward(ctx, ch, req.Params, (*mcp.ClientSession).Complete)
}

// subscribe forwards resources/subscribe (a legacy client's, or a
// 2026-07-28 client's listen stream's resource subscriptions).
func (ch *child) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	_, err := forward(ctx, ch, req.Params, func(cs *mcp.ClientSession, ctx context.Context, p *mcp.SubscribeParams) (any, error) {
		return nil, cs.Subscribe(ctx, p)
	})
	return err
}

// unsubscribe forwards resources/unsubscribe. The SDK server unsubscribes
// a listen stream's resources when the stream has ended, with its
// context: the forwarding gets a context of its own, bounded.
func (ch *child) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rootsTimeout)
	defer cancel()
	stop := context.AfterFunc(ch.done, cancel)
	defer stop()
	_, err := forward(ctx, ch, req.Params, func(cs *mcp.ClientSession, ctx context.Context, p *mcp.UnsubscribeParams) (any, error) {
		return nil, cs.Unsubscribe(ctx, p)
	})
	return err
}

// syncRoots copies a legacy client's roots (ss is the SDK server's
// session with it) to the bridge's client, which answers a legacy child's
// roots/list from them and tells it when they change.
func (ch *child) syncRoots(ss *mcp.ServerSession, log *slog.Logger) {
	if ch.modern {
		return // a 2026-07-28 child asks for roots in its results
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil || wire.IsModern(ip.ProtocolVersion) {
		return
	}
	ctx, cancel := context.WithTimeout(ch.done, rootsTimeout)
	defer cancel()
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		if ch.done.Err() == nil {
			log.Warn("asking the client for its roots failed", "err", err)
		}
		return
	}
	now := map[string]string{}
	var add []*mcp.Root
	for _, r := range res.Roots {
		def, _ := json.Marshal(r)
		now[r.URI] = string(def)
		if ch.roots[r.URI] != string(def) {
			add = append(add, r)
		}
	}
	var gone []string
	for uri := range ch.roots {
		if _, ok := now[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	ch.roots = now
	if len(gone) > 0 {
		ch.client.RemoveRoots(gone...)
	}
	if len(add) > 0 {
		ch.client.AddRoots(add...)
	}
}

// The lists a list_changed may concern.
const (
	listTools int32 = 1 << iota
	listPrompts
	listResources
	listAll = listTools | listPrompts | listResources
)

// catalog is what the SDK server lists: name (or URI, URI template) → the
// definition as added (JSON), so that an unchanged item is not added again
// (which would tell the client its list changed); and which lists the
// child said changed.
type catalog struct {
	mu                                   sync.Mutex // one listing at a time; guards the maps
	tools, prompts, resources, templates map[string]string
	listed                               atomic.Pointer[map[string]bool] // the tools listed, read without waiting for a listing
	relist                               chan struct{}                   // a list changed (dirty says which)
	dirty                                atomic.Int32
}

// changed notes that the child's lists of kind changed.
func (c *catalog) changed(kind int32) {
	c.dirty.Or(kind)
	poke(c.relist)
}

// lists reports whether the SDK server lists the tool name. It does not
// wait for a listing under way.
func (c *catalog) lists(name string) bool {
	m := c.listed.Load()
	return m != nil && (*m)[name]
}

// sync lists the child's lists of kind and makes srv's the same. A list
// the child does not declare is not asked for; a list that cannot be read
// whole is left as it was (and logged unless the bridge is closing: done).
func (c *catalog) sync(ctx context.Context, kind int32, ch *child, srv *mcp.Server, log *slog.Logger, done context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	caps := &mcp.ServerCapabilities{}
	if ir := ch.cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	warnIf := func(list string, err error) {
		if err != nil && done.Err() == nil {
			log.Warn("listing the MCP server's "+list+" failed; the list is left as it was", "err", err)
		}
	}
	leftOut := func(what string) func(string, error) {
		return func(key string, err error) {
			log.Warn("left out a "+what+" of the MCP server's that the Go SDK refuses", "name", key, "err", err)
		}
	}
	cs := ch.cs
	if kind&listTools != 0 {
		warnIf("tools", syncList(c.tools, cs.Tools(ctx, nil),
			func(t *mcp.Tool) string { return t.Name },
			func(t *mcp.Tool) { srv.AddTool(t, ch.callTool) },
			srv.RemoveTools, leftOut("tool")))
		listed := make(map[string]bool, len(c.tools))
		for name := range c.tools {
			listed[name] = true
		}
		c.listed.Store(&listed)
	}
	if kind&listPrompts != 0 && caps.Prompts != nil {
		warnIf("prompts", syncList(c.prompts, cs.Prompts(ctx, nil),
			func(p *mcp.Prompt) string { return p.Name },
			func(p *mcp.Prompt) { srv.AddPrompt(p, ch.getPrompt) },
			srv.RemovePrompts, leftOut("prompt")))
	}
	if kind&listResources != 0 && caps.Resources != nil {
		warnIf("resources", syncList(c.resources, cs.Resources(ctx, nil),
			func(r *mcp.Resource) string { return r.URI },
			func(r *mcp.Resource) { srv.AddResource(r, ch.readResource) },
			srv.RemoveResources, leftOut("resource")))
		warnIf("resource templates", syncList(c.templates, cs.ResourceTemplates(ctx, nil),
			func(t *mcp.ResourceTemplate) string { return t.URITemplate },
			func(t *mcp.ResourceTemplate) { srv.AddResourceTemplate(t, ch.readResource) },
			srv.RemoveResourceTemplates, leftOut("resource template")))
	}
}

// syncList reads every page of a list and makes the server's the same:
// it adds what is new or changed (add; an item add refuses, by a panic, is
// reported to refused and not listed), and removes what is gone. have maps
// the keys listed to their definitions.
func syncList[T any](have map[string]string, items iter.Seq2[T, error], key func(T) string, add func(T), remove func(...string), refused func(string, error)) error {
	var all []T
	for it, err := range items {
		if err != nil {
			return err
		}
		all = append(all, it)
	}
	keep := map[string]bool{}
	for _, it := range all {
		k := key(it)
		def, _ := json.Marshal(it)
		if d, ok := have[k]; !ok || d != string(def) {
			if err := try(func() { add(it) }); err != nil {
				refused(k, err)
				continue
			}
			have[k] = string(def)
		}
		keep[k] = true
	}
	var gone []string
	for k := range have {
		if !keep[k] {
			gone = append(gone, k)
			delete(have, k)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
	return nil
}

// try runs f, turning its panic (the SDK's way to refuse a definition)
// into an error.
func try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// calls are the client's requests in flight, in the order it sent them,
// with their progress tokens: what the child sends during a call goes on
// that call's stream (rel).
type calls struct {
	mu   sync.Mutex
	open []call
}

type call struct {
	id     []byte // as the client wrote it
	token  string // its progress token, normalized; "" = none
	listen bool   // a subscriptions/listen stream
}

// sent notes a message of the client's: a request opens a call, a
// cancellation ends one.
func (cl *calls) sent(msg []byte) {
	env, err := wire.Peek(msg)
	if err != nil {
		return
	}
	switch {
	case env.IsRequest() && wire.IDProblem(env.ID) == "":
		c := call{id: env.ID, listen: env.Method == "subscriptions/listen"}
		c.token = normalize(jsonscan.Member(jsonscan.Member(env.Params, "_meta"), "progressToken"))
		cl.mu.Lock()
		cl.open = append(cl.open, c)
		cl.mu.Unlock()
	case env.Method == "notifications/cancelled":
		cl.end(jsonscan.Member(env.Params, "requestId"))
	}
}

func (cl *calls) end(id []byte) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if i := slices.IndexFunc(cl.open, func(c call) bool { return string(c.id) == string(id) }); i >= 0 {
		cl.open = slices.Delete(cl.open, i, i+1)
	}
}

// last is the id of the newest call in flight that match reports; nil
// when none.
func (cl *calls) last(match func(call) bool) []byte {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for i := len(cl.open) - 1; i >= 0; i-- {
		if match(cl.open[i]) {
			return cl.open[i].id
		}
	}
	return nil
}

// normalize is a JSON value in one spelling (1 and 1.0 alike); "" for
// none.
func normalize(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// minLevel is a slog.Handler that passes only records of min and above.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}
func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(as), m.min}
}
func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.min}
}
