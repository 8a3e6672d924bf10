package mux

// This file is the mux's only contact with package relay.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/log"
	"github.com/mcpflow/mcpflow/internal/result"
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
// neither.
type HooksFactory func(name string, spec ServerSpec, r *relay.Relay) (Hooks, error)

// RelayOptions configure the default backends.
type RelayOptions struct {
	NewHooks HooksFactory // nil = no build, no watch
	Logger   *log.Logger  // nil = discard
	Version  string       // mcpflow's version
}

// relayTool is the name under which each relay lists its own recompile
// tool; the mux hides it (reload_server replaces it).
const relayTool = "mcpflow_mux_internal_recompile"

// NewRelayBackends returns the default factory: each server is a
// relay.Relay that owns the child process, served over two in-memory pipes.
func NewRelayBackends(o RelayOptions) BackendFactory {
	return func(spec ServerSpec, emit func(Event)) (Backend, error) {
		if o.NewHooks == nil && (spec.Build != "" || len(spec.Watch) > 0) {
			return nil, fmt.Errorf("build and watch are not available in this mcpflow (no builder is wired): leave them out, or build the server yourself before add_server")
		}
		logger := o.Logger
		if logger == nil {
			logger = log.New(io.Discard)
		}
		b := &relayBackend{emit: emit, log: logger.WithPrefix(spec.Name), done: make(chan struct{})}
		onCrash := spec.OnCrash
		if onCrash == "" && spec.Source == "agent" {
			onCrash = "wait"
		}
		tap := log.NewWithOptions(&logTap{b: b}, log.Options{Formatter: log.JSONFormatter, Level: log.DebugLevel})
		b.r = relay.New(relay.Config{
			Command:     spec.Command,
			Shell:       spec.Shell,
			Dir:         spec.Dir,
			ExtraEnv:    spec.Env,
			StopTimeout: spec.StopTimeout,
			Tool:        relayTool,
			OnCrash:     onCrash,
			Logger:      slog.New(tap),
			Version:     o.Version,
		})
		if o.NewHooks != nil {
			h, err := o.NewHooks(spec.Name, spec, b.r)
			if err != nil {
				return nil, err
			}
			b.hooks = h
		}
		var c2rW *io.PipeWriter
		b.c2rR, c2rW = io.Pipe()
		b.r2cR, b.r2cW = io.Pipe()
		b.c2rW = c2rW
		b.ctx, b.cancel = context.WithCancel(context.Background())
		go func() {
			defer close(b.done)
			_ = b.r.Serve(b.ctx, b.c2rR, b.r2cW)
			b.r2cW.Close()
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
	log   *log.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
	once   sync.Once

	c2rR *io.PipeReader
	c2rW *io.PipeWriter
	r2cR *io.PipeReader
	r2cW *io.PipeWriter

	mu    sync.Mutex
	pid   int
	gen   int
	tail  []string // the child's last stderr lines
	crash string   // the report of the child's crash, until the next starts
}

// CheckHandshake tells a child's handshake from the relay's stand-in
// answer (the child died before it could answer) and returns the crash
// report then.
func (b *relayBackend) CheckHandshake(init *mcp.InitializeResult) error {
	if init == nil || init.ServerInfo == nil || init.ServerInfo.Name != "mcpflow" || !strings.Contains(init.Instructions, relayTool) {
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

func (b *relayBackend) Transport() mcp.Transport {
	return &mcp.IOTransport{Reader: b.r2cR, Writer: b.c2rW, MaxLineLength: -1}
}

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
		res = RestartOnly(ctx, b.r)
	}
	b.mu.Lock()
	if res.Restart != nil && res.Restart.Err == nil {
		res.Restart.Pid, res.Restart.Gen = b.pid, b.gen
	}
	ev := Event{Gen: b.gen, Pid: b.pid, Build: &res}
	b.mu.Unlock()
	switch {
	case !res.OK:
		ev.Kind, ev.Report = EventBuildFailed, buildReport(res)
	case res.Restart != nil && res.Restart.Err != nil:
		ev.Kind, ev.Report, ev.Pid = EventCrashed, res.Restart.Err.Error(), 0
	default:
		ev.Kind = EventUp
	}
	b.emit(ev)
	return res
}

// RestartOnly restarts r without a build and reports it as a skipped
// build followed by the restart: what a server without a build step does
// on start and reload.
func RestartOnly(ctx context.Context, r *relay.Relay) result.Build {
	t0 := time.Now()
	_, err := r.Restart(ctx)
	return result.Build{Skipped: true, OK: true, Restart: &result.Restart{Err: err, Duration: time.Since(t0)}}
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
		b.r2cR.Close()
		<-b.done
		b.emit(Event{Kind: EventStopped})
	})
}

// logTap reads the relay's log (JSON lines) for the child's state until
// the relay reports it as typed events, and forwards every record to the
// mux's logger.
type logTap struct {
	b   *relayBackend
	mu  sync.Mutex
	buf []byte
}

func (t *logTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.line(t.buf[:i])
		t.buf = t.buf[i+1:]
	}
	return len(p), nil
}

func (t *logTap) line(line []byte) {
	var rec map[string]any
	if json.Unmarshal(line, &rec) != nil {
		return
	}
	b := t.b
	msg, _ := rec["msg"].(string)
	prefix, _ := rec["prefix"].(string)
	lvl, _ := rec["level"].(string)
	var kv []any
	for k, v := range rec {
		if k != "msg" && k != "prefix" && k != "level" && k != "time" {
			kv = append(kv, k, v)
		}
	}
	level, err := log.ParseLevel(lvl)
	if err != nil {
		level = log.InfoLevel
	}
	if prefix == "server" {
		b.log.Log(level, msg)
		b.mu.Lock()
		b.tail = append(b.tail, msg)
		if len(b.tail) > 40 {
			b.tail = b.tail[len(b.tail)-40:]
		}
		b.mu.Unlock()
		return
	}
	b.log.Log(level, msg, kv...)
	switch msg {
	case "server started":
		b.mu.Lock()
		if p, ok := rec["pid"].(float64); ok {
			b.pid = int(p)
		}
		if g, ok := rec["gen"].(float64); ok {
			b.gen = int(g)
		}
		b.tail, b.crash = nil, ""
		b.mu.Unlock()
	case "server crashed":
		b.mu.Lock()
		report := fmt.Sprintf("the MCP server exited unexpectedly (%v) after %v.", rec["status"], rec["uptime"])
		if len(b.tail) > 0 {
			report += "\nLast lines of its stderr:\n" + strings.Join(b.tail, "\n")
		}
		ev := Event{Kind: EventCrashed, Gen: b.gen, Report: report}
		b.pid, b.crash = 0, report
		b.mu.Unlock()
		b.emit(ev)
	case "server restarted after its crash":
		b.mu.Lock()
		ev := Event{Kind: EventUp, Gen: b.gen, Pid: b.pid}
		b.mu.Unlock()
		b.emit(ev)
	}
}
