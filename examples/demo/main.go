// Command demo is what `make demo` runs: mcpflow on a copy of
// examples/echo under a real MCP client (the Go SDK's), with real edits to
// the server's source, one numbered step at a time.
//
//	go run ./examples/demo -mcpflow bin/mcpflow [-era modern|legacy] [-keep] [-v] [-timeout 3m]
//
// The steps: connect; list the tools and call echo; save main.go with a new
// reverse tool; wait for notifications/tools/list_changed (no tool call: the
// watcher sees the save); list the tools again; call reverse; break the
// build and call recompile (the old server keeps serving); fix it and call
// recompile; shut down and check that no process is left. Each step prints
// ✓ or ✗ and the facts that show it worked. The exit status is 0 when every
// step passed and 1 otherwise, after printing the reason and the tail of
// mcpflow's log.
//
// The demo reads only what a client sees: tool results, notifications and
// tool lists. It never parses mcpflow's log; the log is shown on failure.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	marker        = "\t// New tools go here.\n" // the line of examples/echo/main.go after which tools go
	logRel        = ".mcpflow/mcpflow.log"      // [log] file in examples/echo/mcpflow.toml
	legacyVersion = "2025-11-25"                // the last revision of the legacy era
	modernVersion = "2026-07-28"                // the first revision of the modern era

	// Every wait has a limit; all of them are also bounded by -timeout.
	connectTimeout = 2 * time.Minute // includes the first build, maybe on a cold cache
	buildTimeout   = 2 * time.Minute // a rebuild and restart
	callTimeout    = 30 * time.Second
	exitTimeout    = 5 * time.Second // for mcpflow to exit after stdin closes, then after SIGTERM
	goneTimeout    = 5 * time.Second // for the groups of stopped processes to be reaped

	reverseTool = `	mcp.AddTool(server, &mcp.Tool{Name: "reverse", Description: "Return the text reversed."},
		func(ctx context.Context, req *mcp.CallToolRequest, args textArgs) (*mcp.CallToolResult, any, error) {
			r := []rune(args.Text)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(r)}}}, nil, nil
		})
`
	brokenLine = "\t_ = strings.Repeat(\"mcpflow\", \"3\") // a deliberate type error\n"
)

// recompileResult is the contract the demo checks: the structuredContent
// of the recompile tool's result. The text content is a rendering of it
// for agents; the demo falls back to that text only while a server does
// not send structuredContent.
type recompileResult struct {
	Trigger string `json:"trigger"`
	Build   struct {
		OK         bool    `json:"ok"`
		Skipped    bool    `json:"skipped"`
		DurationMS float64 `json:"duration_ms"`
		Errors     string  `json:"errors"`
	} `json:"build"`
	Restart *struct {
		OK         bool    `json:"ok"`
		DurationMS float64 `json:"duration_ms"`
		Error      string  `json:"error"`
	} `json:"restart"`
	Tools struct {
		Added, Removed, Changed, Current []string
	} `json:"tools"`
}

func main() { os.Exit(run(os.Args[1:])) }

type options struct {
	bin, era      string
	keep, verbose bool
	timeout       time.Duration
}

