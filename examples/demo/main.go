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
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// marker is the line of examples/echo/main.go after which tools go.
	marker = "\t// New tools go here.\n"
	// logRel is [log] file in examples/echo/mcpflow.toml.
	logRel = ".mcpflow/mcpflow.log"

	legacyVersion = "2025-11-25" // the last revision of the legacy era
	modernVersion = "2026-07-28" // the first revision of the modern era

	// Every wait has a limit; all of them are also bounded by -timeout.
	connectTimeout = 2 * time.Minute // includes the first build, maybe on a cold cache
	buildTimeout   = 2 * time.Minute // a rebuild and restart
	callTimeout    = 30 * time.Second
	logTimeout     = 5 * time.Second // for the cycle line to reach the log file
	exitTimeout    = 5 * time.Second // for mcpflow to exit after stdin closes
	termTimeout    = 10 * time.Second
	goneTimeout    = 5 * time.Second // for killed processes to be reaped

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

func main() {
	os.Exit(run(os.Args[1:]))
}

type options struct {
	bin     string
	era     string
	keep    bool
	verbose bool
	timeout time.Duration
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&o.bin, "mcpflow", "bin/mcpflow", "the mcpflow binary to run")
	fs.StringVar(&o.era, "era", "modern", "protocol era of the client: modern (the Go SDK's default: server/discover) or legacy (initialize, "+legacyVersion+")")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary copy of the example and print where it is")
	fs.BoolVar(&o.verbose, "v", false, "stream mcpflow's stderr (dimmed) between the steps")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "limit for the whole demo")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.era != "modern" && o.era != "legacy" {
		return o, fmt.Errorf("-era must be modern or legacy, not %q", o.era)
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("-timeout must be positive")
	}
	abs, err := filepath.Abs(o.bin)
	if err != nil {
		return o, err
	}
	o.bin = abs
	if info, err := os.Stat(o.bin); err != nil || info.IsDir() {
		return o, fmt.Errorf("no mcpflow binary at %s: build it first (make build, or go build -o bin/mcpflow ./cmd/mcpflow)", o.bin)
	}
	return o, nil
}

func run(args []string) int {
	opts, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 2
	}
	u := &ui{w: os.Stdout, color: useColor(os.Stdout)}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	go func() {
		// After the first Ctrl-C the demo cleans up; a second one kills it
		// (mcpflow then sees its stdin close and stops on its own).
		<-ctx.Done()
		stop()
	}()

	d := &demo{opts: opts, ui: u, changed: make(chan time.Time, 16)}
	return d.run(ctx)
}

// demo holds one run's state; the steps run in order on one goroutine.
type demo struct {
	opts options
	ui   *ui

	example string // examples/echo
	root    string // the temporary folder
	dir     string // root/echo: the copy mcpflow works on

	cmd      *exec.Cmd
	stdin    *os.File      // our end of mcpflow's stdin
	stdout   *os.File      // our end of mcpflow's stdout
	exited   chan struct{} // closed once mcpflow has been waited for
	waitErr  error         // cmd.Wait's result, set before exited closes
	exitedAt time.Time     // set before exited closes
	stopped  bool

	session *mcp.ClientSession
	changed chan time.Time // one per notifications/tools/list_changed

	withReverse []byte    // main.go after step 3
	toolsBefore []string  // step 2's tool names
	savedAt     time.Time // when step 3's save landed
	logOffset   int64     // the log file's size just before that save
}

type step struct {
	title string
	run   func(ctx context.Context) error
}

