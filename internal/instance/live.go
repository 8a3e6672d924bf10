package instance

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/mcpflow/mcpflow/internal/watcher"
)

// engine is what one config serves — one server's relay, a mux, a [cli]
// program — behind the run's front.
type engine struct {
	opener     wire.Opener // each client's session: the front's, control's own
	mode       string      // control's name for it
	target     control.Target
	inputEnded func()               // the stdio client's input ended; nil = nothing to say
	tell       func(problem string) // tells the agent why the config file no longer loads ("": it loads again); nil = nothing to say
	stop       func()               // stops every child, build and watch and waits for them
}

// startEngine starts the engine of cfg's mode.
func startEngine(ctx context.Context, cfg *config.Config, logger *slog.Logger, run *instanceRun) (*engine, error) {
	switch cfg.Mode() {
	case config.Mux:
		return startMux(ctx, cfg, logger, run)
	case config.CLI:
		return startCLI(ctx, cfg, logger, run)
	}
	return startSingle(ctx, cfg, logger, run)
}

// brokenEngine serves a client while the config does not load: mcpflow
// answers for itself (the Go SDK's server), with problem — the file,
// line, column and fix, as check prints them — as its instructions and as
// the answer of its one tool, the rebuild tool.
func brokenEngine(problem string, logger *slog.Logger) *engine {
	text := texts.BrokenConfig(problem, relay.DefaultTool)
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpflow", Version: Version}, &mcp.ServerOptions{Instructions: text})
	srv.AddTool(&mcp.Tool{Name: relay.DefaultTool, Description: texts.RecompileDescription, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	o := wire.SDKServer{Server: srv, Log: logger}
	return &engine{opener: o, mode: control.ModeSingle, target: brokenTarget(problem), stop: func() {}}
}

// brokenTarget is control's view of a run whose config does not load.
type brokenTarget string

func (t brokenTarget) Status() control.Status { return control.Status{} }

func (t brokenTarget) Rebuild(context.Context, string) (result.Build, error) {
	return result.Build{}, errors.New(string(t))
}

// Serve runs cfg's engine behind the run's front (stdio, or [http]
// listen) until the client leaves or ctx ends, and returns once every
// child, build and watch has stopped. broken, when not "", is why cfg's
// file did not load: the session is served by brokenEngine until it does.
// When cfg comes from a file, the file is watched: each edit that loads
// and changes the config starts a new engine with it, and the clients'
// sessions move to it (wire.Swap: they are told their lists changed); the
// log, the front and the control socket keep the settings they started
// with.
func Serve(ctx context.Context, cfg *config.Config, broken string, logger *slog.Logger, ring *logring.Ring, in wire.Stream, stdout io.Writer) error {
	run, err := openRun(cfg, ring, logger)
	if err != nil {
		return err
	}
	defer run.close() // every way serve returns removes the control socket
	l := &live{cfg: cfg, log: logger, run: run}
	if broken == "" {
		l.cur, err = startEngine(ctx, cfg, logger, run)
		if err != nil {
			return err
		}
		l.loaded = loadPristine(cfg)
	} else {
		logger.Error("the config does not load: serving the session until it is fixed", "err", broken)
		l.cur, l.problem = brokenEngine(broken, logger), broken
	}
	l.front = wire.NewSwap(l.cur.opener)
	run.listen(l.cur.mode, l, wire.OpenerFunc(func(c wire.Client) wire.Session { return l.current().opener.Open(c) }))

	wctx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if cfg.File != "" {
		if changes, err := watcher.WatchFile(wctx, cfg.File, 200*time.Millisecond); err != nil {
			logger.Warn("the config file is not watched: edits apply at the next start", "file", cfg.File, "err", err)
		} else {
			wg.Go(func() {
				for range changes {
					l.reload(wctx)
				}
			})
		}
	}
	err = run.serveFront(ctx, l.front, in, stdout, func() {
		if e := l.current(); e.inputEnded != nil {
			e.inputEnded()
		}
	})
	switch {
	case ctx.Err() != nil:
		logger.Info("shutting down", "reason", "signal")
	case err != nil:
		logger.Error("reading from client", "err", err)
	case run.http == nil:
		logger.Info("shutting down", "reason", "client closed stdin")
	}
	stopWatch()
	wg.Wait()
	l.current().stop()
	return err
}

// live is a run's current engine and what changes it.
type live struct {
	cfg   *config.Config
	log   *slog.Logger
	run   *instanceRun
	front *wire.Swap

	mu  sync.Mutex // guards cur; the rest is the reload goroutine's
	cur *engine

	loaded  *config.Config // the file as last loaded; nil while broken
	problem string         // why the file does not load; "" when it does
}

func (l *live) current() *engine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}

// Status is the engine's, with the HTTP front's sessions.
func (l *live) Status() control.Status {
	st := l.current().target.Status()
	st.HTTP = l.run.httpStatus()
	return st
}

func (l *live) Rebuild(ctx context.Context, name string) (result.Build, error) {
	return l.current().target.Rebuild(ctx, name)
}

// reload reads the config file again: a file that loads and differs
// starts a new engine under the sessions; one that does not load is
// logged (and, while broken, becomes what the agent reads).
func (l *live) reload(ctx context.Context) {
	cfg, err := loadAs(l.cfg.File, l.cfg)
	if err != nil {
		if err.Error() == l.problem {
			return
		}
		l.log.Error("the config does not load; what serves the session keeps its settings", "err", err)
		if l.loaded == nil {
			l.swap(brokenEngine(err.Error(), l.log), nil, err.Error())
		} else if l.problem = err.Error(); l.cur.tell != nil {
			l.cur.tell(texts.ConfigProblem(l.problem))
		}
		return
	}
	if l.loaded != nil && reflect.DeepEqual(l.loaded, cfg) {
		if l.problem != "" && l.cur.tell != nil {
			l.cur.tell("")
		}
		l.problem = ""
		return
	}
	next, err := startEngine(ctx, cfg, l.log, l.run)
	if err != nil {
		l.log.Error("the new config did not start; what serves the session keeps its settings", "err", err)
		return
	}
	l.log.Info("the config changed: the server restarts with the new settings (log, http and control settings apply at mcpflow's next start)", "file", l.cfg.File)
	l.swap(next, cfg, "")
}

// swap makes next the engine the sessions are served by, and stops the
// old one.
func (l *live) swap(next *engine, loaded *config.Config, problem string) {
	l.mu.Lock()
	old := l.cur
	l.cur, l.loaded, l.problem = next, loaded, problem
	l.mu.Unlock()
	l.front.Replace(next.opener)
	old.stop()
}

// loadAs loads the config file at path with the settings the command
// line gave prev (the log and the front, which a reload keeps).
func loadAs(path string, prev *config.Config) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	cfg.Log, cfg.HTTP = prev.Log, prev.HTTP
	return cfg, nil
}

// loadPristine is cfg's file as loadAs reads it, for comparing the edits
// with; nil when cfg has no file.
func loadPristine(cfg *config.Config) *config.Config {
	if cfg.File == "" {
		return nil
	}
	c, _ := loadAs(cfg.File, cfg)
	return c
}
