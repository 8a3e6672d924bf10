// Command demo is what `make demo` runs: mcpflow on a copy of
// examples/echo under a real MCP client (the Go SDK's), with real edits to
// the server's source, one numbered step at a time.
//
//	go run ./examples/demo -mcpflow bin/mcpflow [-era modern|legacy] [-mux] [-keep] [-timeout 3m]
//
// Each step prints ✓ or ✗ and the facts that show it worked. The demo
// checks only what a client sees (tool results, notifications, tool
// lists) and which processes are left; it never parses mcpflow's log, and
// shows its tail when a step fails. The exit status is 0 when every step
// passed, 1 otherwise.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	marker        = "\t// New tools go here.\n" // the line of examples/echo/main.go after which tools go
	logRel        = ".mcpflow/mcpflow.log"      // [log] file in examples/echo/mcpflow.toml
	legacyVersion = "2025-11-25"                // the last revision of the legacy era
	modernVersion = "2026-07-28"                // the first revision of the modern era

	// Every wait has a limit; all of them are also bounded by -timeout.
	buildTimeout = 2 * time.Minute // a build and restart (the first may fill a cold cache)
	callTimeout  = 30 * time.Second
	exitTimeout  = 5 * time.Second // for mcpflow to exit after stdin closes, then after SIGTERM

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

// demo holds one run's state.
type demo struct {
	ui
	bin, era  string
	mux       bool   // the mux part (mux.go) instead of the single-server one
	root, dir string // the temporary folder, and root/echo: the copy mcpflow works on
	step      int
	title     string

	cmd     *proc.Cmd // mcpflow, the leader of a process group of its own
	stdin   io.Closer
	exited  chan struct{} // closed once mcpflow has been waited for
	waitErr error         // cmd.Wait's result, set before exited closes
	stopped bool
	started []int // processes mcpflow ran (servers, builds), each the leader of its own group

	session *mcp.ClientSession
	changed chan time.Time // one per notifications/tools/list_changed
}

func main() {
	d := &demo{ui: ui{color: useColor(os.Stdout)}, changed: make(chan time.Time, 16)}
	flag.StringVar(&d.bin, "mcpflow", "bin/mcpflow", "the mcpflow binary to run")
	flag.StringVar(&d.era, "era", "modern", "protocol era of the client: modern (server/discover) or legacy (initialize, "+legacyVersion+")")
	flag.BoolVar(&d.mux, "mux", false, "show the mux instead: examples/mux, add_server, a rebuild of one server")
	keep := flag.Bool("keep", false, "keep the temporary copy of the example and print where it is")
	timeout := flag.Duration("timeout", 3*time.Minute, "limit for the whole demo")
	flag.Parse()
	d.bin, _ = filepath.Abs(d.bin)
	_, err1 := os.Stat(d.bin)
	_, err2 := os.Stat(filepath.Join("examples", "echo", "main.go"))
	if err := errors.Join(err1, err2); err != nil || d.era != "modern" && d.era != "legacy" || flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: run it from the repository root after make build (%v)\n", err)
		flag.Usage()
		os.Exit(2)
	}
	// After the first Ctrl-C the demo cleans up; a second one kills it
	// (mcpflow, in its own process group, then sees its stdin close).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	go func() { <-ctx.Done(); stop() }()
	code := d.run(ctx, *keep)
	cancel()
	os.Exit(code)
}

func (d *demo) run(ctx context.Context, keep bool) int {
	start := time.Now()
	root, err := os.MkdirTemp("", "mcpflow-demo-")
	if err != nil {
		d.bad("%v", err)
		return 1
	}
	d.root, d.dir = root, filepath.Join(root, "echo")
	d.line(d.style(bold, "mcpflow demo") + d.style(dim, " · hot reload of an MCP server under a real Go SDK client · "+d.era+" era"))
	d.fact("mcpflow", d.bin)
	d.fact("work dir", d.root)
	steps := d.steps
	if d.mux {
		steps = d.muxSteps
	}
	if err := steps(ctx); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (the demo's -timeout ran out, or it was interrupted)", err)
		}
		if d.exited != nil && !d.stopped {
			select {
			case <-d.exited:
				err = fmt.Errorf("%w; mcpflow had exited: %v", err, cmp.Or[any](d.waitErr, "exit status 0"))
			default:
			}
		}
		d.bad("%v", err)
		d.showLogTail(20)
		if err := d.shutdown(); err != nil {
			d.bad("clean up: %v", err)
		}
		d.line(d.style(dim, "kept the work folder: "+d.root+" (mcpflow's stderr is in mcpflow.stderr there)"))
		d.line("\n" + d.style(red+bold, fmt.Sprintf("demo failed at step %d (%s): ✗", d.step, d.title)))
		return 1
	}
	if keep {
		d.line(d.style(dim, "kept the work folder: "+d.root))
	} else if err := os.RemoveAll(d.root); err != nil {
		d.line(d.style(yellow, fmt.Sprintf("could not remove %s: %v", d.root, err)))
	}
	d.line("\n" + d.style(green+bold, fmt.Sprintf("demo passed: %d steps ✓", d.step)) +
		d.style(dim, fmt.Sprintf("  (%s era, %s)", d.era, result.Dur(time.Since(start)))))
	return 0
}

