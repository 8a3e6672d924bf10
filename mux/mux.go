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

	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/mcpflow/mcpflow/internal/wire"
	"github.com/mcpflow/mcpflow/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config is what a Mux needs. The zero value serves no servers, allows
// add_server without restriction and uses the relay backends.
type Config struct {
	Servers   []ServerSpec // configured servers, started by Run
	Separator string       // between server and tool names; default "__"

	DisableAddServer bool     // [mux] add_server = false
	AllowedCommands  []string // when set, add_server accepts only these programs (argv[0]), and no build
	AllowedEnv       []string // with AllowedCommands: the env keys add_server accepts
	CallTool         string   // name of the tool that calls NAME__tool for clients that ignore list_changed; "" = off

	// NewBackend makes each server's backend; nil = NewRelayBackends with
	// Logger and Version (no build, no watch).
	NewBackend BackendFactory

	// StartWait is how long Run holds the client's first message while
	// the configured servers start, so that the first answers hold their
	// tools and instructions; those still starting then appear through
	// list_changed. 0 = as long as the client waits for a server, by the
	// name in that message (relay.ClientWait).
	StartWait time.Duration
	// ChildProtocolVersion is the version the mux asks of each child; ""
	// = the SDK's latest (2026-07-28, falling back to the legacy
	// handshake).
	ChildProtocolVersion string

	// Single serves Servers[0] alone, unprefixed, without management
	// tools (see single.go); SingleTool names its rebuild tool (default
	// "recompile").
	Single     bool
	SingleTool string

	Logger  *slog.Logger // nil = discard
	Version string       // mcpflow's version, for serverInfo
}

// Status values of a server.
const (
	StatusStarting    = "starting"
	StatusRunning     = "running"
	StatusCrashed     = "crashed"
	StatusBuildFailed = "build-failed"
)

// Mux serves several MCP servers as one. See the package documentation.
type Mux struct {
	cfg  Config
	sep  string
	log  *slog.Logger
	newB BackendFactory

	ctx    context.Context // canceled at shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup // server workers and teardowns

	mu      sync.Mutex
	closed  bool
	servers map[string]*server
	cat     catalog
	level   *mcp.SetLoggingLevelParams
	roots   []*mcp.Root // the client's roots, given to every child
	rootsMu sync.Mutex  // one roots update at a time
	// rootsSeq numbers the events that sync roots; rootsApplied (under
	// rootsMu) is the latest applied.
	rootsSeq     atomic.Uint64
	rootsApplied uint64

	sess sessions // the client sessions (route.go)
	// served ends when serving the client(s) ends (Run's or Serve's ctx),
	// before the sessions close: what the mux asks a client ends with it.
	served context.Context
}

