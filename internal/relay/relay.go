package relay

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// Config is what the relay needs; zero values have defaults (not Command).
type Config struct {
	Child            Child         // how to start and stop the child
	Tools            Tools         // mcpflow's own tools
	Queue            Queue         // what a session may hold while its child cannot take it
	First            First         // how a session is served before the first server is up
	MaxMessage       int           // largest message in either direction; default 64 MiB
	Notices          bool          // add notes on failed auto-builds and crashes to the next tools/call result
	ServerSuffix     string        // appended to serverInfo.name and version
	MaxChildren      int           // bounds a stdio server's processes (one per session); default 16
	HandshakeTimeout time.Duration // bounds a child's answer to a handshake; default 30s
	Drain            time.Duration // how long calls on a child being replaced may go on; 0 = none
	OnCrash          string        // "restart" (with backoff; default) or "wait" (for a build)
	// OnEvent is told what happens to the children, in order, from a
	// goroutine holding no relay lock.
	OnEvent func(Event)
	// Traffic, when set, sees every message between a session and its
	// child (hop "server", toServer: the direction, gen: the child's), under
	// no relay lock; it must not keep msg (nor write to it).
	Traffic func(hop string, toServer bool, gen int, msg []byte)
	// Bridge serves a client whose era the child does not speak, if set.
	Bridge       func(upstream wire.Opener, c wire.Client) wire.Session
	Recompiler   Recompiler   // runs build + Restart for the recompile tool; nil = Restart only
	Logger       *slog.Logger // nil = discard
	ServerLogger *slog.Logger // the children's stderr lines; nil = Logger.WithGroup("server")
	Version      string       // mcpflow's version, for its own serverInfo
}

// Tools are mcpflow's own tools, added to the child's.
type Tools struct {
	Recompile string // name of the rebuild tool; default "recompile"
	Call      string // name of the optional call-forwarding tool; "" = off
	None      bool   // list and serve none (the mux lists its own)
	// Rebuild is how the texts the agent reads name what rebuilds the
	// server ("reload_server {\"name\": \"x\"}" in the mux); default Recompile.
	Rebuild string
}

// Child says how to start and stop the child.
type Child struct {
	Command        []string          // argv, or Command[0] as a script when Shell
	Shell          bool              // run Command[0] through the system's shell
	Dir            string            // working directory
	Env            []string          // base environment; nil = os.Environ()
	ExtraEnv       map[string]string // added to Env (run.env); the agent's overrides on top
	EnvOverridable []string          // the keys the agent may set (recompile's env argument)
	StopTimeout    time.Duration     // the grace after closing its stdin, and after SIGTERM; default 2s
	Setting        string            // where the command is set, for the agent; default "run.command in mcpflow.toml"
	RestartMarker  string            // when set, a stderr line by which the child asks for a rebuild and restart
	// HTTP, when set, makes the child a server of Streamable HTTP: one
	// process serves every session, each over an HTTP session of its own.
	// nil: a stdio server, a process per session.
	HTTP HTTPChild
}

// Queue bounds what a session holds while its child cannot take it.
type Queue struct {
	Size    int           // messages; default 256
	Bytes   int           // bytes; default 32 MiB
	Timeout time.Duration // how long one may wait; default 30s
}

// Recompiler rebuilds the server and restarts it through Restart.
type Recompiler interface {
	Recompile(ctx context.Context, progress func(msg string)) result.Build
}

// The defaults of Config's zero values, the config file's too.
const (
	DefaultStopTimeout  = 2 * time.Second
	DefaultTool         = "recompile"
	DefaultMaxMessage   = wire.DefaultMaxMessage
	DefaultQueueSize    = 256
	DefaultQueueBytes   = 32 << 20
	DefaultQueueTimeout = 30 * time.Second
	DefaultOnCrash      = "restart"
	DefaultHandshake    = 30 * time.Second
	DefaultMaxChildren  = 16
)

// Relay is the engine of one server (see the package documentation).
type Relay struct {
	cfg    Config
	log    *slog.Logger
	events *eventQueue
	ctx    context.Context // canceled at shutdown; bounds the relay's own calls
	cancel context.CancelFunc
	wg     sync.WaitGroup // every child until reaped, every goroutine

	restarts sync.Mutex   // one restart at a time
	gen      atomic.Int64 // the last process started: each has a generation of its own
	conns    atomic.Int64 // a sequence of the sessions' connections to their children

	// mu guards what follows; no session's lock is taken under it.
	mu       sync.Mutex
	health   health
	sessions []*Session // open, oldest first
	server   *child     // an HTTP server's process, shared; nil for stdio

	// Each with a lock of its own, a leaf.
	env   overrides  // the agent's accepted env overrides
	rec   records    // the record of the server's last good start
	known knownTools // what the server lists
	stats counters

	ownTools ownTools // mcpflow's tools, spliced into tools/list
	tracing  bool     // the logger takes debug lines: one per message (trace)
}

