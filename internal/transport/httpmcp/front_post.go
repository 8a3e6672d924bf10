package httpmcp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// The first protocol revision without batches.
const noBatchesFrom = "2025-06-18"

// inMsg is one message of a POST's body, checked.
type inMsg struct {
	raw     []byte
	env     wire.Envelope
	refusal []byte // the error answer it gets instead of being sent on
}

func (m *inMsg) isRequest() bool { return m.refusal == nil && m.env.IsRequest() }

// check classifies one message from the client; what is no message the
// front passes on gets its refusal, under its id when the id is usable.
func check(raw []byte) inMsg {
	env, err := wire.Peek(raw)
	m := inMsg{raw: raw, env: env}
	invalid := func(why string) []byte { // the id has no problem: see the cases before
		return wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, "Invalid Request: "+why, nil)
	}
	switch {
	case err != nil || env.IsArray:
		m.refusal = wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.TextNotAnRPC, nil)
	case env.ID != nil && wire.IDProblem(env.ID) != "":
		m.refusal = wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.IDProblem(env.ID), nil)
	case env.Method != "" && wire.Reserved(env.ID):
		m.refusal = wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, wire.TextReserved, nil)
	case string(env.Version) != `"2.0"`:
		m.refusal = invalid(`"jsonrpc" must be "2.0"`)
	case env.Method == "" && env.ID != nil && (env.Result != nil || env.HasError):
		// an answer to a request of the server's
	case env.Method == "":
		m.refusal = wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, wire.TextNoKind, nil)
	}
	return m
}

// post serves a POST: one message or, before 2025-06-18, a batch.
func (f *Front) post(w http.ResponseWriter, r *http.Request, sid, pv string, modern bool) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		http.Error(w, "Unsupported Media Type: Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	sse, ok := accepts(r.Header.Values("Accept"))
	if !ok {
		http.Error(w, "Not Acceptable: Accept must list application/json or text/event-stream", http.StatusNotAcceptable)
		return
	}
	body, ok := f.readBody(w, r, sid)
	if !ok {
		return
	}
	if !jsonscan.Valid(body) {
		text := wire.TextBadJSON
		if !utf8.Valid(body) {
			text = wire.TextBadUTF8
		}
		f.log.Warn("an HTTP client's POST is not JSON in UTF-8; answered with a parse error", "session", sid, "bytes", len(body))
		f.refuse(w, sid, http.StatusBadRequest, wire.ErrorResponse(nil, wire.CodeParseError, text, nil))
		return
	}
	var msgs []inMsg
	env, _ := wire.Peek(body)
	batch := env.IsArray
	if batch {
		version := cmp.Or(pv, "2025-03-26") // the spec's assumption when the header is absent
		if version >= noBatchesFrom {
			http.Error(w, "Bad Request: JSON-RPC batches are not part of protocol "+noBatchesFrom+" and later (this request: "+version+")", http.StatusBadRequest)
			return
		}
		var elems []json.RawMessage
		if json.Unmarshal(body, &elems) != nil || len(elems) == 0 {
			f.refuse(w, sid, http.StatusBadRequest, wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.TextEmptyBatch, nil))
			return
		}
		for _, el := range elems {
			msgs = append(msgs, check(el))
		}
	} else {
		msgs = []inMsg{check(body)}
		if msgs[0].refusal != nil {
			f.note(sid, true, body)
			f.refuse(w, sid, http.StatusBadRequest, msgs[0].refusal)
			return
		}
	}
	if modern {
		f.postModern(w, r, pv, sse, msgs[0])
		return
	}
	f.postLegacy(w, r, sid, pv, sse, batch, msgs)
}