// server is one server behind the mux: its spec, backend and session,
// and the parts below, grouped by job.
type server struct {
	spec   ServerSpec
	b      Backend
	cs     *mcp.ClientSession
	client *mcp.Client

	opMu   sync.Mutex // one reload at a time
	listMu sync.Mutex // one re-list at a time

	// guarded by Mux.mu
	health
	childLists
	published
	removed  bool
	starting bool // add has not connected to it yet (its first build may run)

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

// childLists are the child's own lists, under its own names. Mux.mu
// guards them.
type childLists struct {
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

// published is what the catalog lists for a server, under front names,
// and what it left out. Mux.mu guards it.
type published struct {
	warnings []string
	front    []string // tool names
	frontP   []string // prompt names
	frontR   []string // resource URIs
	frontT   []string // resource templates
}

// inbox queues a server's backend events and re-list requests for its
// worker goroutine; it has its own lock and never blocks the sender.
type inbox struct {
	evMu     sync.Mutex
	events   []Event
	relist   bool
	wake     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
}

func newInbox() inbox {
	return inbox{wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (s *inbox) halt() { s.stopOnce.Do(func() { close(s.stop) }) }

// New returns a mux for cfg. Nothing runs until Run.
func New(cfg Config) *Mux {
	if cfg.Separator == "" {
		cfg.Separator = DefaultSeparator
	}
	if cfg.SingleTool == "" {
		cfg.SingleTool = defaultSingleTool
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Mux{
		cfg:     cfg,
		sep:     cfg.Separator,
		log:     logger,
		servers: map[string]*server{},
	}
	m.cat = newCatalog(m)
	m.sess.ended = m.rootsEnded
	m.newB = cfg.NewBackend
	if m.newB == nil {
		m.newB = NewRelayBackends(RelayOptions{Logger: logger, Version: cfg.Version})
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.served = m.ctx
	return m
}

// Run starts the configured servers, serves the client on t until it
// leaves or ctx is canceled, then stops every server and waits for them.
// mcpflow serves its stdin and stdout through a wire.Transport. A t that
// is also a Front (mcpflow's HTTP front) is served as Serve serves it.
func (m *Mux) Run(ctx context.Context, t mcp.Transport) error {
	if f, ok := t.(Front); ok {
		return m.Serve(ctx, f)
	}
	defer m.Close()
	m.served = ctx
	started := startup{m}.startServers()
	t = startup{m}.awaitStart(ctx, t, started)
	srv := startup{m}.frontServer()
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	m.sess.touch(ss, "", nil)
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		ss.Close()
		<-done
		err = nil
	}
	if err != nil {
		m.log.Info("client session ended", "err", err)
	}
	return nil
}

// Front serves the mux's MCP server to any number of client sessions:
// internal/httpmcp's Streamable HTTP front. Serve returns when ctx ends
// (after closing every session) or serving fails.
type Front interface {
	Serve(ctx context.Context, srv *mcp.Server) error
}

// Serve starts the configured servers and serves every client that f
// brings until ctx ends or f fails, then stops every server and waits for
// them. Before f serves, it waits for the configured servers as long as a
// client waits for a server (StartWait, else relay.ClientWait("")), so that
// the first answers hold their tools and instructions: f may already
// accept connections meanwhile (they wait). The sessions are told apart
// as the package documentation says.
func (m *Mux) Serve(ctx context.Context, f Front) error {
	defer m.Close()
	m.sess.multi = true
	m.served = ctx
	started := startup{m}.startServers()
	wait := m.cfg.StartWait
	if wait <= 0 {
		wait = relay.ClientWait("")
	}
	startup{m}.waitStarted(ctx, started, wait)
	if ctx.Err() != nil {
		return nil
	}
	err := f.Serve(ctx, startup{m}.frontServer())
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// startup is the mux as it starts its configured servers and waits for
// them before serving its clients.
type startup struct{ *Mux }

// startServers starts the configured servers; the channel is closed when
// every one is up or failed.
func (m startup) startServers() <-chan struct{} {
	var wg sync.WaitGroup
	for _, spec := range m.cfg.Servers {
		spec.Source = "config"
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := m.add(m.ctx, spec); err != nil {
				m.log.Error("server did not start", "server", spec.Name, "err", err)
			}
		}()
	}
	started := make(chan struct{})
	go func() { wg.Wait(); close(started) }()
	return started
}

// frontServer makes the front server and publishes what the servers up
// now list on it.
func (m startup) frontServer() *mcp.Server {
	srv := front(m).newFront()
	m.mu.Lock()
	m.cat.srv = srv
	for _, s := range m.servers {
		m.cat.publish(s)
	}
	m.mu.Unlock()
	return srv
}

// awaitStart returns once the configured servers are up (started is
// closed), or the client waited as long as it waits for a server, counted
// from its first message: StartWait, else relay.ClientWait of the name in
// that message. On a wire.Transport it reads that message to learn the
// name, and returns the transport that hands it on first.
func (m startup) awaitStart(ctx context.Context, t mcp.Transport, started <-chan struct{}) mcp.Transport {
	wt, ok := t.(*wire.Transport)
	if !ok {
		wait := m.cfg.StartWait
		if wait <= 0 {
			wait = relay.ClientWait("")
		}
		m.waitStarted(ctx, started, wait)
		return t
	}
	first := make(chan peeked, 1)
	go func() {
		msg, err := wt.In.Next()
		first <- peeked{msg, err}
	}()
	select {
	case <-started:
	case <-ctx.Done():
	case p := <-first:
		first <- p // for the transport
		wait := m.cfg.StartWait
		if env, err := wire.Peek(p.msg); wait <= 0 && err == nil {
			wait = relay.ClientWait(env.ClientName())
		}
		if p.err == nil {
			m.waitStarted(ctx, started, wait)
		}
	}
	nt := *wt
	nt.In = &prepended{first: first, in: wt.In}
	return &nt
}

func (m startup) waitStarted(ctx context.Context, started <-chan struct{}, wait time.Duration) {
	select {
	case <-started:
	case <-ctx.Done():
	case <-time.After(wait):
		m.log.Warn("some servers are still starting; their tools appear when they are up", "after", wait)
	}
}

// peeked is the result of a Stream's Next.
type peeked struct {
	msg []byte
	err error
}

// prepended is a Stream whose first message comes from first, the rest
// from in.
type prepended struct {
	first <-chan peeked
	in    wire.Stream
	done  bool
}

func (p *prepended) Next() ([]byte, error) {
	if !p.done {
		p.done = true
		r := <-p.first
		return r.msg, r.err
	}
	return p.in.Next()
}

// Close stops every server (children and their process groups) and waits
// for them. It is safe to call more than once.
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
	m.mu.Unlock()
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

// names lists the servers that exist, sorted. m.mu is held.
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
	names := m.namesLocked()
	if len(names) == 0 {
		return "no servers are running (add one with add_server)"
	}
	return "the servers are: " + strings.Join(names, ", ")
}

// add registers spec, starts its backend and connects to it. On failure
// an agent-added server is forgotten; a configured one stays, down, for
// reload_server.
func (m *Mux) add(ctx context.Context, spec ServerSpec) (*server, result.Build, error) {
	if err := ValidateName(spec.Name, m.sep); err != nil {
		return nil, result.Build{}, err
	}
	if spec.CLI == nil && (len(spec.Command) == 0 || spec.Command[0] == "") {
		return nil, result.Build{}, fmt.Errorf("server %q: command is empty", spec.Name)
	}
	s := &server{spec: spec, health: health{status: StatusStarting}, inbox: newInbox(), starting: true}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, result.Build{}, errors.New("mcpflow is shutting down")
	}
	if _, ok := m.servers[spec.Name]; ok {
		m.mu.Unlock()
		return nil, result.Build{}, fmt.Errorf("a server named %q exists already: pick another name, or remove_server it first", spec.Name)
	}
	m.servers[spec.Name] = s
	m.wg.Add(1)
	m.mu.Unlock()
	go lifecycle{m}.worker(s)

	b, err := m.newB(spec, s.emit)
	if err != nil {
		m.forget(s)
		return nil, result.Build{}, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	m.mu.Lock()
	s.b = b
	removed := s.removed
	m.mu.Unlock()
	if removed {
		b.Close()
		return nil, result.Build{}, fmt.Errorf("server %q was removed while it started", spec.Name)
	}
	// The handshake waits for the start: a first build may take minutes,
	// and a handshake sent meanwhile would wait in the relay's queue,
	// which expires after relay.queue_timeout and would lose the server.
	// The server is listed as starting until then.
	res := b.Start(ctx)
	m.mu.Lock()
	removed = s.removed
	m.mu.Unlock()
	if removed {
		return nil, res, fmt.Errorf("server %q was removed while it started", spec.Name)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpflow-mux", Version: m.cfg.Version}, childSide{m}.clientOptions(s))
	m.mu.Lock()
	s.client = client
	client.AddRoots(m.roots...)
	m.mu.Unlock()
	var opts *mcp.ClientSessionOptions
	if m.cfg.ChildProtocolVersion != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: m.cfg.ChildProtocolVersion}
	}
	cs, cerr := client.Connect(ctx, b.Transport(), opts)
	if hc, ok := b.(handshakeChecker); ok && cerr == nil && res.OK && (res.Restart == nil || res.Restart.Err == nil) {
		if err := hc.CheckHandshake(cs.InitializeResult()); err != nil {
			res.Restart = &result.Restart{Err: err}
		}
	}
	m.mu.Lock()
	s.cs = cs
	s.starting = false
	s.lastBuild = &res
	level := m.level
	removed = s.removed
	m.mu.Unlock()
	if removed {
		// remove_server ran during the start and found no session to close.
		if cs != nil {
			cs.Close()
		}
		return nil, res, fmt.Errorf("server %q was removed while it started", spec.Name)
	}
	if cerr == nil && level != nil {
		_ = cs.SetLoggingLevel(ctx, level)
	}
	var fail error
	switch {
	case cerr != nil:
		fail = fmt.Errorf("server %q: the MCP handshake failed: %v", spec.Name, cerr)
	case !res.OK:
		fail = fmt.Errorf("server %q: %s", spec.Name, buildReport(res))
	case res.Restart != nil && res.Restart.Err != nil:
		fail = fmt.Errorf("server %q: %v", spec.Name, res.Restart.Err)
	}
	if fail != nil {
		// The relay's texts name its own rebuild tool, which the mux hides;
		// an agent's server that failed is forgotten, to be added again.
		hint := m.reloadHint(spec.Name)
		if spec.Source != "config" {
			hint = "add_server"
		}
		fail = errors.New(strings.ReplaceAll(fail.Error(), relayTool, hint))
	}
	if fail != nil && (spec.Source != "config" || cerr != nil) {
		m.mu.Lock()
		if spec.Source == "config" {
			s.status, s.report = StatusCrashed, fail.Error()
			m.mu.Unlock()
			return s, res, fail
		}
		m.mu.Unlock()
		m.remove(spec.Name)
		return nil, res, fail
	}
	if fail == nil {
		lifecycle{m}.applyResult(s, res)
	}
	if err := (lifecycle{m}).relist(ctx, s); err != nil && fail == nil {
		m.log.Warn("listing a server's tools failed", "server", spec.Name, "err", err)
	}
	return s, res, fail
}

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
	m.cat.unpublish(s)
	m.mu.Unlock()
	m.teardown(s)
	return nil
}

func (m *Mux) existingLocked() string {
	names := m.namesLocked()
	if len(names) == 0 {
		return "no servers are running (add one with add_server)"
	}
	return "the servers are: " + strings.Join(names, ", ")
}

// teardown closes the client session and the backend and waits for both.
func (m *Mux) teardown(s *server) {
	m.mu.Lock()
	s.removed = true
	cs, b := s.cs, s.b
	m.mu.Unlock()
	csDone := make(chan struct{})
	go func() {
		if cs != nil {
			cs.Close()
		}
		close(csDone)
	}()
	if b != nil {
		b.Close()
	}
	<-csDone
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

func (s *inbox) markRelist() {
	s.evMu.Lock()
	s.relist = true
	s.evMu.Unlock()
	s.poke()
}

// lifecycle is the mux as it follows each server's life: its events
// applied in order, its lists read again after a change.
type lifecycle struct{ *Mux }

// worker applies a server's events and re-lists it after list_changed,
// off every read loop: a burst of notifications costs one re-list.
func (m lifecycle) worker(s *server) {
	defer m.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		s.evMu.Lock()
		evs, relist := s.events, s.relist
		s.events, s.relist = nil, false
		s.evMu.Unlock()
		for _, ev := range evs {
			if m.apply(s, ev) {
				relist = true
			}
		}
		if relist {
			m.mu.Lock()
			ready := s.cs != nil && !s.removed && s.status == StatusRunning
			m.mu.Unlock()
			if ready {
				ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
				if err := m.relist(ctx, s); err != nil {
					m.log.Warn("re-listing a server failed", "server", s.spec.Name, "err", err)
				}
				cancel()
			}
		}
	}
}

// apply records one event; it reports whether the lists must be fetched.
func (m lifecycle) apply(s *server, ev Event) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applyLocked(s, ev)
}

// applyResult records what a start or reload did at once, so that its
// caller reports the new state; the same event, arriving later through the
// worker, changes nothing.
func (m lifecycle) applyResult(s *server, res result.Build) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applyLocked(s, eventOf(res))
}

