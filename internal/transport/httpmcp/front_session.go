package httpmcp

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// A frontSession is one client session of the front: a legacy session
// (an id, many POSTs, one GET stream at a time) or a session-less POST.
// What the serving side delivers is routed at once (deliver), queued on
// a stream whose handler writes it (frontStream.serve).
type frontSession struct {
	f    *Front
	id   string // "" for a session-less POST
	ws   wire.Session
	done chan struct{} // closed once the session is closed

	// sendMu orders Send and Close: Send is never called after Close.
	sendMu sync.Mutex

	mu         sync.Mutex
	closed     bool
	info       SessionInfo // InFlight aside: len(pending)
	idleSince  time.Time
	active     int                     // requests of this session being served
	initFailed bool                    // the initialize that opened it got an error
	pending    map[string]*frontStream // raw request id -> the stream awaiting its answer
	only       *frontStream            // a session-less session's stream
	get        standalone
	queue      backlog
}

// standalone is a legacy session's GET stream: the one open, and what
// waits for the next while none is (parked, up to QueueBytes).
type standalone struct {
	st     *frontStream
	parked [][]byte
	bytes  int
}

// park keeps msg for the next GET stream; false when it is full.
func (g *standalone) park(msg []byte, max int) bool {
	n := wire.Size(msg)
	if len(g.parked) > 0 && g.bytes+n > max {
		return false
	}
	g.parked = append(g.parked, msg)
	g.bytes += n
	return true
}

// backlog is what waits for a session's client on its open streams. The
// janitor closes a session whose backlog stays over QueueBytes for
// StallTimeout or grows past QueueBytes + MaxMessage (a session-less one,
// which shares its server connection, as soon as more than
// sharedQueueBytes wait before a message),
// and one whose client took nothing of a write for StallTimeout (dead).
type backlog struct {
	bytes     int
	fullSince time.Time // when bytes went over QueueBytes; zero while they are not
	dead      string    // why the session must be closed now
	deadBytes int       // what waited then
}

// add counts n bytes queued; true when the session must be closed now.
func (b *backlog) add(n int, cfg *FrontConfig) bool {
	b.bytes += n
	if b.bytes > cfg.QueueBytes && b.fullSince.IsZero() {
		b.fullSince = time.Now()
	}
	if limit := int64(cfg.QueueBytes) + cfg.MaxMessage; b.bytes > n && int64(b.bytes) > limit {
		b.die(fmt.Sprintf("more than %d bytes wait for its client", limit))
		return true
	}
	return false
}

// taken counts n bytes written, or dropped.
func (b *backlog) taken(n int, cfg *FrontConfig) {
	b.bytes -= n
	if b.bytes <= cfg.QueueBytes {
		b.fullSince = time.Time{}
	}
}

func (b *backlog) die(why string) {
	if b.dead == "" {
		b.dead, b.deadBytes = why, b.bytes
	}
}

// why says why the session must be closed at now, or "".
func (b *backlog) why(now time.Time, cfg *FrontConfig) string {
	if b.dead == "" && !b.fullSince.IsZero() && now.Sub(b.fullSince) >= cfg.StallTimeout {
		return fmt.Sprintf("more than %d bytes waited for its client for %v", cfg.QueueBytes, cfg.StallTimeout)
	}
	return b.dead
}

// textShuttingDown answers an HTTP request that comes while the front stops.
const textShuttingDown = "Service Unavailable: mcpflow is shutting down"

// openSession opens a session with the Opener (id "" for a session-less
// one), counted against MaxSessions; when it cannot, it answers the
// request with 503 and returns nil.
func (f *Front) openSession(w http.ResponseWriter, legacy bool) *frontSession {
	f.mu.Lock()
	if f.stopping || f.opener == nil {
		f.mu.Unlock()
		http.Error(w, textShuttingDown, http.StatusServiceUnavailable)
		return nil
	}
	if len(f.all)+f.opening >= f.cfg.MaxSessions {
		f.mu.Unlock()
		f.log.Warn("HTTP front: session limit reached; refused a new session", "max", f.cfg.MaxSessions)
		http.Error(w, fmt.Sprintf("Service Unavailable: mcpflow serves at most %d sessions at once over HTTP, and that many are open; try again once one ends", f.cfg.MaxSessions), http.StatusServiceUnavailable)
		return nil
	}
	f.opening++
	o := wire.Opener(f.fan) // session-less requests share one session behind the front
	f.mu.Unlock()

	now := time.Now()
	s := &frontSession{f: f, done: make(chan struct{}), idleSince: now, pending: map[string]*frontStream{},
		info: SessionInfo{Era: "modern", Started: now, LastSeen: now}}
	if legacy {
		s.id, o = rand.Text(), f.opener
		s.info.ID, s.info.Era = s.id, "legacy"
	}
	s.ws = o.Open(wire.ClientFunc(s.deliver))

	f.mu.Lock()
	f.opening--
	if f.stopping {
		f.mu.Unlock()
		s.closeWS()
		http.Error(w, textShuttingDown, http.StatusServiceUnavailable)
		return nil
	}
	f.all[s] = struct{}{}
	if s.id != "" {
		f.byID[s.id] = s
	}
	f.mu.Unlock()
	if s.id != "" {
		f.log.Debug("HTTP session opened", "session", s.id)
	}
	return s
}

