package httpmcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/wire"
)

// Child says where a child serves Streamable HTTP and how long it may
// take to answer there. Its Link method makes the link of one start: it
// has the relay's Link's methods (relay.Child.Link takes it).
type Child struct {
	// URL is where the server serves, http://HOST:PORT/PATH; where it
	// holds Placeholder, each start gets a free port of HOST, given to the
	// command as PORT in its environment.
	URL         string
	Placeholder string // "{port}" (config.PortPlaceholder); "" = none
	// Wait bounds the wait for the URL to answer after the start
	// (relay.handshake_timeout); 0 = 30 s.
	Wait time.Duration
	// MaxMessage is the relay's max_message: the framer's bound on the
	// relay's lines.
	MaxMessage int
}

// Link returns the link of one start of the child.
func (c Child) Link() *Link {
	if c.Wait <= 0 {
		c.Wait = 30 * time.Second
	}
	return &Link{cfg: c}
}

// failGrace is how long the link keeps to itself the news that a call's
// HTTP exchange ended without an answer (the server's connection reset,
// a stream cut): the process has most likely died, and its crash report
// is the answer the call should get. A server that still runs after it
// gets an error answer for the call from the link.
const failGrace = time.Second

// Link carries the relay's messages to one HTTP child and back: the
// relay's ends are pipes of newline-delimited JSON, as a stdio child's
// are. Its contract is relay.Link's:
//
//   - Attach makes the pipes; the process's stdout and stderr both end in
//     logs (its stdin is empty). With a placeholder URL it picks a free
//     port and adds PORT to the command's environment.
//   - From Started on, the link waits until the URL answers an HTTP
//     request at all (any status), within Child.Wait; only then does the
//     first message go out. Messages the relay writes meanwhile wait in
//     order. A server that does not answer in time ends out; Lost then
//     says so, naming the command and the URL.
//   - Each message is decoded (jsonrpc.DecodeMessage) and written with
//     the SDK's Streamable HTTP client connection; each message the
//     server sends, on a POST's response or on the standalone GET stream,
//     comes out encoded (jsonrpc.EncodeMessage) as one line. The relay
//     sends the child only ids that the SDK's jsonrpc.ID holds exactly
//     (strings of printable ASCII without escapes, integers that a
//     float64 holds: relay's plainID), so ids come back byte for byte.
//   - A call's POST runs on its own: the next message goes out as soon
//     as the call's request was written, not when its answer came (a
//     JSON-answering server answers only when the call is done). An
//     initialize is the exception: what follows it waits for its HTTP
//     answer, which carries the session id.
//   - A call whose HTTP exchange fails while the server keeps running
//     (an error status, a stream that ends without the answer) gets an
//     error answer from the link (the server's own JSON-RPC error when
//     the HTTP answer carried one), after failGrace.
//   - Until the server first answers a request, the link answers a ping
//     itself (the URL answered, which is what a ping asks): a server may
//     know no session of this client before its handshake and refuse
//     anything else (the TypeScript SDK's servers answer 400, and the
//     SDK's client connection then fails for good). A server/discover
//     refused at the HTTP level gets "method not found": the server
//     speaks the legacy handshake.
//   - When the connection as a whole fails (the SDK's connection reports
//     a failure, such as the session gone), out ends and Lost says why.
//   - With a placeholder URL it overlaps (relay.Overlapper): the relay
//     may start it while the calls of the child it replaces drain.
//   - Closing in (the relay stops the child, or it exited) closes the
//     connection without a DELETE (the process is being stopped) and
//     ends out.
type Link struct {
	cfg  Child
	url  string // the URL of this start (the placeholder replaced)
	desc string // the command, for messages

	linkPipes

	ctx    context.Context
	cancel context.CancelFunc
	lost   atomic.Pointer[string]

	hc       *http.Client
	version  atomic.Pointer[string] // the legacy era's negotiated version, for the headers
	closing  atomic.Bool
	reached  atomic.Bool // the URL answered
	greeted  atomic.Bool // the server answered a request: it knows this client
	wg       sync.WaitGroup
	outMu    sync.Mutex
	initMu   sync.Mutex
	initID   *jsonrpc.ID // the initialize in flight
	getStart sync.Once
}