// begin starts the next numbered step; it also notes the processes
// mcpflow runs by then.
func (d *demo) begin(title string) {
	d.noteStarted()
	d.step, d.title = d.step+1, title
	d.line("\n" + d.style(bold+cyan, strconv.Itoa(d.step)+". "+title))
}

// steps runs the demo's steps in order and returns the first failure.
func (d *demo) steps(ctx context.Context) error {
	d.begin("Start mcpflow and connect a Go SDK client")
	if err := d.connect(ctx); err != nil {
		return err
	}

	d.begin("List the tools and call echo")
	before, err := d.toolNames(ctx)
	if err != nil {
		return err
	}
	for _, want := range []string{"echo", "shout", "recompile"} {
		if !slices.Contains(before, want) {
			return fmt.Errorf("tools/list has no %s: %v", want, before)
		}
	}
	d.ok("tools/list → %s", strings.Join(before, ", "))
	d.note("echo and shout come from the server; mcpflow adds recompile")
	if err := d.expectCall(ctx, "echo", "hello from mcpflow", "hello from mcpflow"); err != nil {
		return err
	}

	d.begin("Edit main.go: add a reverse tool")
	src, err := os.ReadFile(filepath.Join(d.dir, "main.go"))
	if err != nil {
		return err
	}
	for len(d.changed) > 0 { // a notification before the save is not this save's
		<-d.changed
	}
	withReverse, line, err := d.save(src, reverseTool)
	savedAt := time.Now()
	if err != nil {
		return err
	}
	added := strings.Split(strings.TrimSuffix(reverseTool, "\n"), "\n")
	d.ok("saved main.go as editors do (temp file, then rename over it): %d lines after %q", len(added), strings.TrimSpace(marker))
	d.diff(line, added)

	d.begin("Wait for notifications/tools/list_changed")
	at, err := d.waitChanged(ctx)
	if err != nil {
		return fmt.Errorf("no notifications/tools/list_changed within %s of the save: %w", result.Dur(time.Since(savedAt)), err)
	}
	d.ok("notifications/tools/list_changed arrived %s after the save, with no tool call: the watcher saw the save, mcpflow rebuilt and restarted the server",
		d.style(bold, result.Dur(at.Sub(savedAt))))

	d.begin("List the tools again")
	names, err := d.toolNames(ctx)
	if err != nil {
		return err
	}
	d.ok("tools/list → %s", strings.Join(names, ", "))
	diff := slices.Concat(prefixed("+", names, before), prefixed("-", before, names))
	d.fact("diff", d.style(green, strings.Join(diff, " ")))
	if !slices.Equal(diff, []string{"+reverse"}) {
		return fmt.Errorf("expected the tools to change by +reverse, got %q", diff)
	}

	d.begin("Call the new reverse tool")
	if err := d.expectCall(ctx, "reverse", "mcpflow", "wolfpcm"); err != nil {
		return err
	}

	d.begin("Break the build, call recompile")
	if err := d.breakBuild(ctx, withReverse); err != nil {
		return err
	}

	d.begin("Fix it, call recompile")
	if err := d.fixBuild(ctx, withReverse); err != nil {
		return err
	}

	d.begin("Shut down")
	return d.shutdown()
}

