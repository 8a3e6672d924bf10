package mux

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// Config is what a Mux needs. The zero value serves no servers, allows
// add_server without restriction and uses the relay backends.
type Config struct {
	Servers   []ServerSpec // configured servers, started by Start
	Separator string       // between server and tool names; default "__"

	DisableAddServer bool // [mux] add_server = false
	// AllowedCommands, when set, are the only programs (argv[0])
	// add_server accepts, and then no build: a bare name is a program
	// found on PATH, given by that name; an entry with a path must be
	// absolute (the config's folder resolves relative ones), and matches
	// a command that names that file from the server's working directory.
	AllowedCommands []string
	AllowedEnv      []string // with AllowedCommands: the env keys add_server accepts
	CallTool        string   // name of the tool that calls NAME__tool for clients that ignore list_changed; "" = off

	// NewBackend makes each server's backend; nil = NewRelayBackends with
	// Logger and Version (no build, no watch).
	NewBackend BackendFactory

	// StartWait is how long a client's handshake waits for the servers
	// still starting, so that the first answers hold their tools and
	// instructions; those still starting then appear through
	// list_changed. 0 = as long as the client waits for a server, by the
	// name it gives (relay.ClientWait).
	StartWait time.Duration
	// InputWait is how long, once the stdio client's input ended, its
	// requests wait for the servers still starting (it reads the answers
	// but acts on nothing sent later: no list_changed reaches it); 0 =
	// relay.DefaultQueueTimeout.
	InputWait time.Duration

	Logger       *slog.Logger // nil = discard
	Version      string       // mcpflow's version, for serverInfo
	ServerSuffix string       // appended to serverInfo's name and version (relay.server_suffix)
}

// Status values of a server.
const (
	StatusStarting    = texts.StatusStarting
	StatusRunning     = texts.StatusRunning
	StatusCrashed     = texts.StatusCrashed
	StatusBuildFailed = texts.StatusBuildFailed
)

// Mux serves several MCP servers as one. See the package documentation.
type Mux struct {
	cfg  Config
	sep  string
	log  *slog.Logger
	newB BackendFactory
	own  []ownTool // the mux's own tools, made once

	ctx    context.Context // canceled at shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup // server workers, teardowns, sessions' goroutines
	seq    atomic.Int64   // the mux's own ids

	// mu guards what follows, and each server's state. A session's own
	// lock and mu are never held together: each is taken, used and let
	// go before the other.
	mu       sync.Mutex
	closed   bool
	servers  map[string]*server
	sessions map[*session]struct{}
	ended    chan struct{} // closed once the stdio client's input ended
	endOnce  sync.Once
}

// server is one server behind the mux: its spec and backend, its state.
type server struct {
	spec ServerSpec
	b    Backend

	opMu sync.Mutex // one reload at a time

	// guarded by Mux.mu
	health
	removed  bool
	starting bool          // its first start is running
	made     chan struct{} // closed once it has a backend (or failed to)
	up       chan struct{} // closed once its first start ended, its state applied

	inbox
}

// health is what list_servers reports of a server's child. Mux.mu
// guards it.
type health struct {
	status    string
	pid       int
	gen       int // the generation of the child the status is about
	started   time.Time
	restarts  int
	crashes   int
	lastBuild *result.Build
	report    string
}

// inbox queues a server's backend events for its worker goroutine; it
// has its own lock and never blocks the sender.
type inbox struct {
	evMu     sync.Mutex
	events   []Event
	wake     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
}

