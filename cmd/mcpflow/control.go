package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/clitools"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/ops/statedir"
	"github.com/mcpflow/mcpflow/internal/ops/traffic"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/transport/httpmcp"
	"github.com/mcpflow/mcpflow/mux"
	"github.com/mcpflow/mcpflow/relay"
)

// instanceRun is what a run (watch; mux the same way) adds for a person:
// the control socket (mcpflow status, rebuild, logs), the log ring it
// serves, the traffic capture.
type instanceRun struct {
	cfg     *config.Config
	ring    *logring.Ring
	log     *slog.Logger
	traffic *traffic.Writer // nil: no capture
	srv     *control.Server // nil: no socket
	http    *httpmcp.Front  // the HTTP front ([http] listen); nil: stdio
}

// openRun opens the traffic capture when [log] traffic is set. A capture
// file that cannot be opened is an error: the person asked for it.
func openRun(cfg *config.Config, ring *logring.Ring, logger *slog.Logger) (*instanceRun, error) {
	w := &instanceRun{cfg: cfg, ring: ring, log: logger}
	if cfg.Log.Traffic != "" {
		if err := statedir.MkdirFor(cfg.Log.Traffic); err != nil {
			return nil, fmt.Errorf("traffic capture: %w", err)
		}
		tw, err := traffic.Open(cfg.Log.Traffic, traffic.Options{
			MaxMessage: int(cfg.Log.TrafficMaxMessage),
			MaxFile:    cfg.Log.TrafficMaxSize,
		})
		if err != nil {
			return nil, fmt.Errorf("traffic capture (log.traffic): %w", err)
		}
		w.traffic = tw
		logger.Info("recording traffic", "file", cfg.Log.Traffic)
	}
	if cfg.HTTP.Listen != "" {
		if err := w.openFront(cfg.HTTP.Listen); err != nil {
			w.close()
			return nil, fmt.Errorf("http front ([http] listen, --http): %w", err)
		}
	}
	return w, nil
}

// trafficHook is relay.Config.Traffic for the server called server (""
// in single-server mode; a mux names each server's relay): nil when
// nothing is recorded.
func (w *instanceRun) trafficHook(server string) func(hop string, toServer bool, gen int, msg []byte) {
	if w.traffic == nil {
		return nil
	}
	return w.traffic.Hook(server)
}

// front is the transport to the client on in and out: what crosses it is
// recorded as the client hop when log.traffic is set. With an HTTP front
// it is the front (an httpFront), and in and out are not used.
// serveFront serves o to the client(s): the HTTP front's when there is
// one, else the one client on in and out (wire.Serve, with the traffic
// capture of the client hop).
func (w *instanceRun) serveFront(ctx context.Context, o wire.Opener, in wire.Stream, out io.Writer, opt wire.ServeOptions) error {
	if w.http != nil {
		return w.http.Serve(ctx, o)
	}
	if f, ok := out.(*os.File); ok {
		relay.GrowPipe(f)
	}
	return wire.Serve(ctx, in, out, o, opt)
}

// stdio is the stdio front's options: the log, the traffic capture of
// the client hop, and how long the requests read before the client's
// input ended may wait for their answers (relay.queue_timeout: a one-shot
// pipe on a cold build waits for the server as a held request does).
func (w *instanceRun) stdio() wire.ServeOptions {
	o := wire.ServeOptions{Log: w.log.With("from", "client"), Grace: w.cfg.Relay.QueueTimeout}
	if w.traffic != nil {
		hook := w.traffic.Hook("")
		o.Traffic = func(toServer bool, msg []byte) { hook("client", toServer, 0, msg) }
	}
	return o
}

// listen opens the control socket with t as its Target and o, the
// server the instance serves, for mcpflow tools and call. Failing to is
// a warning: the session goes on without it.
func (w *instanceRun) listen(mode string, t control.Target, o wire.Opener) {
	cfgFile := w.cfg.File
	if cfgFile != "" {
		cfgFile = project.AbsFrom(w.cfg.Dir, cfgFile)
	}
	if w.http != nil {
		t = frontTarget{Target: t, run: w}
	}
	srv, err := control.Listen(control.Info{
		Config: cfgFile, Project: w.cfg.Dir, Mode: mode, Version: version(), Target: t, Logs: w.ring,
		Tools: sessionTools{o: o, log: w.log},
	})
	switch {
	case errors.Is(err, control.ErrUnsupported):
		w.log.Debug("no control socket", "err", err)
		return
	case err != nil:
		w.log.Warn("no control socket: mcpflow status, rebuild and logs will not see this instance", "err", err)
		return
	}
	w.srv = srv
	w.log.Debug("control socket", "path", srv.Path())
}