// connect copies the example, starts mcpflow on it and connects a client.
func (d *demo) connect(ctx context.Context) error {
	// Copy without .mcpflow: build output and logs of earlier runs.
	err := os.CopyFS(d.dir, os.DirFS(filepath.Join("examples", "echo")))
	if err == nil {
		err = os.RemoveAll(filepath.Join(d.dir, ".mcpflow"))
	}
	if err != nil {
		return fmt.Errorf("copy examples/echo: %w", err)
	}
	d.ok("copied examples/echo to %s", d.dir)
	toml := filepath.Join(d.dir, "mcpflow.toml")
	t0 := time.Now()
	if err := d.startAndConnect(ctx, toml); err != nil {
		return err
	}
	// While the first build runs, mcpflow answers the handshake itself and
	// announces the server with list_changed once it is up.
	res := d.session.InitializeResult()
	building := res.ServerInfo != nil && res.ServerInfo.Name == "mcpflow"
	if !building {
		d.ok("connected in %s (the first build was up in time)", result.Dur(time.Since(t0)))
	} else {
		d.ok("connected in %s: the first build is still running, so mcpflow answered the handshake itself", result.Dur(time.Since(t0)))
		if _, err := d.waitChanged(ctx); err != nil {
			return fmt.Errorf("the first build did not bring the server up: %w", err)
		}
		d.ok("the server is up: notifications/tools/list_changed %s after connecting", result.Dur(time.Since(t0)))
	}
	era := map[bool]string{true: "modern (server/discover, then a subscriptions/listen stream)", false: "legacy (initialize, then notifications/initialized)"}
	d.fact("protocol", res.ProtocolVersion+", "+era[res.ProtocolVersion >= modernVersion])
	switch modern := res.ProtocolVersion >= modernVersion; {
	case building && !modern && d.era == "modern":
		// The session's era follows the server's, unknown while it builds.
		d.note("server/discover was declined while no server ran, so the client used the legacy handshake")
	case modern != (d.era == "modern"):
		return fmt.Errorf("asked for the %s era, but the session negotiated %s", d.era, res.ProtocolVersion)
	}
	if res.Capabilities == nil || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		return errors.New("the server does not advertise tools.listChanged: true (mcpflow forces it, so clients re-fetch tools after a reload)")
	}
	return nil
}

// startAndConnect starts mcpflow watch -c toml and connects the demo's
// client (in the demo's era), noting every tools/list_changed.
func (d *demo) startAndConnect(ctx context.Context, toml string) error {
	transport, err := d.start(toml)
	if err != nil {
		return err
	}
	d.ok("started mcpflow watch -c %s (pid %d, its own process group)", toml, d.cmd.Process.Pid)
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpflow-demo", Version: "1.0.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case d.changed <- time.Now():
			default:
			}
		},
	})
	var opts mcp.ClientSessionOptions
	if d.era == "legacy" {
		opts.ProtocolVersion = legacyVersion
	}
	cctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	if d.session, err = client.Connect(cctx, transport, &opts); err != nil {
		return fmt.Errorf("connect: %w", err)
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
	// Dir: not the project: -c alone must locate everything. The grace is
	// also WaitDelay: a stray holder of stderr must not hang Wait.
	cmd := proc.Command(context.Background(), proc.Spec{Argv: []string{d.bin, "watch", "-c", toml}, Dir: d.root}, exitTimeout)
	cmd.Stderr = errFile
	stdin, err1 := cmd.StdinPipe()
	stdout, err2 := cmd.StdoutPipe()
	if err = errors.Join(err1, err2); err == nil {
		err = cmd.Start()
	}
	if err != nil {
		errFile.Close()
		return nil, fmt.Errorf("start %s: %w", d.bin, err)
	}
	d.cmd, d.stdin, d.exited = cmd, stdin, make(chan struct{})
	go func() {
		d.waitErr = cmd.Wait() // and what is left of mcpflow's group is killed
		errFile.Close()
		close(d.exited)
	}()
	return &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: -1}, nil
}

// waitChanged waits for the next notifications/tools/list_changed.
func (d *demo) waitChanged(ctx context.Context) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	select {
	case at := <-d.changed:
		return at, nil
	case <-d.exited:
		return time.Time{}, errors.New("mcpflow exited")
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// prefixed returns the names not in except, each with prefix.
func prefixed(prefix string, names, except []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(except, n) {
			out = append(out, prefix+n)
		}
	}
	return out
}

