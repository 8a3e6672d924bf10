package httpmcp

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// A frontSession is one client session of the front: a legacy session
// (an id, many POSTs, one GET stream at a time) or a session-less POST.
//
// What the serving side delivers is routed at once (Deliver never
// blocks): an answer to the stream of the POST that holds its request; a
// message related to a request (rel) to that POST's stream while it is
// open and streams events; any other message to the GET stream, kept
// (bounded) while none is open. A session-less session has one stream,
// its POST's, and everything goes there. Each stream's handler writes
// what is queued for it; what waits, over all of a session's streams, is
// the session's queue, bounded by QueueBytes. The janitor closes a
// session whose queue stays over QueueBytes for StallTimeout or grows past
// QueueBytes + MaxMessage, and one whose client took nothing of a write
// for StallTimeout.
type frontSession struct {
	f    *Front
	id   string // "" for a session-less POST
	era  string // "legacy" or "modern"
	ws   wire.Session
	done chan struct{} // closed once the session is closed

	// sendMu orders Send and Close: Send is never called after Close.
	sendMu sync.Mutex

	mu                           sync.Mutex
	closed                       bool
	dead                         string // why the janitor must close it
	deadBytes                    int    // what waited for the client then
	client, clientVersion, proto string
	started, lastSeen, idleSince time.Time
	requests                     int64
	pending                      map[string]*frontStream // raw request id -> the stream awaiting its answer
	toolLists                    map[string]bool         // raw ids of the tools/list requests among them
	get                          *frontStream            // the open GET stream
	only                         *frontStream            // a session-less session's stream
	parked                       [][]byte                // for the GET stream while none is open
	parkedBytes                  int
	queued                       int       // bytes queued on open streams, not yet written
	fullSince                    time.Time // when queued went over QueueBytes; zero while it is not
	active                       int       // requests of this session being served
	initFailed                   bool      // the initialize that opened it got an error
}

// errTooManySessions is the 503 text at the session limit.
const errTooManySessions = "Service Unavailable: mcpflow serves at most %d sessions at once over HTTP, and that many are open; try again once one ends"

// openSession opens a session with the Opener (id "" for a session-less
// one), counted against MaxSessions; it returns the HTTP status and text
// of the refusal when it cannot.
func (f *Front) openSession(legacy bool) (*frontSession, int, string) {
	f.mu.Lock()
	if f.stopping || f.opener == nil {
		f.mu.Unlock()
		return nil, http.StatusServiceUnavailable, "Service Unavailable: mcpflow is shutting down"
	}
	if len(f.all)+f.opening >= f.cfg.MaxSessions {
		f.mu.Unlock()
		f.log.Warn("HTTP front: session limit reached; refused a new session", "max", f.cfg.MaxSessions)
		return nil, http.StatusServiceUnavailable, fmt.Sprintf(errTooManySessions, f.cfg.MaxSessions)
	}
	f.opening++
	o := f.opener
	if !legacy {
		o = f.fan // session-less requests share one session behind the front
	}
	f.mu.Unlock()

	now := time.Now()
	s := &frontSession{f: f, era: "modern", done: make(chan struct{}), started: now, lastSeen: now, idleSince: now,
		pending: map[string]*frontStream{}, toolLists: map[string]bool{}}
	if legacy {
		s.id, s.era = rand.Text(), "legacy"
	}
	s.ws = o.Open(wire.ClientFunc(s.deliver))

	f.mu.Lock()
	f.opening--
	if f.stopping {
		f.mu.Unlock()
		s.closeWS()
		return nil, http.StatusServiceUnavailable, "Service Unavailable: mcpflow is shutting down"
	}
	f.all[s] = struct{}{}
	if s.id != "" {
		f.byID[s.id] = s
	}
	f.mu.Unlock()
	if s.id != "" {
		f.log.Debug("HTTP session opened", "session", s.id)
	}
	return s, 0, ""
}

// lookup finds an open legacy session by its id.
func (f *Front) lookup(id string) *frontSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byID[id]
}

// close closes the session: no more messages either way, its streams
// end, the serving side is told (Session.Close). It reports false when it
// was closed already.
func (s *frontSession) close() bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.closed = true
	close(s.done)
	s.parked, s.parkedBytes = nil, 0
	s.mu.Unlock()
	f := s.f
	f.mu.Lock()
	delete(f.all, s)
	if s.id != "" {
		delete(f.byID, s.id)
	}
	f.mu.Unlock()
	s.closeWS()
	return true
}

func (s *frontSession) closeWS() {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.ws.Close()
}

// send hands one message from the client to the serving side; false when
// the session is closed.
func (s *frontSession) send(msg []byte) bool {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return false
	}
	s.f.note(s.id, true, msg)
	s.ws.Send(msg)
	return true
}

// begin counts a request of the client's being served (a session with one
// is never idle) and returns its end.
func (s *frontSession) begin() func() {
	s.mu.Lock()
	s.active++
	s.lastSeen = time.Now()
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.active--
		if s.active == 0 {
			s.idleSince = time.Now()
		}
		s.mu.Unlock()
	}
}

