package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/mcpflow/mcpflow/internal/wire"
)

// Config is what the relay needs. The zero value of every field but
// Child.Command has a usable default.
type Config struct {
	Child Child // how to start and stop the child

	// EnvOverridable lists the environment keys the agent may set through
	// the recompile tool's env argument.
	EnvOverridable []string

	Tool       string // name of the added tool; default "recompile"
	CallTool   string // name of the optional call-forwarding tool; "" = off
	MaxMessage int    // largest message in either direction; default 64 MiB
	Notices    bool   // add notes on failed auto-builds and crashes to the next tools/call result

	ServerSuffix string // appended to serverInfo.name and version

	Queue Queue // what may be held while no child can take it

	// HandshakeTimeout bounds a child's answer to a handshake (the
	// client's initialize or server/discover, the relay's replay): a child
	// that does not answer in time is stopped and reported, its stderr
	// shown (a server that serves HTTP by default, or one given the wrong
	// arguments, waits forever). Default 30s.
	HandshakeTimeout time.Duration

	// Drain is how long calls already running on a child that a restart
	// replaces may go on before it is stopped; meanwhile new messages wait
	// in the hold queue for the new child. What still runs when Drain is
	// over gets the restart error. 0 = stop the old child at once.
	Drain time.Duration

	// OnCrash is "restart" (default: restart with backoff, stop on a crash
	// loop) or "wait" (stay down until a build or recompile).
	OnCrash string
	// RestartMarker, when set, is a stderr line by which the child asks
	// for a rebuild and restart.
	RestartMarker string

	// First says how the client is served before the first server is up:
	// how long its messages wait for it, and the record of the server's
	// last good start that answers them at once.
	First First

	// OnEvent, when set, is told what happens to the child (see Event), in
	// order, from a goroutine of the relay's that holds no relay lock. A
	// slow callback delays later events, never the relay.
	OnEvent func(Event)
	// Traffic, when set, is called with every message on both hops, as
	// read from a peer and as sent to one, mcpflow's own messages included
	// (so a forwarded message is seen once per hop): hop is "client" (the
	// client and mcpflow) or "server" (mcpflow and the child), toServer
	// the direction, gen the generation of the child the message went to
	// or came from (0 if none). It is called on the relay's hot path, at
	// times with a relay lock held: it must return quickly, call nothing of
	// the relay's, and not keep msg (nor write to it) after it returns.
	Traffic func(hop string, toServer bool, gen int, msg []byte)

	// Handoff, when set, lets the embedder serve a session whose child
	// speaks the other protocol era another way (cmd's era bridge): a
	// child that refuses the client's first initialize (forwarded to it,
	// or replayed after the relay answered it), or one that does not speak
	// 2026-07-28 when the relay answered the client's server/discover
	// itself. The client's messages after its first initialize are held
	// until it is answered. The relay then sends nothing more to the client
	// and calls Handoff, with its lock held, with the messages that opened
	// the session (the initialize, the listen streams) and those held;
	// answered are the ids of the requests among them the client has its
	// answers to already. Then it calls it with every client message it
	// reads, until Serve returns. The embedder ends Serve (cancels its
	// context) and serves the messages.
	Handoff func(msgs, answered [][]byte)

	Recompiler Recompiler   // runs build + Restart for the recompile tool; nil = Restart only
	Logger     *slog.Logger // nil = discard
	// ServerLogger gets the child's stderr lines; nil = Logger.WithGroup("server").
	ServerLogger *slog.Logger
	Version      string // mcpflow's version, for its own serverInfo
}

// Child says how to start the child and how to stop it.
type Child struct {
	Command []string // argv, or Command[0] as a script when Shell
	Shell   bool     // run Command[0] with sh -c
	Dir     string   // working directory
	Env     []string // base environment; nil = os.Environ()
	// ExtraEnv is added to Env (run.env); the agent's accepted overrides
	// (Config.EnvOverridable) are added on top of both.
	ExtraEnv map[string]string
	// StopTimeout is the grace after closing its stdin, and after
	// SIGTERM; default 2s.
	StopTimeout time.Duration
	// Setting says where the command is set, for the messages that tell
	// the agent to fix it; default "run.command in mcpflow.toml".
	Setting string
	// Link, when set, makes the Link of each new child: how the relay
	// exchanges messages with it (internal/httpmcp's, for a server that
	// serves Streamable HTTP). nil = the child's stdin and stdout.
	Link func() Link
}

// Queue bounds the client messages held while no child can take them (the
// first build, a restart).
type Queue struct {
	Size    int           // messages; default 256
	Bytes   int           // bytes; default 32 MiB
	Timeout time.Duration // how long one may wait; default 30s
}

