package mux

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpflow/mcpflow/internal/fastlane"
	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RawCaller is an optional Backend method set: a side door beside the MCP
// client on Transport, through which the mux passes a client's tools/call
// to the child and its answer back without decoding either (see
// laneStart). The relay backends have it.
type RawCaller interface {
	// StartRaw sends a tools/call with these params to the child and
	// returns at once. done gets, once and from any goroutine (even before
	// StartRaw returns), the raw result, or the child's (or relay's)
	// *jsonrpc.Error, or mcp.ErrConnectionClosed. cancel sends the child
	// notifications/cancelled for the call, unless it was answered; done
	// is not called after it.
	StartRaw(params json.RawMessage, done func(json.RawMessage, error)) (cancel func())
	// SessionMeta is the session _meta (protocol version, client info,
	// capabilities) that the MCP client on Transport puts on each request
	// of a 2026-07-28 session; nil before it sent one, and for a legacy
	// session.
	SessionMeta() map[string]json.RawMessage
}

// laneIDPrefix starts the ids of requests sent through the side door; the
// SDK client's ids are numbers, so the two never meet.
const laneIDPrefix = "mcpflow-mux-lane-"

// laneConn is the MCP client's connection to a relay, with the side door
// of RawCaller. The MCP client's messages go to the relay's input pipe;
// a side-door request is handed to the relay directly (deliver, on the
// caller's goroutine). The relay's output comes back through Output,
// written by the relay: answers to side-door ids go to their callers there
// and then, every other message to the MCP client (Read).
type laneConn struct {
	w       io.WriteCloser // the relay's input
	deliver func([]byte)   // relay.Deliver

	wmu sync.Mutex // one line at a time on w

	part []byte // the relay's output since its last newline; only Output's Write touches it

	incoming chan jsonrpc.Message
	done     chan struct{} // closed when the relay's output ended
	readErr  error         // why; set before done is closed
	ended    sync.Once
	closed   chan struct{}
	close    sync.Once

	seq     atomic.Int64
	mu      sync.Mutex
	gone    bool                                   // the relay's output ended: no side-door answer can come
	waiters map[int64]func(json.RawMessage, error) // by the number in the side-door id
	meta    map[string]json.RawMessage
}

func newLaneConn(w io.WriteCloser, deliver func([]byte)) *laneConn {
	return &laneConn{
		w: w, deliver: deliver,
		incoming: make(chan jsonrpc.Message),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
		waiters:  map[int64]func(json.RawMessage, error){},
	}
}

// laneTransport connects the MCP client to a laneConn, once.
type laneTransport struct{ c *laneConn }

func (t laneTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// Output is the writer for the relay's output (its Serve out). The relay
// writes from one goroutine at a time (its outbox's write token).
func (c *laneConn) Output() io.Writer { return laneOutput{c} }

type laneOutput struct{ c *laneConn }

// Write splits the relay's output into lines and handles each complete one.
func (o laneOutput) Write(p []byte) (int, error) {
	c := o.c
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.part = append(c.part, p...)
			break
		}
		line := p[:i]
		if len(c.part) > 0 {
			c.part = append(c.part, line...)
			line = c.part
		}
		err := c.line(line)
		c.part = c.part[:0]
		if cap(c.part) > 1<<20 {
			c.part = nil
		}
		if err != nil {
			return n - len(p), err
		}
		p = p[i+1:]
	}
	return n, nil
}

// line handles one line of the relay's output; it keeps nothing of it.
func (c *laneConn) line(line []byte) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if bytes.Contains(line, []byte(laneIDPrefix)) && c.answer(line) {
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil // the relay checks every line; nothing to do with one that slipped through
	}
	select {
	case c.incoming <- msg:
		return nil
	case <-c.closed:
		return mcp.ErrConnectionClosed
	}
}