// postLegacy serves a POST of the legacy era: to the session it names, or
// an initialize that opens one.
func (f *Front) postLegacy(w http.ResponseWriter, r *http.Request, sid, pv string, sse, batch bool, msgs []inMsg) {
	var s *frontSession
	init := slices.IndexFunc(msgs, func(m inMsg) bool { return m.isRequest() && m.env.Method == "initialize" })
	if sid == "" {
		if init < 0 {
			http.Error(w, "Bad Request: Mcp-Session-Id header required (send initialize first: its answer carries the session id)", http.StatusBadRequest)
			return
		}
		if s = f.openSession(w, true); s == nil {
			return
		}
		w.Header().Set(hdrSessionID, s.id)
	} else if s = f.lookup(sid); s == nil {
		http.Error(w, "Not Found: no session "+sid+" (it ended, or mcpflow restarted); initialize a new one", http.StatusNotFound)
		return
	}
	defer s.begin()()
	var initEnv wire.Envelope // what else the POST holds says nothing of the client
	if init >= 0 {
		initEnv = msgs[init].env
	}
	s.learn(initEnv, pv)
	st := newStream(s, sse, batch)
	st.init = init >= 0
	f.exchange(w, r, s, st, msgs, batch)
	if st.init {
		s.mu.Lock()
		failed := s.initFailed
		s.mu.Unlock()
		if failed && s.close() {
			f.log.Debug("HTTP session closed: its initialize failed", "session", s.id)
		}
	}
}

// postModern serves a 2026-07-28 POST: a session of its own, closed once
// the POST ends.
func (f *Front) postModern(w http.ResponseWriter, r *http.Request, pv string, sse bool, m inMsg) {
	if refusal := f.headerProblem(r.Header, pv, m.env); refusal != nil {
		f.note("", true, m.raw)
		f.refuse(w, "", http.StatusBadRequest, refusal)
		return
	}
	s := f.openSession(w, false)
	if s == nil {
		return
	}
	defer s.close()
	defer s.begin()()
	s.learn(m.env, pv)
	st := newStream(s, sse, false)
	st.mapStatus = true
	s.mu.Lock()
	s.only = st
	s.mu.Unlock()
	f.exchange(w, r, s, st, []inMsg{m}, false)
}

// exchange sends a POST's messages to s and answers the POST: 202 when it
// held no request, else its stream until every request is answered.
func (f *Front) exchange(w http.ResponseWriter, r *http.Request, s *frontSession, st *frontStream, msgs []inMsg, batch bool) {
	// The requests are registered, and the refusals queued, before the
	// first Send: an answer may come back before Send returns.
	var refusals [][]byte
	registered := 0
	s.mu.Lock()
	for i := range msgs {
		m := &msgs[i]
		if !m.isRequest() {
			continue
		}
		s.info.Requests++
		if _, dup := s.pending[string(m.env.ID)]; dup {
			m.refusal = wire.ErrorResponse(m.env.ID, wire.CodeInvalidRequest, wire.TextInFlight, nil)
			continue
		}
		s.pending[string(m.env.ID)] = st
		st.ids[string(m.env.ID)] = m.env.Method
		registered++
	}
	for i := range msgs {
		if a := msgs[i].refusal; a != nil {
			refusals = append(refusals, a)
			if registered > 0 {
				s.push(st, a)
			}
		}
	}
	s.mu.Unlock()
	sent := 0
	for i := range msgs {
		m := &msgs[i]
		if m.refusal != nil {
			f.note(s.id, true, m.raw)
			continue
		}
		if !s.send(m.raw) {
			http.Error(w, "Not Found: the session ended", http.StatusNotFound)
			return
		}
		sent++
		if m.env.Method == "notifications/cancelled" {
			s.forget(jsonscan.Member(m.env.Params, "requestId"))
		}
	}
	switch {
	case registered > 0:
		st.serve(w, r)
	case len(refusals) == 0:
		// Notifications and answers only.
		w.WriteHeader(http.StatusAccepted)
	case !batch:
		f.refuse(w, s.id, http.StatusBadRequest, refusals[0])
	case sent == 0:
		f.refuse(w, s.id, http.StatusBadRequest, joinBatch(refusals))
	default:
		f.refuse(w, s.id, http.StatusOK, joinBatch(refusals))
	}
}

