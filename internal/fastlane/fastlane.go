// Package fastlane answers chosen tools/call requests beside a Go SDK
// mcp.Server, off the SDK's request path.
//
// Wrap puts a Connection between a transport and the server. Every message
// passes through it unchanged, except the tools/call requests that Route
// claims: those never reach the server. Their Handler runs on a goroutine
// of its own and its answer is written straight to the connection. A
// notifications/cancelled naming a claimed request cancels its handler's
// context and is not passed on either (the server never knew the id).
// Config.Start claims the same way with a Starter instead, which starts the
// work and returns, its answer coming back through a callback: no
// goroutine per call.
//
// Stdio is the lane for a server on a byte stream (stdin and stdout): the
// goroutine that reads a line offers it to the lane before anything else
// decodes it, so a call that a Starter claims goes from the stream to its
// destination on that one goroutine, and its answer is written to out as
// it came, with no re-encoding. Lines the lane does not take go on to the
// SDK's own stream connection, unchanged.
//
// The SDK's path costs a decode of the whole request into typed params, a
// per-request _meta check and a handler dispatch on the way in, and an
// encode of a typed result on the way out, with goroutine hand-offs
// between; the lane costs one decode of the params' top level. mcpflow uses
// it where a call's time is otherwise all plumbing: a mux call that passes
// a child's answer through, a CLI tool's process.
//
// WrapWith adds an answer cache: a request that Config.Cache gives a key
// (a tools/list, keyed by what it lists and its cursor) is answered with
// the server's own earlier answer to a request with the same method, key
// and protocol version, without reaching the server; a miss goes to the
// server and its successful answer is kept.
//
// One difference from a bare SDK connection: the SDK tells its own stdio
// connection the negotiated protocol version through an unexported method,
// which a wrapper cannot pass on, so under Wrap a JSON-RPC batch in a
// 2025-06-18 or later session (whose version dropped batches) is served
// rather than refused. Stdio refuses it, with an error answer where the
// SDK's connection would end the session; so it does every line that is
// not a JSON-RPC message.
//
// The lane claims only requests the server would accept as they are: a
// legacy-era request once the server has answered initialize, or a
// 2026-07-28 request whose _meta names a protocol version the SDK supports
// and carries the client's capabilities. Anything else (a request before
// the handshake, a malformed one, a multi-round-trip retry carrying
// inputResponses or requestState) goes to the server, whose errors and
// rules apply unchanged.
package fastlane

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Call is a tools/call request the lane may claim.
//
// Under Stdio, Params is part of the line as read, valid until the Route
// or Starter that gets the call returns: work that goes on after must
// copy what it keeps (a Route's Handler gets a copy).
type Call struct {
	ID     jsonrpc.ID
	Name   string          // params.name
	Params json.RawMessage // the params as the client sent them
	Modern bool            // 2026-07-28: the request carries its session in _meta

	progressToken json.RawMessage
	conn          *conn
}

// ProgressToken is the request's _meta.progressToken, raw, or nil.
func (c *Call) ProgressToken() json.RawMessage { return c.progressToken }

// Notify sends a notification to the client (a progress notification,
// say) on the connection the request came on.
func (c *Call) Notify(method string, params any) error { return c.conn.notify(method, params) }

// Handler answers one claimed call: a raw JSON result (written as it is,
// so it must have the shape the request's era wants; see Result), or an
// error (a *jsonrpc.Error is sent as it is, any other as an internal
// error). ctx ends when the client cancels the request or the connection
// closes; a canceled call's answer is not sent.
type Handler func(ctx context.Context, c *Call) (json.RawMessage, error)

// Route claims a call by returning its handler, or returns nil to leave it
// to the server. It runs on the connection's read loop: it must not block.
type Route func(c *Call) Handler

// Reply answers a claimed call, as a Handler returns: a raw JSON result
// (one JSON value, as the request's era wants it) or an error. Only a
// call's first reply counts, and none is sent once the client canceled
// the call or the connection closed.
type Reply func(json.RawMessage, error)

