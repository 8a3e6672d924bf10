package instance

import (
	"context"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/clitools"
	"github.com/mcpflow/mcpflow/internal/mux"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

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