// readBody reads a POST's body, at most MaxMessage bytes within
// BodyTimeout; on failure it answers the POST and reports false.
func (f *Front) readBody(w http.ResponseWriter, r *http.Request, sid string) ([]byte, bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(f.cfg.BodyTimeout))
	body, tl, err := readBody(http.MaxBytesReader(w, r.Body, f.cfg.MaxMessage), r.ContentLength, int(f.cfg.MaxMessage), false)
	if tl == nil && err == nil {
		_ = rc.SetReadDeadline(time.Time{}) // a stream's connection must not time out reading
		return body, true
	}
	// The rest of the body is not read. Closed under a deadline that has
	// passed, the body is not drained: the server closes the connection
	// after the answer.
	_ = rc.SetReadDeadline(time.Now())
	r.Body.Close()
	var tooLarge *http.MaxBytesError
	switch {
	case tl != nil || errors.As(err, &tooLarge):
		size := r.ContentLength
		if tl != nil {
			body = tl.Head
		} else if size <= 0 {
			size = int64(len(body)) + 1
		}
		id := wire.PartialID(body)
		if wire.IDProblem(id) != "" || string(id) == "null" {
			id = nil
		}
		f.log.Warn("an HTTP client's POST is over the size limit; not read", "session", sid, "bytes", size, "limit", f.cfg.MaxMessage)
		f.refuse(w, sid, http.StatusRequestEntityTooLarge, wire.ErrorResponse(id, wire.CodeInvalidRequest, wire.TextTooLarge(int(size), int(f.cfg.MaxMessage)), nil))
	case errors.Is(err, os.ErrDeadlineExceeded):
		f.log.Warn("an HTTP client's POST body did not arrive in time; cut", "session", sid, "read", len(body), "timeout", f.cfg.BodyTimeout)
		http.Error(w, "Request Timeout: the body did not arrive within "+f.cfg.BodyTimeout.String(), http.StatusRequestTimeout)
	default:
		http.Error(w, "Bad Request: reading the body: "+err.Error(), http.StatusBadRequest)
	}
	return nil, false
}

// refuse answers a request with a JSON-RPC message of the front's own.
func (f *Front) refuse(w http.ResponseWriter, sid string, status int, msg []byte) {
	f.note(sid, false, msg)
	writeJSON(w, status, msg)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = wire.WriteMsg(w, body)
}

// get serves a legacy session's standalone stream.
func (f *Front) get(w http.ResponseWriter, r *http.Request, sid string) {
	if sse, _ := accepts(r.Header.Values("Accept")); !sse {
		http.Error(w, "Bad Request: Accept must list text/event-stream for GET", http.StatusBadRequest)
		return
	}
	s := f.lookup(sid)
	if s == nil {
		http.Error(w, "Not Found: no session "+sid+" (it ended, or mcpflow restarted); initialize a new one", http.StatusNotFound)
		return
	}
	defer s.begin()()
	st := newStream(s, true, false)
	st.get = true
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		http.Error(w, "Not Found: the session ended", http.StatusNotFound)
		return
	case s.get.st != nil:
		s.mu.Unlock()
		http.Error(w, "Conflict: this session's GET stream is open already (one at a time)", http.StatusConflict)
		return
	}
	// st is the GET stream now, with what was parked queued on it.
	s.get.st, st.q = st, s.get.parked
	s.queue.bytes += s.get.bytes
	s.get.parked, s.get.bytes = nil, 0
	s.mu.Unlock()
	st.serve(w, r)
}

// delete ends a legacy session at its client's request.
func (f *Front) delete(w http.ResponseWriter, sid string) {
	s := f.lookup(sid)
	if s == nil || !s.close() {
		http.Error(w, "Not Found: no session "+sid, http.StatusNotFound)
		return
	}
	f.log.Debug("HTTP session ended by its client", "session", sid)
	w.WriteHeader(http.StatusOK)
}