func run(args []string) int {
	var o options
	fl := flag.NewFlagSet("demo", flag.ContinueOnError)
	fl.StringVar(&o.bin, "mcpflow", "bin/mcpflow", "the mcpflow binary to run")
	fl.StringVar(&o.era, "era", "modern", "protocol era of the client: modern (the Go SDK's default: server/discover) or legacy (initialize, "+legacyVersion+")")
	fl.BoolVar(&o.keep, "keep", false, "keep the temporary copy of the example and print where it is")
	fl.BoolVar(&o.verbose, "v", false, "copy mcpflow's stderr to the demo's stderr")
	fl.DurationVar(&o.timeout, "timeout", 3*time.Minute, "limit for the whole demo")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bin, err := filepath.Abs(o.bin)
	switch {
	case fl.NArg() > 0:
		err = fmt.Errorf("unexpected arguments: %q", fl.Args())
	case o.era != "modern" && o.era != "legacy":
		err = fmt.Errorf("-era must be modern or legacy, not %q", o.era)
	case o.timeout <= 0:
		err = errors.New("-timeout must be positive")
	case err == nil && !isFile(bin):
		err = fmt.Errorf("no mcpflow binary at %s: build it first (make build, or go build -o bin/mcpflow ./cmd/mcpflow)", bin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 2
	}
	o.bin = bin

	// After the first Ctrl-C the demo cleans up; a second one kills it
	// (mcpflow, in its own process group, then sees its stdin close).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	go func() { <-ctx.Done(); stop() }()

	d := &demo{opts: o, ui: &ui{color: useColor(os.Stdout)}, changed: make(chan time.Time, 16)}
	return d.run(ctx)
}

// demo holds one run's state; the steps run in order on one goroutine.
type demo struct {
	opts      options
	ui        *ui
	example   string // examples/echo
	root, dir string // the temporary folder, and root/echo: the copy mcpflow works on

	group   *proc.Group
	stdin   io.Closer
	exited  chan struct{} // closed once mcpflow has been waited for
	waitErr error         // cmd.Wait's result, set before exited closes
	stopped bool
	started []int // pids of the processes mcpflow started, as seen between steps

	session     *mcp.ClientSession
	changed     chan time.Time // one per notifications/tools/list_changed
	withReverse []byte         // main.go after step 3
	toolsBefore []string       // step 2's tool names
	savedAt     time.Time      // when step 3's save landed
}

func (d *demo) run(ctx context.Context) int {
	start := time.Now()
	var err error
	if d.example, err = findExample(); err == nil {
		d.root, err = os.MkdirTemp("", "mcpflow-demo-")
	}
	if err != nil {
		d.ui.mark(false, "setup: %v", err)
		return 1
	}
	d.dir = filepath.Join(d.root, "echo")
	u := d.ui
	u.line(u.style(bold, "mcpflow demo") + u.style(dim, " · hot reload of an MCP server under a real Go SDK client · "+d.opts.era+" era"))
	u.fact("mcpflow", d.opts.bin)
	u.fact("example", d.example)
	u.fact("work dir", d.root)

	steps := []struct {
		title string
		run   func(ctx context.Context) error
	}{
		{"Start mcpflow and connect a Go SDK client", d.connect},
		{"List the tools and call echo", d.listAndEcho},
		{"Edit main.go: add a reverse tool", d.addReverse},
		{"Wait for notifications/tools/list_changed", d.waitListChanged},
		{"List the tools again", d.listAgain},
		{"Call the new reverse tool", func(ctx context.Context) error { return d.expectCall(ctx, "reverse", "mcpflow", "wolfpcm") }},
		{"Break the build, call recompile", d.breakBuild},
		{"Fix it, call recompile", d.fixBuild},
		{"Shut down", func(context.Context) error { return d.shutdown() }},
	}
	for i, s := range steps {
		u.line("\n" + u.style(bold+cyan, strconv.Itoa(i+1)+". "+s.title))
		err := s.run(ctx)
		d.noteStarted()
		if err == nil {
			continue
		}
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			err = fmt.Errorf("%w; the demo's -timeout %s ran out", err, d.opts.timeout)
		case errors.Is(ctx.Err(), context.Canceled):
			err = fmt.Errorf("%w; interrupted", err)
		}
		u.mark(false, "%v", err)
		d.showLogTail(20)
		if !d.stopped {
			u.line("\n" + u.style(bold+cyan, "Clean up"))
			if err := d.shutdown(); err != nil {
				u.mark(false, "%v", err)
			}
		}
		d.removeTemp(true)
		u.line("\n" + u.style(red+bold, fmt.Sprintf("demo failed at step %d (%s): ✗", i+1, s.title)))
		return 1
	}
	d.removeTemp(false)
	u.line("\n" + u.style(green+bold, fmt.Sprintf("demo passed: %d steps ✓", len(steps))) +
		u.style(dim, fmt.Sprintf("  (%s era, %s)", d.opts.era, result.Dur(time.Since(start)))))
	return 0
}

