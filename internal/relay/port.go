package relay

import (
	"strconv"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// PortOptions say how a port's client is served.
type PortOptions struct {
	// KeepIDs: the client's request ids (and progress tokens, and listen
	// ids) reach the child as the client wrote them whenever every peer
	// echoes them byte for byte (plainID). The embedder guarantees that
	// they never collide with another KeepIDs port's: the one client of
	// a stdio front, or the ids of a namespace of the embedder's own
	// ("mcpflow:m…"). Other ports' are renamed toward the child and
	// restored on the way back.
	KeepIDs bool
	// Handoff, when set, lets the embedder serve this client another way
	// when the child speaks the other protocol era (the era bridge): a
	// child that refuses the client's first initialize (forwarded to it,
	// or replayed after the relay answered it), or one that does not
	// speak 2026-07-28 when the relay answered the client's
	// server/discover itself. The client's messages after its first
	// initialize are held until it is answered. The relay then delivers
	// nothing more to the port and calls Handoff with each message of the
	// client's session, in order: those that opened it (the initialize,
	// the listen streams), those held, then every message the port is
	// sent afterwards; answered says that the client has its answer to
	// that request already. Handoff is called from one goroutine at a
	// time, with no relay lock held. The relay starts a fresh child for
	// whatever serves the client next (a port of the bridge's).
	Handoff func(msg []byte, answered bool)
}

// Port is one client's session with a Relay (a wire.Session): what the
// client sends goes in through Send, what the relay and the child send it
// comes out through the wire.Client the port was attached with. A relay
// serves any number of ports at once (the clients of an HTTP front, the
// mux's sessions); they share the one session the relay holds with the
// child. See the package documentation.
type Port struct {
	sw   *switchboard
	id   int
	opts PortOptions
	out  *outbox // to the client

	// Guarded by sw.mu.
	era         era     // the client's, as its own messages decided it
	initialized bool    // it sent notifications/initialized (legacy)
	answeredOwn bool    // its initialize was answered from the child's open session
	initReq     []byte  // its initialize, as it sent it
	initID      []byte  // its first initialize while unanswered and Handoff may take it
	initDecided bool    // that initialize was answered
	handedOff   bool    // the port went to Handoff
	hand        *outbox // to Handoff, once handed off
	closed      bool
	view        clientView
	seen        uint64 // the switchboard's activity count at its last message
	client      ClientStats
}

// Attach connects a client to the relay. Messages for it go to c, in
// order, from goroutines of the relay's that hold no relay lock.
func (r *Relay) Attach(c wire.Client, o PortOptions) *Port {
	sw := r.sw
	p := &Port{sw: sw, opts: o, view: newClientView()}
	p.out = newOutbox(func(it item) error {
		c.Deliver(it.msg, it.rel)
		return nil
	}, nil)
	go p.out.run(nil)
	sw.mu.Lock()
	sw.nextPort++
	p.id = sw.nextPort
	sw.ports = append(sw.ports, p)
	sw.mu.Unlock()
	return p
}

// Open attaches c as one of many clients (a wire.Opener for an HTTP
// front): its ids are renamed toward the child; with Config.Bridge, a
// client whose era the child does not speak is served by the bridge.
func (r *Relay) Open(c wire.Client) wire.Session { return r.Connect(c, PortOptions{}) }

// Connect attaches c with o, through the era bridge when Config.Bridge
// is set (o.Handoff is then the bridge's).
func (r *Relay) Connect(c wire.Client, o PortOptions) wire.Session {
	if r.cfg.Bridge == nil {
		return r.Attach(c, o)
	}
	b := &bridging{r: r, c: c}
	o.Handoff = b.handoff
	b.port = r.Attach(wire.ClientFunc(b.deliver), o)
	return b
}

// bridges reports whether a client could be handed to the bridge.
func (r *Relay) bridges() bool {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	for _, p := range r.sw.ports {
		if p.opts.Handoff != nil && !p.handedOff {
			return true
		}
	}
	return false
}

// bridging is a client's session that moves to the era bridge when its
// port is handed off: from then on its messages go to a session of
// Config.Bridge, itself a client of the relay in the child's era.
type bridging struct {
	r    *Relay
	c    wire.Client
	port *Port

	mu       sync.Mutex
	bridge   wire.Session // once handed off
	answered [][]byte     // ids the client has its answer to: the bridge's are not delivered
	closed   bool
}

func (b *bridging) Send(msg []byte) { b.port.Send(msg) }

func (b *bridging) Close() {
	b.port.Close()
	b.mu.Lock()
	br := b.bridge
	b.closed = true
	b.mu.Unlock()
	if br != nil {
		br.Close()
	}
}

// handoff is the port's Handoff.
func (b *bridging) handoff(msg []byte, answered bool) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	if b.bridge == nil {
		up := openerFunc(func(c wire.Client) wire.Session { return b.r.Attach(c, PortOptions{}) })
		b.bridge = b.r.cfg.Bridge(up, wire.ClientFunc(b.deliver))
	}
	if answered {
		if env, err := wire.Peek(msg); err == nil {
			b.answered = append(b.answered, env.ID)
		}
	}
	br := b.bridge
	b.mu.Unlock()
	br.Send(msg)
}