// linkPipes are a Link's ends: the process's output (stdout and stderr
// both) for the log, and the relay's two pipes.
type linkPipes struct {
	logR, logW *os.File
	inR        *io.PipeReader
	inW        *io.PipeWriter
	outR       *io.PipeReader
	outW       *io.PipeWriter
}

// Kind names the transport in the log.
func (l *Link) Kind() string { return "http" }

// Overlaps reports whether this start's process may run beside the one
// it replaces (relay.Overlapper): with a placeholder URL each start has a
// port of its own.
func (l *Link) Overlaps() bool {
	return l.cfg.Placeholder != "" && strings.Contains(l.cfg.URL, l.cfg.Placeholder)
}

// URL is where this start of the child serves (valid after Attach).
func (l *Link) URL() string { return l.url }

// Lost says what ended out while the process kept running.
func (l *Link) Lost() string {
	if p := l.lost.Load(); p != nil {
		return *p
	}
	return fmt.Sprintf("its HTTP connection (%s) ended", l.url)
}

// Waiting says what keeps the link from its server: "" once the URL
// answered (or before the start).
func (l *Link) Waiting() string {
	if l.reached.Load() || l.url == "" {
		return ""
	}
	if p := l.lost.Load(); p != nil {
		return *p
	}
	return fmt.Sprintf("%s did not answer at %s (is run.url where it listens?)", l.desc, l.url)
}

// Attach makes the link's pipes and sets the command's stdout, stderr
// and, with a placeholder URL, PORT.
func (l *Link) Attach(cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, io.ReadCloser, error) {
	l.desc = strconv.Quote(strings.Join(cmd.Args, " "))
	l.url = l.cfg.URL
	if l.cfg.Placeholder != "" && strings.Contains(l.url, l.cfg.Placeholder) {
		port, err := freePort(strings.ReplaceAll(l.url, l.cfg.Placeholder, "0"))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("picking a port for %s: %w", l.cfg.URL, err)
		}
		l.url = strings.ReplaceAll(l.url, l.cfg.Placeholder, port)
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, "PORT="+port)
	}
	var err error
	if l.logR, l.logW, err = os.Pipe(); err != nil {
		return nil, nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = l.logW, l.logW
	l.inR, l.inW = io.Pipe()
	l.outR, l.outW = io.Pipe()
	return l.inW, l.outR, l.logR, nil
}

// Started starts the link once the process runs; after a failed start
// it frees what Attach made.
func (l *Link) Started(err error) {
	l.logW.Close() // the process's now, or nobody's
	if err != nil {
		l.logR.Close()
		l.inR.Close()
		l.outW.Close()
		return
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, DisableCompression: true}
	l.hc = &http.Client{Transport: &headers{l: l, next: tr}}
	queue := make(chan jsonrpc.Message, 256)
	go l.readRelay(queue)
	go l.run(queue, tr)
}

// freePort returns a port that was free on the host of rawURL a moment ago.
func freePort(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// readRelay decodes the relay's lines into queue until in ends, then
// ends the link.
func (l *Link) readRelay(queue chan<- jsonrpc.Message) {
	defer close(queue)
	defer l.cancel()
	rd := wire.NewReader(l.inR, l.cfg.MaxMessage)
	for {
		line, err := rd.Next()
		var tl *wire.TooLargeError
		var bad *wire.InvalidError
		switch {
		case errors.As(err, &tl), errors.As(err, &bad):
			continue // the relay sends none
		case err != nil:
			l.closing.Store(true)
			return
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			if env, perr := wire.Peek(line); perr == nil && env.IsRequest() {
				l.emit(wire.ErrorResponse(env.ID, jsonrpc.CodeInvalidRequest, "mcpflow could not send this request over HTTP: "+err.Error(), nil))
			}
			continue
		}
		select {
		case queue <- msg:
		case <-l.ctx.Done():
			return
		}
	}
}

// run waits for the URL, connects, and sends the queue's messages until
// it closes; then it closes the connection and ends out.
func (l *Link) run(queue <-chan jsonrpc.Message, tr *http.Transport) {
	defer func() {
		l.cancel()
		l.wg.Wait()
		tr.CloseIdleConnections()
		l.outW.Close()
		l.inR.Close()
	}()
	if err := l.awaitURL(); err != nil {
		if l.ctx.Err() == nil {
			l.setLost(err.Error())
		}
		return
	}
	conn, err := (&mcp.StreamableClientTransport{Endpoint: l.url, HTTPClient: l.hc, MaxRetries: -1}).Connect(l.ctx)
	if err != nil {
		l.setLost(fmt.Sprintf("its HTTP connection (%s) failed: %v", l.url, err))
		return
	}
	defer conn.Close()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.readConn(conn)
	}()
	l.reached.Store(true)
	for {
		select {
		case msg, ok := <-queue:
			if !ok {
				return
			}
			l.send(conn, msg)
		case <-l.ctx.Done():
			return
		}
	}
}