// Starter begins a claimed call's work and returns without waiting for it;
// the work calls reply when it is done, from any goroutine (even before
// Starter returns). The cancel it returns (nil = nothing to cancel) is
// called, at most once, when the client cancels the call or the connection
// closes before the reply; reply need not be called after that. It runs on
// the connection's read loop: it must not block.
type Starter func(c *Call, reply Reply) (cancel func())

// StartRoute claims a call like Route, with a Starter.
type StartRoute func(c *Call) Starter

// CacheKey names the answer to a request whose answer can be reused: two
// requests with the same method, key and protocol version get the same
// result. "" = not reusable. It runs on the connection's read loop: it
// must not block. The key must change whenever the answer may (a
// generation counter bumped with every change, say).
type CacheKey func(method string, params json.RawMessage) string

// Config is what WrapWith needs; every field is optional.
type Config struct {
	// Start claims calls with a Starter; a call it leaves is offered to
	// Route.
	Start StartRoute
	Route Route
	// Cache: a request with a key is answered from the server's own
	// successful answer to an earlier request with the same key, when
	// there is one; otherwise the server answers and that answer is kept.
	Cache CacheKey
}

// Wrap returns t with a lane in front of whatever connects to it.
func Wrap(t mcp.Transport, route Route) mcp.Transport {
	return WrapWith(t, Config{Route: route})
}

// WrapWith is Wrap with an answer cache.
func WrapWith(t mcp.Transport, cfg Config) mcp.Transport {
	return &transport{inner: t, cfg: cfg}
}

type transport struct {
	inner mcp.Transport
	cfg   Config
}

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newConn(c, t.cfg), nil
}

func newConn(c mcp.Connection, cfg Config) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		Connection: c, cfg: cfg, ctx: ctx, cancel: cancel,
		calls: map[jsonrpc.ID]*claimed{}, cached: map[string]json.RawMessage{}, caching: map[jsonrpc.ID]string{},
	}
}

type conn struct {
	mcp.Connection
	cfg    Config
	ctx    context.Context // ends when the connection closes
	cancel context.CancelFunc
	// raw, when set (Stdio), is where answers to claimed calls are written
	// as bytes, and the lane has seen every message before Read does.
	raw     *lockedWriter
	scratch []byte // Stdio's reader: a line on its way to the server

	mu          sync.Mutex
	initID      jsonrpc.ID // the legacy initialize request in flight
	initialized string     // the protocol version of the server's answer to a legacy initialize; "" = none yet
	calls       map[jsonrpc.ID]*claimed
	cached      map[string]json.RawMessage // full cache key -> result
	caching     map[jsonrpc.ID]string      // requests passed to the server whose answers are to be kept
	closed      bool
	wg          sync.WaitGroup
}

// claimed is a claimed call that has not been answered. c.mu guards it.
type claimed struct {
	cancel   func() // nil until the Starter returned, or when it has none
	canceled bool   // canceled before the Starter returned
}

// maxCached bounds the answer cache; when it is full it starts over.
const maxCached = 16

// Read returns the next message for the server, answering claimed calls on
// the way.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if req.Method == "initialize" {
			c.mu.Lock()
			c.initID = req.ID
			c.mu.Unlock()
		}
		if c.raw != nil {
			// Stdio offered every object line to the lane already; the
			// elements of a batch go to the server.
			return msg, nil
		}
		if c.offer(req) {
			continue
		}
		return msg, nil
	}
}

// offer gives a request to the lane: a call to claim, a cancel of a
// claimed call, a request to answer from the cache. It reports whether the
// lane took it.
func (c *conn) offer(req *jsonrpc.Request) bool {
	switch req.Method {
	case "tools/call":
		if c.claim(req) {
			return true
		}
	case "notifications/cancelled":
		return c.cancelCall(req.Params)
	}
	return c.fromCache(req)
}