// close removes the control socket, releases the HTTP front's address
// and flushes and closes the capture.
func (w *instanceRun) close() {
	if w.srv != nil {
		w.srv.Close()
	}
	if w.http != nil {
		w.http.Close()
	}
	if w.traffic != nil {
		if err := w.traffic.Close(); err != nil {
			w.log.Error("traffic capture", "file", w.cfg.Log.Traffic, "err", err)
		}
	}
}

// buildLog keeps the last build cycle of a server for status. The zero
// value is ready.
type buildLog struct {
	mu   sync.Mutex
	last *control.BuildStatus
}

// note records a finished cycle (the builder's OnResult).
func (b *buildLog) note(res result.Build) {
	bs := control.BuildStatusOf(res, time.Now())
	b.mu.Lock()
	b.last = bs
	b.mu.Unlock()
}

func (b *buildLog) lastBuild() *control.BuildStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		return nil
	}
	c := *b.last
	return &c
}

// serverStatusOf is one server's row of mcpflow status, from its relay's
// Stats and its last build. A mux makes one per server.
func serverStatusOf(name string, st relay.Stats, last *control.BuildStatus) control.ServerStatus {
	tools := st.Tools
	if !st.ToolsKnown {
		tools = -1
	}
	return control.ServerStatus{
		Name: name, State: st.State, Pid: st.Pid, Gen: st.Gen, Started: st.Started,
		Restarts: st.Restarts, Crashes: st.Crashes, Build: last, Tools: tools, Served: st.Served, InFlight: st.InFlight,
	}
}

// clientInfoOf is the client line of mcpflow status.
func clientInfoOf(c relay.ClientStats) control.ClientInfo {
	return control.ClientInfo{Name: c.Name, Version: c.Version, Protocol: c.Protocol, Era: c.Era}
}

// target is the control.Target of every mode: the servers' rows
// (status) and rebuild of one server by name (rebuild), the name checked
// against names first ("" names the only server).
type target struct {
	names   func() []string
	status  func() control.Status
	rebuild func(ctx context.Context, name string) (result.Build, error)
}

func (t target) Status() control.Status { return t.status() }

// Rebuild is the agent's rebuild of server name: build, restart, the
// client told its tools changed.
func (t target) Rebuild(ctx context.Context, name string) (result.Build, error) {
	names := t.names()
	switch {
	case name == "" && len(names) == 1:
		name = names[0]
	case name == "":
		return result.Build{}, fmt.Errorf("this instance serves %d servers: name one, e.g. mcpflow rebuild %s (servers: %s)", len(names), firstOr(names, "NAME"), strings.Join(names, ", "))
	case len(names) == 1 && name != names[0]:
		return result.Build{}, fmt.Errorf("this instance serves one server, %q, not %q: run mcpflow rebuild without a name", names[0], name)
	case !slices.Contains(names, name):
		return result.Build{}, fmt.Errorf("no server named %q here (servers: %s): run mcpflow rebuild with one of them, or without a name when there is one", name, strings.Join(names, ", "))
	}
	return t.rebuild(ctx, name)
}

// oneServer is the target of an instance that serves one server, called
// name: row is its status row, rebuild its rebuild.
func oneServer(name string, status func() control.Status, rebuild func(context.Context) result.Build) target {
	return target{
		names:   func() []string { return []string{name} },
		status:  status,
		rebuild: func(ctx context.Context, _ string) (result.Build, error) { return rebuild(ctx), nil },
	}
}

// serverName is what status calls the server of a watch run: its project
// folder's name.
func serverName(cfg *config.Config) string {
	if n := filepath.Base(cfg.Dir); n != "" && n != "." && n != string(filepath.Separator) {
		return n
	}
	return "server"
}

// The person's commands: mcpflow status, rebuild, logs.

const statusUsage = `Usage:
  mcpflow status [--json] [-c FILE] [--all]

Shows every running mcpflow of yours: its pid, config file and mode, the
client, and for each server its state, pid, uptime, restarts, last build,
tool count and calls. Run in a project folder (or with -c FILE), it shows
that project's instances only; --all shows them all. With --json,
durations are whole milliseconds (fields ending in _ms), as in every
--json output.

Flags:
`

const rebuildUsage = `Usage:
  mcpflow rebuild [NAME] [-c FILE] [--pid PID] [--json]

Rebuilds and restarts the server of a running mcpflow, as the agent's
recompile tool does (in a mux, NAME picks the server), and prints the build
result and the tool diff. Exit status 0 when the new server serves, 1 when
the build or restart failed. With --json, durations are whole milliseconds
(fields ending in _ms), as in every --json output.

Flags:
`

