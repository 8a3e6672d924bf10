package relay

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"time"
)

// router keeps the id mappings between the client and the children:
//   - client requests in flight, each tied to the generation of the child
//     it was sent to (pending);
//   - requests a child sent to the client, renumbered to ids the relay owns
//     ("mcpflow:s<gen>-<n>") so that an answer goes back only to the child
//     that asked (serverReqs);
//   - the relay's own requests to a child, each with a channel waiting for
//     its answer (waiters).
//
// It has no lock: its owner's lock guards it. Ids come from an atomic
// counter, so newID is safe anywhere.
type router struct {
	seq        atomic.Int64
	pending    map[string]*pending // by the id the child knows
	clientKeys map[string]string   // client id -> the relay's id, for renamed requests
	serverReqs map[string]serverReq
	waiters    map[string]chan []byte
	drain      drain
}

// drain is the generation whose calls in flight may finish before its
// child is stopped (gen 0: none); done is closed once none is left.
type drain struct {
	gen  int
	done chan struct{}
}

type pending struct {
	kind   kind
	gen    int
	method string
	msg    []byte // the request, kept for initialize and server/discover only
	// firstPage: a tools/list without a cursor.
	firstPage bool
	sent      time.Time // when it was forwarded, for the debug log's latency
	// clientID is the client's id of a request the child knows under one
	// of the relay's (see plainID); nil when the child got the client's own.
	clientID []byte
}

// replyID is the id the client's answer to p carries; key is the id the
// child knows.
func (p *pending) replyID(key string) []byte {
	if p.clientID != nil {
		return p.clientID
	}
	return []byte(key)
}

// plainID reports whether any peer echoes the request id back byte for
// byte: a string of printable ASCII with nothing an encoder escapes
// (quotes, backslashes, and <, > and &, which Go escapes), or an integer
// that a float64 holds exactly. Other ids are renamed toward the child.
func plainID(id []byte) bool {
	if id[0] == '"' {
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && (len(digits) > 1 || id[0] == '-') {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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

// reservedPrefix starts every id the relay invents, in both directions.
// Client requests whose string id starts with it are refused, so relay ids
// can never collide with the client's.
const reservedPrefix = `"mcpflow:`

type serverReq struct {
	gen    int
	origID []byte
}

// pendingReq is one request taken from the router by takeGen.
type pendingReq struct {
	key string
	p   *pending
}

func newRouter() *router {
	return &router{
		pending:    map[string]*pending{},
		clientKeys: map[string]string{},
		serverReqs: map[string]serverReq{},
		waiters:    map[string]chan []byte{},
	}
}

// newID returns a fresh id the relay owns, as a JSON string.
func (rt *router) newID(tag string) []byte {
	return []byte(reservedPrefix + tag + strconv.FormatInt(rt.seq.Add(1), 10) + `"`)
}

// track records a client request sent to a child under key.
func (rt *router) track(key string, p *pending) {
	rt.pending[key] = p
	if p.clientID != nil {
		rt.clientKeys[string(p.clientID)] = key
	}
}

// childKey is the id the child knows the client's request clientKey by.
func (rt *router) childKey(clientKey string) string {
	if k, ok := rt.clientKeys[clientKey]; ok {
		return k
	}
	return clientKey
}

// inFlight reports whether a client request with this id awaits an answer.
func (rt *router) inFlight(clientKey string) bool {
	_, ok := rt.pending[rt.childKey(clientKey)]
	return ok
}

// lookup returns the request a response from generation gen answers, if
// that request is still in flight and was sent to that generation.
func (rt *router) lookup(key string, gen int) (*pending, bool) {
	p, ok := rt.pending[key]
	if !ok || p.gen != gen {
		return nil, false
	}
	return p, true
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

// forget ends a client request: its answer, if one comes, is dropped.
func (rt *router) forget(key string) (*pending, bool) {
	p, ok := rt.pending[key]
	delete(rt.pending, key)
	if ok && p.clientID != nil {
		delete(rt.clientKeys, string(p.clientID))
	}
	if ok && rt.drain.gen != 0 && p.gen == rt.drain.gen && rt.calls(p.gen) == 0 {
		rt.endDrain()
	}
	return p, ok
}

// calls counts the client requests in flight on generation gen, listens
// excepted (they outlive children).
func (rt *router) calls(gen int) int {
	n := 0
	for _, p := range rt.pending {
		if p.gen == gen && p.kind != kindListen {
			n++
		}
	}
	return n
}

// startDrain begins waiting for generation gen's calls in flight: the
// returned channel is closed once none is left (at once if none is).
func (rt *router) startDrain(gen int) <-chan struct{} {
	rt.endDrain()
	rt.drain = drain{gen: gen, done: make(chan struct{})}
	if rt.calls(gen) == 0 {
		rt.endDrain()
	}
	return rt.drain.done
}

// endDrain stops waiting for a generation's calls.
func (rt *router) endDrain() {
	if rt.drain.gen != 0 {
		close(rt.drain.done)
		rt.drain.gen = 0
	}
}

// draining reports whether the relay waits for generation gen's calls.
func (rt *router) draining(gen int) bool { return gen != 0 && rt.drain.gen == gen }

// takeGen removes and returns the requests pending on generation gen,
// listens excepted (they outlive children), and forgets that generation's
// requests to the client.
func (rt *router) takeGen(gen int) []pendingReq {
	var out []pendingReq
	for key, p := range rt.pending {
		if p.gen != gen || p.kind == kindListen {
			continue
		}
		delete(rt.pending, key)
		if p.clientID != nil {
			delete(rt.clientKeys, string(p.clientID))
		}
		out = append(out, pendingReq{key, p})
	}
	for id, sr := range rt.serverReqs {
		if sr.gen == gen {
			delete(rt.serverReqs, id)
		}
	}
	return out
}

// renumber records a request of generation gen to the client and returns
// the id to send it under.
func (rt *router) renumber(gen int, origID []byte) []byte {
	id := rt.newID("s" + strconv.Itoa(gen) + "-")
	rt.serverReqs[string(id)] = serverReq{gen: gen, origID: bytes.Clone(origID)}
	return id
}

// mapBack returns the generation and original id of the server request
// that the client's answer with id key answers, and forgets it.
func (rt *router) mapBack(key string) (serverReq, bool) {
	sr, ok := rt.serverReqs[key]
	delete(rt.serverReqs, key)
	return sr, ok
}

// cancelServerReq forgets generation gen's request to the client with the
// child's id orig, and returns the id the client knows it by.
func (rt *router) cancelServerReq(gen int, orig []byte) (string, bool) {
	for id, sr := range rt.serverReqs {
		if sr.gen == gen && string(sr.origID) == string(orig) {
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

// unwait forgets a request of the relay's own.
func (rt *router) unwait(id []byte) { delete(rt.waiters, string(id)) }

// deliver hands the answer to a request of the relay's own to its
// waiter; it reports whether key is such a request.
func (rt *router) deliver(key string, msg []byte) bool {
	ch, ok := rt.waiters[key]
	if ok {
		delete(rt.waiters, key)
		ch <- msg
	}
	return ok
}
