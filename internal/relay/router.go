package relay

import (
	"bytes"
	"iter"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// router keeps a session's ids toward its child: the client's requests in
// flight, by the id the child knows (the client's, or "mcpflow:r<n>": see
// plainID); the child's requests to the client, renumbered
// ("mcpflow:s<n>"); the relay's own, each with a channel for its answer.
type router struct {
	seq        int64
	pending    map[string]*pending // by the id the child knows
	serverReqs map[string]serverReq
	waiters    map[string]chan []byte
	// drain is the generation whose calls are let finish (0: none); done
	// is closed once none is left.
	drain struct {
		gen  int
		done chan struct{}
	}
}

type kind int

const (
	kindPlain kind = iota
	kindInitialize
	kindDiscover
	kindToolsList
	kindListen
	kindToolsCall
)

type pending struct {
	kind        kind
	gen         int
	method      string
	msg         []byte    // the request, kept for initialize and server/discover only
	firstPage   bool      // a */list without a cursor
	sent        time.Time // when it was forwarded, for the debug log's latency
	clientID    []byte    // the client's id, when the child knows one of the relay's
	token       string    // its progress token (raw JSON), if no other request has it
	awaitingAck bool      // a listen replayed to a new child: its acknowledgement is consumed
}

// replyID is the id of the client's answer to p (key: the child's id).
func (p *pending) replyID(key string) []byte {
	if p.clientID != nil {
		return p.clientID
	}
	return []byte(key)
}

type serverReq struct {
	gen    int
	origID []byte
}

func newRouter() router {
	return router{pending: map[string]*pending{}, serverReqs: map[string]serverReq{}, waiters: map[string]chan []byte{}}
}

// newID returns a fresh id of the relay's, tagged 'r' or 's'.
func (rt *router) newID(tag byte) []byte {
	rt.seq++
	return []byte(`"mcpflow:` + string(tag) + strconv.FormatInt(rt.seq, 10) + `"`)
}

// byClient finds the request in flight that the client knows as id.
func (rt *router) byClient(id []byte) (string, *pending, bool) {
	if pd, ok := rt.pending[string(id)]; ok && pd.clientID == nil {
		return string(id), pd, true
	}
	for key, pd := range rt.pending {
		if bytes.Equal(pd.clientID, id) {
			return key, pd, true
		}
	}
	return "", nil, false
}

// byToken is the request with progress token tok; "" when none.
func (rt *router) byToken(tok []byte) string {
	for key, pd := range rt.pending {
		if pd.token != "" && pd.token == string(tok) {
			return key
		}
	}
	return ""
}

// lookup returns the request a response from generation gen answers.
func (rt *router) lookup(key string, gen int) (*pending, bool) {
	if p, ok := rt.pending[key]; ok && p.gen == gen {
		return p, true
	}
	return nil, false
}

// forget ends a request: its answer, if one comes, is dropped.
func (rt *router) forget(key string) {
	pd, ok := rt.pending[key]
	if !ok {
		return
	}
	delete(rt.pending, key)
	if rt.drain.gen != 0 && pd.gen == rt.drain.gen && rt.calls(pd.gen) == 0 {
		rt.endDrain()
	}
}

// onGen yields the requests in flight on generation gen, listens aside
// (they outlive children).
func (rt *router) onGen(gen int) iter.Seq2[string, *pending] {
	return func(yield func(string, *pending) bool) {
		for k, p := range rt.pending {
			if p.gen == gen && p.kind != kindListen && !yield(k, p) {
				return
			}
		}
	}
}

func (rt *router) calls(gen int) (n int) {
	for range rt.onGen(gen) {
		n++
	}
	return n
}

// only is the one call in flight on gen (nil: none or more than one).
func (rt *router) only(gen int) (key string, one *pending) {
	for k, p := range rt.onGen(gen) {
		if one != nil {
			return "", nil
		}
		key, one = k, p
	}
	return key, one
}

// handshakePending: a handshake request sent to gen awaits its answer.
func (rt *router) handshakePending(gen int) bool {
	for _, p := range rt.onGen(gen) {
		if p.kind == kindInitialize || p.kind == kindDiscover {
			return true
		}
	}
	return false
}

// startDrain begins waiting for gen's calls; done is closed when none is left.
func (rt *router) startDrain(gen int) <-chan struct{} {
	rt.endDrain()
	rt.drain.gen, rt.drain.done = gen, make(chan struct{})
	done := rt.drain.done
	if rt.calls(gen) == 0 {
		rt.endDrain()
	}
	return done
}

func (rt *router) endDrain() {
	if rt.drain.gen != 0 {
		close(rt.drain.done)
		rt.drain.gen = 0
	}
}

// takeGen removes and returns gen's requests and requests to the client.
func (rt *router) takeGen(gen int) map[string]*pending {
	out := maps.Collect(rt.onGen(gen))
	for key := range out {
		rt.forget(key)
	}
	for id, sr := range rt.serverReqs {
		if sr.gen == gen {
			delete(rt.serverReqs, id)
		}
	}
	return out
}

// renumber records a child's request to the client; its id for the client.
func (rt *router) renumber(gen int, origID []byte) []byte {
	id := rt.newID('s')
	rt.serverReqs[string(id)] = serverReq{gen: gen, origID: bytes.Clone(origID)}
	return id
}

// mapBack returns, and forgets, the child's request that key answers.
func (rt *router) mapBack(key string) (serverReq, bool) {
	sr, ok := rt.serverReqs[key]
	delete(rt.serverReqs, key)
	return sr, ok
}

// cancelServerReq forgets a child's request; its id for the client.
func (rt *router) cancelServerReq(gen int, orig []byte) (string, bool) {
	for id, sr := range rt.serverReqs {
		if sr.gen == gen && bytes.Equal(sr.origID, orig) {
			delete(rt.serverReqs, id)
			return id, true
		}
	}
	return "", false
}

// answer hands its answer to a request of the relay's own, if key is one.
func (rt *router) answer(key string, msg []byte) bool {
	ch, ok := rt.waiters[key]
	if ok {
		delete(rt.waiters, key)
		ch <- msg
	}
	return ok
}

// holdQueue holds a session's client messages while no child can take them.
type holdQueue struct {
	maxLen, maxBytes int
	q                []queued
	bytes            int
}

type queued struct {
	msg []byte
	env wire.Envelope
	at  time.Time
}

// add holds msg; false when the count or byte limit would be passed. (A
// request with the id of one held never comes: wire.State refuses it.)
func (h *holdQueue) add(msg []byte, env wire.Envelope, now time.Time) bool {
	if len(h.q) >= h.maxLen || h.bytes+len(msg) > h.maxBytes {
		return false
	}
	h.q = append(h.q, queued{msg: msg, env: env, at: now})
	h.bytes += len(msg)
	return true
}

// remove drops the held request with this id, if there is one.
func (h *holdQueue) remove(id []byte) bool {
	i := slices.IndexFunc(h.q, func(m queued) bool { return m.env.IsRequest() && bytes.Equal(m.env.ID, id) })
	if i < 0 {
		return false
	}
	h.bytes -= len(h.q[i].msg)
	h.q = slices.Delete(h.q, i, i+1)
	return true
}

// has reports whether a request with env's id, or a like notification, is held.
func (h *holdQueue) has(env wire.Envelope) bool {
	for _, m := range h.q {
		if env.ID != nil && bytes.Equal(m.env.ID, env.ID) || env.ID == nil && m.env.ID == nil && m.env.Method == env.Method {
			return true
		}
	}
	return false
}

// take empties the queue and returns what it held, oldest first.
func (h *holdQueue) take() []queued {
	q := h.q
	h.q, h.bytes = nil, 0
	return q
}

// put holds m again, at the back, whatever the limits: it was held before.
func (h *holdQueue) put(m queued) {
	h.q = append(h.q, m)
	h.bytes += len(m.msg)
}

// expire removes and returns the messages held since before cutoff.
func (h *holdQueue) expire(cutoff time.Time) []queued {
	var out []queued
	h.q = slices.DeleteFunc(h.q, func(m queued) bool {
		if !m.at.Before(cutoff) {
			return false
		}
		h.bytes -= len(m.msg)
		out = append(out, m)
		return true
	})
	return out
}