// awaitURL waits until the URL answers an HTTP request, within Wait.
func (l *Link) awaitURL() error {
	deadline := time.Now().Add(l.cfg.Wait)
	delay := 5 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(l.ctx, time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, l.url, nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := l.hc.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if l.ctx.Err() != nil {
			return l.ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer at %s within %s (is run.url where it listens?)", l.desc, l.url, l.cfg.Wait)
		}
		select {
		case <-l.ctx.Done():
			return l.ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
}

// send writes one message to the server. A call runs on its own once
// its request was written; the link answers it should its exchange fail.
func (l *Link) send(conn mcp.Connection, msg jsonrpc.Message) {
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || !req.IsCall() {
		_ = conn.Write(l.ctx, msg) // a notification or an answer: one quick POST
		return
	}
	if req.Method == "ping" && !l.greeted.Load() {
		l.emitMsg(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
		return
	}
	if req.Method == "initialize" {
		l.initMu.Lock()
		id := req.ID
		l.initID = &id
		l.initMu.Unlock()
		if err := conn.Write(l.ctx, msg); err != nil {
			l.failCall(req, err)
		}
		return
	}
	wrote := make(chan struct{})
	var once sync.Once
	ctx := httptrace.WithClientTrace(l.ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(wrote) }) }})
	done := make(chan struct{})
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(done)
		if err := conn.Write(ctx, msg); err != nil {
			l.failCall(req, err)
		}
	}()
	select {
	case <-wrote:
	case <-done:
	case <-l.ctx.Done():
	}
}

// failCall answers a call whose HTTP exchange failed, unless the link
// ends within failGrace (the process exited: the relay reports it).
func (l *Link) failCall(req *jsonrpc.Request, err error) {
	if l.ctx.Err() != nil {
		return
	}
	id := req.ID
	if werr := serverError(err); werr != nil {
		// The server's own answer, sent with an error status.
		l.emitMsg(&jsonrpc.Response{ID: id, Error: werr})
		return
	}
	if req.Method == "server/discover" && l.reached.Load() {
		l.emitMsg(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: "Method not found: the server refused server/discover over HTTP (" + err.Error() + "); it speaks the legacy handshake"}})
		return
	}
	answer := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpflow could not reach the server over HTTP: " + err.Error()}}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		select {
		case <-l.ctx.Done():
		case <-time.After(failGrace):
			l.emitMsg(answer)
		}
	}()
}

// serverError is the JSON-RPC error a server answered with, found in
// err, the SDK's report of a failed exchange; nil when there is none (the
// SDK's own "rejected by transport" is not the server's).
func serverError(err error) *jsonrpc.Error {
	switch e := err.(type) {
	case nil:
		return nil
	case *jsonrpc.Error:
		if e.Code == rejectedCode && e.Message == "rejected by transport" {
			return nil
		}
		return e
	case interface{ Unwrap() []error }:
		for _, u := range e.Unwrap() {
			if w := serverError(u); w != nil {
				return w
			}
		}
	case interface{ Unwrap() error }:
		return serverError(e.Unwrap())
	}
	return nil
}

// rejectedCode is the code of the SDK's jsonrpc2.ErrRejected.
const rejectedCode = -32005