// Recompiler rebuilds the server and restarts it through Restart. The
// builder satisfies it.
type Recompiler interface {
	Recompile(ctx context.Context, progress func(msg string)) result.Build
}

type state int

const (
	stateStarting   state = iota // first build running: hold messages
	stateUp                      // a child serves
	stateRestarting              // swapping children: hold messages
	stateDown                    // no child (build failed, crash): answer alone
	stateClosed
)

// Relay carries JSON-RPC between one client and a succession of child
// servers. See the package documentation for its guarantees. It owns the
// lifecycle (Serve, Restart, the children and the goroutines); the routing
// of messages and its state are the switchboard's.
type Relay struct {
	cfg      Config
	log      *slog.Logger
	childLog *slog.Logger // the child's stderr
	spec     childSpec
	events   *eventQueue
	curGen   atomic.Int64 // the current child's generation, for Traffic without a lock
	sw       *switchboard

	ctx    context.Context // canceled at shutdown; bounds the relay's own calls
	cancel context.CancelFunc

	restarts restarts
	children sync.WaitGroup // every child until reaped
}

// restarts serializes restarts; its mutex also guards the tool baseline
// a restart's diff is made against when the client never listed tools.
type restarts struct {
	mu        sync.Mutex
	baseline  []toolInfo // the tools when the client's session began
	haveTools bool       // baseline is a real list
}

// The defaults of Config's zero values. The config file's defaults are
// these same constants.
const (
	DefaultStopTimeout  = 2 * time.Second
	DefaultTool         = "recompile"
	DefaultMaxMessage   = wire.DefaultMaxMessage
	DefaultQueueSize    = 256
	DefaultQueueBytes   = 32 << 20
	DefaultQueueTimeout = 30 * time.Second
	DefaultOnCrash      = "restart"
	DefaultStartupGrace = 0 // as long as the client waits: ClientWait
	DefaultHandshake    = 30 * time.Second
)

// New returns a relay for cfg. Nothing runs until Serve.
func New(cfg Config) *Relay {
	if cfg.Child.StopTimeout <= 0 {
		cfg.Child.StopTimeout = DefaultStopTimeout
	}
	if cfg.Tool == "" {
		cfg.Tool = DefaultTool
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = DefaultMaxMessage
	}
	if cfg.Queue.Size <= 0 {
		cfg.Queue.Size = DefaultQueueSize
	}
	if cfg.Queue.Bytes <= 0 {
		cfg.Queue.Bytes = DefaultQueueBytes
	}
	if cfg.Queue.Timeout <= 0 {
		cfg.Queue.Timeout = DefaultQueueTimeout
	}
	if cfg.OnCrash == "" {
		cfg.OnCrash = DefaultOnCrash
	}
	if cfg.Child.Setting == "" {
		cfg.Child.Setting = "run.command in mcpflow.toml"
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshake
	}
	if cfg.Child.Env == nil {
		cfg.Child.Env = os.Environ()
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ServerLogger == nil {
		cfg.ServerLogger = logger.WithGroup("server")
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{
		cfg:      cfg,
		log:      logger,
		childLog: cfg.ServerLogger,
		ctx:      ctx,
		cancel:   cancel,
		events:   newEventQueue(cfg.OnEvent),
	}
	r.sw = newSwitchboard(&r.cfg, logger, r.childLog, r)
	r.sw.rec = loadRecord(cfg.First.Record, cfg.First.Key)
	if cfg.Traffic != nil {
		r.sw.out.sent = func(msg []byte) { cfg.Traffic("client", false, int(r.curGen.Load()), msg) }
	}
	r.events.tap = r.sw.stats.event
	r.spec = childSpec{argv: cfg.Child.Command, shell: cfg.Child.Shell, dir: cfg.Child.Dir, env: cfg.Child.Env, maxMsg: cfg.MaxMessage, grace: cfg.Child.StopTimeout, traffic: cfg.Traffic, link: cfg.Child.Link}
	return r
}

var errClosed = errors.New("relay is shut down")

// Serve relays between the client, whose messages come from in (a
// wire.Reader of its stdin, as a rule, with Config.MaxMessage as its
// limit) and whose answers go to out, and the child, until in ends or ctx
// is canceled. It then stops the child (and its whole process group) and
// returns nil. Serve starts no child by itself: the first Restart
// (normally the builder's startup cycle) does; until then, client messages
// wait in the queue.
func (r *Relay) Serve(ctx context.Context, in wire.Stream, out io.Writer) error {
	if f, ok := out.(*os.File); ok {
		growPipe(f)
	}
	go r.sw.out.run(out, nil)
	readErr := make(chan error, 1)
	go func() {
		log := r.log.With("from", "client")
		for {
			msg, err := in.Next()
			if answer, refused := wire.Refusal(err, log); refused {
				if answer != nil {
					r.sw.reply(answer)
				}
				continue
			}
			if err != nil {
				readErr <- err
				return
			}
			if r.cfg.Traffic != nil {
				r.cfg.Traffic("client", true, int(r.curGen.Load()), msg)
			}
			r.sw.fromClient(msg)
		}
	}()
	go r.expireQueue()
	var err error
	select {
	case <-ctx.Done():
		r.log.Info("shutting down", "reason", "signal")
	case err = <-readErr:
		if errors.Is(err, io.EOF) {
			err = nil
			// A one-shot client writes its requests and closes its input
			// before it reads: it gets its answers first.
			r.awaitAnswers(ctx, inputGrace)
			r.log.Info("shutting down", "reason", "client closed stdin")
		} else {
			r.log.Error("reading from client", "err", err)
		}
	}
	r.shutdown()
	return err
}

// inputGrace is how long the requests read before the client's input ended
// may take to be answered before the relay shuts down: clients send
// SIGTERM soon after closing stdin, and mcpflow is gone within 5 s.
const inputGrace = 2 * time.Second

// shutdownStep bounds each step of stopping the child at shutdown.
const shutdownStep = time.Second

// awaitAnswers waits, at most d or until ctx ends, until every request the
// client sent has its answer.
func (r *Relay) awaitAnswers(ctx context.Context, d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		sw := r.sw
		sw.mu.Lock()
		n := len(sw.recompiles)
		for _, p := range sw.ids.pending {
			if p.kind != kindListen {
				n++
			}
		}
		for _, m := range sw.held.q {
			if m.env.IsRequest() {
				n++
			}
		}
		sw.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			r.log.Warn("the client's input ended; requests still unanswered get an error", "requests", n)
			return
		case <-ctx.Done():
			return
		}
	}
}

