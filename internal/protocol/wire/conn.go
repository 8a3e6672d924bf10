package wire

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport connects a Go SDK peer (the mux's front server, [cli]'s
// server, the mux's client of each relay) to newline-delimited JSON-RPC:
// messages read from In, each written to Out as one line. Toward the SDK
// it is an mcp.Transport; toward the other peer it keeps JSON-RPC's
// promises where the SDK's own stdio connection does not:
//
//   - A line that is no JSON-RPC message gets an error answer (-32700 for
//     one that is not JSON in UTF-8, -32600 for the rest, an over-long one
//     included) and the session goes on; the SDK's connection would end it.
//   - Ids come back exactly as the peer wrote them: every request it sends
//     reaches the SDK under a number of the connection's own, and the
//     answer is given the original id, byte for byte (the SDK would turn
//     6.5 into 6, and integers past 2^53 into others). A request whose id
//     is not a string or a number, or is already in flight, is refused
//     and never reaches the SDK. A notifications/cancelled is mapped the
//     same way.
//   - A batch is answered with one array (Batches).
//
// Connect may be called once. The connection's reading goroutine ends when
// In does; Close makes Read return but cannot interrupt a read of In in
// progress. Neither In nor Out is closed by the connection.
type Transport struct {
	In  Stream
	Out io.Writer
	Log *slog.Logger // bad lines are logged here; nil = discard
	// Traffic, when set, sees every message read from In (toServer) and
	// written to Out, as it travelled; it must return quickly and not
	// keep msg.
	Traffic func(toServer bool, msg []byte)
}

// Connect implements mcp.Transport.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &conn{
		out:      t.Out,
		log:      log,
		traffic:  t.Traffic,
		incoming: make(chan jsonrpc.Message),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
		ids:      map[int64]*call{},
		inFlight: map[string]int64{},
	}
	c.batches = NewBatches(func(msg []byte) { _ = c.writeLine(msg) })
	go c.read(t.In)
	return c, nil
}

type conn struct {
	out     io.Writer
	log     *slog.Logger
	traffic func(toServer bool, msg []byte) // Transport.Traffic
	wmu     sync.Mutex                      // one line at a time on out
	batches *Batches

	incoming chan jsonrpc.Message
	done     chan struct{} // closed when In ended
	readErr  error         // why; set before done is closed
	closed   chan struct{}
	close    sync.Once

	mu       sync.Mutex
	ready    bool // the peer sent notifications/initialized, or a request of the modern era
	initSeen bool // the peer sent initialize
	next     int64
	ids      map[int64]*call  // the connection's number -> the peer's request
	inFlight map[string]int64 // the peer's raw id -> the connection's number
}

// call is a request of the peer's that the SDK has not answered.
type call struct {
	id       []byte // raw, as the peer wrote it
	canceled bool   // the peer canceled it: no answer goes out
	stream   bool   // a subscriptions/listen stream: answered only when it ends
}

// read hands every message of in to Read, answering the lines it cannot.
func (c *conn) read(in Stream) {
	defer close(c.done)
	for {
		msg, err := in.Next()
		if answer, refused := Refusal(err, c.log); refused {
			if answer != nil {
				_ = c.writeLine(answer)
			}
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				c.awaitAnswers()
			}
			c.readErr = err
			return
		}
		if c.traffic != nil {
			c.traffic(true, msg)
		}
		if !c.handle(msg) {
			return
		}
	}
}

// InputGrace is how long the requests read before a peer's input ended may
// take to be answered: a one-shot client writes its requests and closes
// its input before it reads, and clients send SIGTERM soon after closing
// it (mcpflow is gone within 5 s).
const InputGrace = 2 * time.Second

// TextShuttingDown answers a request still unanswered when mcpflow stops.
const TextShuttingDown = "mcpflow: shutting down (the client's input ended, or mcpflow was asked to stop) before the MCP server answered"

// awaitAnswers waits, at most InputGrace, until every request read has its
// answer; those still waiting then get TextShuttingDown, and the SDK's
// later answers to them are dropped.
func (c *conn) awaitAnswers() {
	deadline := time.NewTimer(InputGrace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for c.unanswered() > 0 {
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		case <-c.closed:
		}
		c.mu.Lock()
		var open []*call
		for _, cl := range c.ids {
			if !cl.canceled {
				cl.canceled = true
				delete(c.inFlight, string(cl.id))
				open = append(open, cl)
			}
		}
		c.mu.Unlock()
		for _, cl := range open {
			_ = c.writeLine(ErrorResponse(cl.id, CodeServerDown, TextShuttingDown, nil))
		}
		return
	}
}

// serverListChanged are the notifications a server sends when a list
// changes; a legacy client may get them only once it is initialized.
var serverListChanged = map[string]bool{
	"notifications/tools/list_changed":     true,
	"notifications/prompts/list_changed":   true,
	"notifications/resources/list_changed": true,
}