func (d *demo) run(ctx context.Context) int {
	start := time.Now()
	if err := d.setup(); err != nil {
		d.ui.bad("setup: %v", err)
		d.removeTemp(false)
		return 1
	}
	d.header()

	steps := []step{
		{"Start mcpflow and connect a Go SDK client", d.connect},
		{"List the tools and call echo", d.listAndEcho},
		{"Edit main.go: add a reverse tool", d.addReverse},
		{"Wait for notifications/tools/list_changed", d.waitListChanged},
		{"List the tools again", d.listAgain},
		{"Call the new reverse tool", d.callReverse},
		{"Break the build, call recompile", d.breakBuild},
		{"Fix it, call recompile", d.fixBuild},
		{"Shut down", func(context.Context) error { return d.shutdown() }},
	}
	for i, s := range steps {
		d.ui.heading(i+1, s.title)
		err := s.run(ctx)
		if err == nil {
			continue
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			err = fmt.Errorf("%w; the demo's -timeout %s ran out", err, d.opts.timeout)
		case errors.Is(ctx.Err(), context.Canceled):
			err = fmt.Errorf("%w; interrupted", err)
		}
		d.ui.bad("%v", err)
		d.showLogTail(20)
		if !d.stopped {
			d.ui.heading(0, "Clean up")
			if err := d.shutdown(); err != nil {
				d.ui.bad("%v", err)
			}
		}
		d.removeTemp(true)
		d.ui.line("")
		d.ui.line(d.ui.style(red+bold, fmt.Sprintf("demo failed at step %d (%s): ✗", i+1, s.title)))
		return 1
	}
	d.removeTemp(false)
	d.ui.line("")
	d.ui.line(d.ui.style(green+bold, fmt.Sprintf("demo passed: %d steps ✓", len(steps))) +
		d.ui.style(dim, fmt.Sprintf("  (%s era, %s)", d.opts.era, short(time.Since(start)))))
	return 0
}

// setup finds examples/echo and makes the temporary folder.
func (d *demo) setup() error {
	ex, err := findExample()
	if err != nil {
		return err
	}
	d.example = ex
	root, err := os.MkdirTemp("", "mcpflow-demo-")
	if err != nil {
		return err
	}
	d.root = root
	d.dir = filepath.Join(root, "echo")
	return nil
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

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

func (d *demo) removeTemp(failed bool) {
	if d.root == "" {
		return
	}
	if d.opts.keep || failed {
		d.ui.line(d.ui.style(dim, "kept the work folder: "+d.root+" (mcpflow's stderr is in mcpflow.stderr there)"))
		return
	}
	if err := os.RemoveAll(d.root); err != nil {
		d.ui.line(d.ui.style(yellow, fmt.Sprintf("could not remove %s: %v", d.root, err)))
	}
}

func (d *demo) header() {
	u := d.ui
	u.line(u.style(bold, "mcpflow demo") + u.style(dim, " · hot reload of an MCP server under a real Go SDK client · "+d.opts.era+" era"))
	u.fact("mcpflow", d.opts.bin)
	u.fact("example", d.example)
	u.fact("work dir", d.root)
}

// ---- step 1 -------------------------------------------------------------

func (d *demo) connect(ctx context.Context) error {
	if err := copyTree(d.example, d.dir); err != nil {
		return fmt.Errorf("copy %s: %w", d.example, err)
	}
	d.ui.ok("copied examples/echo to %s", d.dir)

	toml := filepath.Join(d.dir, "mcpflow.toml")
	if err := d.start(toml); err != nil {
		return err
	}
	d.ui.ok("started mcpflow watch -c %s (pid %d, its own process group)", toml, d.cmd.Process.Pid)

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
	cs, err := client.Connect(cctx, &mcp.IOTransport{Reader: d.stdout, Writer: d.stdin, MaxLineLength: -1}, &sopts)
	if err != nil {
		return d.explain("connect", err)
	}
	d.session = cs
	res := cs.InitializeResult()
	if res == nil {
		return errors.New("connected, but the session has no initialize/discover result")
	}
	// A slow first build (a cold build cache): after a few seconds mcpflow
	// answers the handshake itself, so the client does not time out, and
	// announces the server with list_changed once it is up.
	building := res.ServerInfo != nil && res.ServerInfo.Name == "mcpflow"
	if building {
		d.ui.ok("connected in %s: the first build is still running, so mcpflow answered the handshake itself", short(time.Since(t0)))
		wctx, wcancel := context.WithTimeout(ctx, connectTimeout)
		defer wcancel()
		select {
		case <-d.changed:
			d.ui.ok("the server is up: notifications/tools/list_changed %s after connecting", short(time.Since(t0)))
		case <-wctx.Done():
			return fmt.Errorf("the first build did not finish within %s", connectTimeout)
		}
	} else {
		d.ui.ok("connected in %s (mcpflow held the handshake until its first build was up)", short(time.Since(t0)))
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
	if res.Capabilities != nil && res.Capabilities.Tools != nil {
		d.ui.fact("tools cap", fmt.Sprintf("listChanged: %v", res.Capabilities.Tools.ListChanged))
	}
	if building && era != d.opts.era {
		// While no server runs, mcpflow refuses server/discover and the
		// client falls back to initialize.
		d.ui.fact("", "server/discover was refused while no server ran, so the client fell back to the legacy handshake")
	} else if era != d.opts.era {
		return fmt.Errorf("asked for the %s era, but the session negotiated %s (%s era)", d.opts.era, res.ProtocolVersion, era)
	}
	if d.opts.era == "legacy" && res.ProtocolVersion != legacyVersion {
		return fmt.Errorf("asked for protocol %s, got %s", legacyVersion, res.ProtocolVersion)
	}
	if res.Capabilities == nil || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		return errors.New("the server does not advertise tools.listChanged: true (mcpflow forces it, so clients re-fetch tools after a reload)")
	}
	return nil
}

// start runs mcpflow with pipes for the protocol and a file for stderr.
func (d *demo) start(toml string) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	errFile, err := os.Create(filepath.Join(d.root, "mcpflow.stderr"))
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return err
	}
	cmd := exec.Command(d.opts.bin, "watch", "-c", toml)
	cmd.Dir = d.root // not the project: -c alone must locate everything
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.Stderr = errFile
	if d.opts.verbose {
		cmd.Stderr = io.MultiWriter(errFile, &lineWriter{ui: d.ui, prefix: "   ┆ "})
	}
	cmd.WaitDelay = 5 * time.Second // a stray holder of stderr must not hang Wait
	ownGroup(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errFile.Close()
		return fmt.Errorf("start %s: %w", d.opts.bin, err)
	}
	d.cmd, d.stdin, d.stdout = cmd, inW, outR
	d.exited = make(chan struct{})
	go func() {
		d.waitErr = cmd.Wait()
		d.exitedAt = time.Now()
		errFile.Close()
		close(d.exited)
	}()
	return nil
}

