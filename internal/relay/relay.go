package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/texts"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
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
	// NoOwnTools: tools/list lists the child's tools only (the mux, whose
	// reload_server rebuilds the server, lists its own); Tool and CallTool
	// are then not served either.
	NoOwnTools bool
	// Rebuild is how the texts the agent reads name what rebuilds the
	// server ("reload_server {\"name\": \"x\"}" in the mux); default Tool.
	Rebuild string

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

	// Bridge, when set, serves a client whose era the child does not speak
	// (see PortOptions.Handoff): Open's sessions go to a session of the
	// bridge's (internal/protocol/bridge: a translator that is a client of the
	// relay in the child's era) from then on.
	Bridge func(upstream wire.Opener, c wire.Client) wire.Session

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

// Relay carries JSON-RPC between its clients (ports) and a succession of
// child servers. See the package documentation for its guarantees. It owns
// the lifecycle (Restart, Close, the children and the goroutines); the
// routing of messages and its state are the switchboard's.
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

	restarts  sync.Mutex     // one restart at a time
	children  sync.WaitGroup // every child until reaped
	closeOnce sync.Once
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
	if cfg.Rebuild == "" {
		cfg.Rebuild = cfg.Tool
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
	r.sw.rec = loadRecord(cfg.First.Record, cfg.First.Key, logger)
	r.events.tap = r.sw.stats.event
	go r.expireQueue()
	r.spec = childSpec{argv: cfg.Child.Command, shell: cfg.Child.Shell, dir: cfg.Child.Dir, env: cfg.Child.Env, maxMsg: cfg.MaxMessage, grace: cfg.Child.StopTimeout, traffic: cfg.Traffic, link: cfg.Child.Link}
	return r
}

var errClosed = errors.New("relay is shut down")

// rebuild is how the agent is told to rebuild the server.
func (c *Config) rebuild() string { return c.Rebuild }

// Serve is the relay for one client on a byte stream (mcpflow watch on
// its stdin and stdout): it serves the client through wire.Serve, whose
// messages come from in (a wire.Reader, as a rule, with
// Config.MaxMessage as its limit) and whose answers go to out, until in
// ends or ctx is canceled; then it closes the relay (Close). Serve starts
// no child by itself: the first Restart (normally the builder's startup
// cycle) does; until then, client messages wait in the queue.
func (r *Relay) Serve(ctx context.Context, in wire.Stream, out io.Writer) error {
	if f, ok := out.(*os.File); ok {
		growPipe(f)
	}
	// The requests read before the client's input ended wait for their
	// answers as held requests do (a one-shot pipe on a cold build).
	o := wire.ServeOptions{Log: r.log.With("from", "client"), Grace: r.cfg.Queue.Timeout, InputEnded: r.InputEnded}
	if r.cfg.Traffic != nil {
		o.Traffic = func(toServer bool, msg []byte) { r.cfg.Traffic("client", toServer, int(r.curGen.Load()), msg) }
	}
	err := wire.Serve(ctx, in, out, openerFunc(r.openStdio), o)
	if ctx.Err() != nil {
		r.log.Info("shutting down", "reason", "signal")
	} else if err == nil {
		r.log.Info("shutting down", "reason", "client closed stdin")
	} else {
		r.log.Error("reading from client", "err", err)
	}
	r.Close()
	return err
}

// Stdio is the Opener of the one client on mcpflow's stdin and stdout
// (Serve's): its ids reach the child as it wrote them.
func (r *Relay) Stdio() wire.Opener { return openerFunc(r.openStdio) }

func (r *Relay) openStdio(c wire.Client) wire.Session {
	return r.Connect(c, PortOptions{KeepIDs: true})
}

type openerFunc func(c wire.Client) wire.Session

func (f openerFunc) Open(c wire.Client) wire.Session { return f(c) }

// shutdownStep bounds each step of stopping the child at shutdown.
const shutdownStep = time.Second

// Close stops everything the relay started: every port is closed (its
// requests still waiting are its front's to answer), the child stopped
// with its process group, every goroutine ended. It is safe to call more
// than once.
func (r *Relay) Close() {
	r.closeOnce.Do(r.shutdown)
}

func (r *Relay) shutdown() {
	r.sw.mu.Lock()
	r.sw.state = stateClosed
	for key, cancel := range r.sw.recompiles {
		cancel()
		delete(r.sw.recompiles, key)
	}
	ports := slices.Clone(r.sw.ports)
	r.sw.mu.Unlock()
	for _, p := range ports {
		p.Close()
	}
	r.cancel()
	r.restarts.Lock() // wait out a restart in progress
	r.sw.mu.Lock()
	c := r.sw.child
	r.sw.child = nil
	r.sw.mu.Unlock()
	r.restarts.Unlock()
	if c != nil {
		// mcpflow is on its way out (within 5 s of the client's leaving):
		// each step of the stop waits at most shutdownStep.
		c.stop(min(r.cfg.Child.StopTimeout, shutdownStep), context.Background())
	}
	r.children.Wait()
	r.events.close()
}

// SetRecompiler sets what the recompile tool calls. The builder needs the
// relay (as its Restarter) and the relay needs the builder, so one of them
// is set after both exist. Call it before Serve.
func (r *Relay) SetRecompiler(rc Recompiler) { r.cfg.Recompiler = rc }

// InputEnded says the stdio client's input ended. It will read the answers
// but act on nothing sent later (list_changed), so its requests are held
// for the server's real answers (bounded by the queue's timeout) rather
// than answered for a server still starting.
func (r *Relay) InputEnded() {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	r.sw.inputEnded = true
}

// GrowPipe enlarges the pipe behind f, if f is one (mcpflow's stdout):
// large messages then cost fewer context switches. Best effort.
func GrowPipe(f *os.File) { growPipe(f) }

// firstServerLate stops holding client messages when the first server is
// not up after the grace the client's first request armed (see First): the
// relay answers alone until it is, and the first good build then replays
// the session as after a crash. A client whose input ended is not
// answered alone: it waits for the server (inputEnded).
func (r *Relay) firstServerLate(grace time.Duration) {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	if r.sw.state != stateStarting {
		return
	}
	if r.sw.inputEnded {
		r.log.Info("the first build is still running; the client's input ended, so its requests wait for the server", "after", result.Dur(grace))
		return
	}
	r.log.Info("the first build is still running: answering the client until the server is up", "after", result.Dur(grace))
	r.sw.health.building = true
	r.sw.down(texts.Building(r.cfg.rebuild()), true)
}