// applyLocked is apply with m.mu held.
func (m lifecycle) applyLocked(s *server, ev Event) bool {
	if s.removed {
		return false
	}
	switch ev.Kind {
	case EventStarting:
		if s.status != StatusRunning {
			s.status = StatusStarting
		}
	case EventUp:
		if ev.Gen != 0 && ev.Gen < s.gen {
			return false // a late report about an earlier child
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
		s.status, s.pid, s.started, s.report = StatusRunning, ev.Pid, time.Now(), ""
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
		s.status, s.pid, s.report = StatusCrashed, 0, m.agentText(s.spec.Name, ev.Report)
		s.crashes++
		s.tools, s.prompts, s.resources, s.templates = nil, nil, nil, nil
		m.cat.unpublish(s)
		m.log.Error("server crashed", "server", s.spec.Name, "report", firstLine(s.report))
	case EventBuilt:
		s.lastBuild = ev.Build
	case EventBuildFailed:
		if ev.Build != nil {
			s.lastBuild = ev.Build
		}
		if s.status != StatusRunning {
			s.status, s.report = StatusBuildFailed, m.agentText(s.spec.Name, ev.Report)
		}
	}
	return false
}

// agentText is a relay's report as the agent reads it: the relay names
// its own rebuild tool, which the mux hides, where the agent calls the
// mux's (reload_server, or the single tool).
func (m *Mux) agentText(server, report string) string {
	return strings.ReplaceAll(report, relayTool, m.reloadHint(server))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// relist fetches a child's lists and publishes them on the front server.
func (m lifecycle) relist(ctx context.Context, s *server) error {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	m.mu.Lock()
	cs := s.cs
	m.mu.Unlock()
	if cs == nil {
		return errors.New("not connected")
	}
	var tools []*mcp.Tool
	var prompts []*mcp.Prompt
	var resources []*mcp.Resource
	var templates []*mcp.ResourceTemplate
	caps := cs.InitializeResult().Capabilities
	if standIn(cs.InitializeResult()) {
		// The child's own capabilities are unknown: ask for everything.
		caps = &mcp.ServerCapabilities{Prompts: &mcp.PromptCapabilities{}, Resources: &mcp.ResourceCapabilities{}}
	}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		if t.Name != relayTool {
			tools = append(tools, t)
		}
	}
	if caps != nil && caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				break
			}
			prompts = append(prompts, p)
		}
	}
	if caps != nil && caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				break
			}
			resources = append(resources, r)
		}
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				break
			}
			templates = append(templates, r)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.removed || s.status == StatusCrashed {
		return nil
	}
	s.tools, s.prompts, s.resources, s.templates = tools, prompts, resources, templates
	m.cat.publish(s)
	return nil
}

