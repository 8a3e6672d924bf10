package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/instance"
	"github.com/mcpflow/mcpflow/internal/ops/logging"
	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/ops/statedir"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

const watchUsage = `  mcpflow watch [-c FILE] [--http ADDR]
  mcpflow watch [--build CMD] [--log-file FILE] [--http ADDR] -- CMD [ARGS...]

Relays the MCP client on stdin/stdout to your server, rebuilding and
restarting it when its sources change or the agent calls the recompile tool.
Without a config file, CMD is the server, there is no build step unless
--build gives one, and the watched files come from the same project
detection as "mcpflow init".

With --http ADDR (or [http] listen), clients connect over Streamable HTTP
at http://ADDR/mcp instead, as many as like, each its own session, kept
across every restart of the server; stdin is not read, and mcpflow runs
until Ctrl-C or SIGTERM. ADDR is host:port (127.0.0.1:0 = a free port;
the URL is logged at start).
`

func cmdWatch(e env, args []string) int {
	// Caught from the start, so that no write to a broken stderr kills
	// mcpflow with SIGPIPE.
	x := newExitWatch(e)
	defer x.stop()
	fs := newFlagSet(e, "watch", watchUsage)
	cfgPath := fs.String("c", "", "config file (default ./mcpflow.toml)")
	build := fs.String("build", "", "build command, run by sh -c (only with -- CMD)")
	rf := addRunFlags(fs)
	return fs.parse(args, func(cmdArgs []string) int {
		cfg, err := watchConfig(e, *cfgPath, *build, cmdArgs)
		return runSession(e, x, cfg, err, rf)
	})
}

// runFlags are the flags every serving command (watch, mux) takes.
type runFlags struct{ logFile, logLevel, traffic, http *string }

func addRunFlags(fs *flagSet) runFlags {
	return runFlags{
		logFile:  fs.String("log-file", "", "also write the log to this file"),
		logLevel: fs.String("log-level", "", "debug | info | warn | error (overrides log.level)"),
		traffic:  fs.String("traffic", "", "record every message, both ways, to this file (JSON Lines; log.traffic)"),
		http:     fs.String("http", "", "serve MCP over Streamable HTTP at http://ADDR/mcp (ADDR = host:port, port 0 = a free one) instead of stdin/stdout; [http] listen"),
	}
}

// runSession applies f to cfg, opens the log and serves the session until
// it ends. cfgErr is the config's error: an errBroken is served, any other
// is a usage error. Every way the run ends goes through instance.Serve's
// return, which stops every child, its group and any running build first.
func runSession(e env, x *exitWatch, cfg *config.Config, cfgErr error, f runFlags) int {
	problem := ""
	if cfgErr != nil {
		var broken errBroken
		if !errors.As(cfgErr, &broken) {
			return e.fail(exitUsage, "mcpflow: %v", cfgErr)
		}
		problem = broken.Error()
	}
	if *f.logFile != "" {
		cfg.Log.File = config.AbsFrom(mustGetwd(e), *f.logFile)
	}
	if *f.traffic != "" {
		cfg.Log.Traffic = config.AbsFrom(mustGetwd(e), *f.traffic)
	}
	if *f.logLevel != "" {
		if msg := config.ValueProblem("log.level", *f.logLevel); msg != "" {
			return e.fail(exitUsage, "mcpflow: --log-level: %s", msg)
		}
		cfg.Log.Level = *f.logLevel
	}
	if *f.http != "" {
		if msg := config.ListenProblem(*f.http); msg != "" {
			return e.fail(exitUsage, "mcpflow: --http: %s", msg)
		}
		cfg.HTTP.Listen = *f.http
	}
	if err := statedir.Check(statedir.Of(cfg.Dir)); err != nil {
		return e.fail(exitFailure, "mcpflow: %v", err)
	}
	ring := logring.New(0)
	logger, closeLog, err := logging.Open(x.stderr, ring, cfg.Log)
	if err != nil {
		return e.fail(exitFailure, "mcpflow: %v", err)
	}
	defer closeLog()
	if isTerminal(e.stdin) && cfg.HTTP.Listen == "" {
		logger.Warn("stdin is a terminal: mcpflow speaks MCP on stdin/stdout, so start it from your MCP client (\"mcpflow init\" prints the setup) or run \"make demo\" to see it work")
	}
	x.start(logger)
	defer startGuard(logger)()
	out, restore := pollable(e.stdout, e.stdin)
	defer restore()
	if err := instance.Serve(x.ctx, cfg, problem, logger, ring, wire.NewReader(e.stdin, int(cfg.Relay.MaxMessage)), out); err != nil {
		logger.Error("mcpflow stopped", "err", err)
		return exitFailure
	}
	return exitOK
}

// watchConfig loads the config file, or builds one from the command after "--".
func watchConfig(e env, path, build string, cmdArgs []string) (*config.Config, error) {
	switch {
	case len(cmdArgs) > 0 && path != "":
		return nil, fmt.Errorf("give either -c FILE or -- CMD, not both")
	case len(cmdArgs) == 0 && build != "":
		return nil, fmt.Errorf("--build goes with -- CMD; with a config file, set build.command in it")
	case path != "":
		return loadOrBroken(path)
	}
	wd, err := e.getwd()
	if err != nil {
		return nil, err
	}
	if len(cmdArgs) > 0 {
		cfg := project.ZeroConfig(wd, cmdArgs, build)
		return cfg, cfg.Validate()
	}
	path = filepath.Join(wd, "mcpflow.toml")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no mcpflow.toml in %s: run \"mcpflow init\" to write one, pass -c FILE, or run \"mcpflow watch -- ./your-server\"", wd)
	}
	return loadOrBroken(path)
}

// errBroken is a config file that does not load: mcpflow serves until it is fixed.
type errBroken struct{ err error }

func (e errBroken) Error() string { return e.err.Error() }

// loadOrBroken loads the config file at path, else errBroken and the defaults.
func loadOrBroken(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err == nil {
		return cfg, nil
	}
	d := config.Default(filepath.Dir(path))
	if abs, aerr := filepath.Abs(path); aerr == nil {
		path = abs
	}
	d.File = path
	return d, errBroken{err}
}

func mustGetwd(e env) string {
	if wd, err := e.getwd(); err == nil {
		return wd
	}
	return "."
}