// deliver passes a message to the client, but for the bridge's answers to
// requests the client has its answer to already.
func (b *bridging) deliver(msg, rel []byte) {
	b.mu.Lock()
	if rel != nil && len(b.answered) > 0 && wire.IsResponse(msg) {
		for i, id := range b.answered {
			if string(id) == string(rel) {
				b.answered = append(b.answered[:i], b.answered[i+1:]...)
				b.mu.Unlock()
				return
			}
		}
	}
	b.mu.Unlock()
	b.c.Deliver(msg, rel)
}

// Send hands the relay one message from the client (see wire.Session).
func (p *Port) Send(msg []byte) { p.sw.fromClient(p, msg) }

// Close ends the client's session: its requests in flight are canceled
// toward the child, its held messages and listen streams are dropped, and
// nothing more is delivered to it once Close returns, but for the one
// message whose Deliver is under way, should the client not take it
// within closeWait (Close does not wait longer).
func (p *Port) Close() {
	sw := p.sw
	sw.mu.Lock()
	if p.closed {
		sw.mu.Unlock()
		return
	}
	p.closed = true
	sw.closePort(p)
	sw.mu.Unlock()
	p.out.drop()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-p.out.done:
	case <-t.C:
		sw.log.Warn("a client took no message for a while; its session was closed under a delivery", "after", closeWait)
	}
	if p.hand != nil {
		p.hand.close()
	}
}

// closeWait bounds how long Close waits for a delivery under way.
const closeWait = 2 * time.Second

// key is the port-qualified form of one of its client's request ids.
func (p *Port) key(id []byte) string { return strconv.Itoa(p.id) + "\x00" + string(id) }

// deliver queues a message for the client; rel is the client's id of the
// request it belongs to (nil: none). sw.mu is held.
func (p *Port) deliver(msg, rel []byte) {
	if p.closed || p.handedOff {
		return
	}
	p.out.send(msg, rel)
}

// reply queues a response to one of the client's requests, whose id it
// carries. sw.mu is held.
func (p *Port) reply(id, msg []byte) {
	if p.initID != nil && string(id) == string(p.initID) {
		// The client's initialize is answered: what it held back goes on.
		p.initID, p.initDecided = nil, true
		defer p.sw.flushQueue()
	}
	p.deliver(msg, id)
}

// closePort forgets what belongs to p: its held messages, its requests in
// flight (canceled toward the child), its listen streams, its recompile
// calls. sw.mu is held.
func (r *switchboard) closePort(p *Port) {
	for i, q := range r.ports {
		if q == p {
			r.ports = append(r.ports[:i], r.ports[i+1:]...)
			break
		}
	}
	r.held.removePort(p)
	for key, cancel := range r.recompiles {
		if q, _ := splitKey(key); q == p.id {
			cancel()
			delete(r.recompiles, key)
		}
	}
	for key, pd := range r.ids.pending {
		if pd.port != p {
			continue
		}
		r.ids.forget(key)
		if pd.kind == kindListen {
			delete(r.sess.listens, key)
		}
		if c := r.child; c != nil && c.gen == pd.gen && !c.exited() && pd.kind != kindInitialize {
			c.send(wire.Request(nil, "notifications/cancelled", mustJSON(map[string]any{"requestId": rawJSON(key), "reason": "the client's session ended"})))
		}
	}
	for id, sr := range r.ids.serverReqs {
		if sr.port == p {
			delete(r.ids.serverReqs, id)
		}
	}
}

// splitKey is the port id of a port-qualified key.
func splitKey(key string) (int, string) {
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			n, _ := strconv.Atoi(key[:i])
			return n, key[i+1:]
		}
	}
	return 0, key
}

// touch notes activity of p, for routing what belongs to no request.
// sw.mu is held.
func (r *switchboard) touch(p *Port) {
	r.activity++
	p.seen = r.activity
}

// latestPort is the most recently active port not handed off; nil when
// none. sw.mu is held.
func (r *switchboard) latestPort() *Port {
	var best *Port
	for _, p := range r.ports {
		if !p.handedOff && (best == nil || p.seen > best.seen) {
			best = p
		}
	}
	return best
}
