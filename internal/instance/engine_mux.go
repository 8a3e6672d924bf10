package instance

import (
	"cmp"
	"context"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/mcpflow/mcpflow/internal/builder"
	"github.com/mcpflow/mcpflow/internal/clitools"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/mux"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/statedir"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// startMux starts the mux of cfg ([servers.NAME], [mux]) and its
// configured servers.
func startMux(_ context.Context, cfg *config.Config, logger *slog.Logger, run *instanceRun) (*engine, error) {
	configured := map[string]*config.ServerConfig{}
	var specs []mux.ServerSpec
	for i := range cfg.Servers {
		s := &cfg.Servers[i]
		configured[s.Name] = s
		specs = append(specs, specOf(s))
	}
	noAdd := !cfg.Mux.AddServer || cfg.HTTP.Listen != "" && !cfg.HTTP.AddServer
	w := &muxWiring{cfg: cfg, configured: configured, logger: logger, run: run, target: newMuxTarget()}
	relays := mux.NewRelayBackends(mux.RelayOptions{NewHooks: w.hooks, Configure: w.configureRelay, Drain: cfg.Mux.Drain, Logger: logger, Version: Version})
	m := mux.New(mux.Config{
		Servers:          specs,
		Separator:        cfg.Mux.Separator,
		DisableAddServer: noAdd,
		AllowedCommands:  allowedCommands(cfg),
		AllowedEnv:       cfg.Mux.AllowedEnv,
		CallTool:         cfg.Relay.CallTool,
		StartWait:        cfg.Relay.StartupGrace,
		InputWait:        cfg.Relay.QueueTimeout,
		NewBackend: func(spec mux.ServerSpec, emit func(mux.Event)) (mux.Backend, error) {
			if spec.CLI != nil {
				return w.cliBackend(spec, emit)
			}
			return relays(spec, emit)
		},
		Logger:       logger,
		Version:      Version,
		ServerSuffix: cfg.Relay.ServerSuffix,
	})
	w.target.m = m
	m.Start()
	logger.Info("mcpflow mux started", "version", Version, "config", cmp.Or(cfg.File, "(command line)"), "servers", len(specs), "add_server", !noAdd)
	return &engine{opener: m, mode: control.ModeMux, target: w.target, inputEnded: m.InputEnded, tell: w.target.tell, stop: m.Close}, nil
}

// specOf is the mux's view of a configured server.
func specOf(s *config.ServerConfig) mux.ServerSpec {
	spec := mux.ServerSpec{
		Name:        s.Name,
		Command:     s.Run.Command.Argv,
		Shell:       s.Run.Command.Shell,
		Dir:         s.Run.Cwd,
		Env:         s.Run.Env,
		OnCrash:     s.Relay.OnCrash,
		StopTimeout: s.Run.StopTimeout,
		URL:         s.Run.URL,
	}
	spec.EnvOverridable = s.Run.EnvOverridable // reload_server's env
	if !s.Build.Command.IsZero() {
		spec.Build = strings.Join(s.Build.Command.Argv, " ") // for show: the hooks build from s itself
	}
	if s.Watch.Enabled {
		spec.Watch = s.Watch.Paths
	}
	if s.CLI != nil {
		spec.CLI = &mux.CLISpec{Schema: s.CLI.Schema, Command: s.CLI.Command}
		spec.Command = s.CLI.Schema
	}
	return spec
}

// muxWiring gives each server behind the mux what a single-server run
// has: its builder, its watcher and its relay settings.
type muxWiring struct {
	cfg        *config.Config
	configured map[string]*config.ServerConfig
	logger     *slog.Logger
	run        *instanceRun // the control socket and the traffic capture
	target     *muxTarget   // what mcpflow status and rebuild see
}

// serverConfig is the single-server config of one server: a configured
// server's own sections, or those an agent gave to add_server over the
// defaults (paths relative to the server's cwd, else mcpflow's folder).
func (w *muxWiring) serverConfig(spec mux.ServerSpec) *config.Config {
	if s, ok := w.configured[spec.Name]; ok && spec.Source == "config" {
		return w.cfg.Server(s)
	}
	dir := config.AbsFrom(w.cfg.Dir, spec.Dir) // "": the config's folder
	sc := config.Default(dir)
	sc.File, sc.Log = w.cfg.File, w.cfg.Log
	sc.Run.Command = config.Command{Argv: spec.Command, Shell: spec.Shell}
	sc.Run.Cwd = dir
	if spec.Build != "" {
		sc.Build.Command = config.Command{Argv: []string{spec.Build}, Shell: true}
	}
	sc.Watch.Enabled = len(spec.Watch) > 0
	sc.Watch.Paths = nil
	for _, p := range spec.Watch {
		sc.Watch.Paths = append(sc.Watch.Paths, config.AbsFrom(dir, p))
	}
	return sc
}

// configureRelay applies a configured server's [servers.NAME.run] and
// [servers.NAME.relay] (an agent's server: the [relay] table's bounds),
// through the one mapping, relayConfig; the mux sets what is its own.
func (w *muxWiring) configureRelay(spec mux.ServerSpec, rc *relay.Config) {
	var traffic func(hop string, toServer bool, gen int, msg []byte)
	if hook := w.run.trafficHook(spec.Name); hook != nil {
		// The client hop is the mux's front; between the mux and this
		// relay is mcpflow inside itself.
		traffic = func(hop string, toServer bool, gen int, msg []byte) {
			if hop == "server" {
				hook(hop, toServer, gen, msg)
			}
		}
	}
	run, r := config.RunConfig{Command: config.Command{Argv: spec.Command, Shell: spec.Shell}, Cwd: spec.Dir, Env: spec.Env, StopTimeout: spec.StopTimeout, URL: spec.URL}, w.cfg.Relay
	if s, ok := w.configured[spec.Name]; ok && spec.Source == "config" {
		run, r = s.Run, s.Relay
	}
	c := relayConfig(run, r, traffic, w.logger.With("server", spec.Name))
	c.Child.Setting, c.OnCrash = rc.Child.Setting, rc.OnCrash
	if spec.Source == "config" {
		// Each configured server keeps the record of its last good start.
		c.First.Record = filepath.Join(statedir.Of(w.cfg.Dir), "servers", spec.Name, "last-start.json")
		c.First.Key, c.First.Sources = project.RecordKey(w.serverConfig(spec)), project.Sources(w.serverConfig(spec))
	} else {
		c.Drain = rc.Drain // mux.drain
	}
	*rc = c
}

// hooks attaches a builder and, when the server is watched, a watcher to
// the server's relay, as serve does for a single server.
func (w *muxWiring) hooks(name string, spec mux.ServerSpec, r *relay.Relay, noteBuild func(result.Build)) (mux.Hooks, error) {
	h, b, err := w.buildAndWatch(spec, r, noteBuild)
	if err == nil {
		r.SetRecompiler(b)
		w.target.addRelay(name, r)
	}
	return h, err
}

// buildAndWatch assembles a server behind the mux (restarting through
// rs after each good build) and returns it as hooks.
func (w *muxWiring) buildAndWatch(spec mux.ServerSpec, rs builder.Restarter, note func(result.Build)) (mux.Hooks, *builder.Builder, error) {
	sc := w.serverConfig(spec)
	s, err := assemble(sc, w.logger.With("server", spec.Name), rs, note)
	if err != nil {
		return mux.Hooks{}, nil, err
	}
	w.target.setBuilds(spec.Name, &s.builds)
	return mux.Hooks{Start: s.Startup, Reload: s.rebuild, Run: s.run}, s.Builder, nil
}

// cliBackend serves a command-line program ([servers.NAME.cli], or
// add_server's cli_schema) behind the mux (clitools.Backend), refreshed
// (after its build, when one is configured) on start, reload and watched
// changes.
func (w *muxWiring) cliBackend(spec mux.ServerSpec, emit func(mux.Event)) (mux.Backend, error) {
	sc := w.serverConfig(spec)
	c := sc.CLI
	if c == nil { // an agent's server: add_server's cli_schema
		c = &config.CLIConfig{Schema: spec.CLI.Schema, Command: spec.CLI.Command, Cwd: sc.Run.Cwd, Env: spec.Env}
	}
	cc := cliConfig(c)
	cc.Logger, cc.Tool, cc.Name, cc.Version = w.logger.With("server", spec.Name), "-", spec.Name, Version
	srv := clitools.New(cc)
	b := clitools.NewBackend(srv, emit)
	if spec.Build != "" || len(spec.Watch) > 0 {
		h, _, err := w.buildAndWatch(spec, srv, b.NoteBuild)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.Attach(h)
	}
	return b, nil
}
