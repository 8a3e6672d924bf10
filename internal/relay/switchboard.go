package relay

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// switchboard routes messages between the relay's clients (its ports)
// and the current child: a message in (from either side) becomes messages
// out (to either side, through the ports' outboxes and the child's link)
// and changes to the routing state. Its mutex guards that state and the
// parts that hold it (router, hold queue, session, the ports' sessions,
// toolset, crash policy); none of them has a lock of its own. It never
// blocks on a peer: writes only queue. It starts no process and runs no
// goroutine of its own; what needs one goes to the shell (the Relay).
type switchboard struct {
	cfg   *Config
	log   *slog.Logger
	junk  junkLog
	trace *msgTrace // nil unless the logger takes debug lines: one per message
	shell shell

	stats relayStats // for Stats; own lock

	mu         sync.Mutex
	state      state
	child      *child // the current child; nil when none
	gen        int    // the last generation started
	health     health
	ids        *router
	held       holdQueue
	sess       session // the session with the child, shared by every port
	ports      []*Port
	nextPort   int
	activity   uint64 // counts the ports' messages: their recency
	tools      *toolset
	recompiles map[string]context.CancelFunc // recompile calls in progress, by port-qualified client id
	rec        *record                       // the server's last good start (First.Record); nil when none
	probing    bool                          // the relay asks the child its era (probeEra)
	inputEnded bool                          // the stdio client's input ended (Relay.inputEnded)
	moved      chan struct{}                 // closed when held messages were dispatched (movedCh)
	// baseline is the tools of the first child that listed them: what a
	// tool diff is against for a client that never listed tools.
	baseline  []toolInfo
	haveTools bool
}

// junkLog logs the lines a child writes on stdout that are not JSON-RPC:
// the first at warn level, the others at debug level on the child's
// logger.
type junkLog struct {
	child  *slog.Logger
	warned bool
}

// shell is what the switchboard asks of its owner.
type shell interface {
	// respawn starts a fresh child in the background.
	respawn()
	// startRecompile runs the recompile tool for port p's request env in
	// the background; sw.mu is held.
	startRecompile(p *Port, env wire.Envelope)
	// recompileInBackground rebuilds and restarts, for why.
	recompileInBackground(why string)
	// firstServerLate: the first server is not up after grace.
	firstServerLate(grace time.Duration)
	// probeEra asks child c whether it speaks 2026-07-28.
	probeEra(c *child)
}

func newSwitchboard(cfg *Config, log, childLog *slog.Logger, sh shell) *switchboard {
	sw := &switchboard{
		cfg:        cfg,
		log:        log,
		junk:       junkLog{child: childLog},
		shell:      sh,
		health:     health{crashes: crashPolicy{restart: cfg.OnCrash == "restart"}},
		held:       holdQueue{maxLen: cfg.Queue.Size, maxBytes: cfg.Queue.Bytes, added: make(chan struct{}, 1)},
		sess:       newSession(),
		ids:        newRouter(),
		tools:      newToolset(cfg),
		recompiles: map[string]context.CancelFunc{},
	}
	if log.Enabled(context.Background(), slog.LevelDebug) {
		sw.trace = &msgTrace{log: log, via: "stdio"}
		if cfg.Child.Link != nil {
			sw.trace.via = cfg.Child.Link().Kind()
		}
	}
	return sw
}

// movedCh is closed the next time held messages are dispatched (the
// client's handshake answered, a restart done). sw.mu is held.
func (r *switchboard) movedCh() chan struct{} {
	if r.moved == nil {
		r.moved = make(chan struct{})
	}
	return r.moved
}

// eachPort calls f for every port that is served. sw.mu is held.
func (r *switchboard) eachPort(f func(p *Port)) {
	for _, p := range r.ports {
		if !p.handedOff && !p.closed {
			f(p)
		}
	}
}

// handOff takes port p off the relay for its Handoff: first, then what p
// has held; answered are the ids of requests among them the client has
// its answer to. sw.mu is held.
func (r *switchboard) handOff(p *Port, first [][]byte, answered [][]byte) {
	msgs := first
	for _, m := range r.held.takePort(p) {
		msgs = append(msgs, m.msg)
	}
	p.handedOff = true
	p.initID = nil
	p.hand = newOutbox(func(it item) error {
		p.opts.Handoff(it.msg, it.rel != nil)
		return nil
	}, nil)
	go p.hand.run(nil)
	for _, m := range msgs {
		var done []byte
		if env, err := wire.Peek(m); err == nil && env.ID != nil && slices.ContainsFunc(answered, func(id []byte) bool { return bytes.Equal(id, env.ID) }) {
			done = env.ID // marks it answered
		}
		p.hand.send(m, done)
	}
	r.log.Info("the server speaks the other protocol era: the session is handed to the era bridge")
}

// bridged forgets the session the clients handed to the bridge opened
// with the child, and starts a fresh child for the bridge's own. sw.mu is
// held.
func (r *switchboard) bridged() {
	r.sess = newSession()
	if r.state != stateClosed {
		r.state = stateRestarting
		go r.shell.respawn()
	}
}

// msgTrace writes the debug line for each message read from a peer.
type msgTrace struct {
	log *slog.Logger
	via string // the child's Link's kind: the server hop's transport
}

// msg writes the line for one message: where from (the hop; for the
// server's, its transport), its method (or, for a response, its id), its
// size and, for a response to a client request, how long the server took.
func (r *msgTrace) msg(from string, env *wire.Envelope, size int, p *pending) {
	args := []any{"bytes", size}
	if from == "server" {
		args = append(args, "via", r.via)
	}
	switch {
	case env.Method != "" && env.ID != nil:
		args = append(args, "method", env.Method, "id", string(env.ID))
	case env.Method != "":
		args = append(args, "method", env.Method)
	default:
		args = append(args, "id", string(env.ID))
		if p != nil && !p.sent.IsZero() {
			args = append(args, "for", p.method, "latency", result.Dur(time.Since(p.sent)))
		}
	}
	r.log.Debug("from "+from, args...)
}
