package relay

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/mcpflow/mcpflow/internal/wire"
)

// switchboard routes messages between the client and the current child:
// a message in (from either peer) becomes messages out (to either peer,
// through the outboxes) and changes to the routing state. Its mutex guards
// that state and the parts that hold it (router, hold queue, session,
// toolset, crash policy); none of them has a lock of its own. It never
// blocks on a peer: writes only queue. It starts no process and runs no
// goroutine of its own; what needs one goes to the shell (the Relay).
type switchboard struct {
	cfg     *Config
	log     *slog.Logger
	junk    junkLog
	trace   *msgTrace // nil unless the logger takes debug lines: one per message
	shell   shell
	out     *outbox       // to the client
	batches *wire.Batches // client batches; own lock

	stats relayStats // for Stats; own lock

	mu         sync.Mutex
	state      state
	child      *child // the current child; nil when none
	gen        int    // the last generation started
	health     health
	ids        *router
	held       holdQueue
	sess       session
	view       clientView
	tools      *toolset
	recompiles map[string]context.CancelFunc // recompile calls in progress, by client id
	rec        *record                       // the server's last good start (First.Record); nil when none
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
	// startRecompile runs the recompile tool for the request env in the
	// background; sw.mu is held.
	startRecompile(env wire.Envelope)
	// recompileInBackground rebuilds and restarts, for why.
	recompileInBackground(why string)
	// firstServerLate: the first server is not up after grace.
	firstServerLate(grace time.Duration)
}

func newSwitchboard(cfg *Config, log, childLog *slog.Logger, sh shell) *switchboard {
	sw := &switchboard{
		cfg:        cfg,
		log:        log,
		junk:       junkLog{child: childLog},
		shell:      sh,
		out:        newOutbox(),
		health:     health{crashes: crashPolicy{restart: cfg.OnCrash == "restart"}},
		held:       holdQueue{maxLen: cfg.Queue.Size, maxBytes: cfg.Queue.Bytes},
		sess:       newSession(),
		view:       newClientView(),
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
	sw.batches = wire.NewBatches(func(msg []byte) { sw.out.send(msg) })
	return sw
}

// reply sends a response to the client, or adds it to its batch. sw.mu
// is held.
func (r *switchboard) reply(msg []byte) {
	if r.sess.initID != nil {
		if e, err := wire.Peek(msg); err == nil && bytes.Equal(e.ID, r.sess.initID) {
			// The client's initialize is answered: what it held back goes on.
			r.sess.initID, r.sess.initDecided = nil, true
			defer r.flushQueue()
		}
	}
	if !r.batches.Collect(msg) {
		r.out.send(msg)
	}
}

// handOff gives the session to Config.Handoff: first, then what is held;
// answered are the ids of requests among them the client has its answer
// to. sw.mu is held.
func (r *switchboard) handOff(first, answered [][]byte) {
	msgs := first
	for _, m := range r.held.take() {
		msgs = append(msgs, m.msg)
	}
	r.sess.handedOff = true
	r.sess.initID = nil
	r.out.close() // what was sent before goes out; nothing after
	r.log.Info("the server speaks the other protocol era: the session is handed to the era bridge")
	r.cfg.Handoff(msgs, answered)
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