func newInbox() inbox {
	return inbox{wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (s *inbox) halt() { s.stopOnce.Do(func() { close(s.stop) }) }

// New returns a mux for cfg. Nothing runs until Start.
func New(cfg Config) *Mux {
	if cfg.Separator == "" {
		cfg.Separator = DefaultSeparator
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Mux{
		cfg:      cfg,
		sep:      cfg.Separator,
		log:      logger,
		servers:  map[string]*server{},
		sessions: map[*session]struct{}{},
	}
	m.own = m.ownToolList()
	m.newB = cfg.NewBackend
	if m.newB == nil {
		m.newB = NewRelayBackends(RelayOptions{Logger: logger, Version: cfg.Version})
	}
	if m.cfg.InputWait <= 0 {
		m.cfg.InputWait = relay.DefaultQueueTimeout
	}
	m.ended = make(chan struct{})
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Start registers the configured servers (listed as starting at once)
// and starts them in the background.
func (m *Mux) Start() {
	for _, spec := range m.cfg.Servers {
		spec.Source = "config"
		s, err := m.register(spec)
		if err != nil {
			m.log.Error("server did not start", "server", spec.Name, "err", err)
			continue
		}
		go func() {
			if _, err := m.start(m.ctx, s); err != nil {
				m.log.Error("server did not start", "server", spec.Name, "err", err)
			}
		}()
	}
}

// InputEnded says the stdio client's input ended: its requests wait for
// the servers still starting up to InputWait.
func (m *Mux) InputEnded() { m.endOnce.Do(func() { close(m.ended) }) }

// Open opens a session for one client (a wire.Opener: the stdio front's
// one client, each session of the HTTP front, mcpflow call's own).
func (m *Mux) Open(c wire.Client) wire.Session {
	s := newSession(m, c)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		s.closed = true
		return s
	}
	m.sessions[s] = struct{}{}
	names := m.namesLocked()
	m.mu.Unlock()
	for _, n := range names {
		s.port(n) // its server's child starts now, warm for the client's first request
	}
	return s
}

// Close stops every server (children and their process groups) and waits
// for them; every session is closed. It is safe to call more than once.
func (m *Mux) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.wg.Wait()
		return
	}
	m.closed = true
	var all []*server
	for _, s := range m.servers {
		all = append(all, s)
	}
	m.servers = map[string]*server{}
	var sessions []*session
	for s := range m.sessions {
		sessions = append(sessions, s)
	}
	m.mu.Unlock()
	for _, s := range sessions {
		s.Close()
	}
	m.cancel()
	// All at once: a child that ignores its closed stdin costs its own
	// stop timeout, not every other server's too.
	var stops sync.WaitGroup
	for _, s := range all {
		stops.Add(1)
		go func() {
			defer stops.Done()
			m.teardown(s)
		}()
	}
	stops.Wait()
	m.wg.Wait()
}

// namesLocked lists the servers that exist, sorted. m.mu is held.
func (m *Mux) namesLocked() []string {
	names := make([]string, 0, len(m.servers))
	for n := range m.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (m *Mux) existing() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.existingLocked()
}

func (m *Mux) existingLocked() string { return texts.Existing(m.namesLocked()) }

// add registers spec and starts it (see start).
func (m *Mux) add(ctx context.Context, spec ServerSpec) (*server, result.Build, error) {
	s, err := m.register(spec)
	if err != nil {
		return nil, result.Build{}, err
	}
	res, err := m.start(ctx, s)
	return s, res, err
}

// register adds spec to the servers, starting.
func (m *Mux) register(spec ServerSpec) (*server, error) {
	if err := ValidateName(spec.Name, m.sep); err != nil {
		return nil, err
	}
	if spec.CLI == nil && (len(spec.Command) == 0 || spec.Command[0] == "") {
		return nil, fmt.Errorf("server %q: command is empty", spec.Name)
	}
	s := &server{spec: spec, health: health{status: StatusStarting}, inbox: newInbox(), starting: true, made: make(chan struct{}), up: make(chan struct{})}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("mcpflow is shutting down")
	}
	if _, ok := m.servers[spec.Name]; ok {
		return nil, fmt.Errorf("a server named %q exists already: pick another name, or remove_server it first", spec.Name)
	}
	m.servers[spec.Name] = s
	m.wg.Add(1)
	go lifecycle{m}.worker(s)
	return s, nil
}

// start makes s's backend, starts it and, once up, opens the sessions on
// it and reads its lists. On failure an agent-added server is forgotten;
// a configured one stays, down, for reload_server.
func (m *Mux) start(ctx context.Context, s *server) (result.Build, error) {
	spec := s.spec
	b, err := m.newB(spec, s.emit)
	if err != nil {
		m.forget(s)
		close(s.made)
		close(s.up)
		return result.Build{}, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	m.mu.Lock()
	s.b = b
	removed := s.removed
	m.mu.Unlock()
	close(s.made)
	if removed {
		b.Close()
		close(s.up)
		return result.Build{}, fmt.Errorf("server %q was removed while it started", spec.Name)
	}
	// The sessions open it at once: its first start answers them when it
	// is up (or from the record of its last good start).
	m.eachSession(func(ss *session) { ss.serverUp(s) })
	res := b.Start(ctx)
	lifecycle{m}.applyResult(s, res)
	m.mu.Lock()
	s.starting = false
	s.lastBuild = &res
	removed = s.removed
	m.mu.Unlock()
	close(s.up)
	if removed {
		return res, fmt.Errorf("server %q was removed while it started", spec.Name)
	}
	var fail error
	switch {
	case !res.OK:
		fail = fmt.Errorf("server %q: %s", spec.Name, buildReport(res, spec.Name))
	case res.Restart != nil && res.Restart.Err != nil:
		fail = fmt.Errorf("server %q: %v", spec.Name, res.Restart.Err)
	}
	if fail != nil {
		if spec.Source != "config" {
			// An agent's server that failed is forgotten, to be added again.
			m.remove(spec.Name)
		}
		return res, fail
	}
	return res, nil
}

// eachSession calls f for every open session, with no lock held.
func (m *Mux) eachSession(f func(*session)) {
	m.mu.Lock()
	all := make([]*session, 0, len(m.sessions))
	for s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	for _, s := range all {
		f(s)
	}
}

// recorder is a Backend that answers from the record of its server's
// last good start while the first start runs (a relay).
type recorder interface{ HasRecord() bool }

// forget drops a server that never got a backend.
func (m *Mux) forget(s *server) {
	m.mu.Lock()
	if m.servers[s.spec.Name] == s {
		delete(m.servers, s.spec.Name)
	}
	s.removed = true
	m.mu.Unlock()
	s.halt()
}

// remove takes a server out at once and stops it.
func (m *Mux) remove(name string) error {
	m.mu.Lock()
	s, ok := m.servers[name]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("no server named %q: %s", name, m.existingLocked())
	}
	delete(m.servers, name)
	s.removed = true
	m.mu.Unlock()
	m.eachSession(func(ss *session) { ss.serverGone(s) })
	m.teardown(s)
	return nil
}