// endOutput reports that the relay's output ended (its Serve returned):
// the MCP client reads EOF, and side-door calls still waiting get
// mcp.ErrConnectionClosed.
func (c *laneConn) endOutput() {
	c.ended.Do(func() {
		c.readErr = io.EOF
		close(c.done)
		c.mu.Lock()
		c.gone = true
		waiters := c.waiters
		c.waiters = map[int64]func(json.RawMessage, error){}
		c.mu.Unlock()
		for _, done := range waiters {
			done(nil, mcp.ErrConnectionClosed)
		}
	})
}

// answer delivers a response to a side-door request, and reports whether
// line was one. It reads the top level only: the result passes on as the
// child wrote it (a copy: line is the relay's buffer).
func (c *laneConn) answer(line []byte) bool {
	var rawID, result, rpcErr []byte
	method := false
	err := jsonscan.Members(line, 0, func(key []byte, vs, ve int) error {
		switch string(key) {
		case "id":
			rawID = line[vs:ve]
		case "method":
			method = true
		case "result":
			result = line[vs:ve]
		case "error":
			rpcErr = line[vs:ve]
		}
		return nil
	})
	if err != nil || method {
		return false
	}
	n, ours := laneID(rawID)
	if !ours {
		return false
	}
	c.mu.Lock()
	done, ok := c.waiters[n]
	delete(c.waiters, n)
	c.mu.Unlock()
	if ok {
		var werr *jsonrpc.Error
		switch {
		case rpcErr != nil && json.Unmarshal(rpcErr, &werr) == nil && werr != nil:
			done(nil, werr)
		case rpcErr != nil:
			done(nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "malformed error: " + string(rpcErr)})
		default:
			done(bytes.Clone(result), nil)
		}
	}
	return true // a side-door answer, even if no one waits for it any more
}

// laneID reads a side-door id, "mcpflow-mux-lane-N" raw, and returns N.
func laneID(raw []byte) (int64, bool) {
	const prefix = `"` + laneIDPrefix
	if len(raw) < len(prefix)+2 || string(raw[:len(prefix)]) != prefix || raw[len(raw)-1] != '"' {
		return 0, false
	}
	var n int64
	for _, d := range raw[len(prefix) : len(raw)-1] {
		if d < '0' || d > '9' || n > (1<<62)/10 {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
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
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	_, err = c.w.Write(append(data, '\n'))
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

func (c *laneConn) StartRaw(params json.RawMessage, done func(json.RawMessage, error)) func() {
	n := c.seq.Add(1)
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		done(nil, mcp.ErrConnectionClosed)
		return nil
	}
	c.waiters[n] = done
	c.mu.Unlock()
	line := make([]byte, 0, len(params)+80)
	line = append(line, `{"jsonrpc":"2.0","id":"`+laneIDPrefix...)
	line = strconv.AppendInt(line, n, 10)
	line = append(line, `","method":"tools/call","params":`...)
	line = append(line, params...)
	line = append(line, '}')
	c.deliver(line)
	return func() {
		if c.forget(n) {
			c.deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + laneIDPrefix + strconv.FormatInt(n, 10) + `","reason":"the client canceled the call"}}`))
		}
	}
}

// forget drops a side-door request's waiter; it reports whether one was
// still waiting.
func (c *laneConn) forget(n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.waiters[n]
	delete(c.waiters, n)
	return ok
}

// Close ends the connection: Read returns, writes fail, and the relay's
// input is closed (which ends the relay's session).
func (c *laneConn) Close() error {
	c.close.Do(func() {
		close(c.closed)
		c.w.Close()
	})
	return nil
}

func (c *laneConn) SessionID() string { return "" }