func (d *demo) toolNames(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var names []string
	for tool, err := range d.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
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
		return nil, nil, fmt.Errorf("tools/call %s: %w", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return res, texts, nil
}

// expectCall calls a text tool and checks its answer, the first text item;
// the items after it (notices mcpflow appends) are shown.
func (d *demo) expectCall(ctx context.Context, tool, in, want string) error {
	res, texts, err := d.call(ctx, callTimeout, tool, map[string]any{"text": in})
	if err != nil {
		return err
	}
	if res.IsError || len(texts) == 0 || texts[0] != want {
		return fmt.Errorf("%s(%q) returned %q (isError: %v), want %q", tool, in, texts, res.IsError, want)
	}
	d.ok("tools/call %s {\"text\": %q} → %q", tool, in, texts[0])
	for _, n := range texts[1:] {
		d.quote(n)
	}
	return nil
}

// recompile calls the recompile tool and reads its structuredContent,
// the typed result scripts rely on (internal/report/result.Structured).
func (d *demo) recompile(ctx context.Context) (*result.Structured, bool, error) {
	t0 := time.Now()
	res, texts, err := d.call(ctx, buildTimeout, "recompile", nil)
	if err != nil {
		return nil, false, err
	}
	var s result.Structured
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &s); err != nil || res.StructuredContent == nil {
		return nil, false, fmt.Errorf("recompile's result has no structuredContent (%v): %s", err, strings.Join(texts, "\n"))
	}
	d.ok("tools/call recompile → isError: %v after %s", res.IsError, result.Dur(time.Since(t0)))
	return &s, res.IsError, nil
}

func (d *demo) breakBuild(ctx context.Context, withReverse []byte) error {
	_, line, err := d.save(withReverse, brokenLine)
	if err != nil {
		return err
	}
	d.ok("saved main.go with a type error:")
	d.diff(line, []string{strings.TrimSuffix(brokenLine, "\n")})
	rr, isError, err := d.recompile(ctx)
	if err != nil {
		return err
	}
	if rr.Build.OK || rr.Restart.Attempted {
		return fmt.Errorf("recompile of broken code reported build ok: %v, a restart: %v", rr.Build.OK, rr.Restart.Attempted)
	}
	d.fact("build", d.style(red, "✗ failed")+" after "+ms(rr.Build.DurationMS))
	errs := rr.Build.Errors
	where := fmt.Sprintf("main.go:%d:", line)
	if !isError || !strings.Contains(errs, where) {
		return fmt.Errorf("recompile of broken code should fail with an error at %s (isError: %v):\n%s", where, isError, errs)
	}
	d.fact("errors", "point at "+d.style(bold, strings.TrimSuffix(where, ":")))
	d.quote(strings.TrimSpace(errs))
	if err := d.expectCall(ctx, "echo", "still serving", "still serving"); err != nil {
		return fmt.Errorf("the old server should keep serving while the code is broken: %w", err)
	}
	d.note("the old server keeps serving while the code is broken")
	return nil
}

func (d *demo) fixBuild(ctx context.Context, withReverse []byte) error {
	if _, _, err := d.save(withReverse, ""); err != nil {
		return err
	}
	d.ok("saved main.go without the broken line")
	rr, isError, err := d.recompile(ctx)
	switch {
	case err != nil:
		return err
	case isError || !rr.Build.OK || !rr.Restart.OK:
		return fmt.Errorf("recompile of fixed code did not build and restart: %s%s", rr.Build.Error, rr.Restart.Error)
	case !slices.Contains(rr.Tools.Current, "reverse"):
		return fmt.Errorf("recompile lists the tools %v, without reverse", rr.Tools.Current)
	default:
		d.fact("build", d.style(green, "✓")+" in "+ms(rr.Build.DurationMS))
		d.fact("restart", d.style(green, "✓")+" in "+ms(rr.Restart.DurationMS))
		diff := slices.Concat(prefixed("+", rr.Tools.Added, nil), prefixed("-", rr.Tools.Removed, nil), prefixed("~", rr.Tools.Changed, nil))
		d.fact("tools", strings.Join(rr.Tools.Current, ", ")+d.style(dim, " ("+cmp.Or(strings.Join(diff, " "), "no change")+")"))
	}
	return d.expectCall(ctx, "reverse", "mcpflow", "wolfpcm")
}

func ms(v int64) string { return result.Dur(time.Duration(v) * time.Millisecond) }

// save writes src, with add inserted after the marker line, to main.go the
// way editors save (a temporary file renamed over it). It returns what it
// wrote and the line number of the first inserted line.
func (d *demo) save(src []byte, add string) ([]byte, int, error) {
	i := bytes.Index(src, []byte(marker))
	if i < 0 {
		return nil, 0, fmt.Errorf("main.go has no %q line", strings.TrimSpace(marker))
	}
	at := i + len(marker)
	out := slices.Concat(src[:at], []byte(add), src[at:])
	tmp := filepath.Join(d.dir, ".main.go.tmp")
	err := os.WriteFile(tmp, out, 0o644)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(d.dir, "main.go"))
	}
	return out, bytes.Count(src[:at], []byte("\n")) + 1, err
}

