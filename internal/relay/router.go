package relay

import (
	"bytes"
	"strconv"
	"time"
)

// router keeps a session's ids toward its child: the client's requests in
// flight (pending), by the id the child knows (the client's own, or one
// of the relay's, "mcpflow:r<n>", for an id a peer might not echo byte for
// byte: see plainID); the child's requests to the client, renumbered
// ("mcpflow:s<n>") so that an answer goes back only to the child that
// asked; the progress tokens of requests in flight; the relay's own
// requests, each with a channel waiting for its answer. Its session's lock
// guards it.
type router struct {
	seq        int64
	pending    map[string]*pending // by the id the child knows
	renamed    map[string]string   // the client's raw id -> the id the child knows, where they differ
	serverReqs map[string]serverReq
	tokens     map[string]string // progress token (raw JSON) -> the id the child knows
	waiters    map[string]chan []byte
	// drain is the generation whose calls in flight may finish before its
	// child is stopped (gen 0: none); done is closed once none is left.
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
	kind      kind
	gen       int
	method    string
	msg       []byte    // the request, kept for initialize and server/discover only
	firstPage bool      // a */list without a cursor
	sent      time.Time // when it was forwarded, for the debug log's latency
	// clientID is the client's id of a request the child knows under one
	// of the relay's; nil when the child got the client's own.
	clientID    []byte
	token       string // its progress token, if any
	awaitingAck bool   // a listen replayed to a new child: its acknowledgement is consumed
}

// replyID is the id the client's answer to p carries; key is the id the
// child knows.
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
	return router{pending: map[string]*pending{}, renamed: map[string]string{}, serverReqs: map[string]serverReq{},
		tokens: map[string]string{}, waiters: map[string]chan []byte{}}
}

// newID returns a fresh id of the relay's, with tag ('r': its own
// requests and renamed ones; 's': the child's requests to the client).
func (rt *router) newID(tag byte) []byte {
	rt.seq++
	return []byte(`"mcpflow:` + string(tag) + strconv.FormatInt(rt.seq, 10) + `"`)
}

func (rt *router) track(key string, pd *pending) {
	rt.pending[key] = pd
	if pd.clientID != nil {
		rt.renamed[string(pd.clientID)] = key
	}
}

// byClient finds the request in flight that the client knows as id.
func (rt *router) byClient(id []byte) (string, *pending, bool) {
	key := string(id)
	if k, ok := rt.renamed[key]; ok {
		key = k
	}
	pd, ok := rt.pending[key]
	if !ok || pd.clientID != nil && !bytes.Equal(pd.clientID, id) {
		return "", nil, false
	}
	return key, pd, true
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
	delete(rt.renamed, string(pd.clientID))
	delete(rt.tokens, pd.token)
	if rt.drain.gen != 0 && pd.gen == rt.drain.gen && rt.calls(pd.gen) == 0 {
		rt.endDrain()
	}
}

// calls counts the requests in flight on generation gen, listens aside
// (they outlive children).
func (rt *router) calls(gen int) int {
	n := 0
	for _, p := range rt.pending {
		if p.gen == gen && p.kind != kindListen {
			n++
		}
	}
	return n
}

// only is the one call in flight on generation gen (listens aside), and
// the id the child knows it by; nil when there is none or more than one.
func (rt *router) only(gen int) (string, *pending) {
	var key string
	var one *pending
	for k, p := range rt.pending {
		if p.gen != gen || p.kind == kindListen {
			continue
		}
		if one != nil {
			return "", nil
		}
		key, one = k, p
	}
	return key, one
}

// handshakePending reports whether an initialize or server/discover sent
// to generation gen awaits its answer.
func (rt *router) handshakePending(gen int) bool {
	for _, p := range rt.pending {
		if p.gen == gen && (p.kind == kindInitialize || p.kind == kindDiscover) {
			return true
		}
	}
	return false
}

// startDrain begins waiting for generation gen's calls: the channel is
// closed once none is left (at once if none is).
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

// takeGen removes and returns the requests pending on generation gen,
// listens aside, and forgets that generation's requests to the client.
func (rt *router) takeGen(gen int) map[string]*pending {
	out := map[string]*pending{}
	for key, pd := range rt.pending {
		if pd.gen == gen && pd.kind != kindListen {
			rt.forget(key)
			out[key] = pd
		}
	}
	for id, sr := range rt.serverReqs {
		if sr.gen == gen {
			delete(rt.serverReqs, id)
		}
	}
	return out
}

// renumber records a request of the child of generation gen to the
// client and returns the id it goes under.
func (rt *router) renumber(gen int, origID []byte) []byte {
	id := rt.newID('s')
	rt.serverReqs[string(id)] = serverReq{gen: gen, origID: bytes.Clone(origID)}
	return id
}

// mapBack returns, and forgets, the request of the child's that the
// client's answer with id key answers.
func (rt *router) mapBack(key string) (serverReq, bool) {
	sr, ok := rt.serverReqs[key]
	delete(rt.serverReqs, key)
	return sr, ok
}

// cancelServerReq forgets generation gen's request to the client with
// the child's id orig, and returns the id the client knows it by.
func (rt *router) cancelServerReq(gen int, orig []byte) (string, bool) {
	for id, sr := range rt.serverReqs {
		if sr.gen == gen && bytes.Equal(sr.origID, orig) {
			delete(rt.serverReqs, id)
			return id, true
		}
	}
	return "", false
}

// wait registers a request of the relay's own; its answer goes to the
// returned channel.
func (rt *router) wait(id []byte) chan []byte {
	ch := make(chan []byte, 1)
	rt.waiters[string(id)] = ch
	return ch
}

// answer hands the answer to a request of the relay's own to its waiter;
// it reports whether key is such a request.
func (rt *router) answer(key string, msg []byte) bool {
	ch, ok := rt.waiters[key]
	if ok {
		delete(rt.waiters, key)
		ch <- msg
	}
	return ok
}
