package mux

// This file is the mux's only contact with package relay's engine.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// Hooks attach a server's builder and watcher to its relay. Every field is
// optional.
type Hooks struct {
	// Start brings up the first child: build (if configured), then
	// relay.Restart. nil = relay.Restart alone.
	Start func(ctx context.Context) result.Build
	// Reload rebuilds (if configured) and restarts; on a failed build it
	// must leave the running child alone. nil = relay.Restart alone.
	Reload func(ctx context.Context) result.Build
	// Run runs the server's watch loop until ctx is done; the mux waits for
	// it to return before it stops the relay. nil = no watch.
	Run func(ctx context.Context)
}

// HooksFactory makes the hooks of one server around its relay. cmd wires
// a builder (with r as its Restarter) and a watcher here; the mux imports
// neither. noteBuild must be given every build cycle's result (the
// builder's OnResult), whatever started it: it tells the relay
// (Relay.NoteBuild) and list_servers' last build.
type HooksFactory func(name string, spec ServerSpec, r *relay.Relay, noteBuild func(result.Build)) (Hooks, error)

// RelayOptions configure the default backends.
type RelayOptions struct {
	NewHooks HooksFactory // nil = no build, no watch
	// Configure, when set, adjusts the relay.Config of each server before
	// its relay is made (cmd sets [servers.NAME.relay] and the era bridge
	// here). Command, the texts' rebuild hint, OnEvent and the loggers are
	// the mux's and are set afterwards.
	Configure func(spec ServerSpec, c *relay.Config)
	Logger    *slog.Logger // nil = discard; each server's records carry server=NAME
	Version   string       // mcpflow's version
	// Drain is every server's relay.Config.Drain (mux.drain).
	Drain time.Duration
}

// NewRelayBackends returns the default factory: each server is a
// relay.Relay that owns the child process; each mux session is a client
// of it (a port), in memory.
func NewRelayBackends(o RelayOptions) BackendFactory {
	return func(spec ServerSpec, emit func(Event)) (Backend, error) {
		if spec.CLI != nil {
			return nil, errors.New("CLI tools (cli_schema) are not available in this mcpflow: give command instead")
		}
		if o.NewHooks == nil && (spec.Build != "" || len(spec.Watch) > 0) {
			return nil, fmt.Errorf("build and watch are not available in this mcpflow (no builder is wired): leave them out, or build the server yourself before add_server")
		}
		logger := cmp.Or(o.Logger, slog.New(slog.DiscardHandler)).With("server", spec.Name)
		b := &relayBackend{emit: emit, name: spec.Name}
		onCrash, setting := spec.OnCrash, fmt.Sprintf("servers.%s.run.command in mcpflow.toml", spec.Name)
		if spec.Source == "agent" {
			onCrash, setting = cmp.Or(onCrash, "wait"), "the command and args given to add_server"
		}
		rc := relay.Config{
			Child: relay.Child{
				Command:        spec.Command,
				Shell:          spec.Shell,
				Dir:            spec.Dir,
				ExtraEnv:       spec.Env,
				StopTimeout:    spec.StopTimeout,
				Setting:        setting,
				EnvOverridable: spec.EnvOverridable,
			},
			OnCrash: onCrash,
			Drain:   o.Drain,
		}
		if o.Configure != nil {
			o.Configure(spec, &rc)
		}
		// The mux opens a server's sessions at once: the relay answers
		// them from the record of its last good start, or holds them
		// until it is up (the mux's own deadline decides how long a
		// client waits), never answering a handshake alone before.
		rc.First.Grace = 24 * time.Hour
		rc.Tools.None, rc.Tools.Rebuild = true, texts.ReloadHint(spec.Name)
		rc.OnEvent = b.onEvent
		rc.Logger = logger
		rc.ServerLogger = logger.With("stream", "stderr")
		rc.Version = o.Version
		b.Relay = relay.New(rc)
		if o.NewHooks != nil {
			h, err := o.NewHooks(spec.Name, spec, b.Relay, b.noteBuild)
			if err != nil {
				b.Relay.Close()
				return nil, err
			}
			b.hooks = h
		}
		ctx, stop := context.WithCancel(context.Background())
		b.stop, b.ran = stop, make(chan struct{})
		go func() {
			defer close(b.ran)
			if b.hooks.Run != nil {
				b.hooks.Run(ctx)
			}
		}()
		return b, nil
	}
}

// relayBackend is a server's relay, which serves the sessions (Open),
// answers from the record of the last good start (HasRecord)
// and takes reload_server's env (SetEnv), with its hooks.
type relayBackend struct {
	*relay.Relay
	name  string
	hooks Hooks
	emit  func(Event)
	stop  context.CancelFunc // ends hooks.Run
	ran   chan struct{}      // closed once hooks.Run returned
	once  sync.Once
}

// onEvent turns the relay's events into the mux's. It runs on the relay's
// event goroutine, in order, with no relay lock held. A failed build is
// noteBuild's to report, with the whole build.
func (b *relayBackend) onEvent(ev relay.Event) {
	switch ev.Kind {
	case relay.Starting:
		b.emit(Event{Kind: EventStarting, Gen: ev.Gen, Pid: ev.Pid})
	case relay.Up:
		b.emit(Event{Kind: EventUp, Gen: ev.Gen, Pid: ev.Pid})
	case relay.Crashed, relay.RestartFailed:
		b.emit(Event{Kind: EventCrashed, Gen: ev.Gen, Report: ev.Report})
	}
}

// noteBuild reports a build cycle's result to the relay and the mux.
func (b *relayBackend) noteBuild(res result.Build) {
	b.NoteBuild(res)
	if res.Canceled {
		return
	}
	ev := Event{Kind: EventBuilt, Build: &res}
	if !res.OK {
		ev.Kind, ev.Report = EventBuildFailed, buildReport(res, b.name)
	}
	b.emit(ev)
}

func (b *relayBackend) Start(ctx context.Context) result.Build { return b.cycle(ctx, b.hooks.Start) }

func (b *relayBackend) Reload(ctx context.Context) result.Build { return b.cycle(ctx, b.hooks.Reload) }

// cycle runs a start or a reload: hook, or a restart alone. The mux
// applies its result itself.
func (b *relayBackend) cycle(ctx context.Context, hook func(context.Context) result.Build) result.Build {
	b.emit(Event{Kind: EventStarting})
	if hook != nil {
		return hook(ctx)
	}
	rs, _ := b.Restart(ctx)
	return result.Build{Skipped: true, OK: true, Restart: rs}
}

func (b *relayBackend) Close() {
	b.once.Do(func() {
		b.stop()
		<-b.ran
		b.Relay.Close()
	})
}

// eventOf is the event that reports a start's or reload's result of
// server name.
func eventOf(res result.Build, name string) Event {
	ev := Event{Build: &res}
	if rs := res.Restart; rs != nil {
		ev.Gen, ev.Pid = rs.Gen, rs.Pid
	}
	switch {
	case !res.OK:
		ev.Kind, ev.Report = EventBuildFailed, buildReport(res, name)
	case res.Restart != nil && res.Restart.Err != nil:
		ev.Kind, ev.Report, ev.Pid = EventCrashed, res.Restart.Err.Error(), 0
	default:
		ev.Kind = EventUp
	}
	return ev
}

// buildReport is the agent's report of a failed build of server name.
func buildReport(res result.Build, name string) string {
	return texts.BuildFailed(res.Err, cmp.Or(res.Errors, res.Output), texts.ReloadHint(name))
}
