package httpmcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

const (
	// postTimeout bounds the wait for the server to take a notification
	// or a response (its 202).
	postTimeout = 10 * time.Second
	// checkTimeout bounds a session check.
	checkTimeout = 10 * time.Second
	// getRetries is how often a stream is reconnected without it having
	// brought anything new.
	getRetries = 5
	// resumeRetries is how often a request's stream that ended before its
	// answer is resumed (GET with Last-Event-ID) without progress.
	resumeRetries = 3
	// bodyStart is how much of an error body an error answer quotes.
	bodyStart = 200
)

// dispatch sends one message from the queue.
func (l *Link) dispatch(msg []byte) {
	env, err := wire.Peek(msg)
	if err != nil || env.IsArray {
		l.log.Warn("not sent to the HTTP server: not one JSON-RPC message", "message", wire.Abbreviate(msg, bodyStart))
		return
	}
	if !env.IsRequest() {
		l.post(msg, &env)
		return
	}
	if env.Method == "ping" && !l.greeted.Load() {
		l.deliver(wire.ResultResponse(env.ID, []byte("{}")), nil)
		return
	}
	x := &exchange{l: l, msg: msg, env: env, settled: make(chan struct{})}
	wrote, ended := make(chan struct{}), make(chan struct{})
	l.wg.Go(func() {
		defer close(ended)
		x.run(wrote)
	})
	next := wrote
	if env.Method == "initialize" {
		next = x.settled // what follows needs its answer: the session, the version
	}
	select {
	case <-next:
	case <-ended:
	case <-l.ctx.Done():
	}
}

// newPost makes the POST of msg with the media types and the headers
// its era needs.
func (l *Link) newPost(ctx context.Context, msg []byte, env *wire.Envelope) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	l.setHeaders(req.Header, env)
	return req, nil
}