// explain adds to err that mcpflow had exited, when that is why the
// client failed. (After a failed Connect the SDK closes mcpflow's stdin,
// and mcpflow exits: that exit comes after the error and is not its cause.)
func (d *demo) explain(what string, err error) error {
	errAt := time.Now()
	if d.exited != nil {
		select {
		case <-d.exited:
			if !d.exitedAt.After(errAt) {
				return fmt.Errorf("%s: %w; mcpflow had exited: %s", what, err, exitText(d.waitErr))
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// ---- steps 2, 5, 6: tools -----------------------------------------------

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
	d.ui.ok("tools/list → %s", strings.Join(names, ", "))
	d.ui.fact("", "echo and shout come from the server; mcpflow adds recompile")
	return d.expectCall(ctx, "echo", "hello from mcpflow", "hello from mcpflow")
}

func (d *demo) listAgain(ctx context.Context) error {
	names, err := d.toolNames(ctx)
	if err != nil {
		return err
	}
	d.ui.ok("tools/list → %s", strings.Join(names, ", "))
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
	if len(diff) == 0 {
		diff = []string{"(no change)"}
	}
	d.ui.fact("diff", d.ui.style(green, strings.Join(diff, " ")))
	if !slices.Contains(names, "reverse") {
		return errors.New("the reverse tool is not listed")
	}
	if !slices.Equal(diff, []string{"+reverse"}) {
		return fmt.Errorf("expected the diff +reverse, got %s", strings.Join(diff, " "))
	}
	return nil
}

func (d *demo) callReverse(ctx context.Context) error {
	return d.expectCall(ctx, "reverse", "mcpflow", "wolfpcm")
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

// result is a tool result as the demo reads it: the server's first text
// item, and any items after it (mcpflow appends notices there).
type result struct {
	text    string
	notes   []string
	isError bool
}

func (d *demo) call(ctx context.Context, timeout time.Duration, name string, args map[string]any) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := d.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return result{}, d.explain("tools/call "+name, err)
	}
	r := result{isError: res.IsError}
	for i, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			continue
		}
		if i == 0 {
			r.text = tc.Text
		} else {
			r.notes = append(r.notes, tc.Text)
		}
	}
	return r, nil
}