// New returns a relay for cfg. Nothing runs until the first Restart.
func New(cfg Config) *Relay {
	def(&cfg.Child.StopTimeout, DefaultStopTimeout)
	def(&cfg.Queue.Timeout, DefaultQueueTimeout)
	def(&cfg.HandshakeTimeout, DefaultHandshake)
	def(&cfg.MaxMessage, DefaultMaxMessage)
	def(&cfg.Queue.Size, DefaultQueueSize)
	def(&cfg.Queue.Bytes, DefaultQueueBytes)
	def(&cfg.MaxChildren, DefaultMaxChildren)
	def(&cfg.OnCrash, DefaultOnCrash)
	def(&cfg.Tools.Recompile, DefaultTool)
	def(&cfg.Tools.Rebuild, cfg.Tools.Recompile)
	def(&cfg.Child.Setting, "run.command in mcpflow.toml")
	if cfg.Child.Env == nil {
		cfg.Child.Env = os.Environ()
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.ServerLogger = cmp.Or(cfg.ServerLogger, cfg.Logger.WithGroup("server"))
	r := &Relay{
		cfg:    cfg,
		log:    cfg.Logger,
		events: &eventQueue{fn: cfg.OnEvent},
		health: health{crashes: crashPolicy{restart: cfg.OnCrash == "restart"}},
		env:    overrides{allowed: cfg.Child.EnvOverridable, set: map[string]string{}},
		rec:    records{path: cfg.First.Record, key: cfg.First.Key, log: cfg.Logger},
	}
	if cfg.First.Record != "" {
		r.rec.stamp(cfg.First.Sources)
		r.rec.rec = loadRecord(cfg.First.Record, cfg.First.Key, r.rec.sources, cfg.Logger)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.events.tap = r.stats.event
	if !cfg.Tools.None {
		r.ownTools = toolDefs(&cfg)
	}
	r.tracing = r.log.Enabled(context.Background(), slog.LevelDebug)
	return r
}

// def sets *p to v when it is zero (or less).
func def[T cmp.Ordered](p *T, v T) {
	var zero T
	if *p <= zero {
		*p = v
	}
}

// ErrClosed: the relay was closed (mcpflow is stopping) before the restart ended.
var ErrClosed = errors.New("relay is shut down")

// Open opens a client's session (a wire.Opener) with a child of its own.
func (r *Relay) Open(c wire.Client) wire.Session {
	s := newSession(r, c)
	r.mu.Lock()
	h := r.health
	if h.state != stateClosed {
		r.sessions = append(r.sessions, s)
	}
	r.mu.Unlock()
	switch h.state {
	case stateClosed:
		s.Close()
	case stateUp:
		r.goConnect(s)
	case stateDown:
		s.goDown(h.describe())
	}
	return s
}

// shutdownStep bounds each step of stopping a child at shutdown.
const shutdownStep = time.Second

// Close stops everything the relay started: every session (its requests
// still waiting are its front's to answer), every child with its process
// group, every goroutine. It may be called more than once.
func (r *Relay) Close() {
	r.mu.Lock()
	if r.health.state == stateClosed {
		r.mu.Unlock()
		r.wg.Wait()
		return
	}
	r.health.state = stateClosed
	sessions := slices.Clone(r.sessions)
	r.mu.Unlock()
	r.cancel()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(s.Close)
	}
	wg.Wait()
	r.restarts.Lock() // wait out a restart in progress
	r.mu.Lock()
	srv := r.server
	r.server = nil
	r.mu.Unlock()
	r.restarts.Unlock()
	if srv != nil {
		srv.stop(min(r.cfg.Child.StopTimeout, shutdownStep), context.Background(), nil)
	}
	r.wg.Wait()
	r.events.close()
}

// SetRecompiler sets what the recompile tool calls.
func (r *Relay) SetRecompiler(rc Recompiler) { r.cfg.Recompiler = rc }

// InputEnded says the stdio client's input ended: its requests wait for
// the server (within Queue.Timeout), not answered for one still starting.
func (r *Relay) InputEnded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.health.ended = true
}

// HasRecord reports whether a record of the last good start answers at once.
func (r *Relay) HasRecord() bool { rec := r.rec.current(); return rec != nil && !rec.stale }