// findExample looks for examples/echo under the working directory (the
// repository root under make) and next to this program's source.
func findExample() (string, error) {
	var tried []string
	if wd, err := os.Getwd(); err == nil {
		tried = append(tried, filepath.Join(wd, "examples", "echo"))
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		tried = append(tried, filepath.Join(filepath.Dir(file), "..", "echo"))
	}
	for _, dir := range tried {
		if isFile(filepath.Join(dir, "main.go")) && isFile(filepath.Join(dir, "mcpflow.toml")) {
			return filepath.Abs(dir)
		}
	}
	return "", fmt.Errorf("examples/echo not found (looked in %s): run the demo from the repository root", strings.Join(tried, ", "))
}

func (d *demo) removeTemp(failed bool) {
	if d.opts.keep || failed {
		d.ui.line(d.ui.style(dim, "kept the work folder: "+d.root+" (mcpflow's stderr is in mcpflow.stderr there)"))
	} else if err := os.RemoveAll(d.root); err != nil {
		d.ui.line(d.ui.style(yellow, fmt.Sprintf("could not remove %s: %v", d.root, err)))
	}
}

// ---- step 1 -------------------------------------------------------------

func (d *demo) connect(ctx context.Context) error {
	if err := copyTree(d.example, d.dir); err != nil {
		return fmt.Errorf("copy %s: %w", d.example, err)
	}
	d.ui.mark(true, "copied examples/echo to %s", d.dir)
	toml := filepath.Join(d.dir, "mcpflow.toml")
	transport, err := d.start(toml)
	if err != nil {
		return err
	}
	d.ui.mark(true, "started mcpflow watch -c %s (pid %d, its own process group)", toml, d.group.Pid())

	client := mcp.NewClient(&mcp.Implementation{Name: "mcpflow-demo", Version: "1.0.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case d.changed <- time.Now():
			default:
			}
		},
	})
	var sopts mcp.ClientSessionOptions
	if d.opts.era == "legacy" {
		sopts.ProtocolVersion = legacyVersion
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	t0 := time.Now()
	if d.session, err = client.Connect(cctx, transport, &sopts); err != nil {
		return d.explain("connect", err)
	}
	res := d.session.InitializeResult()
	// While the first build runs (a cold build cache), mcpflow answers the
	// handshake itself and announces the server with list_changed once it
	// is up.
	building := res.ServerInfo != nil && res.ServerInfo.Name == "mcpflow"
	if building {
		d.ui.mark(true, "connected in %s: the first build is still running, so mcpflow answered the handshake itself", result.Dur(time.Since(t0)))
		if _, err := d.waitChanged(cctx); err != nil {
			return fmt.Errorf("the first build did not bring the server up: %w", err)
		}
		d.ui.mark(true, "the server is up: notifications/tools/list_changed %s after connecting", result.Dur(time.Since(t0)))
	} else {
		d.ui.mark(true, "connected in %s (mcpflow held the handshake until its first build was up)", result.Dur(time.Since(t0)))
	}
	if res.ServerInfo != nil {
		d.ui.fact("server", strings.TrimSpace(res.ServerInfo.Name+" "+res.ServerInfo.Version))
	}
	era, how := "legacy", "initialize → result → notifications/initialized"
	if res.ProtocolVersion >= modernVersion {
		era, how = "modern", "server/discover, then a subscriptions/listen stream for notifications"
	}
	d.ui.fact("protocol", res.ProtocolVersion)
	d.ui.fact("era", era+" ("+how+")")
	listChanged := res.Capabilities != nil && res.Capabilities.Tools != nil && res.Capabilities.Tools.ListChanged
	d.ui.fact("tools cap", fmt.Sprintf("listChanged: %v", listChanged))
	switch {
	case building && era != d.opts.era: // no server ran to answer server/discover
		d.ui.fact("", "server/discover was refused while no server ran, so the client fell back to the legacy handshake")
	case era != d.opts.era:
		return fmt.Errorf("asked for the %s era, but the session negotiated %s (%s era)", d.opts.era, res.ProtocolVersion, era)
	case d.opts.era == "legacy" && res.ProtocolVersion != legacyVersion:
		return fmt.Errorf("asked for protocol %s, got %s", legacyVersion, res.ProtocolVersion)
	}
	if !listChanged {
		return errors.New("the server does not advertise tools.listChanged: true (mcpflow forces it, so clients re-fetch tools after a reload)")
	}
	return nil
}