// teardown closes the backend and waits for it.
func (m *Mux) teardown(s *server) {
	m.mu.Lock()
	s.removed = true
	b := s.b
	m.mu.Unlock()
	if b != nil {
		b.Close()
	}
	s.halt()
}

// emit queues a backend event for the server's worker; it never blocks.
func (s *inbox) emit(ev Event) {
	s.evMu.Lock()
	s.events = append(s.events, ev)
	s.evMu.Unlock()
	s.poke()
}

func (s *inbox) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// lifecycle is the mux as it follows each server's life: its events
// applied in order, for list_servers and status. What each session lists
// of it is the session's own to read (its catalog), told by the server's
// list_changed.
type lifecycle struct{ *Mux }

// worker applies a server's events in order, off every read loop.
func (m lifecycle) worker(s *server) {
	defer m.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		s.evMu.Lock()
		evs := s.events
		s.events = nil
		s.evMu.Unlock()
		up := false
		for _, ev := range evs {
			up = m.apply(s, ev) || up
		}
		if up {
			// Each session reads what it lists now (its own child's).
			m.eachSession(func(ss *session) { ss.serverUp(s) })
		}
	}
}

// applyResult records what a start or reload did at once, so that its
// caller reports the new state; the same event, arriving later through the
// worker, changes nothing.
func (m lifecycle) applyResult(s *server, res result.Build) {
	if m.apply(s, eventOf(res, s.spec.Name)) {
		m.eachSession(func(ss *session) { ss.serverUp(s) })
	}
}

// apply records one event; it reports whether the server came up.
func (m lifecycle) apply(s *server, ev Event) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.removed {
		return false
	}
	switch ev.Kind {
	case EventStarting:
		if s.status != StatusRunning {
			s.status = StatusStarting
		}
		if ev.Pid != 0 {
			s.pid = ev.Pid // a child of a session's started
		}
	case EventUp:
		if ev.Gen != 0 && ev.Gen < s.gen {
			return false // a late report about an earlier start
		}
		if ev.Build != nil {
			s.lastBuild = ev.Build
		}
		if ev.Gen != 0 && ev.Gen == s.gen && s.status == StatusRunning {
			return false // the same start, reported by the relay and by the cycle
		}
		if !s.started.IsZero() {
			s.restarts++
		}
		s.status, s.started, s.report = StatusRunning, time.Now(), ""
		if ev.Pid != 0 {
			s.pid = ev.Pid
		}
		if ev.Gen != 0 {
			s.gen = ev.Gen
		}
		return true
	case EventCrashed:
		if ev.Gen != 0 && ev.Gen < s.gen || s.status == StatusCrashed && (ev.Gen == 0 || ev.Gen == s.gen) {
			return false // stale, or the same crash reported twice
		}
		if ev.Gen != 0 {
			s.gen = ev.Gen
		}
		s.status, s.pid, s.report = StatusCrashed, 0, ev.Report
		s.crashes++
		m.log.Error("server crashed", "server", s.spec.Name, "report", firstLine(s.report))
	case EventBuilt:
		s.lastBuild = ev.Build
	case EventBuildFailed:
		if ev.Build != nil {
			s.lastBuild = ev.Build
		}
		if s.status != StatusRunning {
			s.status, s.report = StatusBuildFailed, ev.Report
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// ClientInfo is what the mux knows of a client: name, version and
// protocol revision, from a legacy initialize or a 2026-07-28 request's
// _meta; all empty before the client said.
type ClientInfo = wire.ClientInfo

// Client reports the client of the most recently active session.
func (m *Mux) Client() ClientInfo {
	s := m.latest()
	if s == nil {
		return ClientInfo{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Client
}

// latest is the most recently active session; nil when none is open.
func (m *Mux) latest() *session {
	var best *session
	var seen time.Time
	m.eachSession(func(s *session) {
		s.mu.Lock()
		t := s.seen
		s.mu.Unlock()
		if best == nil || t.After(seen) {
			best, seen = s, t
		}
	})
	return best
}

// names lists the servers that exist, sorted.
func (m *Mux) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.namesLocked()
}

// exists reports whether server name exists.
func (m *Mux) exists(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.servers[name]
	return ok
}
