package wire

import (
	"strconv"
	"sync"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FanIn serves the clients of a session-less 2026-07-28 front (over
// HTTP each POST is a session of its own) through one session of the
// Opener behind it: that era keeps no state between requests (each
// carries its session in _meta), so they may share one connection to the
// server, as they would share the server itself over HTTP; a stdio server
// is then started once, not once per request.
//
// Nothing of one client reaches another: each request's id, its progress
// token and, for a subscriptions/listen, the subscription id its
// notifications carry become ids of FanIn's own ("mcpflow:f<n>") on the
// way in, and the client's own on the way back; a message goes to the
// client whose request its id, its rel, its progress token or its
// subscription id names, and nowhere else (a message that names none is
// dropped). A client's cancellation names its own request; a client that
// leaves has its requests in flight cancelled. The 2026-07-28 era has no
// requests from server to client: one is answered with an error.
type FanIn struct {
	o Opener

	mu     sync.Mutex
	shared Session
	seq    int
	routes map[string]fanRoute // FanIn's id (raw JSON) -> whose request
}

type fanRoute struct {
	c      *fanSession
	id     []byte // the client's id
	token  []byte // the client's progress token; nil when none
	listen bool
}

// NewFanIn shares one session of o among the clients it opens.
func NewFanIn(o Opener) *FanIn { return &FanIn{o: o, routes: map[string]fanRoute{}} }

// Open opens one session-less client's session.
func (f *FanIn) Open(c Client) Session {
	return &fanSession{f: f, c: c, ids: map[string]string{}}
}

// Close closes the shared session.
func (f *FanIn) Close() {
	f.mu.Lock()
	s := f.shared
	f.shared = nil
	f.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

func (f *FanIn) newID() []byte {
	f.seq++
	return []byte(`"mcpflow:f` + strconv.Itoa(f.seq) + `"`)
}

// deliver routes one message of the shared session's to its client.
func (f *FanIn) deliver(msg, rel []byte) {
	env, err := Peek(msg)
	if err != nil {
		return
	}
	if env.IsRequest() {
		f.mu.Lock()
		s := f.shared
		f.mu.Unlock()
		if s != nil {
			s.Send(ErrorResponse(env.ID, CodeMethodNotFound, "mcpflow: a session-less 2026-07-28 client cannot be sent requests", nil))
		}
		return
	}
	key, at, end := string(rel), 0, 0 // the span of what names the route
	switch {
	case env.IsResponse():
		key, at, end = string(env.ID), env.IDStart, env.IDEnd
	default:
		vs, ve, ok := jsonscan.MemberSpan(env.Params, "progressToken")
		vs, ve = env.ParStart+vs, env.ParStart+ve
		if !ok {
			vs, ve, ok = env.MetaSpan(mcp.MetaKeySubscriptionID)
		}
		if ok {
			key, at, end = string(msg[vs:ve]), vs, ve
		}
	}
	f.mu.Lock()
	r, ok := f.routes[key]
	if ok && env.IsResponse() {
		delete(f.routes, key)
		delete(r.c.ids, string(r.id))
	}
	f.mu.Unlock()
	if !ok {
		return // it names no client's request: nobody's
	}
	if end > at {
		own := r.id // the client's id, or its listen's
		if !env.IsResponse() && !r.listen && r.token != nil {
			own = r.token // a progress notification: the client's token
		}
		msg = Splice(msg, at, end, own)
	}
	r.c.c.Deliver(msg, r.id)
}

// fanSession is one client's session through a FanIn.
type fanSession struct {
	f      *FanIn
	c      Client
	ids    map[string]string // the client's raw id -> FanIn's; guarded by f.mu
	closed bool              // guarded by f.mu
}

func (s *fanSession) Send(msg []byte) {
	if env, err := Peek(msg); err == nil {
		if msg, shared := s.route(msg, env); msg != nil {
			shared.Send(msg)
		}
	}
}

// route makes the client's msg FanIn's, and returns the shared session it
// goes to; nil when it goes nowhere.
func (s *fanSession) route(msg []byte, env Envelope) ([]byte, Session) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case s.closed, env.IsResponse(): // no request of the server's was sent to it
		return nil, nil
	case env.IsRequest():
		id := f.newID()
		r := fanRoute{c: s, id: env.ID, listen: env.Method == "subscriptions/listen"}
		if ts, te, ok := env.MetaSpan("progressToken"); ok {
			r.token = msg[ts:te]
			msg = Splice(msg, ts, te, id)
			env, _ = Peek(msg)
		}
		r.id, r.token = append([]byte(nil), r.id...), append([]byte(nil), r.token...)
		f.routes[string(id)] = r
		s.ids[string(r.id)] = string(id)
		msg = Splice(msg, env.IDStart, env.IDEnd, id)
	case env.Method == "notifications/cancelled":
		vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId")
		mine, known := s.ids[string(jsonscan.Member(env.Params, "requestId"))]
		if !ok || !known {
			return nil, nil
		}
		msg = Splice(msg, env.ParStart+vs, env.ParStart+ve, []byte(mine))
	}
	if f.shared == nil { // opened at first use
		f.shared = f.o.Open(ClientFunc(f.deliver))
	}
	return msg, f.shared
}

// Close cancels the client's requests in flight and forgets them.
func (s *fanSession) Close() {
	f := s.f
	f.mu.Lock()
	if s.closed {
		f.mu.Unlock()
		return
	}
	s.closed = true
	var cancels [][]byte
	for _, mine := range s.ids {
		delete(f.routes, mine)
		cancels = append(cancels, Request(nil, "notifications/cancelled", []byte(`{"requestId":`+mine+`,"reason":"the client left"}`)))
	}
	clear(s.ids)
	shared := f.shared
	f.mu.Unlock()
	for _, m := range cancels {
		if shared != nil {
			shared.Send(m)
		}
	}
}
