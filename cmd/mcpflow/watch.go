package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/charmbracelet/log"

	"github.com/mcpflow/mcpflow/builder"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/protocol/bridge"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/relay"
	"github.com/mcpflow/mcpflow/watcher"
)

const watchUsage = `Usage:
  mcpflow watch [-c FILE] [--http ADDR]
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

Flags:
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
	cmdArgs, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	cfg, err := watchConfig(e, *cfgPath, *build, cmdArgs)
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitUsage
	}
	return runSession(e, x, cfg, rf, func(ctx context.Context, logger *slog.Logger, ring *logring.Ring) error {
		return serve(ctx, cfg, logger, ring, wire.NewReader(e.stdin, int(cfg.Relay.MaxMessage)), e.stdout)
	})
}

// runFlags are the flags every serving command (watch, mux) takes.
type runFlags struct{ logFile, logLevel, traffic, http *string }

func addRunFlags(fs *flag.FlagSet) runFlags {
	return runFlags{
		logFile:  fs.String("log-file", "", "also write the log to this file"),
		logLevel: fs.String("log-level", "", "debug | info | warn | error (overrides log.level)"),
		traffic:  fs.String("traffic", "", "record every message, both ways, to this file (JSON Lines; log.traffic)"),
		http:     httpFlag(fs),
	}
}

// runSession applies f to cfg, opens the log (stderr, the log file, the
// in-memory ring for mcpflow logs) and runs serve until the session ends,
// returning the exit code. Every way the run ends goes through serve's
// return, which stops every child, its group and any running build first:
// stdin EOF (nil), a fatal error, or x's context (a signal, a broken
// stdout or stderr, the parent exiting: a clean shutdown).
func runSession(e env, x *exitWatch, cfg *config.Config, f runFlags, serve func(ctx context.Context, logger *slog.Logger, ring *logring.Ring) error) int {
	if *f.logFile != "" {
		cfg.Log.File = absFrom(mustGetwd(e), *f.logFile)
	}
	if *f.traffic != "" {
		cfg.Log.Traffic = absFrom(mustGetwd(e), *f.traffic)
	}
	if *f.logLevel != "" {
		cfg.Log.Level = *f.logLevel
		if err := cfg.Validate(); err != nil {
			fmt.Fprintln(e.stderr, "mcpflow:", err)
			return exitUsage
		}
	}
	if *f.http != "" {
		if msg := config.ListenProblem(*f.http); msg != "" {
			fmt.Fprintln(e.stderr, "mcpflow: --http:", msg)
			return exitUsage
		}
		cfg.HTTP.Listen = *f.http
	}
	ring := logring.New(0)
	logger, closeLog, err := newRunLogger(x.stderr, ring, cfg.Log)
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	defer closeLog()
	if isTerminal(e.stdin) && cfg.HTTP.Listen == "" {
		logger.Warn("stdin is a terminal: mcpflow speaks MCP on stdin/stdout, so start it from your MCP client (\"mcpflow init\" prints the setup) or run \"make demo\" to see it work")
	}
	x.start(logger)
	defer startGuard(logger)()
	if err := serve(x.ctx, logger, ring); err != nil {
		logger.Error("mcpflow stopped", "err", err)
		return exitFailure
	}
	return exitOK
}

// watchConfig loads the config file, or builds one from the command line
// after "--".
func watchConfig(e env, path, build string, cmdArgs []string) (*config.Config, error) {
	if len(cmdArgs) > 0 {
		if path != "" {
			return nil, fmt.Errorf("give either -c FILE or -- CMD, not both")
		}
		wd, err := e.getwd()
		if err != nil {
			return nil, err
		}
		cfg := zeroConfig(wd, cmdArgs, build)
		return cfg, cfg.Validate()
	}
	if build != "" {
		return nil, fmt.Errorf("--build goes with -- CMD; with a config file, set build.command in it")
	}
	if path == "" {
		wd, err := e.getwd()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(wd, "mcpflow.toml")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no mcpflow.toml in %s: run \"mcpflow init\" to write one, pass -c FILE, or run \"mcpflow watch -- ./your-server\"", wd)
		}
	}
	return config.Load(path)
}

// serve composes the parts of cfg's mode and runs until the client
// leaves or a signal arrives: one [run] server through its relay, a mux
// ([servers.NAME]) or a CLI ([cli]), to the client on in and stdout, or to
// the clients of the HTTP front ([http] listen, --http). It returns after
// every child, build and watch has stopped.
func serve(ctx context.Context, cfg *config.Config, logger *slog.Logger, ring *logring.Ring, in wire.Stream, stdout io.Writer) error {
	switch cfg.Mode() {
	case config.Mux:
		return serveMux(ctx, cfg, logger, ring, in, stdout)
	case config.CLI:
		return serveCLI(ctx, cfg, logger, ring, in, stdout)
	}
	run, err := openRun(cfg, ring, logger)
	if err != nil {
		return err
	}
	defer run.close() // every way serve returns removes the control socket
	charm := charmLogger(logger)
	rc := relayConfig(cfg.Run, cfg.Relay, run.trafficHook(""), logger)
	rc.First = relay.First{Grace: cfg.Relay.StartupGrace, Record: recordFile(cfg), Key: recordKey(cfg)}
	rc.Logger, rc.ServerLogger = logger, slog.New(charm.WithPrefix("server"))
	rl := relay.New(rc)
	b := builder.New(withBuildCache(cfg, slog.New(charm.WithPrefix("build")), buildConfig(cfg, slog.New(charm.WithPrefix("build")), charm, func(res result.Build) {
		rl.NoteBuild(res)
		run.builds.note(res)
	})), rl)
	rl.SetRecompiler(b)
	run.listen(control.ModeSingle, &singleTarget{name: serverName(cfg), rl: rl, recompile: b, builds: &run.builds})

	var w *watcher.Watcher
	if cfg.Watch.Enabled {
		wcfg := watchConfigOf(cfg)
		wcfg.Logger = slog.New(charm.WithPrefix("watch"))
		if w, err = watcher.New(wcfg); err != nil {
			rl.Close()
			return fmt.Errorf("watch: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buildAndWatch(ctx, b, w, logger, "root", cfg.Dir)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.Startup(ctx)
	}()
	logger.Info("mcpflow started", "version", version(), "config", orFlags(cfg.File), "run", cfg.Run.Command.String())
	if run.http != nil {
		err = run.http.Serve(ctx, rl)
		rl.Close()
	} else {
		err = rl.Serve(ctx, in, stdout)
	}
	cancel()
	wg.Wait()
	return err
}

// relayConfig is the relay of a server with run and r ([run] and [relay],
// or a mux server's [servers.NAME.run] and [servers.NAME.relay]): the one
// mapping of the config onto relay.Config. traffic records the server hop;
// the era bridge logs to logger.
func relayConfig(run config.RunConfig, r config.RelayConfig, traffic func(hop string, toServer bool, gen int, msg []byte), logger *slog.Logger) relay.Config {
	return relay.Config{
		Child: relay.Child{
			Command:     run.Command.Argv,
			Shell:       run.Command.Shell,
			Dir:         run.Cwd,
			ExtraEnv:    run.Env,
			StopTimeout: run.StopTimeout,
			Link:        childLink(run, r),
		},
		EnvOverridable:   run.EnvOverridable,
		Tool:             r.Tool,
		CallTool:         r.CallTool,
		MaxMessage:       int(r.MaxMessage),
		Notices:          r.Notices,
		ServerSuffix:     r.ServerSuffix,
		Queue:            relay.Queue{Size: r.QueueSize, Bytes: int(r.QueueBytes), Timeout: r.QueueTimeout},
		Drain:            r.Drain,
		HandshakeTimeout: r.Handshake,
		OnCrash:          r.OnCrash,
		RestartMarker:    r.RestartMarker,
		Version:          version(),
		Traffic:          traffic,
		Bridge:           bridge.Options{Log: logger.With("component", "bridge"), Handshake: r.Handshake}.New,
	}
}

func orFlags(file string) string {
	if file == "" {
		return "(command line)"
	}
	return file
}

// buildConfig is the builder of cfg's [build] in cfg's folder, logging to
// buildLog; each cycle's result is logged to logger (logCycle), then given
// to note.
func buildConfig(cfg *config.Config, buildLog *slog.Logger, logger *log.Logger, note func(result.Build)) builder.Config {
	return builder.Config{
		Command: cfg.Build.Command.Argv,
		Shell:   cfg.Build.Command.Shell,
		Dir:     cfg.Dir,
		Timeout: cfg.Build.Timeout,
		Logger:  buildLog,
		OnResult: func(res result.Build) {
			if !res.Canceled || !errors.Is(res.Err, context.Canceled) {
				logCycle(logger, res) // a cycle cut short by the end of the run says nothing
			}
			note(res)
		},
	}
}

// logCycle writes the one line a person reads per cycle, e.g.
// "changed server.go (+2) → build 1.21s ✓ → restart 38ms ✓ → tools +reverse".
func logCycle(logger *log.Logger, res result.Build) {
	var parts []string
	switch {
	case len(res.Changed) > 0:
		p := "changed " + res.Changed[0]
		if len(res.Changed) > 1 {
			p += fmt.Sprintf(" (+%d)", len(res.Changed)-1)
		}
		parts = append(parts, p)
	default:
		parts = append(parts, res.Trigger)
	}
	switch {
	case res.Skipped:
	case res.OK:
		parts = append(parts, fmt.Sprintf("build %s ✓", result.Dur(res.Duration)))
	default:
		parts = append(parts, fmt.Sprintf("build %s ✗ (%v)", result.Dur(res.Duration), res.Err))
	}
	rs := res.Restart
	if rs != nil {
		if rs.Err != nil {
			parts = append(parts, fmt.Sprintf("restart ✗ (%s)", firstLine(rs.Err.Error())))
		} else {
			parts = append(parts, fmt.Sprintf("restart %s ✓", result.Dur(rs.Duration)))
			if tools := rs.Tools.String(); tools != "" {
				parts = append(parts, "tools "+tools)
			}
		}
	}
	line := strings.Join(parts, " → ")
	if !res.OK || rs != nil && rs.Err != nil {
		logger.Error(line)
		if res.Errors != "" {
			logger.Error("build errors:\n" + res.Errors)
		}
		return
	}
	logger.Info(line)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// ignoredOutputs lists what a build writes or mcpflow itself writes inside
// the tree, so that they never trigger a build: the run binary, a Go
// build's -o output, the log file.
// recordFile is where the relay keeps what the server said at its last
// good start (relay.First): in the project's .mcpflow folder.
func recordFile(cfg *config.Config) string {
	return filepath.Join(cfg.Dir, ".mcpflow", "last-start.json")
}

// recordKey names what a record was written for: the run command, its
// folder and environment, the build, and the config file's contents. A
// change of any makes an older record unusable.
func recordKey(cfg *config.Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %v %q %q %v %q\n", cfg.Run.Command.Argv, cfg.Run.Command.Shell, cfg.Run.Cwd, cfg.Build.Command.Argv, cfg.Build.Command.Shell, slices.Sorted(maps.Keys(cfg.Run.Env)))
	for _, k := range slices.Sorted(maps.Keys(cfg.Run.Env)) {
		fmt.Fprintf(h, "%q=%q\n", k, cfg.Run.Env[k])
	}
	if cfg.File != "" {
		if b, err := os.ReadFile(absFrom(cfg.Dir, cfg.File)); err == nil {
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// stderrFile is the regular file mcpflow's stderr goes to, if it does
// (Linux: /proc/self/fd/2), else "".
func stderrFile() string {
	fi, err := os.Stderr.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	p, err := os.Readlink("/proc/self/fd/2")
	if err != nil || !filepath.IsAbs(p) {
		return ""
	}
	return p
}

func ignoredOutputs(cfg *config.Config) []string {
	var out []string
	if cfg.Log.File != "" {
		out = append(out, cfg.Log.File, cfg.Log.File+".1")
	}
	if f := stderrFile(); f != "" {
		out = append(out, f) // a client that sends mcpflow's stderr to a file in the tree
	}
	if cfg.Log.Traffic != "" {
		out = append(out, cfg.Log.Traffic, cfg.Log.Traffic+".1")
	}
	if argv := cfg.Run.Command.Argv; len(argv) > 0 && !cfg.Run.Command.Shell && strings.ContainsRune(argv[0], filepath.Separator) {
		out = append(out, absFrom(cfg.Run.Cwd, argv[0]))
	}
	out = append(out, projectOutputs(cfg.Dir)...)
	for _, o := range buildOutputs(cfg.Build.Command) {
		out = append(out, absFrom(cfg.Dir, o))
	}
	return out
}

// buildOutputs finds "-o PATH" / "--out-dir PATH" style outputs in a build
// command.
func buildOutputs(c config.Command) []string {
	var words []string
	if c.Shell && len(c.Argv) > 0 {
		words = strings.Fields(c.Argv[0])
	} else {
		words = c.Argv
	}
	var out []string
	for i, w := range words {
		switch {
		case (w == "-o" || w == "--out-dir" || w == "--outdir" || w == "--outDir") && i+1 < len(words):
			out = append(out, strings.Trim(words[i+1], `"'`))
		case strings.HasPrefix(w, "-o="), strings.HasPrefix(w, "--outDir="), strings.HasPrefix(w, "--outdir="):
			_, v, _ := strings.Cut(w, "=")
			out = append(out, strings.Trim(v, `"'`))
		}
	}
	return out
}

func absFrom(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func mustGetwd(e env) string {
	wd, err := e.getwd()
	if err != nil {
		return "."
	}
	return wd
}