// fromCache answers a request from the cache, or marks it so that the
// server's answer is kept; it reports whether it answered.
func (c *conn) fromCache(req *jsonrpc.Request) bool {
	if c.cfg.Cache == nil || !req.ID.IsValid() {
		return false
	}
	k := c.cfg.Cache(req.Method, req.Params)
	if k == "" {
		return false
	}
	version, ok := c.version(req.Params)
	if !ok {
		return false
	}
	key := req.Method + "\x00" + version + "\x00" + k
	c.mu.Lock()
	res, hit := c.cached[key]
	if !hit {
		c.caching[req.ID] = key
	}
	c.mu.Unlock()
	if !hit {
		return false
	}
	c.answer(req.ID, res, nil)
	return true
}

// version is the protocol version a request with these params is answered
// in, and whether the server would answer it as it is (see era).
func (c *conn) version(params []byte) (string, bool) {
	p, ok := parseMeta(params)
	if !ok {
		return "", false
	}
	modern, ok := era(p.version, p.caps)
	if !ok {
		return "", false
	}
	if modern {
		v, _ := jsonscan.Unquote(p.version)
		return v, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initialized, c.initialized != ""
}

// Write passes the server's messages on, noting a successful answer to a
// legacy initialize.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if res, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if c.initID.IsValid() && res.ID == c.initID {
			c.initID = jsonrpc.ID{}
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if res.Error == nil && json.Unmarshal(res.Result, &r) == nil && r.ProtocolVersion != "" {
				c.initialized = r.ProtocolVersion
			}
		}
		if key, ok := c.caching[res.ID]; ok {
			delete(c.caching, res.ID)
			if res.Error == nil {
				if len(c.cached) >= maxCached {
					clear(c.cached)
				}
				c.cached[key] = slices.Clone(res.Result)
			}
		}
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// Close cancels the claimed calls still running, waits for their handlers
// and closes the connection.
func (c *conn) Close() error {
	c.mu.Lock()
	c.closed = true
	var cancels []func()
	for _, cl := range c.calls {
		if cl.cancel != nil {
			cancels = append(cancels, cl.cancel)
		} else {
			cl.canceled = true // claim cancels it when its Starter returns
		}
	}
	clear(c.calls)
	c.mu.Unlock()
	c.cancel()
	for _, cancel := range cancels {
		cancel()
	}
	err := c.Connection.Close()
	c.wg.Wait()
	return err
}

// claim starts the work of a call that Start or Route claims.
func (c *conn) claim(req *jsonrpc.Request) bool {
	if !req.ID.IsValid() || c.cfg.Start == nil && c.cfg.Route == nil {
		return false
	}
	p, ok := parseCall(req.Params)
	if !ok || p.Name == "" || p.Retry {
		return false
	}
	modern, ok := era(p.version, p.caps)
	if !ok {
		return false
	}
	c.mu.Lock()
	initialized := c.initialized != ""
	_, dup := c.calls[req.ID]
	closed := c.closed
	c.mu.Unlock()
	if dup || closed || !modern && !initialized {
		return false
	}
	call := &Call{ID: req.ID, Name: p.Name, Params: req.Params, Modern: modern, progressToken: p.progressToken, conn: c}
	var st Starter
	if c.cfg.Start != nil {
		st = c.cfg.Start(call)
	}
	if st == nil && c.cfg.Route != nil {
		if h := c.cfg.Route(call); h != nil {
			st = c.goHandler(h)
		}
	}
	if st == nil {
		return false
	}
	cl := &claimed{}
	c.mu.Lock()
	c.calls[req.ID] = cl
	c.mu.Unlock()
	cancel := st(call, func(res json.RawMessage, err error) { c.finish(call.ID, cl, res, err) })
	if cancel == nil {
		return true
	}
	c.mu.Lock()
	cl.cancel = cancel
	canceled := cl.canceled
	c.mu.Unlock()
	if canceled {
		cancel()
	}
	return true
}

