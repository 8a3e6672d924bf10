package mux

// This file is the mux's only contact with package relay.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/mcpflow/mcpflow/internal/wire"
	"github.com/mcpflow/mcpflow/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	// its relay is made (cmd sets [servers.NAME.relay] here). Command,
	// Tool, OnEvent and the loggers are the mux's and are set afterwards.
	Configure func(spec ServerSpec, c *relay.Config)
	Logger    *slog.Logger // nil = discard; each server's records carry server=NAME
	Version   string       // mcpflow's version
	// Drain is every server's relay.Config.Drain (mux.drain).
	Drain time.Duration
}

// closeWait bounds how long Close waits for the relay to finish writing
// to the mux's client before it closes that pipe under it.
const closeWait = 2 * time.Second

// relayTool is the name under which each relay lists its own recompile
// tool; the mux hides it (reload_server replaces it).
const relayTool = "mcpflow_mux_internal_recompile"

// NewRelayBackends returns the default factory: each server is a
// relay.Relay that owns the child process, served over two in-memory pipes.
func NewRelayBackends(o RelayOptions) BackendFactory {
	return func(spec ServerSpec, emit func(Event)) (Backend, error) {
		if spec.CLI != nil {
			return nil, errors.New("CLI tools (cli_schema) are not available in this mcpflow: give command instead")
		}
		if o.NewHooks == nil && (spec.Build != "" || len(spec.Watch) > 0) {
			return nil, fmt.Errorf("build and watch are not available in this mcpflow (no builder is wired): leave them out, or build the server yourself before add_server")
		}
		logger := o.Logger
		if logger == nil {
			logger = slog.New(slog.DiscardHandler)
		}
		logger = logger.With("server", spec.Name)
		b := &relayBackend{emit: emit, log: logger, done: make(chan struct{})}
		onCrash := spec.OnCrash
		if onCrash == "" && spec.Source == "agent" {
			onCrash = "wait"
		}
		setting := fmt.Sprintf("servers.%s.run.command in mcpflow.toml", spec.Name)
		if spec.Source == "agent" {
			setting = "the command and args given to add_server"
		}
		rc := relay.Config{
			Child: relay.Child{
				Command:     spec.Command,
				Shell:       spec.Shell,
				Dir:         spec.Dir,
				ExtraEnv:    spec.Env,
				StopTimeout: spec.StopTimeout,
				Setting:     setting,
			},
			OnCrash: onCrash,
			Drain:   o.Drain,
		}
		if o.Configure != nil {
			o.Configure(spec, &rc)
		}
		// The mux's client waits for the first build itself (add_server's
		// caller, or Run's StartWait): the relay must not answer the
		// handshake alone meanwhile.
		rc.First = relay.First{Grace: 24 * time.Hour}
		rc.Tool = relayTool
		rc.CallTool = ""
		rc.OnEvent = b.onEvent
		rc.Logger = logger
		rc.ServerLogger = logger.With("stream", "stderr")
		rc.Version = o.Version
		b.r = relay.New(rc)
		if o.NewHooks != nil {
			h, err := o.NewHooks(spec.Name, spec, b.r, b.noteBuild)
			if err != nil {
				return nil, err
			}
			b.hooks = h
		}
		// The MCP client talks to the relay over two pipes, framed on both
		// ends by wire.Reader like any other stream.
		c2rR, c2rW := io.Pipe()
		r2cR, r2cW := io.Pipe()
		b.c2rW, b.r2cR = c2rW, r2cR
		b.transport = &wire.Transport{In: wire.NewReader(r2cR, rc.MaxMessage), Out: c2rW, Log: logger}
		b.ctx, b.cancel = context.WithCancel(context.Background())
		go func() {
			defer close(b.done)
			_ = b.r.Serve(b.ctx, wire.NewReader(c2rR, rc.MaxMessage), r2cW)
			c2rR.Close()
			r2cW.Close()
		}()
		if b.hooks.Run != nil {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.hooks.Run(b.ctx)
			}()
		}
		return b, nil
	}
}

type relayBackend struct {
	r     *relay.Relay
	hooks Hooks
	emit  func(Event)
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
	once   sync.Once

	c2rW      *io.PipeWriter  // the relay's input
	r2cR      *io.PipeReader  // the relay's output, read by the mux's client
	transport *wire.Transport // the MCP client's connection to the relay

	mu    sync.Mutex
	crash string // the report of the child's crash, until the next starts
}