// frontStream is one response the front streams to a client: a POST's
// (until each of its requests is answered; a subscriptions/listen's until
// the client leaves) or a session's GET stream (until the client leaves).
type frontStream struct {
	s         *frontSession
	sse       bool // events; else one JSON body once every request is answered
	batch     bool // the POST was a batch: a JSON body is an array
	get       bool // the standalone GET stream
	init      bool // the POST holds the initialize that opened its session
	mapStatus bool // session-less: a protocol error answer sets the HTTP status (SEP-2575)
	wake      chan struct{}
	started   bool // the events started: the status and headers are sent

	// under s.mu
	ids  map[string]string // raw id -> method of this POST's requests not answered
	q    [][]byte          // messages to write, in order
	gone bool              // the response ended
}

func newStream(s *frontSession, sse, batch bool) *frontStream {
	return &frontStream{s: s, sse: sse, batch: batch, wake: make(chan struct{}, 1), ids: map[string]string{}}
}

// notify wakes whoever waits on ch, if no wake-up is pending.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// answered says the request id of st's needs no more waiting. s.mu is
// held.
func (st *frontStream) answered(id string) {
	delete(st.ids, id)
	delete(st.s.pending, id)
}

// serve writes what is queued for st until the stream is done (every
// request answered), the client leaves, the session closes or the front
// stops. When the front stops, the requests still unanswered get
// TextShuttingDown, as the stdio front answers them; a stream that wrote
// nothing yet and has nothing to say gets an HTTP error instead.
func (st *frontStream) serve(w http.ResponseWriter, r *http.Request) {
	s, f := st.s, st.s.f
	rc := http.NewResponseController(w)
	defer st.end()
	if st.get {
		// The standalone stream may stay silent for long: its headers go
		// out now, with a comment to carry them through proxies.
		st.start(w)
		_, _ = io.WriteString(w, ": ok\n\n")
		_ = rc.Flush()
	}
	var answers [][]byte // JSON: the answers so far
	for {
		stopping := false
		select {
		case <-f.stop:
			stopping = true
		default:
		}
		s.mu.Lock()
		if stopping {
			for id := range st.ids {
				st.answered(id)
				s.push(st, wire.ErrorResponse([]byte(id), wire.CodeServerDown, wire.TextShuttingDown, nil))
			}
		}
		items, n := st.q, size(st.q)
		st.q = nil
		finished := !st.get && len(st.ids) == 0
		closed := s.closed
		s.mu.Unlock()
		switch {
		case !st.sse:
			answers = append(answers, items...)
			st.written(n, nil)
		case len(items) > 0:
			_ = rc.SetWriteDeadline(time.Now().Add(f.cfg.StallTimeout))
			if !st.started && st.mapStatus && finished && len(items) == 1 {
				if status := protocolStatus(items[0]); status != 0 {
					// A protocol error before any event: the answer is
					// the HTTP response (SEP-2575).
					st.written(n, nil)
					f.refuse(w, s.id, status, items[0])
					return
				}
			}
			st.start(w)
			var err error
			for _, m := range items {
				f.note(s.id, false, m)
				if err = writeEvent(w, m); err != nil {
					break
				}
			}
			if err == nil {
				err = rc.Flush()
			}
			st.written(n, err)
			if err != nil {
				notify(f.kick)
				return
			}
		}
		switch {
		case finished && st.sse:
			st.start(w)
			return
		case finished:
			st.reply(w, rc, answers)
			return
		case (stopping || closed) && st.started:
			return
		case stopping:
			http.Error(w, textShuttingDown, http.StatusServiceUnavailable)
			return
		case closed:
			http.Error(w, "Not Found: the session ended before this request was answered", http.StatusNotFound)
			return
		}
		select {
		case <-st.wake:
		case <-s.done:
		case <-f.stop:
		case <-r.Context().Done():
			return
		}
	}
}