// expectCall calls a text tool and checks its answer.
func (d *demo) expectCall(ctx context.Context, tool, in, want string) error {
	r, err := d.call(ctx, callTimeout, tool, map[string]any{"text": in})
	if err != nil {
		return err
	}
	if r.isError || r.text != want {
		return fmt.Errorf("%s(%q) returned %q (isError: %v), want %q", tool, in, r.text, r.isError, want)
	}
	d.ui.ok("tools/call %s {\"text\": %q} → %q", tool, in, r.text)
	d.showNotes(r.notes)
	return nil
}

func (d *demo) showNotes(notes []string) {
	for _, n := range notes {
		d.ui.quote("notice", strings.Split(n, "\n"))
	}
}

// ---- steps 3 and 4: the edit and the notification -----------------------

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
	drain(d.changed) // anything before the save is not this save's
	d.logOffset = fileSize(filepath.Join(d.dir, logRel))
	if err := atomicWrite(path, out); err != nil {
		return fmt.Errorf("save main.go: %w", err)
	}
	d.savedAt = time.Now()
	d.withReverse = out
	added := strings.Split(strings.TrimSuffix(reverseTool, "\n"), "\n")
	d.ui.ok("saved main.go as editors do (temp file, then rename over it): %d lines after %q", len(added), strings.TrimSpace(marker))
	d.ui.diff(line, added)
	return nil
}

func (d *demo) waitListChanged(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	var at time.Time
	select {
	case at = <-d.changed:
	case <-d.exited:
		return fmt.Errorf("mcpflow exited: %s", exitText(d.waitErr))
	case <-wctx.Done():
		return fmt.Errorf("no notifications/tools/list_changed within %s of the save: %w", short(time.Since(d.savedAt)), wctx.Err())
	}
	d.ui.ok("notifications/tools/list_changed arrived %s after the save, with no tool call: the watcher saw it",
		d.ui.style(bold, short(at.Sub(d.savedAt))))
	line, err := d.cycleLine(ctx)
	if err != nil {
		return err
	}
	d.ui.ok("the cycle in %s:", logRel)
	d.ui.quote("", []string{line})
	if !strings.Contains(line, "changed main.go") || !strings.Contains(line, "+reverse") || strings.Contains(line, "✗") {
		return fmt.Errorf("expected a successful cycle for main.go adding +reverse, got %q", line)
	}
	return nil
}

