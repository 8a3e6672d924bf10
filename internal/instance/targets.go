package instance

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/clitools"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/mux"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// buildLog keeps the last build cycle of a server for status. The zero
// value is ready.
type buildLog struct {
	last atomic.Pointer[control.BuildStatus]
}

// note records a finished cycle (the builder's OnResult); a status once
// recorded is never changed.
func (b *buildLog) note(res result.Build) { b.last.Store(control.BuildStatusOf(res, time.Now())) }

// lastBuild is the last cycle's status; nil before the first cycle, or
// for no log (b nil: a server without a build).
func (b *buildLog) lastBuild() *control.BuildStatus {
	if b == nil {
		return nil
	}
	return b.last.Load()
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

// pick is the server of names that a rebuild of name means ("" names
// the only server), or why there is none.
func pick(names []string, name string) (string, error) {
	switch {
	case name == "" && len(names) == 1:
		return names[0], nil
	case name == "":
		eg := append(slices.Clip(names), "NAME")[0] // the first server; NAME when there is none
		return "", fmt.Errorf("this instance serves %d servers: name one, e.g. mcpflow rebuild %s (servers: %s)", len(names), eg, strings.Join(names, ", "))
	case len(names) == 1 && name != names[0]:
		return "", fmt.Errorf("this instance serves one server, %q, not %q: run mcpflow rebuild without a name", names[0], name)
	case !slices.Contains(names, name):
		return "", fmt.Errorf("no server named %q here (servers: %s): run mcpflow rebuild with one of them, or without a name when there is one", name, strings.Join(names, ", "))
	}
	return name, nil
}

// oneTarget is the control.Target of an instance that serves one server,
// called name: status is its status, rebuild its rebuild (build, restart,
// the client told its tools changed).
type oneTarget struct {
	name    string
	status  func() control.Status
	rebuild func(context.Context) result.Build
}

func (t oneTarget) Status() control.Status { return t.status() }

func (t oneTarget) Rebuild(ctx context.Context, name string) (result.Build, error) {
	if _, err := pick([]string{t.name}, name); err != nil {
		return result.Build{}, err
	}
	return t.rebuild(ctx), nil
}

// serverName is what status calls the server of a watch run: its project
// folder's name.
func serverName(cfg *config.Config) string {
	if n := filepath.Base(cfg.Dir); n != "" && n != "." && n != string(filepath.Separator) {
		return n
	}
	return "server"
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

// muxTarget is a mux run's control.Target: a row per server from the mux's list,
// with the relay's counters (calls, uptime, generation) for the servers
// that run behind a relay and the last build of those that build, and
// rebuild as reload_server. startMux sets m once the mux is made.
type muxTarget struct {
	m muxServers

	mu     sync.Mutex
	relays map[string]*relay.Relay
	logs   map[string]*buildLog
}

func newMuxTarget() *muxTarget {
	return &muxTarget{relays: map[string]*relay.Relay{}, logs: map[string]*buildLog{}}
}

// addRelay and setBuilds register server name's relay and build log (a
// server added again replaces its old ones).
func (t *muxTarget) addRelay(name string, r *relay.Relay) {
	t.mu.Lock()
	t.relays[name] = r
	t.mu.Unlock()
}

// tell tells every server's relay about the config file (relay.ConfigProblem).
func (t *muxTarget) tell(problem string) {
	t.mu.Lock()
	relays := slices.Collect(maps.Values(t.relays))
	t.mu.Unlock()
	for _, r := range relays {
		r.ConfigProblem(problem)
	}
}

func (t *muxTarget) setBuilds(name string, b *buildLog) {
	t.mu.Lock()
	t.logs[name] = b
	t.mu.Unlock()
}

func (t *muxTarget) Status() control.Status {
	var st control.Status
	if c := t.m.Client(); c.Protocol != "" {
		st.Client = control.ClientInfo{Name: c.Name, Version: c.Version, Protocol: c.Protocol, Era: c.Era.String()}
	}
	for _, info := range t.m.List(false) {
		t.mu.Lock()
		rl, builds := t.relays[info.Name], t.logs[info.Name]
		t.mu.Unlock()
		last := builds.lastBuild()
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

// Rebuild is reload_server NAME.
func (t *muxTarget) Rebuild(ctx context.Context, name string) (result.Build, error) {
	var names []string
	for _, info := range t.m.List(false) {
		names = append(names, info.Name)
	}
	name, err := pick(names, name)
	if err != nil {
		return result.Build{}, err
	}
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
