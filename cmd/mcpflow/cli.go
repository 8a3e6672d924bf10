package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/builder"
	"github.com/mcpflow/mcpflow/clitools"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/relay"
	"github.com/mcpflow/mcpflow/watcher"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveCLI serves [cli]: the CLI's tools to the client on stdin/stdout,
// one process per call (package clitools). The [build] runs at start and
// on every watched change or recompile; after a good build the schema
// command is re-read and the client gets tools/list_changed when the tools
// changed. tools/list and tools/call wait for the first cycle (at most
// relay.startup_grace), so the first list holds the CLI's tools. A call of a tool that is not served
// while the build or the schema is broken answers with why. It returns
// after every call's process group, the build and the watch have stopped.
func serveCLI(ctx context.Context, cfg *config.Config, logger *slog.Logger, ring *logring.Ring, in wire.Stream, stdout io.Writer) error {
	run, err := openRun(cfg, ring, logger)
	if err != nil {
		return err
	}
	defer run.close() // every way serveCLI returns removes the control socket
	c := cfg.CLI
	var b *builder.Builder
	tool := cfg.Relay.Tool
	if tool == "" {
		tool = "-"
	}
	st := &cliState{tool: tool, notices: cfg.Relay.Notices, grace: cfg.Relay.StartupGrace, ready: make(chan struct{})}
	srv := clitools.New(clitools.Config{
		Schema:      c.Schema,
		Command:     c.Command,
		Append:      c.Append,
		Timeout:     c.Timeout,
		MaxOutput:   c.MaxOutput,
		MaxParallel: c.MaxParallel,
		Dir:         c.Cwd,
		Env:         cliEnv(c.Env),
		Logger:      slog.New(charmLogger(logger).WithPrefix("cli")),
		Tool:        tool,
		Recompiler: clitools.RecompilerFunc(func(ctx context.Context, progress func(string)) result.Build {
			return b.Recompile(ctx, progress)
		}),
		Name:    "mcpflow",
		Version: version(),
		Note:    st.note,
	})
	st.srv = srv
	srv.MCPServer().AddReceivingMiddleware(st.middleware)
	charm := charmLogger(logger)
	b = builder.New(buildConfig(cfg, slog.New(charm.WithPrefix("build")), charm, func(res result.Build) {
		st.noteBuild(res)
		run.builds.note(res)
	}), srv)
	run.listen(control.ModeCLI, &cliTarget{
		name:      serverName(cfg),
		recompile: func(ctx context.Context) result.Build { return b.Recompile(ctx, nil) },
		schema:    srv.Schema,
		builds:    &run.builds,
	})

	var w *watcher.Watcher
	if cfg.Watch.Enabled {
		wcfg := watchConfigOf(cfg)
		wcfg.Ignore = append(wcfg.Ignore, cliPrograms(c.Cwd, c.Schema, c.Command)...)
		wcfg.Logger = slog.New(charm.WithPrefix("watch"))
		if w, err = watcher.New(wcfg); err != nil {
			srv.Close()
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
		defer close(st.ready)
		b.Startup(ctx)
	}()
	logger.Info("mcpflow started", "version", version(), "config", orFlags(cfg.File), "cli", strings.Join(c.Schema, " "))
	err = run.serveFront(ctx, srv, in, stdout)
	srv.Close() // every running call's process group is killed and reaped
	cancel()
	wg.Wait()
	return err
}

// cliEnv is the environment of the CLI's processes: mcpflow's, plus env.
func cliEnv(env map[string]string) []string {
	out := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// cliPrograms are the CLI's program files inside the tree (a build writes
// them), so that a build never triggers the next one.
func cliPrograms(dir string, argvs ...[]string) []string {
	var out []string
	for _, argv := range argvs {
		if len(argv) > 0 && strings.ContainsRune(argv[0], filepath.Separator) {
			out = append(out, absFrom(dir, argv[0]))
		}
	}
	return out
}

// cliState is what serveCLI adds around the clitools server: tools/list
// and tools/call wait for the first build and schema read; a call of a
// tool that is not served says why when the build or the schema is
// broken; with relay.notices, a CLI tool's result notes a failed build.
// The note reaches the CLI's tools through clitools' Config.Note.
type cliState struct {
	srv     *clitools.Server
	tool    string        // the recompile tool's name, "-" for none
	notices bool          // relay.notices: note a failed build in call results
	grace   time.Duration // relay.startup_grace: longest wait for ready; 0 = no limit
	ready   chan struct{} // closed when the startup cycle is over

	mu        sync.Mutex
	lastBuild *result.Build // the last cycle that was not canceled
}

// waitReady waits for the startup cycle, at most st.grace, or as long as
// the client waits for a server when it is 0 (relay.ClientWait), so that a
// slow first build never makes the client give up on a silent server; it
// reports whether the cycle is over.
func (st *cliState) waitReady(ctx context.Context, req mcp.Request) (bool, error) {
	grace := st.grace
	if grace <= 0 {
		name := ""
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() != nil && ss.InitializeParams().ClientInfo != nil {
			name = ss.InitializeParams().ClientInfo.Name
		}
		grace = relay.ClientWait(name)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	timeout := t.C
	select {
	case <-st.ready:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// note is the relay.notices note for a CLI tool's result: why the last
// build failed, or "".
func (st *cliState) note() string {
	if !st.notices {
		return ""
	}
	p := st.buildProblem()
	if p == "" {
		return ""
	}
	return "mcpflow note: " + firstLine(p) + "; this call ran the program as it is on disk. " + st.fixHint()
}

func (st *cliState) noteBuild(res result.Build) {
	if res.Canceled {
		return
	}
	st.mu.Lock()
	st.lastBuild = &res
	st.mu.Unlock()
}

// buildProblem says why the last build failed, or "" when it did not.
func (st *cliState) buildProblem() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	b := st.lastBuild
	if b == nil || b.OK || b.Skipped {
		return ""
	}
	msg := fmt.Sprintf("the last build (%s) failed: %v", b.Trigger, b.Err)
	if e := strings.TrimSpace(b.Errors); e != "" {
		msg += "\n" + e
	}
	return msg
}

func (st *cliState) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" && method != "tools/call" {
			return next(ctx, method, req)
		}
		ready, err := st.waitReady(ctx, req)
		if err != nil {
			return nil, err
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil || call.Params.Name == st.tool {
			return next(ctx, method, req)
		}
		name := call.Params.Name
		sch, schemaErr := st.srv.Schema()
		if sch.Tool(name) == nil {
			if !ready {
				msg := fmt.Sprintf("tool %q is not served yet: the first build and schema read are still running; the client gets tools/list_changed when they finish. Retry then", name)
				if st.tool != "-" {
					msg += ", or call " + st.tool + " to wait for them"
				}
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg + "."}}}, nil
			}
			var why []string
			if p := st.buildProblem(); p != "" {
				why = append(why, p)
			}
			if schemaErr != nil {
				why = append(why, "the CLI's tool list could not be read: "+schemaErr.Error())
			}
			if len(why) > 0 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
					Text: fmt.Sprintf("tool %q is not served: %s\n%s", name, strings.Join(why, "\n"), st.fixHint()),
				}}}, nil
			}
		}
		return next(ctx, method, req)
	}
}