func (r *Relay) now() health {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.health
}

func (r *Relay) openSessions() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sessions)
}

// remove forgets a closed session; one that waited for a slot gets it.
func (r *Relay) remove(s *Session) {
	r.mu.Lock()
	r.sessions = slices.DeleteFunc(r.sessions, func(q *Session) bool { return q == s })
	var next *Session
	if i := slices.IndexFunc(r.sessions, func(q *Session) bool { return q.waiting.Load() }); i >= 0 && r.health.state == stateUp && r.cfg.Child.HTTP == nil {
		next = r.sessions[i]
	}
	r.mu.Unlock()
	if next != nil {
		r.goConnect(next)
	}
}

// goConnect starts session s's child in the background; a stdio server's
// session past the first MaxChildren (bridged ones aside) is answered
// alone until one ends (remove).
func (r *Relay) goConnect(s *Session) {
	r.wg.Go(func() {
		r.mu.Lock()
		srv, sessions := r.server, slices.Clone(r.sessions)
		r.mu.Unlock()
		if r.cfg.Child.HTTP == nil {
			i, n := slices.Index(sessions, s), 0
			for _, q := range sessions[:max(i, 0)] {
				q.mu.Lock()
				if q.bridge == nil {
					n++
				}
				q.mu.Unlock()
			}
			if i < 0 || n >= r.cfg.MaxChildren {
				s.goDown(texts.TooManyChildren(r.cfg.MaxChildren))
				s.waiting.Store(true)
				return
			}
		}
		s.waiting.Store(false)
		if _, err := (&reconnect{s: s, ctx: r.ctx}).run(srv); err != nil && !errors.Is(err, ErrClosed) {
			r.log.Warn("a client's server did not start", "err", firstLine(err.Error()))
		}
	})
}

// firstServerLate: the first build outlasted the grace a session's first
// request armed; the session is answered alone until it is done (unless
// the client's input ended).
func (r *Relay) firstServerLate(s *Session, grace time.Duration) {
	r.mu.Lock()
	starting, ended := r.health.state == stateStarting, r.health.ended
	r.health.building = r.health.building || starting && !ended
	r.mu.Unlock()
	switch {
	case !starting:
	case ended:
		r.log.Info("the first build is still running; the client's input ended, so its requests wait for the server", "after", result.Dur(grace))
	case s.answerLate():
		r.log.Info("the first build is still running: answered from the record of an earlier start, of other sources; list_changed follows the start", "after", result.Dur(grace))
	default:
		r.log.Info("the first build is still running: answering the client until the server is up", "after", result.Dur(grace))
		s.goDown(texts.Building(r.cfg.Tools.Rebuild, grace))
	}
}

// childLine copies a process's log lines to the server's logger, and
// rebuilds and restarts on Child.RestartMarker (c: nil for an HTTP
// server's process).
func (r *Relay) childLine(c *conn) func(string) {
	return func(line string) {
		r.cfg.ServerLogger.Info(line)
		if r.cfg.Child.RestartMarker == "" || line != r.cfg.Child.RestartMarker || c != nil && c.stopping.Load() {
			return
		}
		r.log.Info("the server asked for a restart (relay.restart_marker)")
		r.wg.Go(func() {
			o := r.runRecompile(r.ctx, nil)
			if text, isErr := texts.Outcome(o, r.cfg.Tools.Rebuild, r.now().state == stateUp); isErr {
				r.log.Error("rebuild failed", "trigger", "restart marker", "result", firstLine(text))
			}
		})
	}
}

// later runs f after d, unless the relay shuts down first.
func (r *Relay) later(d time.Duration, f func()) {
	r.wg.Go(func() {
		select {
		case <-r.ctx.Done():
		case <-time.After(d):
			f()
		}
	})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// trace writes the debug line for one message read from a peer, when
// tracing: the hop (the server's with its transport), method and id,
// size, and for an answer to a client request, the server's latency.
func (r *Relay) trace(from string, env *wire.Envelope, size int, p *pending) {
	if !r.tracing {
		return
	}
	args := []any{"bytes", size}
	if from == "server" {
		via := "stdio"
		if r.cfg.Child.HTTP != nil {
			via = "http"
		}
		args = append(args, "via", via)
	}
	if env.Method != "" {
		args = append(args, "method", env.Method)
	}
	if env.ID != nil {
		args = append(args, "id", string(env.ID))
	}
	if p != nil && env.Method == "" && !p.sent.IsZero() {
		args = append(args, "for", p.method, "latency", result.Dur(time.Since(p.sent)))
	}
	r.log.Debug("from "+from, args...)
}