const logsUsage = `Usage:
  mcpflow logs [-f] [-n LINES] [-c FILE] [--pid PID]

Prints the log of a running mcpflow (the last few thousand lines it keeps
in memory, also when no log file is set); -f follows it until Ctrl-C or
the instance stops.

Flags:
`

// selectFlags are the flags that pick instances.
type selectFlags struct {
	cfg *string
	all *bool
	pid *int
}

// dial connects to the one instance the flags select.
func (s selectFlags) dial(ctx context.Context, e env) (*control.Client, error) {
	inst, err := s.pick(e)
	if err != nil {
		return nil, err
	}
	return control.Dial(ctx, inst)
}

func addSelectFlags(fs *flagSet, withPid bool) selectFlags {
	s := selectFlags{
		cfg: fs.String("c", "", "only the instances of this config file"),
		all: fs.Bool("all", false, "every instance, wherever it runs"),
	}
	if withPid {
		s.pid = fs.Int("pid", 0, "the instance with this process id (mcpflow status lists them)")
	}
	return s
}

// instances lists the instances a command acts on: those of -c FILE;
// else, unless --all, those whose project holds the working folder when
// there are any; else all.
func (s selectFlags) instances(e env) ([]control.Instance, error) {
	var f control.Filter
	if *s.cfg != "" {
		f.Config = project.AbsFrom(mustGetwd(e), *s.cfg)
		if _, err := os.Stat(f.Config); err != nil {
			return nil, fmt.Errorf("-c %s: %w", *s.cfg, err)
		}
	}
	insts, err := control.Instances(f)
	if err != nil || *s.all || *s.cfg != "" {
		return insts, err
	}
	here := control.Filter{Project: mustGetwd(e)}
	var mine []control.Instance
	for _, in := range insts {
		if here.Match(in) {
			mine = append(mine, in)
		}
	}
	if len(mine) > 0 {
		return mine, nil
	}
	return insts, nil
}

// pick chooses the one instance rebuild and logs act on.
func (s selectFlags) pick(e env) (control.Instance, error) {
	insts, err := s.instances(e)
	if err != nil {
		return control.Instance{}, err
	}
	return control.Pick(insts, *s.pid)
}

// interruptible is ctx ended by Ctrl-C or SIGTERM.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), stopSignals...)
}

func cmdStatus(e env, args []string) int {
	fs := newFlagSet(e, "status", statusUsage)
	asJSON := fs.Bool("json", false, "print JSON (an array of instances) for scripts")
	sel := addSelectFlags(fs, false)
	rest, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(e.stderr, "mcpflow status: unexpected argument %q\n", rest[0])
		return exitUsage
	}
	insts, err := sel.instances(e)
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sts := control.Statuses(ctx, insts)
	if *asJSON {
		err = control.WriteStatusJSON(e.stdout, sts)
	} else {
		err = control.WriteStatus(e.stdout, sts)
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	return exitOK
}

func cmdRebuild(e env, args []string) int {
	fs := newFlagSet(e, "rebuild", rebuildUsage)
	asJSON := fs.Bool("json", false, "print the result as JSON (the recompile tool's structuredContent keys)")
	sel := addSelectFlags(fs, true)
	rest, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 1 {
		fmt.Fprintf(e.stderr, "mcpflow rebuild: one server name at most, got %q\n", rest)
		return exitUsage
	}
	name := ""
	if len(rest) == 1 {
		name = rest[0]
	}
	ctx, cancel := interruptible()
	defer cancel()
	c, err := sel.dial(ctx, e)
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	defer c.Close()
	b, err := c.Rebuild(ctx, name)
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(control.BuildToJSON(b))
	} else {
		err = control.WriteBuild(e.stdout, name, b)
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	return control.ExitCode(b)
}

func cmdLogs(e env, args []string) int {
	fs := newFlagSet(e, "logs", logsUsage)
	follow := fs.Bool("f", false, "follow: print new lines as they come, until Ctrl-C or the instance stops")
	tail := fs.Int("n", 0, "only the last LINES lines (0 = all kept)")
	sel := addSelectFlags(fs, true)
	rest, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 0 || *tail < 0 {
		fmt.Fprintln(e.stderr, "mcpflow logs: takes no arguments; -n wants a count of lines")
		return exitUsage
	}
	ctx, cancel := interruptible()
	defer cancel()
	c, err := sel.dial(ctx, e)
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	defer c.Close()
	if err := c.Logs(ctx, e.stdout, *follow, *tail); err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	return exitOK
}