// goHandler runs a Handler as a Starter: on a goroutine of its own, with a
// context that its cancel ends.
func (c *conn) goHandler(h Handler) Starter {
	return func(call *Call, reply Reply) func() {
		if c.raw != nil { // the line's bytes are reused once the Starter returns
			cp := *call
			cp.Params, cp.progressToken = slices.Clone(call.Params), slices.Clone(call.progressToken)
			call = &cp
		}
		ctx, cancel := context.WithCancel(c.ctx)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			res, err := h(ctx, call)
			if ctx.Err() == nil {
				reply(res, err)
			}
		}()
		return cancel
	}
}

// finish answers claimed call cl, unless it was answered, canceled or the
// connection closed.
func (c *conn) finish(id jsonrpc.ID, cl *claimed, res json.RawMessage, err error) {
	c.mu.Lock()
	live := c.calls[id] == cl
	if live {
		delete(c.calls, id)
	}
	c.mu.Unlock()
	if live {
		c.answer(id, res, err)
	}
}

// answer writes the response to request id: res, or err (a *jsonrpc.Error
// as it is, any other as an internal error).
func (c *conn) answer(id jsonrpc.ID, res json.RawMessage, err error) {
	out := &jsonrpc.Response{ID: id, Result: res}
	if err != nil {
		out.Result = nil
		if _, ok := err.(*jsonrpc.Error); ok {
			out.Error = err
		} else {
			out.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	}
	if c.raw == nil || out.Error != nil {
		_ = c.Connection.Write(c.ctx, out)
		return
	}
	if c.ctx.Err() != nil {
		return
	}
	c.raw.response(id, res)
}

// era tells a legacy request from a 2026-07-28 one by its _meta's
// protocol version and client capabilities (raw; nil when absent), as the
// SDK server does, and reports whether the server would accept them.
func era(version, caps []byte) (modern, ok bool) {
	if len(version) == 0 || version[0] != '"' {
		return false, true
	}
	v, err := jsonscan.Unquote(version)
	if err != nil || v < modernVersion {
		return false, true
	}
	if !slices.Contains(supported, v) {
		return true, false
	}
	if len(caps) == 0 || caps[0] != '{' {
		return true, false
	}
	return true, true
}

// supported are the protocol versions the SDK serves (its function returns
// a fresh copy each time).
var supported = mcp.SupportedProtocolVersions()

// modernVersion is the first protocol version whose requests carry their
// session in _meta.
const modernVersion = "2026-07-28"

// cancelCall cancels the claimed call a notifications/cancelled names.
func (c *conn) cancelCall(params json.RawMessage) bool {
	if len(params) == 0 || params[0] != '{' {
		return false
	}
	id, ok := parseID(jsonscan.Member(params, "requestId"))
	if !ok {
		return false
	}
	c.mu.Lock()
	cl, ok := c.calls[id]
	delete(c.calls, id)
	cancel := cl != nil && cl.cancel != nil
	if ok && !cancel {
		cl.canceled = true // the Starter has not returned its cancel yet
	}
	c.mu.Unlock()
	if cancel {
		cl.cancel()
	}
	return ok
}

func (c *conn) notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.Connection.Write(c.ctx, &jsonrpc.Request{Method: method, Params: raw})
}

// Result encodes a tool result as the SDK server would for a request of
// the given era: a 2026-07-28 result says resultType "complete" and names
// the server (impl) in its _meta. res is a finished result (not an
// input_required one); its _meta may be replaced.
func Result(res *mcp.CallToolResult, modern bool, impl *mcp.Implementation) (json.RawMessage, error) {
	if modern && impl != nil {
		if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
			m := make(mcp.Meta, len(res.Meta)+1)
			for k, v := range res.Meta {
				m[k] = v
			}
			m[mcp.MetaKeyServerInfo] = impl
			res.Meta = m
		}
	}
	b, err := json.Marshal(res)
	if err != nil || !modern || len(b) < 2 {
		return b, err
	}
	out := make([]byte, 0, len(b)+24)
	out = append(out, `{"resultType":"complete"`...)
	if b[1] != '}' {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}
