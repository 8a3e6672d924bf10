package mux

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpflow/mcpflow/internal/fastlane"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RawCaller is an optional Backend method set: a side door beside the MCP
// client on Transport, through which the mux passes a client's tools/call
// to the child and its answer back without decoding either (see
// frontLane). The relay backends have it.
type RawCaller interface {
	// CallRaw sends a tools/call with these params to the child and
	// returns the raw result, or the child's (or relay's) *jsonrpc.Error,
	// or mcp.ErrConnectionClosed. When ctx ends first the child is sent
	// notifications/cancelled and ctx's error is returned.
	CallRaw(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// SessionMeta is the session _meta (protocol version, client info,
	// capabilities) that the MCP client on Transport puts on each request
	// of a 2026-07-28 session; nil before it sent one, and for a legacy
	// session.
	SessionMeta() map[string]json.RawMessage
}

// laneIDPrefix starts the ids of requests sent through the side door; the
// SDK client's ids are numbers, so the two never meet.
const laneIDPrefix = "mcpflow-mux-lane-"

// laneConn is the MCP client's connection to a relay, over the relay's
// two pipes, with the side door of RawCaller: responses to side-door ids
// go to their callers, every other message to the client.
type laneConn struct {
	r *bufio.Reader
	w io.WriteCloser
	c io.Closer // the read pipe

	wmu sync.Mutex // one line at a time on w

	incoming chan jsonrpc.Message
	done     chan struct{} // closed when reading ended
	readErr  error         // why; set before done is closed
	closed   chan struct{}
	close    sync.Once

	seq     atomic.Int64
	mu      sync.Mutex
	waiters map[string]chan laneAnswer
	meta    map[string]json.RawMessage
}

type laneAnswer struct {
	result json.RawMessage
	err    error
}

func newLaneConn(r io.ReadCloser, w io.WriteCloser) *laneConn {
	c := &laneConn{
		r: bufio.NewReader(r), w: w, c: r,
		incoming: make(chan jsonrpc.Message),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
		waiters:  map[string]chan laneAnswer{},
	}
	go c.readLoop()
	return c
}

// laneTransport connects the MCP client to a laneConn, once.
type laneTransport struct{ c *laneConn }

func (t laneTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// laneEnvelope is what readLoop looks at in a line that may answer a
// side-door request.
type laneEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

func (c *laneConn) readLoop() {
	var err error
	defer func() {
		c.readErr = err
		close(c.done)
		c.mu.Lock()
		for id, ch := range c.waiters {
			delete(c.waiters, id)
			ch <- laneAnswer{err: mcp.ErrConnectionClosed}
		}
		c.mu.Unlock()
	}()
	for {
		var line []byte
		line, err = c.r.ReadBytes('\n')
		if err != nil {
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if bytes.Contains(line, []byte(laneIDPrefix)) && c.answer(line) {
			continue
		}
		msg, derr := jsonrpc.DecodeMessage(line)
		if derr != nil {
			continue // the relay checks every line; nothing to do with one that slipped through
		}
		select {
		case c.incoming <- msg:
		case <-c.closed:
			err = mcp.ErrConnectionClosed
			return
		}
	}
}

// answer delivers a response to a side-door request, and reports whether
// line was one.
func (c *laneConn) answer(line []byte) bool {
	var env laneEnvelope
	if json.Unmarshal(line, &env) != nil || env.Method != "" {
		return false
	}
	var id string
	if json.Unmarshal(env.ID, &id) != nil {
		return false
	}
	c.mu.Lock()
	ch, ok := c.waiters[id]
	delete(c.waiters, id)
	c.mu.Unlock()
	if ok {
		if env.Error != nil {
			ch <- laneAnswer{err: env.Error}
		} else {
			ch <- laneAnswer{result: env.Result}
		}
	}
	return ok || len(id) > len(laneIDPrefix) && id[:len(laneIDPrefix)] == laneIDPrefix
}

func (c *laneConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.done:
		select {
		case msg := <-c.incoming:
			return msg, nil
		default:
		}
		if c.readErr == nil || errors.Is(c.readErr, io.ErrClosedPipe) {
			return nil, io.EOF
		}
		return nil, c.readErr
	case <-c.closed:
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write sends the client's message, noting the session _meta of its
// first 2026-07-28 request (the MCP client puts the same on every one).
func (c *laneConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && c.SessionMeta() == nil {
		c.noteMeta(req.Params)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

func (c *laneConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	_, err := c.w.Write(append(data, '\n'))
	return err
}

func (c *laneConn) noteMeta(params json.RawMessage) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || p.Meta[mcp.MetaKeyProtocolVersion] == nil {
		return
	}
	meta := map[string]json.RawMessage{}
	for _, k := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities} {
		if v, ok := p.Meta[k]; ok {
			meta[k] = v
		}
	}
	c.mu.Lock()
	c.meta = meta
	c.mu.Unlock()
}

func (c *laneConn) SessionMeta() map[string]json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta
}

func (c *laneConn) CallRaw(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	id := laneIDPrefix + strconv.FormatInt(c.seq.Add(1), 10)
	ch := make(chan laneAnswer, 1)
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return nil, mcp.ErrConnectionClosed
	default:
	}
	c.waiters[id] = ch
	c.mu.Unlock()
	idJSON := strconv.Quote(id)
	line := make([]byte, 0, len(params)+80)
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, idJSON...)
	line = append(line, `,"method":"tools/call","params":`...)
	line = append(line, params...)
	line = append(line, '}')
	if err := c.writeLine(line); err != nil {
		c.forget(id)
		return nil, mcp.ErrConnectionClosed
	}
	select {
	case a := <-ch:
		return a.result, a.err
	case <-ctx.Done():
		if c.forget(id) {
			_ = c.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + idJSON + `,"reason":"the client canceled the call"}}`))
		}
		return nil, ctx.Err()
	}
}

