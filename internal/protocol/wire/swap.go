package wire

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
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
//   - Each session keeps the client's State, and Replace replays it
//     (State.Replay) into a session of the new Opener: the handshake,
//     setLevel and subscriptions under ids of Swap's own, whose answers
//     the client never sees; the listens as the client wrote them, so
//     that their streams go on there.
//   - Every request in flight gets exactly one answer: those sent before
//     the move are answered by the old session, which is closed once they
//     are (at most Drain later); those it has not answered by then are
//     answered by Swap (TextMoved). Listens moved to the new session are
//     answered there.
//   - Then the client is told its lists changed (State.ListChanged).
//   - A message the client sends goes to the session current when it is
//     sent; Replace and Send are serialized per session.
type Swap struct {
	// Drain bounds how long the old engine may take to answer the
	// requests in flight at a Replace; 0 = DefaultDrain.
	Drain time.Duration

	mu       sync.Mutex
	cur      Opener
	sessions map[*swapSession]struct{}
	seq      int
}

// DefaultDrain is Swap's default Drain.
const DefaultDrain = 10 * time.Second

// TextMoved answers a request the old engine did not answer in time.
const TextMoved = "mcpflow: its settings changed (mcpflow.toml) and the server was restarted with them before it answered this request; send it again"

// NewSwap serves o until Replace.
func NewSwap(o Opener) *Swap {
	return &Swap{cur: o, sessions: map[*swapSession]struct{}{}}
}

// Open opens the client's session on the current Opener.
func (w *Swap) Open(c Client) Session {
	s := &swapSession{w: w, c: c}
	s.mu.Lock() // a Replace now waits for the session to be open
	defer s.mu.Unlock()
	w.mu.Lock()
	o := w.cur
	w.sessions[s] = struct{}{}
	w.mu.Unlock()
	s.client = &swapClient{s: s, moved: map[string]bool{}}
	s.cur = o.Open(s.client)
	return s
}

// Replace moves every open session, and those opened later, to o (see
// Swap). The caller closes the old Opener's engine once Replace returned.
func (w *Swap) Replace(o Opener) {
	w.mu.Lock()
	w.cur = o
	sessions := slices.Collect(maps.Keys(w.sessions))
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() { s.move(o) })
	}
	wg.Wait()
}

func (w *Swap) newID() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return []byte(`"mcpflow:w` + strconv.Itoa(w.seq) + `"`)
}

// swapSession is one client's session through a Swap. mu serializes
// Send, move and Close and guards the current session; stmu guards the
// State and the clients' fields, and is never held while calling out, so
// that a session that delivers while it is sent to cannot wait on mu.
// dmu makes deliveries one at a time (the old and the new session may
// both deliver during a move).
type swapSession struct {
	w *Swap
	c Client

	mu     sync.Mutex
	cur    Session
	client *swapClient // cur's
	closed bool

	stmu sync.Mutex
	st   State

	dmu sync.Mutex
}

// swapClient is how one engine session delivers to the client: answers
// to Swap's own ids are dropped (await is told of the one it waits for),
// and so are the answers to the listens moved away from it.
type swapClient struct {
	s     *swapSession
	moved map[string]bool // listens moved away; guarded by s.stmu
	await string          // a replayed initialize's id; guarded by s.stmu
	got   chan struct{}   // closed when it is answered
}

func (sc *swapClient) Deliver(msg, rel []byte) {
	s := sc.s
	if IsResponse(msg) {
		env, err := Peek(msg)
		if err == nil {
			id := string(env.ID)
			s.stmu.Lock()
			switch {
			case bytes.HasPrefix(env.ID, []byte(`"mcpflow:w`)):
				if id == sc.await {
					close(sc.got)
					sc.await = ""
				}
				s.stmu.Unlock()
				return
			case sc.moved[id] || id != "null" && !s.st.InFlight(env.ID):
				s.stmu.Unlock()
				return // moved away, answered already, or never asked
			}
			s.st.Answered(env.ID)
			s.stmu.Unlock()
		}
	}
	s.deliver(msg, rel)
}

func (s *swapSession) Send(msg []byte) {
	env, err := Peek(msg)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.stmu.Lock()
	answer, refused := s.st.Note(msg, env)
	s.stmu.Unlock()
	if refused {
		if answer != nil {
			go s.deliver(answer, env.ID)
		}
		return
	}
	s.cur.Send(msg)
}

func (s *swapSession) deliver(msg, rel []byte) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	s.c.Deliver(msg, rel)
}

// handshakeWait bounds the wait for the answer to a replayed initialize
// before the rest of the session's setup follows it.
const handshakeWait = time.Minute

// move replays the session into a session of o, makes it the current
// one, then lets the old one answer what it has in flight (see Swap).
func (s *swapSession) move(o Opener) {
	next := &swapClient{s: s, moved: map[string]bool{}}
	sess := o.Open(next)
	s.stmu.Lock()
	replay := s.st.Replay(s.w.newID)
	var got chan struct{}
	if len(replay) > 0 && s.st.Init != nil {
		env, _ := Peek(replay[0])
		next.await, next.got = string(env.ID), make(chan struct{})
		got = next.got
	}
	s.stmu.Unlock()
	if got != nil {
		// The initialize first, and its answer, before what follows it:
		// what the client sends meanwhile still goes to the old session.
		sess.Send(replay[0])
		replay = replay[1:]
		select {
		case <-got:
		case <-time.After(handshakeWait):
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.Close()
		return
	}
	for _, m := range replay {
		sess.Send(m)
	}
	old, oldClient := s.cur, s.client
	s.stmu.Lock()
	for id := range s.st.Listens() {
		oldClient.moved[id] = true
	}
	pending := s.st.Pending()
	kinds := s.st.ListChanged("tools", "prompts", "resources")
	s.stmu.Unlock()
	s.cur, s.client = sess, next
	s.mu.Unlock()

	for _, m := range kinds {
		s.deliver(m.Msg, m.Rel)
	}
	s.drain(old, pending)
}

// drain waits, at most Drain, for the old session to answer the requests
// that were in flight on it (pending), then closes it and answers those
// it did not.
func (s *swapSession) drain(old Session, pending [][]byte) {
	deadline := time.Now().Add(cmp.Or(s.w.Drain, DefaultDrain))
	for len(pending) > 0 && time.Now().Before(deadline) {
		s.stmu.Lock()
		pending = slices.DeleteFunc(pending, func(id []byte) bool { return !s.st.InFlight(id) })
		s.stmu.Unlock()
		if len(pending) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	old.Close()
	for _, id := range pending {
		s.stmu.Lock()
		open := s.st.InFlight(id)
		s.st.Answered(id)
		s.stmu.Unlock()
		if open {
			s.deliver(ErrorResponse(id, CodeServerRestarted, TextMoved, nil), id)
		}
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