// deliver is the session's wire.Client: it routes msg and returns.
func (s *frontSession) deliver(msg, rel []byte) {
	msg = bytes.Clone(msg) // kept until written; Deliver's caller keeps its own
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.dead != "" {
		return
	}
	if wire.IsResponse(msg) {
		id := jsonscan.Member(msg, "id")
		st := s.pending[string(id)]
		if st == nil {
			s.f.log.Debug("dropped an answer to no request of this HTTP client's in flight", "session", s.id, "id", string(id))
			return
		}
		if s.toolLists[string(id)] {
			s.f.params.learn(jsonscan.Member(msg, "result"))
		}
		st.answered(string(id))
		if st.init && jsonscan.FirstKey(msg, "result", "error") == "error" {
			s.initFailed = true
		}
		if st.gone {
			s.f.log.Debug("dropped an answer: the client's POST is gone", "session", s.id, "id", string(id))
			return
		}
		s.push(st, msg)
		return
	}
	if s.id == "" { // session-less: its one stream, if it streams events
		if st := s.only; st != nil && st.sse && !st.gone {
			s.push(st, msg)
			return
		}
		s.f.log.Debug("dropped a message for a session-less client whose POST has no event stream", "bytes", len(msg))
		return
	}
	if rel != nil {
		if st := s.pending[string(rel)]; st != nil && st.sse && !st.gone {
			s.push(st, msg)
			return
		}
	}
	if st := s.get; st != nil && !st.gone {
		s.push(st, msg)
		return
	}
	s.park(msg)
}

// forget stops waiting for the answer to a request the client cancelled:
// the server need not answer it.
func (s *frontSession) forget(id []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.pending[string(id)]; st != nil {
		st.answered(string(id))
		select {
		case st.wake <- struct{}{}:
		default:
		}
	}
}

// push queues msg on st. s.mu is held.
func (s *frontSession) push(st *frontStream, msg []byte) {
	st.q = append(st.q, msg)
	s.queued += len(msg)
	cfg := &s.f.cfg
	if s.queued > cfg.QueueBytes && s.fullSince.IsZero() {
		s.fullSince = time.Now()
	}
	if s.queued > len(msg) && int64(s.queued) > int64(cfg.QueueBytes)+cfg.MaxMessage {
		s.dead = fmt.Sprintf("more than %d bytes wait for its client", int64(cfg.QueueBytes)+cfg.MaxMessage)
		s.deadBytes = s.queued
		select {
		case s.f.kick <- struct{}{}:
		default:
		}
	}
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// written takes n written (or dropped) bytes off the queue. s.mu is held.
func (s *frontSession) written(n int) {
	s.queued -= n
	if s.queued <= s.f.cfg.QueueBytes {
		s.fullSince = time.Time{}
	}
}

// park keeps msg for the GET stream while none is open. s.mu is held.
func (s *frontSession) park(msg []byte) {
	if len(s.parked) > 0 && s.parkedBytes+len(msg) > s.f.cfg.QueueBytes {
		env, _ := wire.Peek(msg)
		args := []any{"session", s.id, "bytes", len(msg), "waiting", s.parkedBytes, "method", env.Method}
		if env.ID != nil {
			args = append(args, "id", string(env.ID))
			s.f.log.Warn("dropped a request from the server to an HTTP client: the client has no GET stream open and its queue is full; the request gets no answer", args...)
			return
		}
		s.f.log.Warn("dropped a message for an HTTP client: the client has no GET stream open and its queue is full", args...)
		return
	}
	s.parked = append(s.parked, msg)
	s.parkedBytes += len(msg)
}

// info describes the session.
func (s *frontSession) info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SessionInfo{
		ID: s.id, Client: s.client, ClientVersion: s.clientVersion, Protocol: s.proto, Era: s.era,
		Started: s.started, LastSeen: s.lastSeen, Requests: s.requests, InFlight: len(s.pending),
	}
}

// learn records what a request says of its client: initialize's params,
// or the _meta of a 2026-07-28 request.
func (s *frontSession) learn(env wire.Envelope, headerVersion string) {
	var name, version, proto string
	if env.Method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
			ClientInfo      struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"clientInfo"`
		}
		_ = json.Unmarshal(env.Params, &p)
		name, version, proto = p.ClientInfo.Name, p.ClientInfo.Version, p.ProtocolVersion
	} else if m := metaOf(env.Params); m.found {
		name, version, proto = m.name, m.version, m.protocol
	}
	if proto == "" {
		proto = headerVersion
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != "" {
		s.client = clip(name)
	}
	if version != "" {
		s.clientVersion = clip(version)
	}
	if proto != "" {
		s.proto = clip(proto)
	}
}

// clip cuts s to maxClientField bytes, on a rune boundary.
func clip(s string) string {
	if len(s) <= maxClientField {
		return s
	}
	s = s[:maxClientField]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// janitor closes the sessions that must be: stalled, overflowing, idle.
// It returns once stop is closed.
func (f *Front) janitor(stop <-chan struct{}) {
	period := min(f.cfg.StallTimeout, f.cfg.IdleTimeout) / 4
	period = max(min(period, time.Second), 5*time.Millisecond)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		case <-f.kick:
		}
		f.sweep(time.Now())
	}
}

func (f *Front) sweep(now time.Time) {
	f.mu.Lock()
	all := make([]*frontSession, 0, len(f.all))
	for s := range f.all {
		all = append(all, s)
	}
	f.mu.Unlock()
	for _, s := range all {
		s.mu.Lock()
		closed, why, queued := s.closed, s.dead, max(s.queued, s.deadBytes)
		idle := false
		switch {
		case closed || why != "":
		case !s.fullSince.IsZero() && now.Sub(s.fullSince) >= f.cfg.StallTimeout:
			why = fmt.Sprintf("more than %d bytes waited for its client for %v", f.cfg.QueueBytes, f.cfg.StallTimeout)
		case s.id != "" && s.active == 0 && now.Sub(s.idleSince) >= f.cfg.IdleTimeout:
			idle = true
		}
		s.mu.Unlock()
		switch {
		case closed:
		case idle:
			f.log.Info("HTTP session expired: no request and no open stream", "session", s.id, "idle", f.cfg.IdleTimeout)
			s.close()
		case why != "":
			f.log.Warn("closing an HTTP session: "+why, "session", s.id, "waiting_bytes", queued)
			s.close()
		}
	}
}