// shutdown stops everything the relay started. Every request of the
// client's still waiting (held, in flight, a recompile) is answered with
// errTextShuttingDown first.
func (r *Relay) shutdown() {
	r.sw.mu.Lock()
	r.sw.state = stateClosed
	for key, cancel := range r.sw.recompiles {
		cancel()
		delete(r.sw.recompiles, key)
		r.sw.reply(wire.ErrorResponse([]byte(key), wire.CodeServerDown, errTextShuttingDown, nil))
	}
	for _, m := range r.sw.held.take() {
		if m.env.IsRequest() {
			r.sw.reply(wire.ErrorResponse(m.env.ID, wire.CodeServerDown, errTextShuttingDown, nil))
		}
	}
	for key, p := range r.sw.ids.pending {
		if p.kind != kindListen {
			r.sw.ids.forget(key)
			r.sw.reply(wire.ErrorResponse(p.replyID(key), wire.CodeServerDown, errTextShuttingDown, nil))
		}
	}
	r.sw.mu.Unlock()
	r.cancel()
	r.restarts.mu.Lock() // wait out a restart in progress
	r.sw.mu.Lock()
	c := r.sw.child
	r.sw.child = nil
	r.sw.mu.Unlock()
	r.restarts.mu.Unlock()
	if c != nil {
		// mcpflow is on its way out (within 5 s of the client's leaving):
		// each step of the stop waits at most shutdownStep.
		c.stop(min(r.cfg.Child.StopTimeout, shutdownStep), context.Background())
	}
	r.children.Wait()
	r.events.close()
	r.sw.out.close()
	select {
	case <-r.sw.out.done:
	case <-time.After(time.Second):
	}
}

// SetRecompiler sets what the recompile tool calls. The builder needs the
// relay (as its Restarter) and the relay needs the builder, so one of them
// is set after both exist. Call it before Serve.
func (r *Relay) SetRecompiler(rc Recompiler) { r.cfg.Recompiler = rc }

// firstServerLate stops holding client messages when the first server is
// not up after the grace the client's first request armed (see First): the
// relay answers alone until it is, and the first good build then replays
// the session as after a crash.
func (r *Relay) firstServerLate(grace time.Duration) {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	if r.sw.state != stateStarting {
		return
	}
	r.log.Info("the first build is still running: answering the client until the server is up", "after", result.Dur(grace))
	r.sw.health.building = true
	r.sw.down(msgBuilding(r.cfg.Tool), true)
}