func objectSchema(schema any) bool {
	switch v := schema.(type) {
	case map[string]any:
		return v["type"] == "object"
	case nil:
		return false
	}
	return true // the SDK checks other forms and safeAdd catches its panic
}

// safeAdd runs an SDK registration that panics on input it rejects.
func safeAdd(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// sdkLogger routes the SDK's own logging to the mux's logger.
func (m *Mux) sdkLogger() *slog.Logger {
	return m.log.With("component", "sdk")
}

// ClientInfo is what the mux knows of a client: name, version and
// protocol revision, from a legacy initialize or a 2026-07-28 request's
// _meta; all empty before the client said.
type ClientInfo struct {
	Name, Version, Protocol string
}

// Client reports the client of the most recently active session (Run's
// one client).
func (m *Mux) Client() ClientInfo {
	info, _ := m.sess.latest()
	return info.Client
}

// Sessions reports the front's client sessions, oldest first, then the
// session-less (2026-07-28 HTTP) clients seen in the last ten minutes.
func (m *Mux) Sessions() []SessionInfo {
	return m.sess.list()
}

// rootsEnded takes the children's roots from the most recently active
// session that has roots, when the session they came from ended.
func (m *Mux) rootsEnded(*mcp.ServerSession) {
	if ss := m.sess.rootsCandidate(); ss != nil {
		childSide{m}.rootsChanged(ss)
	}
}
