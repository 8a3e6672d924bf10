package wire

import (
	"bytes"
	"strconv"
	"sync"
	"time"
)

// Swap is an Opener whose serving side can be replaced while its clients'
// sessions stay open (mcpflow's own settings changed, or a broken config
// was fixed): the client keeps its session and its conversation, and is
// told that its lists changed.
//
// Contract:
//   - Each session keeps what its client said to set the session up — its
//     legacy handshake (initialize, notifications/initialized), its last
//     logging/setLevel, its open subscriptions/listen requests — and
//     Replace replays it into a session of the new Opener: the handshake
//     and setLevel under ids of Swap's own, whose answers the client never
//     sees; the listens as the client wrote them, so that their streams
//     go on.
//   - Then the old session is closed: the requests it still had in flight
//     get their one answer from it (an error: mcpflow changed what
//     serves), but not the listens moved to the new one.
//   - Then the client gets notifications/tools, prompts and
//     resources/list_changed (on its listen stream when it has one).
//   - A message the client sends goes to the session current when it is
//     sent; Replace and Send are serialized per session.
type Swap struct {
	mu       sync.Mutex
	cur      Opener
	sessions map[*swapSession]struct{}
	seq      int
}

// swapPrefix starts the ids of Swap's own requests. It is not
// "mcpflow:", which the engines reserve for theirs and refuse from a
// client; a client's request with this prefix is refused here.
var swapPrefix = []byte(`"mcpflow-swap:`)

// NewSwap serves o until Replace.
func NewSwap(o Opener) *Swap {
	return &Swap{cur: o, sessions: map[*swapSession]struct{}{}}
}

// Open opens the client's session on the current Opener.
func (w *Swap) Open(c Client) Session {
	s := &swapSession{w: w, c: c, listens: map[string][]byte{}}
	s.client = &swapClient{s: s, drop: map[string]bool{}}
	s.mu.Lock() // a Replace now waits for the session to be open
	defer s.mu.Unlock()
	w.mu.Lock()
	o := w.cur
	w.sessions[s] = struct{}{}
	w.mu.Unlock()
	s.cur = o.Open(s.client)
	return s
}

// Replace moves every open session, and those opened later, to o (see
// Swap). The caller closes the old Opener's engine afterwards, once
// Replace returned.
func (w *Swap) Replace(o Opener) {
	w.mu.Lock()
	w.cur = o
	sessions := make([]*swapSession, 0, len(w.sessions))
	for s := range w.sessions {
		sessions = append(sessions, s)
	}
	w.mu.Unlock()
	for _, s := range sessions {
		s.move(o)
	}
}

func (w *Swap) newID() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return []byte(string(swapPrefix) + strconv.Itoa(w.seq) + `"`)
}

// swapSession is one client's session through a Swap. mu serializes
// Send, move and Close; lmu guards what Deliver reads (never held while
// calling out), so that a session's back-pressure on Send cannot wait on
// a Deliver that waits on mu.
type swapSession struct {
	w *Swap
	c Client

	mu     sync.Mutex
	cur    Session
	client *swapClient // cur's
	closed bool
	init   []byte // the client's initialize params (legacy); nil when none
	inited bool   // notifications/initialized came
	level  []byte // the params of the last logging/setLevel; nil when none

	lmu     sync.Mutex
	listens map[string][]byte // the open subscriptions/listen requests, by raw id
}

// swapClient is how one Opener's session delivers to the client: the
// answers to Swap's own ids (replayed) are dropped, and so are those to
// the ids in drop (the listens moved away from this session). A message
// is read only while there is something to drop or a listen to forget:
// otherwise it passes untouched (a large result is not scanned again).
type swapClient struct {
	s        *swapSession
	drop     map[string]bool // guarded by s.lmu
	replays  int             // Swap's own requests sent, not yet answered; guarded by s.lmu
	await    string          // the replayed initialize's id; guarded by s.lmu
	answered chan struct{}   // closed when it is answered
}