// post sends a notification or a response and waits (bounded) for the
// server to take it.
func (l *Link) post(msg []byte, env *wire.Envelope) {
	ctx, cancel := context.WithTimeout(l.ctx, postTimeout)
	defer cancel()
	req, err := l.newPost(ctx, msg, env)
	if err != nil {
		l.log.Warn("not sent to the HTTP server", "method", env.Method, "error", err)
		return
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		if l.ctx.Err() == nil {
			l.log.Warn("the HTTP server did not take a message", "method", env.Method, "error", err)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 300 {
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
			l.log.Debug("the HTTP server answered a notification or response with "+resp.Status+" (202 expected)", "method", env.Method)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return
	}
	body, _, _ := readBody(resp.Body, resp.ContentLength, 64<<10, false)
	l.log.Warn("the HTTP server refused a message; dropped", "method", env.Method, "status", resp.Status, "body", wire.Abbreviate(body, bodyStart))
	if resp.StatusCode == http.StatusNotFound && req.Header.Get(hdrSessionID) != "" {
		l.checkSession(true)
	}
}

// exchange is one request's HTTP exchange: its POST, and the stream that
// carries its answer.
type exchange struct {
	l        *Link
	msg      []byte
	env      wire.Envelope
	answered bool          // the answer was passed on (or dropped as too large or junk, which the relay answers)
	settled  chan struct{} // closed once answered, and what the answer taught the link was noted
}

// settle notes that the request is answered.
func (x *exchange) settle() {
	if !x.answered {
		x.answered = true
		close(x.settled)
	}
}

// run POSTs the request and hands on what the server answers; wrote is
// closed once the request was written.
func (x *exchange) run(wrote chan struct{}) {
	l := x.l
	var once sync.Once
	ctx := httptrace.WithClientTrace(l.ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		once.Do(func() { close(wrote) })
	}})
	req, err := l.newPost(ctx, x.msg, &x.env)
	if err != nil {
		x.answer(wire.CodeInternalError, "mcpflow could not send this request over HTTP: "+err.Error())
		return
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		x.failLater(fmt.Sprintf("the POST to %s failed: %v", l.url, err))
		return
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get(hdrSessionID); sid != "" && x.env.Method == "initialize" && resp.StatusCode < 300 {
		l.session.mu.Lock()
		l.session.id = sid
		l.session.mu.Unlock()
	}
	if resp.StatusCode >= 300 {
		x.status(resp, req.Header.Get(hdrSessionID) != "")
		return
	}
	switch ct := mediaType(resp); {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		x.failLater("the server answered " + resp.Status + ", with no answer to the request")
	case ct == "application/json":
		x.jsonBody(resp)
	case ct == "text/event-stream":
		x.stream(resp.Body)
	default:
		x.answer(wire.CodeInternalError, fmt.Sprintf("mcpflow: the server answered this request with %s and Content-Type %q (application/json or text/event-stream expected)", resp.Status, resp.Header.Get("Content-Type")))
	}
}

// jsonBody hands on the message (or each message of the array) of a JSON
// answer.
func (x *exchange) jsonBody(resp *http.Response) {
	body, tl, err := readBody(resp.Body, resp.ContentLength, x.l.cfg.MaxMessage, true)
	switch {
	case tl != nil:
		x.tooLarge(tl)
	case err != nil:
		x.failLater(fmt.Sprintf("reading its answer from %s failed: %v", x.l.url, err))
		return
	case len(bytes.TrimSpace(body)) > 0:
		x.data(body)
	}
	if !x.answered {
		x.failLater("the server's JSON answer held no answer to the request")
	}
}

// stream hands on each message of the request's event stream; a stream
// that ends before the answer is resumed (GET with Last-Event-ID) when
// its events had ids, else the request gets the link's error.
func (x *exchange) stream(body io.Reader) {
	l := x.l
	sr := newSSE(body, l.cfg.MaxMessage)
	sr.cutLarge = true // an event past the limit is not read to its end
	err := sr.each(x.event)
	for tries := 0; !x.answered && sr.lastID != "" && tries < resumeRetries && l.ctx.Err() == nil; tries++ {
		last := sr.lastID
		if !sleep(l.ctx, reconnectDelay(sr.retry, tries)) {
			return
		}
		resp, gerr := l.get(last)
		if gerr != nil {
			err = gerr
			continue
		}
		if !isStream(resp) {
			resp.Body.Close()
			err = fmt.Errorf("resuming it got %s", resp.Status)
			break
		}
		sr.br.Reset(resp.Body) // a resumed stream: the last event id is kept
		err = sr.each(x.event)
		resp.Body.Close()
		if sr.lastID != last {
			tries = -1 // progress
		}
	}
	if !x.answered {
		what := "its event stream ended before the answer"
		if err != nil && !errors.Is(err, io.EOF) {
			what = fmt.Sprintf("its event stream broke before the answer (%v)", err)
		}
		x.failLater(what)
	}
}

// event hands on one event of the request's stream.
func (x *exchange) event(ev sseEvent) {
	if ev.tooLarge != nil {
		x.tooLarge(ev.tooLarge)
		return
	}
	x.data(ev.data)
}

// data hands on one JSON answer or event: a message, or an array of them.
func (x *exchange) data(data []byte) {
	l := x.l
	if !jsonscan.Valid(data) {
		mine := bytes.Equal(wire.PartialID(data), x.env.ID)
		l.junk(data, true)
		if mine {
			x.settle() // the relay answers it
		}
		return
	}
	env, err := wire.Peek(data)
	if err != nil || !env.IsArray {
		x.message(data, &env, err)
		return
	}
	var elems []json.RawMessage
	if json.Unmarshal(data, &elems) != nil || len(elems) == 0 {
		l.junk(data, false)
		return
	}
	for _, el := range elems {
		env, err := wire.Peek(el)
		x.message(el, &env, err)
	}
}

// message hands on one message that arrived on the request's exchange.
func (x *exchange) message(msg []byte, env *wire.Envelope, err error) {
	l := x.l
	if !l.isMessage(msg, env, err) {
		return
	}
	if !env.IsResponse() {
		l.deliver(msg, x.env.ID)
		return
	}
	mine := bytes.Equal(env.ID, x.env.ID)
	if mine && env.Result != nil {
		l.greeted.Store(true)
		if x.env.Method == "tools/list" {
			l.params.learn(env.Result)
		}
	}
	l.deliver(msg, nil)
	if mine {
		if env.Result != nil && x.env.Method == "initialize" {
			l.initialized(env.Result)
		}
		x.settle()
	}
}

// isMessage reports whether a message of the server's, read by wire.Peek
// (env, err), is one JSON-RPC message; what is not is handed on as junk.
func (l *Link) isMessage(msg []byte, env *wire.Envelope, err error) bool {
	if err != nil || env.IsArray || (env.Method == "" && env.Result == nil && !env.HasError) {
		l.junk(msg, false)
		return false
	}
	return true
}

func (x *exchange) tooLarge(tl *wire.TooLargeError) {
	x.l.receive(func(r wire.LinkReceiver) { r.TooLarge(tl) })
	if bytes.Equal(tl.ID(), x.env.ID) {
		x.settle() // the relay answers it
	}
}

// status handles an error status (the package doc says how); a request
// whose 404 means the session is lost is left to the relay, which
// answers it with the report of the lost session.
func (x *exchange) status(resp *http.Response, withSession bool) {
	l := x.l
	body, tl, err := readBody(resp.Body, resp.ContentLength, l.cfg.MaxMessage, true)
	if tl != nil {
		body = tl.Head
	}
	var env wire.Envelope
	isRPC := tl == nil && err == nil && jsonscan.Valid(body)
	if isRPC {
		env, err = wire.Peek(body)
		isRPC = err == nil && env.IsResponse()
	}
	own := isRPC && bytes.Equal(env.ID, x.env.ID)
	if resp.StatusCode == http.StatusNotFound && withSession && !own && l.checkSession(false) {
		x.settle()
		return
	}
	switch {
	case own:
		// The server's own answer to the request: it knew the session.
		l.deliver(body, nil)
		x.settle()
	case x.env.Method == "server/discover":
		x.answer(wire.CodeMethodNotFound, fmt.Sprintf("Method not found: the server refused server/discover over HTTP (%s: %s); it speaks the legacy handshake", resp.Status, wire.Abbreviate(bytes.TrimSpace(body), bodyStart)))
	case isRPC && env.HasError && env.ID != nil:
		// The server's error, written before it read the request's id
		// (id null): the request's answer, under its id.
		l.deliver(wire.Splice(body, env.IDStart, env.IDEnd, x.env.ID), nil)
		x.settle()
	default:
		x.answer(wire.CodeInternalError, fmt.Sprintf("mcpflow: the server answered this request with HTTP %s: %s", resp.Status, wire.Abbreviate(bytes.TrimSpace(body), bodyStart)))
	}
}

// answer answers the request with an error of the link's, now.
func (x *exchange) answer(code int, text string) {
	x.l.deliver(wire.ErrorResponse(x.env.ID, code, text, nil), nil)
	x.settle()
}

// failLater answers the request with the link's error after failGrace,
// unless the link ends first (the process died: the relay's report is
// the better answer).
func (x *exchange) failLater(what string) {
	l := x.l
	if l.ctx.Err() != nil {
		return
	}
	x.settle()
	answer := wire.ErrorResponse(x.env.ID, wire.CodeInternalError, "mcpflow: no answer from the server over HTTP: "+what, nil)
	l.wg.Go(func() {
		if sleep(l.ctx, failGrace) {
			l.deliver(answer, nil)
		}
	})
}

// initialized notes a legacy initialize's answer: the negotiated version
// for the headers, and the session's standalone GET stream.
func (l *Link) initialized(result []byte) {
	var version string
	if json.Unmarshal(jsonscan.Member(result, "protocolVersion"), &version) != nil || version == "" || wire.IsModern(version) {
		return
	}
	if l.session.negotiated(version) {
		l.wg.Go(l.listen)
	}
}

// get opens a GET event stream with the session's headers.
func (l *Link) get(lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(l.ctx, http.MethodGet, l.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	l.setHeaders(req.Header, &wire.Envelope{}) // the session's, and its legacy version
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	return l.hc.Do(req)
}

// isStream reports whether resp is an event stream.
func isStream(resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK && mediaType(resp) == "text/event-stream"
}

func mediaType(resp *http.Response) string {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return ct
}

// listen reads the session's standalone GET stream until the link ends,
// reconnecting (with the last event id) when the server ends it; a server
// that offers no such stream (405, or no event stream) is left alone.
func (l *Link) listen() {
	sr := newSSE(nil, l.cfg.MaxMessage)
	for tries := 0; tries < getRetries && l.ctx.Err() == nil; tries++ {
		if tries > 0 && !sleep(l.ctx, reconnectDelay(sr.retry, tries)) {
			return
		}
		last := sr.lastID
		resp, err := l.get(last)
		if err != nil {
			continue
		}
		if !isStream(resp) {
			resp.Body.Close()
			l.log.Debug("no standalone stream from the HTTP server", "status", resp.Status, "content-type", mediaType(resp))
			if resp.StatusCode == http.StatusNotFound {
				l.checkSession(true)
			}
			return
		}
		got := false
		sr.br.Reset(resp.Body)
		_ = sr.each(func(ev sseEvent) {
			got = true
			l.standalone(ev)
		})
		resp.Body.Close()
		if got || sr.lastID != last {
			tries = 0
		}
	}
}

// standalone hands on one event of the standalone stream (rel nil).
func (l *Link) standalone(ev sseEvent) {
	if ev.tooLarge != nil {
		l.receive(func(r wire.LinkReceiver) { r.TooLarge(ev.tooLarge) })
		return
	}
	if !jsonscan.Valid(ev.data) {
		l.junk(ev.data, true)
		return
	}
	if env, err := wire.Peek(ev.data); l.isMessage(ev.data, &env, err) {
		l.deliver(ev.data, nil)
	}
}

// checkSession checks, with a ping of the link's own, whether the server
// still knows the session after a 404: a 404 to the ping too, without
// the ping's answer, ends the link (Lost). In the background, one check
// runs at a time; else it reports, now, whether the session is lost.
func (l *Link) checkSession(background bool) (lost bool) {
	if l.ctx.Err() != nil {
		return true
	}
	id, ok := l.session.check(background)
	if !ok {
		return false
	}
	check := func() bool {
		defer l.session.checked(background)
		if !l.sessionGone(id) {
			return false
		}
		if l.ctx.Err() == nil { // else closed already: the relay knows why
			l.lost.Store(true)
			l.log.Warn("HTTP child link ended", "url", l.url, "why", l.Lost())
			l.cancel()
		}
		return true
	}
	if background {
		l.wg.Go(func() { check() })
		return false
	}
	return check()
}

// sessionGone pings the server with the session id and reports whether
// it answered 404 without the ping's answer.
func (l *Link) sessionGone(id []byte) bool {
	ctx, cancel := context.WithTimeout(l.ctx, checkTimeout)
	defer cancel()
	msg := wire.Request(id, "ping", nil)
	env, _ := wire.Peek(msg)
	req, err := l.newPost(ctx, msg, &env)
	if err != nil {
		return false
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		l.log.Debug("HTTP session check: no answer", "error", err)
		return false
	}
	defer resp.Body.Close()
	gone := resp.StatusCode == http.StatusNotFound
	if gone {
		body, _, _ := readBody(resp.Body, resp.ContentLength, 64<<10, false)
		env, err := wire.Peek(body)
		gone = !jsonscan.Valid(body) || err != nil || !env.IsResponse() || !bytes.Equal(env.ID, id)
	}
	if !gone {
		l.log.Debug("HTTP session check: the session is alive", "status", resp.Status)
	}
	return gone
}

// readBody reads a body of at most max bytes (length is its
// Content-Length, -1 when unknown): whole, or, with stub, as a stub when
// it is long (a server's: wire.Spool). A longer body is not kept: tl
// reports it, with its start and size (a body of unknown length is read
// on for the size). A body that is not valid JSON comes as it was read.
func readBody(r io.Reader, length int64, max int, stub bool) (body []byte, tl *wire.TooLargeError, err error) {
	if length > int64(max) {
		head := make([]byte, min(wire.HeadSize, max))
		n, _ := io.ReadFull(r, head)
		return nil, &wire.TooLargeError{Size: int(length), Max: max, Head: head[:n]}, nil
	}
	var sp wire.Spool
	defer sp.Close()
	n, err := io.Copy(&sp, io.LimitReader(r, int64(max)+1))
	if n > int64(max) {
		rest, _ := io.Copy(io.Discard, r)
		return nil, &wire.TooLargeError{Size: int(n + rest), Max: max, Head: sp.Head()}, nil
	}
	body, merr := sp.Message(!stub)
	var bad *wire.InvalidError
	if errors.As(merr, &bad) {
		body, merr = bad.Line, nil // the caller finds it is no message
	}
	return body, nil, cmp.Or(err, merr)
}

// reconnectDelay is the wait before reconnecting a stream: the server's
// retry when it gave one, else a little longer each try.
func reconnectDelay(retry time.Duration, tries int) time.Duration {
	if retry > 0 {
		return min(retry, 30*time.Second)
	}
	return time.Duration(tries+1) * 200 * time.Millisecond
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool { return !wire.WaitClosed(ctx.Done(), d) }