// lookup finds an open legacy session by its id.
func (f *Front) lookup(id string) *frontSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byID[id]
}

// sessions lists the open sessions.
func (f *Front) sessions() []*frontSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Keys(f.all))
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
	s.get.parked, s.get.bytes = nil, 0
	s.mu.Unlock()
	f := s.f
	f.mu.Lock()
	delete(f.all, s)
	delete(f.byID, s.id)
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
	s.info.LastSeen = time.Now()
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

// deliver is the session's wire.Client: it routes msg and returns. An
// answer goes to its request's stream, a message related to a request
// to that request's event stream, any other to the GET stream (parked
// while none is open); a session-less session's all go to its stream.
func (s *frontSession) deliver(msg, rel []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.f.log
	if s.closed || s.queue.dead != "" {
		return
	}
	if wire.IsResponse(msg) {
		id := string(jsonscan.Member(msg, "id"))
		st := s.pending[id]
		if st == nil {
			log.Debug("dropped an answer to no request of this HTTP client's in flight", "session", s.id, "id", id)
			return
		}
		if st.ids[id] == "tools/list" {
			s.f.params.learn(jsonscan.Member(msg, "result"))
		}
		st.answered(id)
		if st.init && jsonscan.FirstKey(msg, "result", "error") == "error" {
			s.initFailed = true
		}
		if st.gone {
			log.Debug("dropped an answer: the client's POST is gone", "session", s.id, "id", id)
			return
		}
		s.push(st, msg)
		return
	}
	live := func(st *frontStream) bool { return st != nil && st.sse && !st.gone }
	var st *frontStream
	switch {
	case s.id == "": // session-less: its one stream, if it streams events
		if st = s.only; !live(st) {
			log.Debug("dropped a message for a session-less client whose POST has no event stream", "bytes", len(msg))
			return
		}
	case live(s.pending[string(rel)]):
		st = s.pending[string(rel)]
	case live(s.get.st):
		st = s.get.st
	case !s.get.park(msg, s.f.cfg.QueueBytes):
		env, _ := wire.Peek(msg)
		args := []any{"session", s.id, "bytes", len(msg), "waiting", s.get.bytes, "method", env.Method}
		if env.ID != nil {
			log.Warn("dropped a request from the server to an HTTP client: the client has no GET stream open and its queue is full; the request gets no answer", append(args, "id", string(env.ID))...)
		} else {
			log.Warn("dropped a message for an HTTP client: the client has no GET stream open and its queue is full", args...)
		}
		return
	default:
		return // parked
	}
	s.push(st, msg)
}

// forget stops waiting for the answer to a request the client cancelled:
// the server need not answer it.
func (s *frontSession) forget(id []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.pending[string(id)]; st != nil {
		st.answered(string(id))
		notify(st.wake)
	}
}

// push queues msg on st. s.mu is held.
func (s *frontSession) push(st *frontStream, msg []byte) {
	st.q = append(st.q, msg)
	n := wire.Size(msg)
	dead := s.queue.add(n, &s.f.cfg)
	if bound := min(s.f.cfg.QueueBytes, sharedQueueBytes); s.id == "" && s.queue.bytes-n > bound {
		// One large message alone may wait.
		s.queue.die(fmt.Sprintf("more than %d bytes wait for a session-less client (its server connection is shared)", bound))
		dead = true
	}
	if dead {
		notify(s.f.kick)
	}
	notify(st.wake)
}

// learn records what a request says of its client: initialize's params,
// or the _meta of a 2026-07-28 request; the protocol version its headers
// name, when they do, comes first.
func (s *frontSession) learn(env wire.Envelope, headerVersion string) {
	m := metaOf(env.Params)
	if env.Method == "initialize" {
		m = requestMeta{}
		var p struct{ ProtocolVersion string }
		_ = json.Unmarshal(env.Params, &p)
		_ = json.Unmarshal(jsonscan.Member(env.Params, "clientInfo"), &m.client)
		m.protocol = p.ProtocolVersion
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	set := func(to *string, v string) {
		if v != "" {
			*to = wire.Clip(v)
		}
	}
	set(&s.info.Client, m.client.Name)
	set(&s.info.ClientVersion, m.client.Version)
	set(&s.info.Protocol, cmp.Or(headerVersion, m.protocol))
}

// janitor closes the sessions that must be: stalled, overflowing, idle.
// It returns once the front stops.
func (f *Front) janitor() {
	period := min(f.cfg.StallTimeout, f.cfg.IdleTimeout) / 4
	period = max(min(period, time.Second), 5*time.Millisecond)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		case <-f.kick:
		}
		f.sweep(time.Now())
	}
}

func (f *Front) sweep(now time.Time) {
	for _, s := range f.sessions() {
		s.mu.Lock()
		closed, why, queued := s.closed, s.queue.why(now, &f.cfg), max(s.queue.bytes, s.queue.deadBytes)
		idle := !closed && why == "" && s.id != "" && s.active == 0 && now.Sub(s.idleSince) >= f.cfg.IdleTimeout
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