func (sc *swapClient) Deliver(msg, rel []byte) {
	sc.s.lmu.Lock()
	inspect := sc.replays > 0 || len(sc.drop) > 0 || len(sc.s.listens) > 0
	sc.s.lmu.Unlock()
	if !inspect {
		sc.s.c.Deliver(msg, rel)
		return
	}
	if env, err := Peek(msg); err == nil && env.IsResponse() {
		id := string(env.ID)
		if bytes.HasPrefix(env.ID, swapPrefix) {
			sc.s.lmu.Lock()
			sc.replays--
			if id == sc.await {
				close(sc.answered)
				sc.await = ""
			}
			sc.s.lmu.Unlock()
			return
		}
		sc.s.lmu.Lock()
		drop := sc.drop[id]
		if !drop {
			delete(sc.s.listens, id)
		}
		sc.s.lmu.Unlock()
		if drop {
			return
		}
	}
	sc.s.c.Deliver(msg, rel)
}

func (s *swapSession) Send(msg []byte) {
	env, err := Peek(msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if err == nil && env.IsRequest() && bytes.HasPrefix(env.ID, swapPrefix) {
		go s.c.Deliver(ErrorResponse(env.ID, CodeInvalidRequest, `Invalid Request: ids starting with "mcpflow-swap:" are mcpflow's own`, nil), env.ID)
		return
	}
	if err == nil {
		switch {
		case env.Method == "initialize" && env.IsRequest():
			s.init = bytes.Clone(env.Params)
		case env.Method == "notifications/initialized":
			s.inited = true
		case env.Method == "logging/setLevel" && env.IsRequest():
			s.level = bytes.Clone(env.Params)
		case env.Method == "subscriptions/listen" && env.IsRequest():
			s.lmu.Lock()
			s.listens[string(env.ID)] = bytes.Clone(msg)
			s.lmu.Unlock()
		}
	}
	s.cur.Send(msg)
}

// handshakeWait bounds Replace's wait for the answer to a replayed
// initialize, before the rest of the session's setup follows it.
const handshakeWait = time.Minute

// move replays the session's setup into a session of o, makes it the
// current one and closes the old one (see Swap). What the client sends
// while the new session's handshake is answered still goes to the old
// one, which serves until then.
func (s *swapSession) move(o Opener) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	init := s.init
	s.mu.Unlock()

	next := &swapClient{s: s, drop: map[string]bool{}}
	sess := o.Open(next)
	if init != nil {
		id := s.w.newID()
		answered := make(chan struct{})
		s.lmu.Lock()
		next.await, next.answered = string(id), answered
		next.replays++
		s.lmu.Unlock()
		sess.Send(Request(id, "initialize", init))
		select {
		case <-answered:
		case <-time.After(handshakeWait):
		}
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.Close()
		return
	}
	if s.inited {
		sess.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	}
	if s.level != nil {
		s.lmu.Lock()
		next.replays++
		s.lmu.Unlock()
		sess.Send(Request(s.w.newID(), "logging/setLevel", s.level))
	}
	old, oldClient := s.cur, s.client
	s.lmu.Lock()
	var listen []byte
	var listens [][]byte
	for id, msg := range s.listens {
		oldClient.drop[id] = true
		listens = append(listens, msg)
		listen = []byte(id)
	}
	s.lmu.Unlock()
	for _, msg := range listens {
		sess.Send(msg)
	}
	s.cur, s.client = sess, next
	s.mu.Unlock()

	old.Close()
	for _, list := range []string{"tools", "prompts", "resources"} {
		s.c.Deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/`+list+`/list_changed"}`), listen)
	}
}

func (s *swapSession) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	cur := s.cur
	s.mu.Unlock()
	s.w.mu.Lock()
	delete(s.w.sessions, s)
	s.w.mu.Unlock()
	cur.Close()
}