// shutdown closes mcpflow's stdin, stops mcpflow's process group if it
// has not exited by then, and checks that neither its group nor the group
// of any process it ran is left. It runs once; it is also the cleanup
// after a failed step.
func (d *demo) shutdown() error {
	if d.stopped || d.cmd == nil {
		return nil
	}
	d.noteStarted()
	d.stopped = true
	var problems []error
	t0 := time.Now()
	d.stdin.Close()
	select {
	case <-d.exited:
		if d.waitErr == nil {
			d.ok("mcpflow exited after its stdin closed in %s: exit status 0", result.Dur(time.Since(t0)))
		}
	case <-time.After(exitTimeout):
		problems = append(problems, fmt.Errorf("mcpflow did not exit within %s of its stdin closing, so the demo stopped it", exitTimeout))
		d.cmd.Stop(nil, exitTimeout) // SIGTERM, then SIGKILL
		<-d.exited
	}
	if d.waitErr != nil {
		problems = append(problems, fmt.Errorf("mcpflow exited with %w", d.waitErr))
	}
	if d.session != nil {
		d.session.Close()
	}
	leaders := append([]int{d.cmd.Process.Pid}, d.started...)
	for deadline := time.Now().Add(exitTimeout); slices.ContainsFunc(leaders, groupAlive) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	left := slices.DeleteFunc(leaders, func(pid int) bool { return !groupAlive(pid) })
	switch {
	case len(left) > 0:
		problems = append(problems, fmt.Errorf("process groups alive after mcpflow (%d) exited, led by %v; the demo killed their leaders", d.cmd.Process.Pid, left))
		for _, pid := range left {
			if p, err := os.FindProcess(pid); err == nil && pid != d.cmd.Process.Pid {
				_ = p.Kill()
			}
		}
	case len(d.started) == 0:
		d.ok("no process left: mcpflow's process group is gone")
	default:
		d.ok("no process left: mcpflow's process group and the groups of the %d processes it ran (pids %s) are gone",
			len(d.started), strings.Trim(fmt.Sprint(d.started), "[]"))
	}
	return errors.Join(problems...)
}

// noteStarted records the processes mcpflow runs now (its server, a
// build), where /proc tells (Linux); elsewhere shutdown checks mcpflow's
// own group only.
func (d *demo) noteStarted() {
	if d.cmd == nil || d.stopped {
		return
	}
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", d.cmd.Process.Pid))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil && !slices.Contains(d.started, pid) {
				d.started = append(d.started, pid)
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
	lines = lines[max(0, len(lines)-n):]
	d.line(d.style(dim, fmt.Sprintf("     last %d lines of %s:", len(lines), path)))
	d.quote(strings.Join(lines, "\n"))
}

const (
	reset, bold, dim         = "\x1b[0m", "\x1b[1m", "\x1b[2m"
	red, green, yellow, cyan = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"
)

// useColor reports whether f is a terminal that wants colors.
func useColor(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0 && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// ui prints the demo's report on stdout.
type ui struct{ color bool }

func (u ui) style(code, s string) string {
	if !u.color {
		return s
	}
	return code + s + reset
}

func (u ui) line(s string) { fmt.Println(s) }
func (u ui) ok(format string, args ...any) {
	u.line("   " + u.style(green, "✓") + " " + fmt.Sprintf(format, args...))
}
func (u ui) note(s string) { u.line(u.style(dim, "     "+s)) }
func (u ui) fact(key, value string) {
	u.line("     " + u.style(dim, fmt.Sprintf("%-10s", key)) + " " + value)
}

// bad prints a ✗ line; the lines after the first are quoted.
func (u ui) bad(format string, args ...any) {
	first, rest, more := strings.Cut(fmt.Sprintf(format, args...), "\n")
	u.line("   " + u.style(red, "✗") + " " + first)
	if more {
		u.quote(rest)
	}
}

// quote prints text dimmed behind a bar.
func (u ui) quote(text string) {
	for _, l := range strings.Split(text, "\n") {
		u.line(u.style(dim, strings.TrimRight("     │ "+l, " ")))
	}
}

// diff prints inserted source lines with their line numbers.
func (u ui) diff(first int, lines []string) {
	for i, l := range lines {
		u.line(fmt.Sprintf("     %s %s", u.style(dim, fmt.Sprintf("%3d", first+i)), u.style(green, "+ "+strings.ReplaceAll(l, "\t", "    "))))
	}
}