// onEvent turns the relay's events into the mux's. It runs on the relay's
// event goroutine, in order, with no relay lock held.
func (b *relayBackend) onEvent(ev relay.Event) {
	switch ev.Kind {
	case relay.Starting:
		b.mu.Lock()
		b.crash = ""
		b.mu.Unlock()
		b.emit(Event{Kind: EventStarting, Gen: ev.Gen, Pid: ev.Pid})
	case relay.Up:
		b.emit(Event{Kind: EventUp, Gen: ev.Gen, Pid: ev.Pid})
	case relay.Crashed, relay.RestartFailed:
		b.mu.Lock()
		b.crash = ev.Report
		b.mu.Unlock()
		b.emit(Event{Kind: EventCrashed, Gen: ev.Gen, Report: ev.Report})
	}
	// relay.BuildFailed comes from noteBuild, which reports it with the
	// whole build.
}

// noteBuild reports a build cycle's result to the relay and the mux.
func (b *relayBackend) noteBuild(res result.Build) {
	b.r.NoteBuild(res)
	if res.Canceled {
		return
	}
	ev := Event{Kind: EventBuilt, Build: &res}
	if !res.OK {
		ev.Kind, ev.Report = EventBuildFailed, buildReport(res)
	}
	b.emit(ev)
}

// standIn reports whether a handshake result is the relay's own answer,
// given when no child could answer (a failed first build, a child that
// died at once): it describes the relay, not the child that serves later.
func standIn(init *mcp.InitializeResult) bool {
	return init != nil && init.ServerInfo != nil && init.ServerInfo.Name == "mcpflow" && strings.Contains(init.Instructions, relayTool)
}

// CheckHandshake tells a child's handshake from the relay's stand-in
// answer (the child died before it could answer) and returns the crash
// report then.
func (b *relayBackend) CheckHandshake(init *mcp.InitializeResult) error {
	if !standIn(init) {
		return nil
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		b.mu.Lock()
		report := b.crash
		b.mu.Unlock()
		if report != "" {
			return errors.New(report)
		}
		if time.Now().After(deadline) {
			return errors.New("the MCP server is not running (it exited before the handshake)")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *relayBackend) Transport() mcp.Transport { return b.transport }

func (b *relayBackend) Start(ctx context.Context) result.Build {
	return b.cycle(ctx, b.hooks.Start)
}

func (b *relayBackend) Reload(ctx context.Context) result.Build {
	return b.cycle(ctx, b.hooks.Reload)
}

func (b *relayBackend) cycle(ctx context.Context, hook func(context.Context) result.Build) result.Build {
	b.emit(Event{Kind: EventStarting})
	var res result.Build
	if hook != nil {
		res = hook(ctx)
	} else {
		res = restartOnly(ctx, b.r)
	}
	ev := eventOf(res)
	b.emit(ev)
	return res
}

// eventOf is the event that reports a start's or reload's result.
func eventOf(res result.Build) Event {
	ev := Event{Build: &res}
	if rs := res.Restart; rs != nil {
		ev.Gen, ev.Pid = rs.Gen, rs.Pid
	}
	switch {
	case !res.OK:
		ev.Kind, ev.Report = EventBuildFailed, buildReport(res)
	case res.Restart != nil && res.Restart.Err != nil:
		ev.Kind, ev.Report, ev.Pid = EventCrashed, res.Restart.Err.Error(), 0
	default:
		ev.Kind = EventUp
	}
	return ev
}

// restartOnly restarts r without a build and reports it as a skipped
// build followed by the restart: what a server without a build step does
// on start and reload.
func restartOnly(ctx context.Context, r *relay.Relay) result.Build {
	rs, _ := r.Restart(ctx)
	return result.Build{Skipped: true, OK: true, Restart: rs}
}

func buildReport(res result.Build) string {
	s := "the build failed"
	if res.Err != nil {
		s = fmt.Sprintf("the build failed (%v)", res.Err)
	}
	if res.Errors != "" {
		s += ":\n" + strings.TrimRight(res.Errors, "\n")
	} else if res.Output != "" {
		s += ":\n" + strings.TrimRight(res.Output, "\n")
	}
	return s
}

func (b *relayBackend) Close() {
	b.once.Do(func() {
		b.cancel()
		b.wg.Wait()
		b.c2rW.Close()
		select {
		case <-b.done:
		case <-time.After(closeWait):
			// The relay is stuck writing to the mux's client, which no
			// longer reads (its session is closing): its last answers have
			// nobody to reach.
			b.r2cR.CloseWithError(io.ErrClosedPipe)
			<-b.done
		}
		b.emit(Event{Kind: EventStopped})
	})
}