// cliStatus is a [cli] run's status: no process stays up, so its one row
// shows the schema's state, the last build and the tool count.
func cliStatus(name string, schema func() (*clitools.Schema, error), builds *buildLog) control.Status {
	sv := control.ServerStatus{Name: name, State: "starting", Tools: -1, Build: builds.lastBuild()}
	sch, err := schema()
	switch {
	case sch != nil && err != nil:
		sv.State, sv.Tools = "schema failed (previous tools served)", len(sch.Tools)
	case sch != nil:
		sv.State, sv.Tools = "serving", len(sch.Tools)
	case err != nil:
		sv.State = "schema failed"
	}
	return control.Status{Servers: []control.ServerStatus{sv}}
}

// muxServers is what a muxTarget needs of the mux; *mux.Mux has it.
type muxServers interface {
	Client() mux.ClientInfo
	List(verbose bool) []mux.ServerInfo
	Reload(ctx context.Context, name string) (mux.Outcome, *result.Build, error)
}

// muxTarget is a mux run's control.Target: a row per server from the
// mux's list, with the relay's counters (calls, uptime, generation) for
// the servers that run behind a relay, and rebuild as reload_server.
// serveMux wires it: newMuxTarget before mux.New, addRelay from
// muxWiring.hooks, builds(name).note from each builder's OnResult, then
// t.m = the mux and run.listen(control.ModeMux, t).
type muxTarget struct {
	m muxServers

	mu     sync.Mutex
	relays map[string]*relay.Relay
	logs   map[string]*buildLog
}

func newMuxTarget() *muxTarget {
	return &muxTarget{relays: map[string]*relay.Relay{}, logs: map[string]*buildLog{}}
}

// addRelay registers the relay of server name (a server added again
// replaces its old relay).
func (t *muxTarget) addRelay(name string, r *relay.Relay) {
	t.mu.Lock()
	t.relays[name] = r
	t.mu.Unlock()
}

// setBuilds registers the build log of server name.
func (t *muxTarget) setBuilds(name string, b *buildLog) {
	t.mu.Lock()
	t.logs[name] = b
	t.mu.Unlock()
}

// builds is server name's build log (a CLI without a build has none yet).
func (t *muxTarget) builds(name string) *buildLog {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.logs[name]
	if b == nil {
		b = &buildLog{}
		t.logs[name] = b
	}
	return b
}

// target is the mux's control.Target.
func (t *muxTarget) target() target {
	return target{
		names: func() []string {
			var names []string
			for _, info := range t.m.List(false) {
				names = append(names, info.Name)
			}
			return names
		},
		status:  t.status,
		rebuild: t.rebuild,
	}
}

func (t *muxTarget) status() control.Status {
	var st control.Status
	if c := t.m.Client(); c.Protocol != "" {
		era := "legacy"
		if wire.IsModern(c.Protocol) {
			era = "modern"
		}
		st.Client = control.ClientInfo{Name: c.Name, Version: c.Version, Protocol: c.Protocol, Era: era}
	}
	for _, info := range t.m.List(false) {
		t.mu.Lock()
		rl := t.relays[info.Name]
		t.mu.Unlock()
		last := t.builds(info.Name).lastBuild()
		if last == nil && info.LastBuild != nil {
			last = control.BuildStatusOf(buildOfInfo(info.LastBuild), time.Time{})
		}
		sv := control.ServerStatus{Name: info.Name, Pid: info.Pid, Restarts: info.Restarts, Build: last}
		if rl != nil {
			sv = serverStatusOf(info.Name, rl.Stats(), last)
		}
		// The mux's view of the server's state and tools is the client's.
		sv.State, sv.Tools = info.Status, len(info.Tools)
		st.Servers = append(st.Servers, sv)
	}
	return st
}

// rebuild is reload_server NAME.
func (t *muxTarget) rebuild(ctx context.Context, name string) (result.Build, error) {
	_, res, err := t.m.Reload(ctx, name)
	if res == nil {
		return result.Build{Trigger: "recompile", Err: err}, err
	}
	b := *res
	b.Trigger = "recompile"
	return b, nil
}

// buildOfInfo is the mux's brief of a build as a result.Build.
func buildOfInfo(bi *mux.BuildInfo) result.Build {
	d, _ := time.ParseDuration(bi.Duration)
	return result.Build{OK: bi.OK, Skipped: bi.Skipped, Duration: d, Errors: bi.Errors}
}

func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}