func (c *conn) isReady() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// unanswered counts the requests read that have no answer yet, listen
// streams aside (they last as long as the session).
func (c *conn) unanswered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cl := range c.ids {
		if !cl.canceled && !cl.stream {
			n++
		}
	}
	return n
}

// handle delivers one message (or a batch's elements) to Read; it reports
// false once the connection is closed.
func (c *conn) handle(msg []byte) bool {
	env, err := Peek(msg)
	if err != nil {
		return c.writeLine(ErrorResponse(nil, CodeInvalidRequest, TextNotAnRPC, nil)) == nil
	}
	if !env.IsArray {
		m, refusal := c.prepare(msg, env)
		switch {
		case refusal != nil:
			return c.writeLine(refusal) == nil
		case m == nil:
			return true
		}
		return c.deliver(m)
	}
	var elems []json.RawMessage
	if json.Unmarshal(msg, &elems) != nil || len(elems) == 0 {
		return c.writeLine(ErrorResponse(nil, CodeInvalidRequest, TextEmptyBatch, nil)) == nil
	}
	var ids, refusals [][]byte
	var ms []jsonrpc.Message
	for _, el := range elems {
		env, err := Peek(el)
		if err != nil || env.IsArray {
			refusals = append(refusals, ErrorResponse(nil, CodeInvalidRequest, TextNotAnRPC, nil))
			continue
		}
		m, refusal := c.prepare(el, env)
		if refusal != nil {
			refusals = append(refusals, refusal)
			continue
		}
		if m == nil {
			continue
		}
		if env.IsRequest() {
			ids = append(ids, env.ID)
		}
		ms = append(ms, m)
	}
	b := c.batches.Begin(ids, refusals)
	defer c.batches.Dispatched(b)
	for _, m := range ms {
		if !c.deliver(m) {
			return false
		}
	}
	return true
}

func (c *conn) deliver(m jsonrpc.Message) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.closed:
		return false
	}
}

// prepare makes one message into the SDK's form, renumbering a request
// (the envelope has what it needs: nothing is decoded twice); or it
// returns the error answer the message gets instead. A response that is
// no answer to the SDK's requests is dropped (nil, nil): a response gets
// no answer.
func (c *conn) prepare(msg []byte, env Envelope) (jsonrpc.Message, []byte) {
	if env.Method == "" && (env.Result != nil || env.HasError) {
		m, err := c.response(env)
		if err != nil {
			c.log.Warn("dropped a response that is not an answer to a request of mcpflow's", "err", err, "msg", Abbreviate(msg, 200))
		}
		return m, nil
	}
	id := env.ID
	if IDProblem(id) != "" {
		id = nil
	}
	invalid := func(why string) []byte { return ErrorResponse(id, CodeInvalidRequest, "Invalid Request: "+why, nil) }
	switch {
	case env.ID != nil && IDProblem(env.ID) != "":
		return nil, ErrorResponse(nil, CodeInvalidRequest, IDProblem(env.ID), nil)
	case string(env.Version) != `"2.0"`:
		return nil, invalid(`"jsonrpc" must be "2.0"`)
	case env.Method == "":
		return nil, invalid("a message needs a method, a result or an error")
	}
	req := &jsonrpc.Request{Method: env.Method, Params: env.Params}
	if req.Method == "" {
		return nil, invalid("the method is empty")
	}
	c.mu.Lock()
	switch req.Method {
	case "initialize":
		c.initSeen = true
	case "notifications/initialized":
		c.ready = true
	case "ping":
	default:
		c.ready = c.ready || !c.initSeen && env.ID != nil
	}
	defer c.mu.Unlock()
	if env.ID != nil {
		key := string(env.ID)
		if _, dup := c.inFlight[key]; dup {
			return nil, ErrorResponse(env.ID, CodeInvalidRequest, "Invalid Request: a request with this id is already in flight", nil)
		}
		c.next++
		c.ids[c.next] = &call{id: append([]byte(nil), env.ID...), stream: env.Method == "subscriptions/listen"}
		c.inFlight[key] = c.next
		req.ID, _ = jsonrpc.MakeID(float64(c.next)) // the SDK's way to an int64 id
		return req, nil
	}
	if req.Method == "notifications/cancelled" {
		if vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId"); ok {
			key := string(env.Params[vs:ve])
			if n, ok := c.inFlight[key]; ok {
				delete(c.inFlight, key)
				c.ids[n].canceled = true
				num, _ := json.Marshal(n)
				req.Params = Splice(env.Params, vs, ve, num)
			}
		}
	}
	return req, nil
}