// cycleLine waits for mcpflow to log a build cycle ("changed main.go →
// build … → restart … → tools …") after the save, and returns it without
// its timestamp and level.
func (d *demo) cycleLine(ctx context.Context) (string, error) {
	path := filepath.Join(d.dir, logRel)
	deadline := time.Now().Add(logTimeout)
	for {
		for _, l := range slices.Backward(readLines(path, d.logOffset)) {
			if strings.Contains(l, " → ") {
				return trimLogPrefix(l), nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no build cycle line in %s within %s of the notification", path, logTimeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ---- steps 7 and 8: a broken build, then the fix ------------------------

func (d *demo) breakBuild(ctx context.Context) error {
	out, line, err := insertAfterMarker(d.withReverse, brokenLine)
	if err != nil {
		return err
	}
	if err := atomicWrite(filepath.Join(d.dir, "main.go"), out); err != nil {
		return fmt.Errorf("save main.go: %w", err)
	}
	d.ui.ok("saved main.go with a type error:")
	d.ui.diff(line, []string{strings.TrimSuffix(brokenLine, "\n")})

	t0 := time.Now()
	r, err := d.call(ctx, buildTimeout, "recompile", nil)
	if err != nil {
		return err
	}
	if !r.isError {
		return fmt.Errorf("recompile of broken code did not report an error:\n%s", r.text)
	}
	where := fmt.Sprintf("main.go:%d:", line)
	if !strings.Contains(r.text, where) {
		return fmt.Errorf("the recompile result does not point at %s:\n%s", where, r.text)
	}
	d.ui.ok("tools/call recompile → isError: true after %s, pointing at %s", short(time.Since(t0)), d.ui.style(bold, strings.TrimSuffix(where, ":")))
	d.ui.quote("", strings.Split(r.text, "\n"))
	d.showNotes(r.notes)

	r, err = d.call(ctx, callTimeout, "echo", map[string]any{"text": "still serving"})
	if err != nil {
		return err
	}
	if r.isError || r.text != "still serving" {
		return fmt.Errorf("echo after the failed build returned %q (isError: %v); the old server should keep serving", r.text, r.isError)
	}
	d.ui.ok("tools/call echo → %q: the old server keeps serving while the code is broken", r.text)
	d.showNotes(r.notes)
	return nil
}

func (d *demo) fixBuild(ctx context.Context) error {
	if err := atomicWrite(filepath.Join(d.dir, "main.go"), d.withReverse); err != nil {
		return fmt.Errorf("save main.go: %w", err)
	}
	d.ui.ok("saved main.go without the broken line")

	t0 := time.Now()
	r, err := d.call(ctx, buildTimeout, "recompile", nil)
	if err != nil {
		return err
	}
	if r.isError {
		return fmt.Errorf("recompile of fixed code failed:\n%s", r.text)
	}
	d.ui.ok("tools/call recompile → isError: false after %s", short(time.Since(t0)))
	d.ui.quote("", strings.Split(r.text, "\n"))
	d.showNotes(r.notes)
	return d.expectCall(ctx, "reverse", "mcpflow", "wolfpcm")
}

// ---- step 9: shutdown ---------------------------------------------------

// shutdown closes the client session (mcpflow's stdin), sends SIGTERM to
// mcpflow's process group if it has not exited by then, waits, and checks
// that neither mcpflow's group nor any server it started is left. It runs
// once; it is also the cleanup after a failed step.
func (d *demo) shutdown() error {
	if d.stopped || d.cmd == nil {
		return nil
	}
	d.stopped = true
	pid := d.cmd.Process.Pid
	var problems []string
	already := false
	select {
	case <-d.exited:
		already = true
	default:
	}

	t0 := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if d.session != nil {
			d.session.Close() // closes both pipes
		}
	}()
	select {
	case <-closed:
	case <-time.After(exitTimeout):
		problems = append(problems, "closing the client session hung")
	}
	d.stdin.Close() // in case there was no session; a second close is harmless
	how := "after its stdin closed"
	select {
	case <-d.exited:
	case <-time.After(exitTimeout):
		how = "after SIGTERM (it did not exit when its stdin closed)"
		if err := terminateGroup(pid); err != nil {
			problems = append(problems, fmt.Sprintf("SIGTERM to process group %d: %v", pid, err))
		}
		select {
		case <-d.exited:
		case <-time.After(termTimeout):
			killGroup(pid)
			<-d.exited
			how = "only after SIGKILL"
			problems = append(problems, fmt.Sprintf("mcpflow ignored SIGTERM for %s", termTimeout))
		}
	}
	d.stdout.Close()
	if d.waitErr != nil {
		problems = append(problems, "mcpflow exited with "+d.waitErr.Error())
	}
	switch {
	case len(problems) > 0: // reported below, with the rest
	case already:
		d.ui.ok("mcpflow had already exited: %s", exitText(d.waitErr))
	default:
		d.ui.ok("mcpflow exited %s in %s: %s", how, short(time.Since(t0)), exitText(d.waitErr))
	}

	// Whatever is left of mcpflow's group, and every server it started (each
	// in a group of its own), must be gone.
	servers := serverPIDs(filepath.Join(d.dir, logRel))
	var left []string
	deadline := time.Now().Add(goneTimeout)
	for {
		left = left[:0]
		if groupAlive(pid) {
			left = append(left, fmt.Sprintf("mcpflow's process group %d", pid))
		}
		for _, sp := range servers {
			if processAlive(sp) || groupAlive(sp) {
				left = append(left, fmt.Sprintf("server pid %d", sp))
			}
		}
		for _, p := range processesIn(d.root) {
			left = append(left, fmt.Sprintf("pid %d (working in %s)", p, d.root))
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		killGroup(pid)
		for _, sp := range servers {
			killGroup(sp)
		}
		for _, p := range processesIn(d.root) {
			killProcess(p)
		}
		problems = append(problems, "still running after mcpflow exited: "+strings.Join(left, ", ")+" (the demo has now killed them)")
	} else if len(servers) == 0 {
		d.ui.ok("no process left: mcpflow's process group is gone (it started no server)")
	} else {
		d.ui.ok("no process left: mcpflow's process group and the %d server processes it started (pids %s) are gone", len(servers), joinInts(servers))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// serverPIDs reads the pids of the servers mcpflow started from its log.
func serverPIDs(logPath string) []int {
	re := regexp.MustCompile(`server started.*\bpid=(\d+)`)
	var pids []int
	for _, l := range readLines(logPath, 0) {
		if m := re.FindStringSubmatch(l); m != nil {
			if p, err := strconv.Atoi(m[1]); err == nil && !slices.Contains(pids, p) {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// ---- the log ------------------------------------------------------------

func (d *demo) showLogTail(n int) {
	if d.dir == "" {
		return
	}
	path := filepath.Join(d.dir, logRel)
	lines := readLines(path, 0)
	if len(lines) == 0 {
		path = filepath.Join(d.root, "mcpflow.stderr")
		lines = readLines(path, 0)
	}
	if len(lines) == 0 {
		d.ui.line(d.ui.style(dim, "     (mcpflow wrote no log)"))
		return
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	d.ui.line(d.ui.style(dim, fmt.Sprintf("     last %d lines of %s:", len(lines), path)))
	d.ui.quote("", lines)
}

// readLines returns the lines of path from byte offset on, without colors.
func readLines(path string, offset int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	b, err := io.ReadAll(f)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(stripANSI(string(b)), "\n"), "\n")
}

// trimLogPrefix drops "15:04:05.000 INFO mcpflow: " from a log line.
func trimLogPrefix(l string) string {
	if _, rest, ok := strings.Cut(l, "mcpflow: "); ok {
		return rest
	}
	return l
}

func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// ---- files --------------------------------------------------------------

// copyTree copies the regular files under src to dst, skipping .mcpflow
// (build output and logs of earlier runs).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			if e.Name() == ".mcpflow" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}

// atomicWrite replaces path the way editors save: write a temporary file
// in the same folder, then rename it over the original.
func atomicWrite(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(info.Mode().Perm())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
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
	out := slices.Concat(src[:at], []byte(add), src[at:])
	return out, bytes.Count(src[:at], []byte("\n")) + 1, nil
}

func drain(ch chan time.Time) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// short rounds d for people: 5ms, 1.23s, 14.2s.
func short(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		d = d.Round(100 * time.Millisecond)
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Millisecond)
	default:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

// ---- output -------------------------------------------------------------

const (
	reset  = "\x1b[0m"
	bold   = "\x1b[1m"
	dim    = "\x1b[2m"
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	cyan   = "\x1b[36m"
)

// useColor reports whether f is a terminal that wants colors.
func useColor(f *os.File) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// ui prints the demo's report. Its methods may be called from several
// goroutines (mcpflow's stderr is streamed with -v); each line is written
// whole.
type ui struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
}

func (u *ui) style(code, s string) string {
	if !u.color {
		return s
	}
	return code + s + reset
}

func (u *ui) line(s string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Fprintln(u.w, s)
}

// heading prints "n. title"; n = 0 prints the title alone.
func (u *ui) heading(n int, title string) {
	num := ""
	if n > 0 {
		num = strconv.Itoa(n) + ". "
	}
	u.line("\n" + u.style(bold+cyan, num+title))
}

func (u *ui) ok(format string, args ...any) { u.mark(true, format, args...) }

func (u *ui) bad(format string, args ...any) { u.mark(false, format, args...) }

func (u *ui) mark(ok bool, format string, args ...any) {
	sym := u.style(green, "✓")
	if !ok {
		sym = u.style(red, "✗")
	}
	msg := fmt.Sprintf(format, args...)
	first, rest, _ := strings.Cut(msg, "\n")
	u.line("   " + sym + " " + first)
	if rest != "" {
		u.quote("", strings.Split(rest, "\n"))
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

// quote prints lines dimmed behind a bar, with an optional label first.
func (u *ui) quote(label string, lines []string) {
	if label != "" {
		u.line(u.style(dim, "     "+label+":"))
	}
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

// lineWriter prints what is written to it line by line, dimmed and
// prefixed. One goroutine (exec's stderr copier) writes to it.
type lineWriter struct {
	ui     *ui
	prefix string
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.ui.line(w.ui.style(dim, w.prefix+stripANSI(string(w.buf[:i]))))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}