// start starts the stream's events, once.
func (st *frontStream) start(w http.ResponseWriter) {
	if st.started {
		return
	}
	st.started = true
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// reply writes the answers of a stream that takes no events as one JSON
// body: an array for a batch; a session-less request's protocol error
// sets the status (SEP-2575).
func (st *frontStream) reply(w http.ResponseWriter, rc *http.ResponseController, answers [][]byte) {
	status := http.StatusOK
	var body []byte
	switch {
	case st.batch:
		body = joinBatch(answers)
	case len(answers) > 0:
		body = answers[0]
		if st.mapStatus {
			status = cmp.Or(protocolStatus(body), status)
		}
	}
	for _, a := range answers {
		st.s.f.note(st.s.id, false, a)
	}
	_ = rc.SetWriteDeadline(time.Now().Add(st.s.f.cfg.StallTimeout))
	writeJSON(w, status, body)
}

// written takes n bytes, written or dropped, off the session's queue;
// err is the write's: one that did not finish within StallTimeout means
// the client reads nothing, and its session is closed.
func (st *frontStream) written(n int, err error) {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.queue.die("its client took nothing of a write for " + s.f.cfg.StallTimeout.String())
	}
	s.queue.taken(n, &s.f.cfg)
}

// end marks the stream gone: what is related to its requests goes to the
// GET stream from now on; what the GET stream had not written waits for
// the next one.
func (st *frontStream) end() {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st.gone = true
	n := size(st.q)
	s.queue.taken(n, &s.f.cfg)
	if s.get.st == st {
		s.get.st = nil
		if !s.closed && len(st.q) > 0 {
			s.get.parked = append(st.q, s.get.parked...)
			s.get.bytes += n
		}
	}
	st.q = nil
}

// size is the bytes of msgs.
func size(msgs [][]byte) int {
	n := 0
	for _, m := range msgs {
		n += wire.Size(m)
	}
	return n
}

// writeEvent writes msg as one server-sent event. A message that holds
// line breaks (JSON white space) is split over several data lines, which
// the client joins with "\n".
func writeEvent(w io.Writer, msg []byte) error {
	if bytes.ContainsAny(msg, "\r\n") {
		msg = bytes.ReplaceAll(bytes.ReplaceAll(msg, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		msg = bytes.ReplaceAll(bytes.TrimSuffix(msg, []byte("\n")), []byte("\n"), []byte("\ndata: "))
	}
	if _, err := io.WriteString(w, "event: message\ndata: "); err != nil {
		return err
	}
	if err := wire.WriteMsg(w, msg); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n\n")
	return err
}

// protocolStatus is the HTTP status SEP-2575 gives a JSON-RPC error
// answer of a session-less request: 404 for an unknown method, 400 for
// invalid params, an unsupported protocol version or missing client
// capabilities; 0 for any other message.
func protocolStatus(msg []byte) int {
	if jsonscan.FirstKey(msg, "method", "result", "error") != "error" {
		return 0 // a result is not walked
	}
	switch code, _ := strconv.ParseFloat(string(jsonscan.Member(jsonscan.Member(msg, "error"), "code")), 64); int(code) {
	case wire.CodeMethodNotFound:
		return http.StatusNotFound
	case wire.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// joinBatch makes the answers of a batch one array.
func joinBatch(answers [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(answers, []byte{','})...), ']')
}

// accepts reads Accept headers: whether the client takes an event
// stream, and whether it takes anything the front sends. No Accept
// header takes JSON.
func accepts(values []string) (sse, ok bool) {
	if len(values) == 0 {
		return false, true
	}
	plain := false
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				plain = true
			case "text/event-stream", "text/*":
				sse = true
			case "*/*":
				plain, sse = true, true
			}
		}
	}
	return sse, sse || plain
}