// response is the SDK's form of a response to one of its requests (its
// own ids: nothing to map).
func (c *conn) response(env Envelope) (jsonrpc.Message, error) {
	var raw any
	if err := json.Unmarshal(env.ID, &raw); err != nil || raw == nil {
		return nil, errors.New("a response needs the id of a request")
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil {
		return nil, err
	}
	res := &jsonrpc.Response{ID: id, Result: env.Result}
	if env.HasError {
		var werr jsonrpc.Error
		if err := json.Unmarshal(env.Error, &werr); err != nil {
			werr = jsonrpc.Error{Code: CodeInternalError, Message: "malformed error: " + string(env.Error)}
		}
		res.Error, res.Result = &werr, nil
	}
	return res, nil
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case <-c.done:
		return nil, c.readErr
	case <-c.closed:
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write sends the SDK's message, an answer under the peer's own id.
func (c *conn) Write(_ context.Context, m jsonrpc.Message) error {
	if res, ok := m.(*jsonrpc.Response); ok {
		if werr, ok := res.Error.(*jsonrpc.Error); ok && werr.Code == 0 {
			// The SDK answers some requests (one before initialize) with
			// no code: every JSON-RPC error has one.
			werr.Code = CodeInvalidRequest
		}
	}
	if req, ok := m.(*jsonrpc.Request); ok && serverListChanged[req.Method] && !c.isReady() {
		return nil // a legacy client hears of changes once it is initialized
	}
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	if req, ok := m.(*jsonrpc.Request); ok && !req.ID.IsValid() {
		data = c.restoreSubscriptionID(data)
	}
	if res, ok := m.(*jsonrpc.Response); ok {
		if n, ok := res.ID.Raw().(int64); ok {
			c.mu.Lock()
			cl := c.ids[n]
			delete(c.ids, n)
			if cl != nil && !cl.canceled {
				delete(c.inFlight, string(cl.id))
			}
			c.mu.Unlock()
			switch {
			case cl == nil, cl.canceled:
				return nil // answered already, or given up by the peer
			default:
				env, err := Peek(data)
				if err == nil && env.ID != nil {
					data = Splice(data, env.IDStart, env.IDEnd, cl.id)
				}
			}
		}
		if c.batches.Collect(data) {
			return nil
		}
	}
	return c.writeLine(data)
}

// restoreSubscriptionID gives a notification of a subscriptions/listen
// stream (its acknowledgement, a list_changed) the listen request's id as
// the peer sent it, byte for byte: the SDK tags it with the number it knew
// the request by.
func (c *conn) restoreSubscriptionID(note []byte) []byte {
	ps, pe, ok := jsonscan.MemberSpan(note, "params")
	if !ok {
		return note
	}
	ms, me, ok := jsonscan.MemberSpan(note[ps:pe], "_meta")
	if !ok {
		return note
	}
	meta := note[ps+ms : ps+me]
	vs, ve, ok := jsonscan.MemberSpan(meta, mcp.MetaKeySubscriptionID)
	if !ok {
		return note
	}
	num, err := strconv.ParseInt(string(meta[vs:ve]), 10, 64)
	if err != nil {
		return note
	}
	c.mu.Lock()
	cl := c.ids[num]
	c.mu.Unlock()
	if cl == nil {
		return note
	}
	return Splice(note, ps+ms+vs, ps+ms+ve, cl.id)
}

func (c *conn) writeLine(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	if c.traffic != nil {
		c.traffic(false, msg)
	}
	_, err := c.out.Write(append(msg, '\n'))
	return err
}

func (c *conn) Close() error {
	c.close.Do(func() { close(c.closed) })
	return nil
}

func (c *conn) SessionID() string { return "" }

// Abbreviate is b for a log line: its first n bytes, and "…" when it is
// longer.
func Abbreviate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// Refusal reports whether err, from a Stream's Next, is a line that is no
// message (a *TooLargeError, an *InvalidError); then it logs it and
// returns the answer the peer gets: a parse error, or an invalid-request
// error under the id of a line too large (nil when that id cannot be
// read: a notification, or a line cut before its id).
func Refusal(err error, log *slog.Logger) (answer []byte, refused bool) {
	var tl *TooLargeError
	var bad *InvalidError
	switch {
	case errors.As(err, &tl):
		log.Warn("message too large; not read", "bytes", tl.Size, "limit", tl.Max)
		if id := tl.ID(); id != nil && IDProblem(id) == "" && string(id) != "null" {
			return ErrorResponse(id, CodeInvalidRequest, TextTooLarge(tl.Size, tl.Max), nil), true
		}
		return nil, true
	case errors.As(err, &bad) && bad.BadUTF8:
		log.Warn("a line is not valid UTF-8; answered with a parse error")
		return ErrorResponse(nil, CodeParseError, TextBadUTF8, nil), true
	case errors.As(err, &bad):
		log.Warn("a line is not JSON; answered with a parse error", "line", Abbreviate(bad.Line, 200))
		return ErrorResponse(nil, CodeParseError, TextBadJSON, nil), true
	}
	return nil, false
}