// start runs mcpflow in a process group of its own, with pipes for the
// protocol and a file for stderr.
func (d *demo) start(toml string) (mcp.Transport, error) {
	errFile, err := os.Create(filepath.Join(d.root, "mcpflow.stderr"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(d.opts.bin, "watch", "-c", toml)
	cmd.Dir = d.root // not the project: -c alone must locate everything
	cmd.Stderr = errFile
	if d.opts.verbose {
		cmd.Stderr = io.MultiWriter(errFile, os.Stderr)
	}
	cmd.WaitDelay = exitTimeout // a stray holder of stderr must not hang Wait
	stdin, err1 := cmd.StdinPipe()
	stdout, err2 := cmd.StdoutPipe()
	if err := errors.Join(err1, err2); err != nil {
		errFile.Close()
		return nil, err
	}
	if d.group, err = proc.Start(cmd); err != nil {
		errFile.Close()
		return nil, fmt.Errorf("start %s: %w", d.opts.bin, err)
	}
	d.stdin, d.exited = stdin, make(chan struct{})
	go func() {
		d.waitErr = cmd.Wait()
		errFile.Close()
		close(d.exited)
	}()
	return &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: -1}, nil
}

// explain adds to err that mcpflow had exited, when it had.
func (d *demo) explain(what string, err error) error {
	select {
	case <-d.exited:
		return fmt.Errorf("%s: %w; mcpflow had exited: %s", what, err, exitText(d.waitErr))
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// ---- steps 2 to 6: tools and a save --------------------------------------

func (d *demo) listAndEcho(ctx context.Context) error {
	names, err := d.toolNames(ctx)
	if err != nil {
		return err
	}
	d.toolsBefore = names
	for _, want := range []string{"echo", "shout", "recompile"} {
		if !slices.Contains(names, want) {
			return fmt.Errorf("tools/list has no %s: %v", want, names)
		}
	}
	d.ui.mark(true, "tools/list → %s", strings.Join(names, ", "))
	d.ui.fact("", "echo and shout come from the server; mcpflow adds recompile")
	return d.expectCall(ctx, "echo", "hello from mcpflow", "hello from mcpflow")
}

func (d *demo) addReverse(context.Context) error {
	path := filepath.Join(d.dir, "main.go")
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, line, err := insertAfterMarker(src, reverseTool)
	if err != nil {
		return err
	}
	for len(d.changed) > 0 { // anything before the save is not this save's
		<-d.changed
	}
	if err := atomicWrite(path, out); err != nil {
		return fmt.Errorf("save main.go: %w", err)
	}
	d.savedAt, d.withReverse = time.Now(), out
	added := strings.Split(strings.TrimSuffix(reverseTool, "\n"), "\n")
	d.ui.mark(true, "saved main.go as editors do (temp file, then rename over it): %d lines after %q", len(added), strings.TrimSpace(marker))
	d.ui.diff(line, added)
	return nil
}

func (d *demo) waitListChanged(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	at, err := d.waitChanged(wctx)
	if err != nil {
		return fmt.Errorf("no notifications/tools/list_changed within %s of the save: %w", result.Dur(time.Since(d.savedAt)), err)
	}
	d.ui.mark(true, "notifications/tools/list_changed arrived %s after the save, with no tool call: the watcher saw it, mcpflow rebuilt and restarted the server",
		d.ui.style(bold, result.Dur(at.Sub(d.savedAt))))
	return nil
}

// waitChanged waits for the next notifications/tools/list_changed.
func (d *demo) waitChanged(ctx context.Context) (time.Time, error) {
	select {
	case at := <-d.changed:
		return at, nil
	case <-d.exited:
		return time.Time{}, fmt.Errorf("mcpflow exited: %s", exitText(d.waitErr))
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

func (d *demo) listAgain(ctx context.Context) error {
	names, err := d.toolNames(ctx)
	if err != nil {
		return err
	}
	d.ui.mark(true, "tools/list → %s", strings.Join(names, ", "))
	var diff []string
	for _, n := range names {
		if !slices.Contains(d.toolsBefore, n) {
			diff = append(diff, "+"+n)
		}
	}
	for _, n := range d.toolsBefore {
		if !slices.Contains(names, n) {
			diff = append(diff, "-"+n)
		}
	}
	d.ui.fact("diff", d.ui.style(green, strings.Join(diff, " ")))
	if !slices.Equal(diff, []string{"+reverse"}) {
		return fmt.Errorf("expected the tools to change by +reverse, got %q", diff)
	}
	return nil
}

func (d *demo) toolNames(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var names []string
	for tool, err := range d.session.Tools(ctx, nil) {
		if err != nil {
			return nil, d.explain("tools/list", err)
		}
		names = append(names, tool.Name)
	}
	return names, nil
}

// call calls a tool and returns its result and its text items.
func (d *demo) call(ctx context.Context, timeout time.Duration, name string, args map[string]any) (*mcp.CallToolResult, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := d.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, nil, d.explain("tools/call "+name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return res, texts, nil
}

// expectCall calls a text tool and checks its answer: the first text item.
// mcpflow may append notices as further items; they are shown.
func (d *demo) expectCall(ctx context.Context, tool, in, want string) error {
	res, texts, err := d.call(ctx, callTimeout, tool, map[string]any{"text": in})
	if err != nil {
		return err
	}
	if res.IsError || len(texts) == 0 || texts[0] != want {
		return fmt.Errorf("%s(%q) returned %q (isError: %v), want %q", tool, in, texts, res.IsError, want)
	}
	d.ui.mark(true, "tools/call %s {\"text\": %q} → %q", tool, in, texts[0])
	for _, n := range texts[1:] {
		d.ui.quote(strings.Split(n, "\n"))
	}
	return nil
}

// ---- steps 7 and 8: recompile --------------------------------------------

// recompile calls the recompile tool. rr is nil when the result carries no
// structuredContent; text is the agent's rendering.
func (d *demo) recompile(ctx context.Context) (rr *recompileResult, isError bool, text string, err error) {
	t0 := time.Now()
	res, texts, err := d.call(ctx, buildTimeout, "recompile", nil)
	if err != nil {
		return nil, false, "", err
	}
	text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			err = json.Unmarshal(b, &rr)
		}
		if err != nil {
			return nil, false, "", fmt.Errorf("recompile's structuredContent is not the documented shape: %w", err)
		}
	}
	d.ui.mark(true, "tools/call recompile → isError: %v after %s", res.IsError, result.Dur(time.Since(t0)))
	if rr == nil {
		d.ui.fact("", "(no structuredContent: reading the text)")
	}
	return rr, res.IsError, text, nil
}

func (d *demo) breakBuild(ctx context.Context) error {
	out, line, err := insertAfterMarker(d.withReverse, brokenLine)
	if err == nil {
		err = atomicWrite(filepath.Join(d.dir, "main.go"), out)
	}
	if err != nil {
		return fmt.Errorf("save main.go: %w", err)
	}
	d.ui.mark(true, "saved main.go with a type error:")
	d.ui.diff(line, []string{strings.TrimSuffix(brokenLine, "\n")})

	rr, isError, text, err := d.recompile(ctx)
	if err != nil {
		return err
	}
	errs := text
	if rr != nil {
		if rr.Build.OK || rr.Restart != nil {
			return fmt.Errorf("recompile of broken code reported build ok: %v, restart: %v", rr.Build.OK, rr.Restart != nil)
		}
		d.ui.fact("build", fmt.Sprintf("%s after %s", d.ui.style(red, "✗ failed"), msDur(rr.Build.DurationMS)))
		errs = rr.Build.Errors
	}
	where := fmt.Sprintf("main.go:%d:", line)
	if !isError || !strings.Contains(errs, where) {
		return fmt.Errorf("recompile of broken code should fail with an error at %s (isError: %v):\n%s", where, isError, text)
	}
	d.ui.fact("errors", "point at "+d.ui.style(bold, strings.TrimSuffix(where, ":")))
	d.ui.quote(strings.Split(strings.TrimSpace(errs), "\n"))
	if err := d.expectCall(ctx, "echo", "still serving", "still serving"); err != nil {
		return fmt.Errorf("the old server should keep serving while the code is broken: %w", err)
	}
	d.ui.fact("", "the old server keeps serving while the code is broken")
	return nil
}

func (d *demo) fixBuild(ctx context.Context) error {
	if err := atomicWrite(filepath.Join(d.dir, "main.go"), d.withReverse); err != nil {
		return fmt.Errorf("save main.go: %w", err)
	}
	d.ui.mark(true, "saved main.go without the broken line")
	rr, isError, text, err := d.recompile(ctx)
	if err != nil {
		return err
	}
	if isError {
		return fmt.Errorf("recompile of fixed code failed:\n%s", text)
	}
	if rr == nil {
		d.ui.quote(strings.Split(text, "\n"))
	} else {
		if !rr.Build.OK || rr.Restart == nil || !rr.Restart.OK {
			return fmt.Errorf("recompile of fixed code did not build and restart:\n%s", text)
		}
		if !slices.Contains(rr.Tools.Current, "reverse") {
			return fmt.Errorf("recompile lists the tools %v, without reverse", rr.Tools.Current)
		}
		d.ui.fact("build", fmt.Sprintf("%s in %s", d.ui.style(green, "✓"), msDur(rr.Build.DurationMS)))
		d.ui.fact("restart", fmt.Sprintf("%s in %s", d.ui.style(green, "✓"), msDur(rr.Restart.DurationMS)))
		var diff []string
		for _, g := range []struct {
			sign  string
			names []string
		}{{"+", rr.Tools.Added}, {"-", rr.Tools.Removed}, {"~", rr.Tools.Changed}} {
			for _, n := range g.names {
				diff = append(diff, g.sign+n)
			}
		}
		if len(diff) == 0 {
			diff = []string{"no change"}
		}
		d.ui.fact("tools", strings.Join(rr.Tools.Current, ", ")+d.ui.style(dim, " ("+strings.Join(diff, " ")+")"))
	}
	return d.expectCall(ctx, "reverse", "mcpflow", "wolfpcm")
}

func msDur(ms float64) string { return result.Dur(time.Duration(ms * float64(time.Millisecond))) }

// ---- step 9: shutdown ---------------------------------------------------

// shutdown closes the client session (mcpflow's stdin), stops mcpflow's
// process group if it has not exited by then, and checks that neither its
// group nor the group of any process it started is left. It runs once; it
// is also the cleanup after a failed step.
func (d *demo) shutdown() error {
	if d.stopped || d.group == nil {
		return nil
	}
	d.stopped = true
	pid := d.group.Pid()
	var problems []string
	t0 := time.Now()
	if d.session != nil {
		closed := make(chan struct{})
		go func() { d.session.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(exitTimeout):
			problems = append(problems, "closing the client session hung")
		}
	}
	select {
	case <-d.exited:
		d.group.Kill() // whatever the leader left behind in its group
		if d.waitErr == nil {
			d.ui.mark(true, "mcpflow exited after its stdin closed in %s: %s", result.Dur(time.Since(t0)), exitText(nil))
		}
	case <-time.After(exitTimeout):
		problems = append(problems, fmt.Sprintf("mcpflow did not exit within %s of its stdin closing; the demo stopped it", exitTimeout))
		d.group.Stop(nil, d.exited, exitTimeout) // SIGTERM, then SIGKILL
	}
	if d.waitErr != nil {
		problems = append(problems, "mcpflow exited with "+d.waitErr.Error())
	}
	d.group.Release()

	// Every process mcpflow started runs in a group of its own: each of
	// those groups must be gone too.
	var left []string
	for deadline := time.Now().Add(goneTimeout); ; time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		if proc.GroupAlive(pid) {
			left = append(left, fmt.Sprintf("mcpflow's process group %d", pid))
		}
		for _, p := range d.started {
			if proc.GroupAlive(p) {
				left = append(left, fmt.Sprintf("the process group of pid %d", p))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	switch {
	case len(left) > 0:
		problems = append(problems, "still running after mcpflow exited: "+strings.Join(left, ", "))
	case len(d.started) == 0:
		d.ui.mark(true, "no process left: mcpflow's process group is gone")
	default:
		d.ui.mark(true, "no process left: mcpflow's process group and the %d processes it started (pids %s) are gone",
			len(d.started), strings.Trim(fmt.Sprint(d.started), "[]"))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// noteStarted records the processes mcpflow runs now (its server, a
// build), where /proc tells (Linux); elsewhere only mcpflow's own group is
// checked at shutdown.
func (d *demo) noteStarted() {
	if d.group == nil || d.stopped {
		return
	}
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", d.group.Pid()))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(s); err == nil && !slices.Contains(d.started, p) {
				d.started = append(d.started, p)
			}
		}
	}
}

func (d *demo) showLogTail(n int) {
	path := filepath.Join(d.dir, logRel)
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		path = filepath.Join(d.root, "mcpflow.stderr")
		b, _ = os.ReadFile(path)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(b) == 0 {
		d.ui.line(d.ui.style(dim, "     (mcpflow wrote no log)"))
		return
	}
	lines = lines[max(0, len(lines)-n):]
	d.ui.line(d.ui.style(dim, fmt.Sprintf("     last %d lines of %s:", len(lines), path)))
	d.ui.quote(lines)
}

// ---- files --------------------------------------------------------------

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// copyTree copies the regular files under src to dst, skipping .mcpflow
// (build output and logs of earlier runs).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case e.IsDir() && e.Name() == ".mcpflow":
			return filepath.SkipDir
		case e.IsDir():
			return os.MkdirAll(target, 0o755)
		case !e.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// atomicWrite replaces path the way editors save: write a temporary file
// in the same folder, then rename it over the original.
func atomicWrite(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// insertAfterMarker inserts add after the marker line and returns the new
// source and the line number of the first inserted line.
func insertAfterMarker(src []byte, add string) ([]byte, int, error) {
	i := bytes.Index(src, []byte(marker))
	if i < 0 {
		return nil, 0, fmt.Errorf("main.go has no %q line", strings.TrimSpace(marker))
	}
	at := i + len(marker)
	return slices.Concat(src[:at], []byte(add), src[at:]), bytes.Count(src[:at], []byte("\n")) + 1, nil
}

// ---- output -------------------------------------------------------------

const (
	reset, bold, dim         = "\x1b[0m", "\x1b[1m", "\x1b[2m"
	red, green, yellow, cyan = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"
)

// useColor reports whether f is a terminal that wants colors.
func useColor(f *os.File) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// ui prints the demo's report on stdout, from one goroutine.
type ui struct{ color bool }

func (u *ui) style(code, s string) string {
	if !u.color {
		return s
	}
	return code + s + reset
}

func (u *ui) line(s string) { fmt.Println(s) }

// mark prints a ✓ or ✗ line; lines after the first are quoted.
func (u *ui) mark(ok bool, format string, args ...any) {
	sym := u.style(green, "✓")
	if !ok {
		sym = u.style(red, "✗")
	}
	first, rest, _ := strings.Cut(fmt.Sprintf(format, args...), "\n")
	u.line("   " + sym + " " + first)
	if rest != "" {
		u.quote(strings.Split(rest, "\n"))
	}
}

// fact prints an indented "key  value" line, or a dimmed remark when key
// is empty.
func (u *ui) fact(key, value string) {
	if key == "" {
		u.line(u.style(dim, "     "+value))
		return
	}
	u.line(fmt.Sprintf("     %s %s", u.style(dim, fmt.Sprintf("%-10s", key)), value))
}

// quote prints lines dimmed behind a bar.
func (u *ui) quote(lines []string) {
	for _, l := range lines {
		u.line(u.style(dim, strings.TrimRight("     │ "+l, " ")))
	}
}

// diff prints inserted source lines with their line numbers.
func (u *ui) diff(first int, lines []string) {
	for i, l := range lines {
		u.line(fmt.Sprintf("     %s %s", u.style(dim, fmt.Sprintf("%3d", first+i)), u.style(green, "+ "+strings.ReplaceAll(l, "\t", "    "))))
	}
}
