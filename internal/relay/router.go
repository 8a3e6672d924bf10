package relay

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// router keeps the id mappings between the clients (ports) and the
// children:
//   - client requests in flight, each tied to the port it came from and
//     the generation of the child it was sent to (pending), by the id the
//     child knows; byClient finds them by the client's own;
//   - requests a child sent to a client, renumbered to ids the relay owns
//     ("mcpflow:s<gen>-<n>") so that an answer goes back only to the child
//     that asked (serverReqs);
//   - progress tokens of requests in flight, renamed toward the child for
//     the ports whose ids are (tokens);
//   - the relay's own requests to a child, each with a channel waiting for
//     its answer (waiters).
//
// It has no lock: its owner's lock guards it. Ids come from an atomic
// counter, so newID is safe anywhere.
type router struct {
	seq        atomic.Int64
	pending    map[string]*pending // by the id the child knows
	byClient   map[string]string   // port-qualified client id -> the id the child knows
	serverReqs map[string]serverReq
	tokens     map[string]token // progress token the child knows (raw JSON) -> whose it is
	waiters    map[string]chan []byte
	drain      drain
}

// token is a progress token of a request in flight: the port and request
// (the id the child knows) it belongs to, and the client's own token when
// the child knows another.
type token struct {
	port   *Port
	key    string
	client []byte // nil: the child knows the client's own
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
	port   *Port // whose request it is
	method string
	msg    []byte // the request, kept for initialize and server/discover only
	// firstPage: a tools/list without a cursor.
	firstPage bool
	sent      time.Time // when it was forwarded, for the debug log's latency
	// clientID is the client's id of a request the child knows under one
	// of the relay's (see plainID); nil when the child got the client's own.
	clientID []byte
	tokenKey string // the progress token the child knows, if any
	seq      int64  // the order in which requests were sent
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
// A port whose ids reach the child as they are (KeepIDs) may not use it,
// so relay ids can never collide with a client's, except for
// embedderPrefix: the namespace of an embedder's own requests (the mux's),
// which the relay never uses.
const (
	reservedPrefix = `"mcpflow:`
	embedderPrefix = `"mcpflow:m`
)

type serverReq struct {
	gen    int
	origID []byte
	port   *Port // the client it was sent to
}

// pendingReq is one request taken from the router by takeGen.
type pendingReq struct {
	key string
	p   *pending
}

func newRouter() *router {
	return &router{
		pending:    map[string]*pending{},
		byClient:   map[string]string{},
		tokens:     map[string]token{},
		serverReqs: map[string]serverReq{},
		waiters:    map[string]chan []byte{},
	}
}

// newID returns a fresh id the relay owns, as a JSON string.
func (rt *router) newID(tag string) []byte {
	return []byte(reservedPrefix + tag + strconv.FormatInt(rt.seq.Add(1), 10) + `"`)
}

// track records port p's request sent to a child under key.
func (rt *router) track(p *Port, key string, pd *pending) {
	pd.seq = rt.seq.Add(1)
	rt.pending[key] = pd
	rt.byClient[p.key(pd.replyID(key))] = key
}

// childKey is the id the child knows port p's request id by; "" when it
// is not in flight.
func (rt *router) childKey(p *Port, id []byte) string {
	return rt.byClient[p.key(id)]
}

// inFlight reports whether port p's request with this id awaits an answer.
func (rt *router) inFlight(p *Port, id []byte) bool {
	_, ok := rt.byClient[p.key(id)]
	return ok
}

// trackToken records the progress token tok of port p's request msg
// (env), which the child knows as key (tracked already); for a port whose ids the child
// does not see, the child gets a token of the relay's instead. It
// returns the request as the child gets it.
func (rt *router) trackToken(p *Port, msg []byte, env wire.Envelope, tok []byte, key string) []byte {
	t := token{port: p, key: key}
	child := string(tok)
	if !p.opts.KeepIDs {
		ms, me, ok := jsonscan.MemberSpan(env.Params, "_meta")
		if !ok {
			return msg
		}
		ts, te, ok := jsonscan.MemberSpan(env.Params[ms:me], "progressToken")
		if !ok {
			return msg
		}
		mine := rt.newID("t")
		t.client = bytes.Clone(tok)
		at := env.ParStart + ms
		msg = wire.Splice(msg, at+ts, at+te, mine)
		child = string(mine)
	}
	if _, taken := rt.tokens[child]; taken {
		return msg // a client that reuses a token in flight: the first keeps it
	}
	rt.tokens[child] = t
	if pd := rt.pending[key]; pd != nil {
		pd.tokenKey = child
	}
	return msg
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
	pd, ok := rt.pending[key]
	if !ok {
		return nil, false
	}
	rt.untrack(key, pd)
	if rt.drain.gen != 0 && pd.gen == rt.drain.gen && rt.calls(pd.gen) == 0 {
		rt.endDrain()
	}
	return pd, true
}

// untrack removes what track and trackToken recorded of pd, known as key.
func (rt *router) untrack(key string, pd *pending) {
	delete(rt.pending, key)
	delete(rt.byClient, pd.port.key(pd.replyID(key)))
	if pd.tokenKey != "" {
		delete(rt.tokens, pd.tokenKey)
	}
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
// requests to the clients.
func (rt *router) takeGen(gen int) []pendingReq {
	var out []pendingReq
	for key, pd := range rt.pending {
		if pd.gen != gen || pd.kind == kindListen {
			continue
		}
		rt.untrack(key, pd)
		out = append(out, pendingReq{key, pd})
	}
	for id, sr := range rt.serverReqs {
		if sr.gen == gen {
			delete(rt.serverReqs, id)
		}
	}
	return out
}

// renumber records a request of generation gen to port p's client and
// returns the id to send it under.
func (rt *router) renumber(gen int, origID []byte, p *Port) []byte {
	id := rt.newID("s" + strconv.Itoa(gen) + "-")
	rt.serverReqs[string(id)] = serverReq{gen: gen, origID: bytes.Clone(origID), port: p}
	return id
}

// mapBack returns the generation and original id of the server request
// that the client's answer with id key answers, and forgets it.
func (rt *router) mapBack(key string) (serverReq, bool) {
	sr, ok := rt.serverReqs[key]
	delete(rt.serverReqs, key)
	return sr, ok
}

// cancelServerReq forgets generation gen's request to a client with the
// child's id orig, and returns the id the client knows it by and its port.
func (rt *router) cancelServerReq(gen int, orig []byte) (string, *Port, bool) {
	for id, sr := range rt.serverReqs {
		if sr.gen == gen && string(sr.origID) == string(orig) {
			delete(rt.serverReqs, id)
			return id, sr.port, true
		}
	}
	return "", nil, false
}

// newest is the request in flight on generation gen most recently sent
// (listens aside), and the id the child knows it by; nil when none.
func (rt *router) newest(gen int) (string, *pending) {
	var key string
	var best *pending
	for k, pd := range rt.pending {
		if pd.gen == gen && pd.kind != kindListen && (best == nil || pd.seq > best.seq) {
			key, best = k, pd
		}
	}
	return key, best
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