func (st *cliState) fixHint() string {
	if st.tool == "-" {
		return "Fix it and save."
	}
	return "Fix it and save, or call " + st.tool + " to rebuild and see the errors."
}

// splitCommandLine splits a command line into words as a POSIX shell
// would, without running one: blanks separate words, '...' keeps its text
// as it is, "..." and a backslash escape the next character. No
// expansion of any kind.
func splitCommandLine(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed \" in %q", s)
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("--cli wants the CLI's schema command, e.g. --cli \"./bin/tool schema --json\"")
	}
	return words, nil
}

// renderCLIConfig writes a commented mcpflow.toml serving the CLI whose
// schema command line is schemaCmd, with p's watch globs; p's build, when
// detected, is suggested in a comment (it may not write the program the
// schema command runs).
func renderCLIConfig(p project, schemaCmd string) (string, []string, error) {
	schema, err := splitCommandLine(schemaCmd)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# mcpflow.toml: serves the command-line program %s as MCP tools, one process per call.\n", schema[0])
	b.WriteString("# Commit it. Paths are relative to this file. Every key: mcpflow.toml.example\n")
	b.WriteString("# in the mcpflow repository, or `mcpflow check` for the resolved settings.\n\n")
	b.WriteString("[build]\n")
	b.WriteString("# Run by sh -c at start and on every change, before the schema is re-read.\n")
	if p.Build != "" {
		b.WriteString("# Detected; uncomment it once it writes the program the schema command runs:\n")
		fmt.Fprintf(&b, "# command = %s\n", config.TOMLString(p.Build))
	} else {
		b.WriteString("# command = \"go build -o bin/tool ./cmd/tool\"\n")
	}
	b.WriteString("timeout = \"10m\"\n\n")
	b.WriteString("[cli]\n")
	b.WriteString("# Prints {\"tools\": [...]}: each tool's name, parameters and cli_command.\n")
	fmt.Fprintf(&b, "schema = %s\n", config.TOMLStrings(schema))
	fmt.Fprintf(&b, "# command = %s   # prefix of every call; default: the schema's program\n", config.TOMLStrings(schema[:1]))
	b.WriteString("# append = [\"--json\"]   # added to every call\n")
	b.WriteString("timeout = \"60s\"        # per call; the call's process group is killed after it\n")
	b.WriteString("max_output = \"4MiB\"    # stdout kept per call; more kills the call\n")
	b.WriteString("max_parallel = 4       # calls running at once; the others wait\n")
	b.WriteString("# env = { LOG_LEVEL = \"debug\" }   # added to the inherited environment\n\n")
	b.WriteString("[watch]\n")
	b.WriteString("# Saving a matching file rebuilds and re-reads the schema.\n")
	b.WriteString("paths = [\".\"]\n")
	if len(p.Include) > 0 {
		fmt.Fprintf(&b, "include = %s\n", config.TOMLStrings(p.Include))
	}
	if len(p.Exclude) > 0 {
		fmt.Fprintf(&b, "exclude = %s\n", config.TOMLStrings(p.Exclude))
	}
	b.WriteString("gitignore = true\n")
	b.WriteString("debounce = \"100ms\"\n\n")
	b.WriteString("[relay]\n")
	b.WriteString("tool = \"recompile\"   # the tool mcpflow adds for the agent\n\n")
	b.WriteString("[log]\n")
	b.WriteString("level = \"info\"\n")
	b.WriteString("# Clients hide a server's stderr: this file is where you see what mcpflow did.\n")
	b.WriteString("file = \".mcpflow/mcpflow.log\"\n")
	return b.String(), schema, nil
}