// forget drops a side-door request's waiter; it reports whether one was
// still waiting.
func (c *laneConn) forget(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.waiters[id]
	delete(c.waiters, id)
	return ok
}

// Close ends the connection: Read returns, writes fail, and both pipes are
// closed (which ends the relay's session).
func (c *laneConn) Close() error {
	c.close.Do(func() {
		close(c.closed)
		c.w.Close()
		c.c.Close()
	})
	return nil
}

func (c *laneConn) SessionID() string { return "" }

// laneRoute claims the client's call of a child's tool when it can pass
// through the child's side door as it is: the child is running, speaks the
// same protocol era as the request (so the arguments, the result and any
// input_required exchange need no translation), and the call carries no
// progress token (progress travels through the MCP client and must not
// arrive after the result). Everything else takes the SDK path
// (toolHandler), which gives the same answers.
func (m front) laneRoute(c *fastlane.Call) fastlane.Handler {
	if c.ProgressToken() != nil {
		return nil
	}
	m.mu.Lock()
	r, ok := m.cat.tools[c.Name]
	s := m.servers[r.server]
	ok = ok && s != nil && s.status == StatusRunning && s.cs != nil && !s.removed
	var cs *mcp.ClientSession
	var b Backend
	if ok {
		cs, b = s.cs, s.b
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	rc, ok := b.(RawCaller)
	init := cs.InitializeResult()
	if !ok || init == nil || standIn(init) || (init.ProtocolVersion >= modernProtocol) != c.Modern {
		return nil
	}
	var sess map[string]json.RawMessage
	if c.Modern {
		if sess = rc.SessionMeta(); sess == nil {
			return nil
		}
	}
	return func(ctx context.Context, c *fastlane.Call) (json.RawMessage, error) {
		return m.passCall(ctx, r, rc, sess, c)
	}
}

// modernProtocol is the first protocol version whose requests carry their
// session in _meta.
const modernProtocol = "2026-07-28"

// passCall sends a claimed call to the child under the child's tool name
// and returns the child's answer as it is, but for what callChild changes
// too: a crash, a removal or a lost connection become the same tool
// errors, and the relay's name for its rebuild tool becomes reload_server.
func (m front) passCall(ctx context.Context, r route, rc RawCaller, sess map[string]json.RawMessage, c *fastlane.Call) (json.RawMessage, error) {
	m.laneCalls.Add(1)
	params, err := m.childParams(c.Params, r.name, sess)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	res, err := rc.CallRaw(ctx, params)
	if err != nil {
		out, err := m.callError(ctx, r.server, err)
		if out == nil {
			return nil, err
		}
		return fastlane.Result(out, c.Modern, m.impl())
	}
	if bytes.Contains(res, []byte(relayTool)) {
		var out mcp.CallToolResult
		if json.Unmarshal(res, &out) == nil {
			m.fixRelayTool(r.server, &out)
			return json.Marshal(&out)
		}
	}
	return res, nil
}

// childParams are a client's tools/call params as the child gets them:
// the child's tool name, and the _meta of callChild (childMeta, withLevel)
// with the side door's session _meta in place of the client's.
func (m front) childParams(raw json.RawMessage, tool string, sess map[string]json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	name, _ := json.Marshal(tool)
	p["name"] = name
	var meta map[string]json.RawMessage
	if len(p["_meta"]) > 0 {
		if err := json.Unmarshal(p["_meta"], &meta); err != nil {
			return nil, err
		}
	}
	for _, k := range sessionMetaKeys {
		delete(meta, k)
	}
	if len(sess) > 0 && meta == nil {
		meta = map[string]json.RawMessage{}
	}
	for k, v := range sess {
		meta[k] = v
	}
	m.mu.Lock()
	level := m.level
	m.mu.Unlock()
	if _, ok := meta[mcp.MetaKeyLogLevel]; level != nil && !ok {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[mcp.MetaKeyLogLevel], _ = json.Marshal(level.Level)
	}
	delete(p, "_meta")
	if len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		p["_meta"] = b
	}
	return json.Marshal(p)
}

// cacheKey lets the front's lane answer a tools/list from the front
// server's own earlier answer while nothing published has changed: with
// hundreds of tools behind the mux, encoding the list is most of the
// cost of listing it.
func (m front) cacheKey(method string, params json.RawMessage) string {
	if method != "tools/list" {
		return ""
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return ""
	}
	m.mu.Lock()
	gen := m.cat.gen
	m.mu.Unlock()
	return strconv.Itoa(gen) + "\x00" + p.Cursor
}
