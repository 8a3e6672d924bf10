package mux

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
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
	// add_server accepts, and then no build: a bare name is a program on
	// PATH, given by that name; an entry with a path must be absolute (the
	// config's folder resolves relative ones) and matches a command that
	// names that file from the server's working directory.
	AllowedCommands []string
	AllowedEnv      []string // with AllowedCommands: the env keys add_server accepts
	CallTool        string   // name of the tool that calls NAME__tool for clients that ignore list_changed; "" = off

	// NewBackend makes each server's backend; nil = NewRelayBackends with
	// Logger and Version (no build, no watch).
	NewBackend BackendFactory

	// StartWait is how long a client's handshake waits for the servers
	// still starting, so that its first answers hold their tools and
	// instructions (the others come through list_changed); 0 = as long as
	// the client waits for a server, by its name (relay.ClientWait).
	StartWait time.Duration
	// InputWait is how long, once the stdio client's input ended, its
	// requests wait for the servers still starting (it reads answers but
	// no list_changed); 0 = relay.DefaultQueueTimeout.
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
	cfg     Config
	sep     string
	log     *slog.Logger
	tools   *toolbox
	ctx     context.Context // canceled at shutdown
	cancel  context.CancelFunc
	wg      sync.WaitGroup // server workers, sessions' goroutines
	seq     atomic.Int64   // the mux's own ids
	ended   chan struct{}  // closed once the stdio client's input ended
	endOnce sync.Once

	mu       sync.Mutex // guards what follows
	closed   bool
	servers  map[string]*server
	sessions map[*session]struct{}
}

