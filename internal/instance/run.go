package instance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/ops/statedir"
	"github.com/mcpflow/mcpflow/internal/ops/traffic"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/transport/httpmcp"
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
		Config: cfgFile, Project: w.cfg.Dir, Mode: mode, Version: Version, Target: t, Logs: w.ring,
		Tools: control.SessionTools{Opener: o, Log: w.log, Version: Version},
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
func clientInfoOf(c wire.ClientInfo) control.ClientInfo {
	return control.ClientInfo{Name: c.Name, Version: c.Version, Protocol: c.Protocol, Era: c.Era.String()}
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
