package wire

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where mcpflow terminates the protocol with the Go SDK (it answers for
// itself: [cli]'s tools; or it translates between the eras: the bridge),
// the SDK's peer meets the message-level seams here, in memory: no pipe,
// no second framer. Every SDK peer is connected by a conn, which keeps
// JSON-RPC's promises where the SDK's own connections do not:
//
//   - Ids come back exactly as the other side wrote them: every request it
//     sends reaches the SDK under a number of the connection's own, and the
//     answer is given the original id, byte for byte (the SDK would turn
//     6.5 into 6, and integers past 2^53 into others). A request whose id
//     is not a string or a number, or is already in flight, is refused
//     and never reaches the SDK. A notifications/cancelled is mapped the
//     same way, and so is the subscription id of a listen stream's
//     notifications.
//   - A message that is no JSON-RPC message gets an error answer, and the
//     session goes on; the SDK's connection would end it.
//
// On a byte stream, an SDK server is served by Serve on an SDKServer.

// SDKServer is an Opener whose sessions a Go SDK server serves: each Open
// connects srv to the client on a conn of its own.
type SDKServer struct {
	Server *mcp.Server
	Log    *slog.Logger // nil = discard
}

// Open connects a session of the SDK server to c.
func (s SDKServer) Open(c Client) Session {
	conn := newConn(c.Deliver, s.Log)
	ss, err := s.Server.Connect(context.Background(), conn, nil)
	if err != nil {
		conn.stop() // ss is nil
	}
	return sdkSession{c: conn, ss: ss}
}

// sdkSession is the session a conn's SDK peer serves, ss (nil when it
// could not connect).
type sdkSession struct {
	c  *conn
	ss *mcp.ServerSession
}

func (s sdkSession) Send(msg []byte) { s.c.push(msg) }

// Close stops every delivery (waiting for one under way) before it closes
// the SDK's session, so that nothing is delivered once it returns.
func (s sdkSession) Close() {
	s.c.stop()
	if s.ss != nil {
		_ = s.ss.Close()
	}
}

// SessionTransport is an mcp.Transport on which a Go SDK peer (the
// bridge's client) talks to a session of o: what the peer writes is the
// session's Send, what the session delivers the peer reads. Each Connect
// opens a session; closing the connection closes it.
func SessionTransport(o Opener, log *slog.Logger) mcp.Transport {
	return sessionTransport{o: o, log: log}
}

type sessionTransport struct {
	o   Opener
	log *slog.Logger
}

func (st sessionTransport) Connect(context.Context) (mcp.Connection, error) {
	var s Session
	c := newConn(func(msg, _ []byte) { s.Send(msg) }, st.log)
	s = st.o.Open(ClientFunc(func(msg, _ []byte) { c.push(Expand(msg)) })) // the peer reads it all
	c.onClose = s.Close
	return c, nil
}

// queueLen bounds the messages a conn holds for its SDK peer: push waits
// while that many wait to be read (back-pressure).
const queueLen = 16

// conn is the mcp.Connection of a Go SDK peer whose other side is
// message-level: what the other side sends is pushed, what the peer
// writes goes to send, one message at a time (rel: for a response, the
// id it answers, as the other side wrote it).
type conn struct {
	send    func(msg, rel []byte)
	log     *slog.Logger
	in      chan []byte
	ctx     context.Context // canceled by Close
	cancel  context.CancelFunc
	once    sync.Once
	onClose func() // run once by Close, when set

	wmu sync.Mutex // one send at a time

	mu       sync.Mutex
	ready    bool // the other side sent notifications/initialized, or a request of the modern era
	initSeen bool // it sent initialize
	next     int64
	ids      map[int64]*call  // the connection's number -> the other side's request
	inFlight map[string]int64 // the other side's raw id -> the connection's number
}

// call is a request of the other side's that the SDK has not answered.
type call struct {
	id       []byte // raw, as the other side wrote it
	canceled bool   // it was canceled: no answer goes out
}

func newConn(send func(msg, rel []byte), log *slog.Logger) *conn {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{send: send, log: log, in: make(chan []byte, queueLen), ctx: ctx, cancel: cancel,
		ids: map[int64]*call{}, inFlight: map[string]int64{}}
}

// Connect makes the conn its own mcp.Transport.
func (c *conn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

// push hands one message of the other side's to the peer; it waits while
// the peer is behind, and drops msg once the conn is closed.
func (c *conn) push(msg []byte) {
	select {
	case c.in <- msg:
	case <-c.ctx.Done():
	}
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var msg []byte
		select {
		case msg = <-c.in:
		case <-c.ctx.Done():
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m, refusal := c.prepare(msg)
		if refusal != nil {
			c.write(refusal)
		}
		if m != nil {
			return m, nil
		}
	}
}

// prepare makes one message into the SDK's form, renumbering a request
// (the envelope has what it needs: nothing is decoded twice); or it
// returns the error answer the message gets instead. A response that is
// no answer to the SDK's requests is dropped (nil, nil): a response gets
// no answer.
func (c *conn) prepare(msg []byte) (jsonrpc.Message, []byte) {
	env, err := Peek(msg)
	if err != nil {
		return nil, ErrorResponse(nil, CodeInvalidRequest, TextNotAnRPC, nil)
	}
	if env.IsResponse() {
		m, err := sdkResponse(env)
		if err != nil {
			c.log.Warn("dropped a response that is not an answer to a request of mcpflow's", "err", err, "msg", Abbreviate(msg, 200))
		}
		return m, nil
	}
	id := env.ID
	if IDProblem(id) != "" {
		return nil, ErrorResponse(nil, CodeInvalidRequest, IDProblem(id), nil)
	}
	invalid := func(why string) []byte { return ErrorResponse(id, CodeInvalidRequest, "Invalid Request: "+why, nil) }
	switch {
	case string(env.Version) != `"2.0"`:
		return nil, invalid(`"jsonrpc" must be "2.0"`)
	case env.Method == "":
		return nil, ErrorResponse(id, CodeInvalidRequest, TextNoKind, nil)
	}
	req := &jsonrpc.Request{Method: env.Method, Params: env.Params}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch req.Method {
	case "initialize":
		c.initSeen = true
	case "notifications/initialized":
		c.ready = true
	case "ping":
	default:
		c.ready = c.ready || !c.initSeen && id != nil
	}
	if id != nil {
		if _, dup := c.inFlight[string(id)]; dup {
			return nil, ErrorResponse(id, CodeInvalidRequest, TextInFlight, nil)
		}
		c.next++
		c.ids[c.next] = &call{id: append([]byte(nil), id...)}
		c.inFlight[string(id)] = c.next
		req.ID, _ = jsonrpc.MakeID(float64(c.next)) // the SDK's way to an int64 id
		return req, nil
	}
	if req.Method == "notifications/cancelled" {
		if vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId"); ok {
			key := string(env.Params[vs:ve])
			if n, ok := c.inFlight[key]; ok {
				delete(c.inFlight, key)
				c.ids[n].canceled = true
				req.Params = Splice(env.Params, vs, ve, strconv.AppendInt(nil, n, 10))
			}
		}
	}
	return req, nil
}

// sdkResponse is the SDK's form of a response to one of its requests (its
// own ids: nothing to map).
func sdkResponse(env Envelope) (jsonrpc.Message, error) {
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

// serverListChanged are the notifications a server sends when a list
// changes; a legacy client may get them only once it is initialized.
var serverListChanged = map[string]bool{
	"notifications/tools/list_changed":     true,
	"notifications/prompts/list_changed":   true,
	"notifications/resources/list_changed": true,
}

// Write sends the SDK's message, an answer under the other side's own id.
func (c *conn) Write(_ context.Context, m jsonrpc.Message) error {
	if res, ok := m.(*jsonrpc.Response); ok {
		if werr, ok := res.Error.(*jsonrpc.Error); ok && werr.Code == 0 {
			// The SDK answers some requests (one before initialize) with
			// no code: every JSON-RPC error has one.
			werr.Code = CodeInvalidRequest
		}
	}
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	switch m := m.(type) {
	case *jsonrpc.Request:
		c.mu.Lock()
		ready := c.ready
		c.mu.Unlock()
		if serverListChanged[m.Method] && !ready {
			return nil // a legacy client hears of changes once it is initialized
		}
		if !m.ID.IsValid() {
			data = c.restoreSubscriptionID(data)
		}
	case *jsonrpc.Response:
		n, ok := m.ID.Raw().(int64)
		if !ok {
			break
		}
		c.mu.Lock()
		cl := c.ids[n]
		delete(c.ids, n)
		if cl != nil && !cl.canceled {
			delete(c.inFlight, string(cl.id))
		}
		c.mu.Unlock()
		if cl == nil || cl.canceled {
			return nil // answered already, or given up by the other side
		}
		if env, err := Peek(data); err == nil && env.ID != nil {
			data = Splice(data, env.IDStart, env.IDEnd, cl.id)
		}
	}
	return c.write(data)
}

// restoreSubscriptionID gives a notification of a subscriptions/listen
// stream (its acknowledgement, a list_changed) the listen request's id as
// the other side sent it, byte for byte: the SDK tags it with the number
// it knew the request by.
func (c *conn) restoreSubscriptionID(note []byte) []byte {
	env, _ := Peek(note)
	vs, ve, ok := env.MetaSpan(mcp.MetaKeySubscriptionID)
	if !ok {
		return note
	}
	num, err := strconv.ParseInt(string(note[vs:ve]), 10, 64)
	if err != nil {
		return note
	}
	c.mu.Lock()
	cl := c.ids[num]
	c.mu.Unlock()
	if cl == nil {
		return note
	}
	return Splice(note, vs, ve, cl.id)
}

// write sends one message; a response goes with its own id as rel.
func (c *conn) write(msg []byte) error {
	var rel []byte
	if IsResponse(msg) {
		if env, err := Peek(msg); err == nil {
			rel = env.ID
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.ctx.Err() != nil {
		return mcp.ErrConnectionClosed
	}
	c.send(msg, rel)
	return nil
}

// stop closes the conn once no send is under way: nothing is sent once it
// returns.
func (c *conn) stop() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.Close()
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.cancel()
		if c.onClose != nil {
			c.onClose()
		}
	})
	return nil
}

func (c *conn) SessionID() string { return "" }