// New returns a mux for cfg. Nothing runs until Start.
func New(cfg Config) *Mux {
	cfg.Separator = cmp.Or(cfg.Separator, DefaultSeparator)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.NewBackend == nil {
		cfg.NewBackend = NewRelayBackends(RelayOptions{Logger: cfg.Logger, Version: cfg.Version})
	}
	if cfg.InputWait <= 0 {
		cfg.InputWait = relay.DefaultQueueTimeout
	}
	m := &Mux{cfg: cfg, sep: cfg.Separator, log: cfg.Logger, ended: make(chan struct{}), servers: map[string]*server{}, sessions: map[*session]struct{}{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.tools = newToolbox(m)
	return m
}

// Start registers the configured servers (listed as starting at once)
// and starts them in the background.
func (m *Mux) Start() {
	for _, spec := range m.cfg.Servers {
		spec.Source = "config"
		s, err := m.register(spec)
		go func() {
			if err == nil {
				_, err = m.start(m.ctx, s)
			}
			if err != nil {
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
	m.mu.Unlock()
	for _, n := range m.names() {
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
	all := slices.Collect(maps.Values(m.servers))
	sessions := slices.Collect(maps.Keys(m.sessions))
	m.servers = map[string]*server{}
	m.mu.Unlock()
	for _, s := range sessions {
		s.Close()
	}
	m.cancel()
	// All at once: a child that ignores its closed stdin costs its own
	// stop timeout, not every other server's too.
	var stops sync.WaitGroup
	for _, s := range all {
		stops.Go(func() { m.drop(s) })
	}
	stops.Wait()
	m.wg.Wait()
}

// names lists the servers that exist, sorted.
func (m *Mux) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.servers))
}

// server is the server named name; nil when none is.
func (m *Mux) server(name string) *server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers[name]
}

// existing names the servers that exist, for the agent.
func (m *Mux) existing() string { return texts.Existing(m.names()) }

// register adds spec to the servers, starting, and starts its worker.
func (m *Mux) register(spec ServerSpec) (*server, error) {
	if err := ValidateName(spec.Name, m.sep); err != nil {
		return nil, err
	}
	if spec.CLI == nil && (len(spec.Command) == 0 || spec.Command[0] == "") {
		return nil, fmt.Errorf("server %q: command is empty", spec.Name)
	}
	s := &server{
		spec: spec, log: m.log.With("server", spec.Name),
		made: make(chan struct{}), up: make(chan struct{}), wake: make(chan struct{}, 1),
		starting: true, health: health{status: StatusStarting},
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("mcpflow is shutting down")
	}
	if _, ok := m.servers[spec.Name]; ok {
		return nil, fmt.Errorf("a server named %q exists already: pick another name, or remove_server it first", spec.Name)
	}
	m.servers[spec.Name] = s
	m.wg.Go(func() { s.follow(func() { m.serverUp(s) }) })
	return s, nil
}

// start makes s's backend, has the sessions open it at once (its first
// start answers them when it is up, or from the record of its last good
// start) and starts it. On failure an agent-added server is dropped; a
// configured one stays, down, for reload_server.
func (m *Mux) start(ctx context.Context, s *server) (result.Build, error) {
	name := s.spec.Name
	b, err := m.cfg.NewBackend(s.spec, s.emit)
	removed := s.attach(b)
	close(s.made)
	if err != nil {
		m.drop(s)
		close(s.up)
		return result.Build{}, fmt.Errorf("server %q: %w", name, err)
	}
	if removed {
		b.Close()
		close(s.up)
		return result.Build{}, fmt.Errorf("server %q was removed while it started", name)
	}
	m.serverUp(s)
	res := b.Start(ctx)
	up, removed := s.finished(res)
	if up {
		m.serverUp(s)
	}
	close(s.up)
	var fail error
	switch {
	case removed:
		return res, fmt.Errorf("server %q was removed while it started", name)
	case !res.OK:
		fail = fmt.Errorf("server %q: %s", name, buildReport(res, name))
	case res.Restart != nil && res.Restart.Err != nil:
		fail = fmt.Errorf("server %q: %v", name, res.Restart.Err)
	}
	if fail != nil && s.spec.Source != "config" {
		m.drop(s) // to be added again
	}
	return res, fail
}

// eachSession calls f for every open session, with no lock held.
func (m *Mux) eachSession(f func(*session)) {
	m.mu.Lock()
	all := slices.Collect(maps.Keys(m.sessions))
	m.mu.Unlock()
	for _, s := range all {
		f(s)
	}
}

// serverUp has every session open its port on s, which was added or came
// up, and read what it lists.
func (m *Mux) serverUp(s *server) {
	m.eachSession(func(ss *session) {
		if p := ss.port(s.spec.Name); p != nil {
			p.stale()
		}
	})
}

// drop takes server s out of the servers and of every session (its calls
// in flight there are answered), closes its backend and waits for it.
func (m *Mux) drop(s *server) {
	m.mu.Lock()
	if m.servers[s.spec.Name] == s {
		delete(m.servers, s.spec.Name)
	}
	m.mu.Unlock()
	b := s.detach()
	m.eachSession(func(ss *session) { ss.serverGone(s) })
	if b != nil {
		b.Close()
	}
	s.poke() // its worker ends
}

// ClientInfo is what the mux knows of a client (a legacy initialize's, a
// 2026-07-28 request's _meta); all empty before the client said.
type ClientInfo = wire.ClientInfo

// Client reports the client of the most recently active session.
func (m *Mux) Client() ClientInfo {
	if s := m.latest(); s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.st.Client
	}
	return ClientInfo{}
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

// newID is an id of the mux's own.
func (m *Mux) newID() []byte {
	return []byte(ownPrefix + strconv.FormatInt(m.seq.Add(1), 10) + `"`)
}

// ownPrefix starts every id the mux invents (wire.ReservedPrefix with
// the mux's tag).
const ownPrefix = `"mcpflow:m`

// notRunning says why server name takes no call now, and what to do.
func (m *Mux) notRunning(name string) string {
	s := m.server(name)
	if s == nil {
		return texts.ServerState(name, "", "", m.existing(), false)
	}
	h := s.state()
	return texts.ServerState(name, h.status, h.report, "", true)
}