// laneStart claims the client's call of a child's tool when it can pass
// through the child's side door as it is: the child is running, speaks the
// same protocol era as the request (so the arguments, the result and any
// input_required exchange need no translation), and the call carries no
// progress token (progress travels through the MCP client and must not
// arrive after the result). Everything else takes the SDK path
// (toolHandler), which gives the same answers. The call goes out on the
// goroutine that read it, and its answer comes back on the one that read
// the child's: no goroutine of the mux's own stands between.
func (m front) laneStart(c *fastlane.Call) fastlane.Starter {
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
	level := m.level
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
	return func(c *fastlane.Call, reply fastlane.Reply) func() {
		m.laneCalls.Add(1)
		params, err := childParams(c.Params, r.name, sess, level)
		if err != nil {
			reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()})
			return nil
		}
		return rc.StartRaw(params, func(res json.RawMessage, err error) {
			reply(m.passAnswer(r.server, c.Modern, res, err))
		})
	}
}

// modernProtocol is the first protocol version whose requests carry their
// session in _meta.
const modernProtocol = "2026-07-28"

// passAnswer is the client's answer to a passed-through call: the child's
// answer as it is, but for what callChild changes too: a crash, a removal
// or a lost connection become the same tool errors, and the relay's name
// for its rebuild tool becomes reload_server.
func (m front) passAnswer(server string, modern bool, res json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil {
		out, err := m.callError(context.Background(), server, err)
		if out == nil {
			return nil, err
		}
		return fastlane.Result(out, modern, m.impl())
	}
	if bytes.Contains(res, []byte(relayTool)) {
		var out mcp.CallToolResult
		if json.Unmarshal(res, &out) == nil {
			m.fixRelayTool(server, &out)
			return json.Marshal(&out)
		}
	}
	return res, nil
}

// childParams are a client's tools/call params as the child gets them:
// the child's tool name, and the _meta of callChild (childMeta, withLevel:
// level is the client's logging level, nil if it set none) with the side
// door's session _meta in place of the client's, but for the client's
// capabilities. Those stay: a passed-through call's answer goes to the
// client as it is, input_required requests included, so the child must
// ask only for what the client can do (the mux's own session declares
// what it can forward to any client). The other members pass as they are,
// arguments included, never decoded.
func childParams(raw json.RawMessage, tool string, sess map[string]json.RawMessage, level *mcp.SetLoggingLevelParams) (json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("params must be an object")
	}
	out := make([]byte, 0, len(raw)+len(tool)+256)
	out = append(out, `{"name":`...)
	out = appendString(out, tool)
	var meta []byte
	err := jsonscan.Members(raw, 0, func(key []byte, vs, ve int) error {
		switch string(key) {
		case "name":
		case "_meta":
			meta = raw[vs:ve]
		default:
			out = append(out, ',')
			out = appendString(out, string(key))
			out = append(out, ':')
			out = append(out, raw[vs:ve]...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mark := len(out)
	out = append(out, `,"_meta":{`...)
	n := 0
	member := func(key string, v []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = appendString(out, key)
		out = append(out, ':')
		out = append(out, v...)
	}
	hasLevel, hasCaps := false, false
	if len(meta) > 0 && string(meta) != "null" {
		if meta[0] != '{' {
			return nil, errors.New("_meta must be an object")
		}
		err := jsonscan.Members(meta, 0, func(key []byte, vs, ve int) error {
			k := string(key)
			if k == mcp.MetaKeyClientCapabilities && sess != nil && !hasCaps {
				hasCaps = true
				member(k, meta[vs:ve])
				return nil
			}
			if slices.Contains(sessionMetaKeys, k) || sess[k] != nil {
				return nil
			}
			hasLevel = hasLevel || k == mcp.MetaKeyLogLevel
			member(k, meta[vs:ve])
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, k := range sessionMetaKeys {
		if v := sess[k]; v != nil && !(hasCaps && k == mcp.MetaKeyClientCapabilities) {
			member(k, v)
		}
	}
	if level != nil && !hasLevel {
		v, _ := json.Marshal(level.Level)
		member(mcp.MetaKeyLogLevel, v)
	}
	if n == 0 {
		out = out[:mark]
	} else {
		out = append(out, '}')
	}
	return append(out, '}'), nil
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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