// readConn writes each message the connection reads as a line of out,
// until it fails or closes.
func (l *Link) readConn(conn mcp.Connection) {
	for {
		msg, err := conn.Read(l.ctx)
		if err != nil {
			if l.ctx.Err() == nil && !l.closing.Load() {
				l.setLost(fmt.Sprintf("its HTTP connection (%s) failed: %v", l.url, err))
				l.cancel()
			}
			return
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			var werr *jsonrpc.Error
			if resp.Error != nil && !errors.As(resp.Error, &werr) {
				// The SDK's own answer to a call whose stream ended
				// without the server's: most likely it died.
				l.failCall(&jsonrpc.Request{ID: resp.ID}, resp.Error)
				continue
			}
			if resp.Error == nil {
				l.greeted.Store(true)
			}
			l.initialized(conn, resp)
		}
		l.emitMsg(msg)
	}
}

// initialized notes the answer to a legacy initialize: the version for
// the headers, and the standalone GET stream of the session.
func (l *Link) initialized(conn mcp.Connection, resp *jsonrpc.Response) {
	l.initMu.Lock()
	isInit := l.initID != nil && *l.initID == resp.ID
	if isInit {
		l.initID = nil
	}
	l.initMu.Unlock()
	if !isInit || resp.Error != nil {
		return
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(resp.Result, &r) != nil || r.ProtocolVersion == "" || wire.IsModern(r.ProtocolVersion) {
		return
	}
	l.version.Store(&r.ProtocolVersion)
	l.getStart.Do(func() {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.listen(conn.SessionID())
		}()
	})
}

// listen reads the session's standalone GET stream (server-sent events)
// until the link ends, reconnecting when the server ends it; a server
// that offers no such stream (405, or no event stream) is left alone.
func (l *Link) listen(session string) {
	lastID := ""
	for tries := 0; tries < 5 && l.ctx.Err() == nil; tries++ {
		if tries > 0 {
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(time.Duration(tries) * 200 * time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(l.ctx, http.MethodGet, l.url, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := l.hc.Do(req)
		if err != nil {
			continue
		}
		ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(ct) != "text/event-stream" {
			resp.Body.Close()
			return
		}
		if id, progress := l.readEvents(resp.Body); progress {
			lastID, tries = id, 0
		}
		resp.Body.Close()
	}
}

// readEvents reads server-sent events, writing each message event's data
// to out; it returns the last event id and whether any event came.
func (l *Link) readEvents(body io.Reader) (lastID string, progress bool) {
	br := bufio.NewReaderSize(body, 64<<10)
	var data bytes.Buffer
	event := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return lastID, progress
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if data.Len() > 0 && (event == "" || event == "message") {
				if msg, err := jsonrpc.DecodeMessage(data.Bytes()); err == nil {
					l.emitMsg(msg)
				}
				progress = true
			}
			data.Reset()
			event = ""
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
		case "event":
			event = value
		case "id":
			lastID = value
		}
	}
}

// emitMsg writes msg to out as one line.
func (l *Link) emitMsg(msg jsonrpc.Message) {
	if b, err := jsonrpc.EncodeMessage(msg); err == nil {
		l.emit(b)
	}
}

// emit writes one line to out.
func (l *Link) emit(b []byte) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	_, _ = l.outW.Write(append(b, '\n'))
}

func (l *Link) setLost(s string) { l.lost.CompareAndSwap(nil, &s) }

// headers is the link's HTTP client's transport: it adds the legacy
// era's negotiated version to each request that has none (the SDK adds
// it only for an mcp.ClientSession), and sends no DELETE once the link
// closes, since the process is stopped anyway.
type headers struct {
	l    *Link
	next http.RoundTripper
}

func (h *headers) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete && (h.l.closing.Load() || h.l.ctx.Err() != nil) {
		return nil, errors.New("the server is being stopped")
	}
	if v := h.l.version.Load(); v != nil && req.Header.Get("Mcp-Protocol-Version") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Mcp-Protocol-Version", *v)
	}
	return h.next.RoundTrip(req)
}
