//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The control tests run the real mcpflow binary with XDG_RUNTIME_DIR set
// to a folder of their own, and drive it with the real mcpflow status,
// rebuild and logs commands. These also find the instances in
// /tmp/mcpflow-<uid> (other tests', started without XDG_RUNTIME_DIR): a
// test counts only its own.

// runtimeDir makes a short XDG_RUNTIME_DIR (socket paths are limited to
// about 100 bytes) and returns it.
func runtimeDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "xdg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// sockets lists the control sockets in xdg's runtime folder.
func sockets(xdg string) []string {
	m, _ := filepath.Glob(filepath.Join(xdg, "mcpflow", "*.sock"))
	return m
}

const fixtureProject = `[build]
command = "cp src.txt variant"
[run]
command = [%q, "-variant-file", "variant"]
stop_timeout = "1s"
[watch]
paths = ["."]
include = ["src.txt"]
debounce = "50ms"
[log]
level = "info"
`

// fixtureDir writes a project whose build copies src.txt to the fixture
// server's variant file: "v2" adds the reverse tool.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mcpflow.toml"), fmt.Appendf(nil, fixtureProject, fixtureBin), 0o644)
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1"), 0o644)
	return dir
}

// ctlRun is mcpflow watch started by a control test.
type ctlRun struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	stderr  *testkit.Buffer
	exited  chan error
	cs      *mcp.ClientSession
	changed chan struct{}
	// stderrReader is the test's end of stderr (startCtlStderrPipe only).
	stderrReader *os.File
}

// startCtl starts mcpflow watch in dir with the runtime folder xdg ("":
// with a bare environment, HOME and PATH only, as some clients give).
func startCtl(t *testing.T, xdg, dir string, args ...string) *ctlRun {
	t.Helper()
	r := &ctlRun{t: t, stderr: &testkit.Buffer{}, exited: make(chan error, 1), changed: make(chan struct{}, 16)}
	tag := testkit.Tag(t)
	r.cmd = testkit.Command(tag, []string{"XDG_RUNTIME_DIR=" + xdg}, mcpflowBin, append([]string{"watch"}, args...)...)
	if xdg == "" {
		r.cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), tag}
	}
	r.cmd.Dir = dir
	r.cmd.Stderr = r.stderr
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if r.stdout, err = r.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-r.exited:
			r.exited <- err
		default:
			r.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-r.exited:
				r.exited <- err
			case <-time.After(20 * time.Second):
				syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
				t.Error("mcpflow did not exit on SIGTERM")
			}
		}
		if t.Failed() {
			t.Logf("mcpflow stderr:\n%s", r.stderr.String())
		}
	})
	return r
}

// connect connects a Go SDK client (protocol version: "" = the SDK's
// default); record, when set, gets every line the client sends.
func (r *ctlRun) connect(version string, record io.Writer) {
	r.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "ctl-e2e", Version: "7"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case r.changed <- struct{}{}:
			default:
			}
		},
	})
	var w io.WriteCloser = r.stdin
	if record != nil {
		w = teeCloser{io.MultiWriter(record, r.stdin), r.stdin}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: r.stdout, Writer: w, MaxLineLength: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		r.t.Fatalf("connect: %v\nstderr:\n%s", err, r.stderr.String())
	}
	r.cs = cs
}

type teeCloser struct {
	io.Writer
	c io.Closer
}

func (t teeCloser) Close() error { return t.c.Close() }

func (r *ctlRun) call(name string, args map[string]any) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		r.t.Fatalf("call %s: %v\nstderr:\n%s", name, err, r.stderr.String())
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// waitFor polls cond until it holds; failing after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, time.Minute, what, cond)
}

// waitSocket waits for the run's control socket.
func (r *ctlRun) waitSocket(xdg string) string {
	r.t.Helper()
	want := filepath.Join(xdg, "mcpflow", strconv.Itoa(r.cmd.Process.Pid)+".sock")
	waitFor(r.t, "the control socket "+want, func() bool { return slices.Contains(sockets(xdg), want) })
	return want
}

// waitExit waits for mcpflow to exit and returns its exit status.
func (r *ctlRun) waitExit() int {
	r.t.Helper()
	select {
	case err := <-r.exited:
		r.exited <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			r.t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		r.t.Fatalf("mcpflow did not exit\nstderr:\n%s", r.stderr.String())
	}
	return 0
}

// mcpflow runs an mcpflow command in dir with the runtime folder xdg.
func mcpflow(t *testing.T, xdg, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(mcpflowBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("mcpflow %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

func TestControlStatusTwoInstances(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir1, dir2 := fixtureDir(t), fixtureDir(t)
	r1 := startCtl(t, xdg, dir1)
	r2 := startCtl(t, xdg, dir2)
	r1.connect("2025-11-25", nil)
	if got := r1.call("echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatalf("echo: %q", got)
	}
	lt, err := r1.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	serverTools := len(lt.Tools) - 1 // recompile is mcpflow's
	r1.waitSocket(xdg)
	r2.waitSocket(xdg)
	elsewhere := t.TempDir()

	var sts []control.Status
	waitFor(t, "both instances running in status --json", func() bool {
		out, errOut, code := mcpflow(t, xdg, elsewhere, "status", "--json")
		if code != 0 {
			t.Fatalf("status --json: exit %d: %s", code, errOut)
		}
		sts = nil
		if err := json.Unmarshal([]byte(out), &sts); err != nil {
			t.Fatalf("status --json is not JSON: %v\n%s", err, out)
		}
		sts = slices.DeleteFunc(sts, func(s control.Status) bool {
			return s.Pid != r1.cmd.Process.Pid && s.Pid != r2.cmd.Process.Pid
		})
		return len(sts) == 2 && sts[0].Servers[0].State == "running" && sts[1].Servers[0].State == "running"
	})
	byPid := map[int]control.Status{sts[0].Pid: sts[0], sts[1].Pid: sts[1]}
	s1, ok1 := byPid[r1.cmd.Process.Pid]
	s2, ok2 := byPid[r2.cmd.Process.Pid]
	if !ok1 || !ok2 {
		t.Fatalf("status pids %d, %d; want %d and %d", sts[0].Pid, sts[1].Pid, r1.cmd.Process.Pid, r2.cmd.Process.Pid)
	}
	sv := s1.Servers[0]
	if s1.Config != filepath.Join(dir1, "mcpflow.toml") || s1.Project != dir1 || s1.Mode != "single" ||
		s1.Client.Name != "ctl-e2e" || s1.Client.Protocol != "2025-11-25" || s1.Client.Era != "legacy" ||
		sv.Pid == 0 || sv.Gen != 1 || sv.Served != 1 || sv.InFlight != 0 || sv.Tools != serverTools ||
		sv.Build == nil || !sv.Build.OK || sv.Build.Trigger != "startup" || s1.Uptime <= 0 {
		t.Fatalf("status of the first instance: %+v", s1)
	}
	if s2.Client.Name != "" || s2.Config != filepath.Join(dir2, "mcpflow.toml") {
		t.Fatalf("status of the second instance: %+v", s2)
	}

	// The text: one block each.
	out, _, code := mcpflow(t, xdg, elsewhere, "status")
	for _, want := range []string{
		fmt.Sprintf("mcpflow pid %d  single", r1.cmd.Process.Pid),
		fmt.Sprintf("mcpflow pid %d  single", r2.cmd.Process.Pid),
		"client   ctl-e2e 7, protocol 2025-11-25 (legacy)",
		"client   (none yet)",
		"SERVER", "running",
	} {
		if !strings.Contains(out, want) || code != 0 {
			t.Errorf("status lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	// In a project folder, or with -c, just that project.
	out, _, _ = mcpflow(t, xdg, dir2, "status")
	if strings.Contains(out, fmt.Sprint(r1.cmd.Process.Pid)) || !strings.Contains(out, fmt.Sprint(r2.cmd.Process.Pid)) {
		t.Errorf("status in the second project:\n%s", out)
	}
	out, _, _ = mcpflow(t, xdg, elsewhere, "status", "--json", "-c", filepath.Join(dir1, "mcpflow.toml"))
	if err := json.Unmarshal([]byte(out), &sts); err != nil || len(sts) != 1 || sts[0].Pid != r1.cmd.Process.Pid {
		t.Errorf("status -c: %v\n%s", err, out)
	}
	// Two instances and no pick: rebuild says how to choose.
	_, errOut, code := mcpflow(t, xdg, elsewhere, "rebuild")
	if code != 1 || !strings.Contains(errOut, "--pid") {
		t.Errorf("rebuild with two instances: exit %d: %s", code, errOut)
	}
}

// An instance whose client passed it a bare environment (the Inspector
// passes HOME, PATH, PWD, SHELL and TERM) is found from a terminal that
// has XDG_RUNTIME_DIR: status, rebuild and logs reach it.
func TestControlFindsABareInstance(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	r := startCtl(t, "", dir)
	pid := strconv.Itoa(r.cmd.Process.Pid)
	sock := filepath.Join("/tmp", "mcpflow-"+strconv.Itoa(os.Geteuid()), pid+".sock")
	waitFor(t, "the control socket "+sock, func() bool { _, err := os.Stat(sock); return err == nil })
	xdg := runtimeDir(t)
	waitFor(t, "the instance in status", func() bool {
		out, _, _ := mcpflow(t, xdg, dir, "status")
		return strings.Contains(out, "mcpflow pid "+pid) && strings.Contains(out, "running")
	})
	if out, errOut, code := mcpflow(t, xdg, dir, "rebuild"); code != 0 || !strings.Contains(out, "restart ok") {
		t.Errorf("rebuild: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := mcpflow(t, xdg, dir, "logs"); code != 0 || !strings.Contains(out, "mcpflow started") {
		t.Errorf("logs: exit %d\n%s%s", code, out, errOut)
	}
}

const rebuildConfig = `[build]
command = "go build -o .mcpflow/echo ."
[run]
command = [".mcpflow/echo"]
[watch]
enabled = false
`

// TestControlRebuild: mcpflow rebuild on a broken build exits 1 with the
// compiler's error and leaves the old server serving; on a good one it
// shows the tool diff, and the client is told its tools changed.
func TestControlRebuild(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir := copyExample(t)
	os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(rebuildConfig), 0o644)
	r := startCtl(t, xdg, dir)
	r.connect("", nil)
	r.waitSocket(xdg)
	waitFor(t, "the first server", func() bool {
		out, _, _ := mcpflow(t, xdg, dir, "status")
		return strings.Contains(out, "running")
	})
	// The diff is against the list the client last fetched, as a client
	// does on list_changed once the server is up.
	if _, err := r.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}

	editSource(t, dir, breakBuild)
	out, errOut, code := mcpflow(t, xdg, dir, "rebuild")
	if code != 1 || !regexp.MustCompile(`main\.go:\d+:\d+: undefined: undefinedThing`).MatchString(out) ||
		!strings.Contains(out, "build FAILED") || !strings.Contains(out, "old server keeps running") {
		t.Fatalf("rebuild of a broken build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if got := r.call("echo", map[string]any{"text": "old"}); got != "old" {
		t.Fatalf("the old server after a failed rebuild: %q", got)
	}
	out, _, _ = mcpflow(t, xdg, dir, "status")
	if !regexp.MustCompile(`FAILED .*\n.*build failed: \./main\.go:\d+:\d+: undefined: undefinedThing`).MatchString(out) {
		t.Errorf("status after the failed rebuild names no error:\n%s", out)
	}

	drain(r.changed)
	editSource(t, dir, func(s string) string { return addReverse(strings.Replace(s, "\tundefinedThing()\n", "", 1)) })
	out, errOut, code = mcpflow(t, xdg, dir, "rebuild", "--json")
	var j control.BuildJSON
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil || !j.Build.OK || !j.Restart.OK ||
		!slices.Equal(j.Tools.Added, []string{"reverse"}) || j.Trigger != "recompile" || j.Gen != 2 {
		t.Fatalf("rebuild --json of a good build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	select {
	case <-r.changed:
	case <-time.After(time.Minute):
		t.Fatal("the client got no tools/list_changed after mcpflow rebuild")
	}
	if got := r.call("reverse", map[string]any{"text": "abc"}); got != "cba" {
		t.Fatalf("reverse after rebuild: %q", got)
	}
	if _, err := r.cs.ListTools(context.Background(), nil); err != nil { // as the client does on list_changed
		t.Fatal(err)
	}

	// The text form, and a name that is not this server's.
	editSource(t, dir, func(s string) string { return strings.Replace(s, reverseTool, "", 1) })
	out, _, code = mcpflow(t, xdg, dir, "rebuild")
	if code != 0 || !strings.Contains(out, "build ok in") || !strings.Contains(out, "restart ok in") || !strings.Contains(out, "tools: -reverse") {
		t.Fatalf("rebuild: exit %d\n%s", code, out)
	}
	_, errOut, code = mcpflow(t, xdg, dir, "rebuild", "nosuch")
	if code != 1 || !strings.Contains(errOut, `not "nosuch"`) {
		t.Fatalf("rebuild nosuch: exit %d: %s", code, errOut)
	}
}

// TestControlLogs: mcpflow logs prints the kept lines (no log file is
// set), and logs -f follows new ones until interrupted or until the
// instance stops.
func TestControlLogs(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir := fixtureDir(t)
	r := startCtl(t, xdg, dir)
	r.connect("", nil)
	r.waitSocket(xdg)
	waitFor(t, "the startup cycle in mcpflow logs", func() bool {
		out, _, _ := mcpflow(t, xdg, dir, "logs")
		return strings.Contains(out, "startup → build")
	})
	if out, _, _ := mcpflow(t, xdg, dir, "logs", "-n", "1"); strings.Count(out, "\n") != 1 {
		t.Errorf("logs -n 1 printed:\n%s", out)
	}

	follow := func() (*exec.Cmd, *testkit.Buffer, chan error) {
		cmd := exec.Command(mcpflowBin, "logs", "-f")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg)
		out := &testkit.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill(); <-done; done <- nil })
		waitFor(t, "the backlog in logs -f", func() bool { return strings.Contains(out.String(), "startup → build") })
		return cmd, out, done
	}
	exitedOK := func(what string, done chan error) {
		t.Helper()
		select {
		case err := <-done:
			done <- err
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not end", what)
		}
	}

	// A change is logged while the follower runs: it sees the cycle.
	cmd, out, done := follow()
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
	waitFor(t, "the new cycle in logs -f", func() bool {
		return regexp.MustCompile(`changed src\.txt → build .* ✓ → restart .* ✓ → tools \+reverse`).MatchString(out.String())
	})
	cmd.Process.Signal(syscall.SIGINT)
	exitedOK("logs -f after Ctrl-C", done)

	// The instance stops: the follower ends too.
	_, out, done = follow()
	r.cs.Close()
	if code := r.waitExit(); code != 0 {
		t.Fatalf("mcpflow exit status %d", code)
	}
	exitedOK("logs -f after the instance stopped", done)
	if !strings.Contains(out.String(), "shutting down") {
		t.Errorf("the follower missed the last lines:\n%s", out.String())
	}
}

// TestControlSocketRemovedOnExit ends mcpflow every way it can end and
// checks that its control socket is gone; a killed instance's socket is
// skipped by status and removed by the next instance.
func TestControlSocketRemovedOnExit(t *testing.T) {
	t.Parallel()
	type way struct {
		name string
		end  func(r *ctlRun, dir string)
		code int
	}
	ways := []way{
		{"stdin EOF", func(r *ctlRun, _ string) { r.stdin.Close() }, 0},
		{"stdout closed", func(r *ctlRun, _ string) {
			r.stdout.Close()
			io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
		}, 0},
		{"stderr closed", nil, 0}, // set up below
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		ways = append(ways, way{sig.String(), func(r *ctlRun, _ string) { r.cmd.Process.Signal(sig) }, 0})
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			xdg := runtimeDir(t)
			dir := fixtureDir(t)
			var r *ctlRun
			if w.end == nil {
				// stderr is a pipe whose reader goes away; the next log
				// line (a change's cycle) finds it broken.
				r = startCtlStderrPipe(t, xdg, dir)
				w.end = func(r *ctlRun, dir string) {
					r.stderrReader.Close()
					os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
				}
			} else {
				r = startCtl(t, xdg, dir)
			}
			r.waitSocket(xdg)
			waitFor(t, "the instance in status", func() bool {
				out, _, _ := mcpflow(t, xdg, dir, "status")
				return strings.Contains(out, "running")
			})
			w.end(r, dir)
			if code := r.waitExit(); code != w.code {
				t.Errorf("exit status %d, want %d", code, w.code)
			}
			if s := sockets(xdg); len(s) != 0 {
				t.Fatalf("sockets left: %v", s)
			}
		})
	}

	t.Run("fatal error", func(t *testing.T) {
		t.Parallel()
		xdg := runtimeDir(t)
		dir := fixtureDir(t)
		f, reset := tcpStdin(t)
		cmd := testkit.Command(testkit.Tag(t), []string{"XDG_RUNTIME_DIR=" + xdg}, mcpflowBin, "watch")
		cmd.Dir = dir
		cmd.Stdin = f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitFor(t, "the socket", func() bool { return len(sockets(xdg)) == 1 })
		reset()
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitFailure {
			t.Errorf("exit: %v, want status 1", err)
		}
		if s := sockets(xdg); len(s) != 0 {
			t.Fatalf("sockets left: %v", s)
		}
	})

	t.Run("SIGKILL", func(t *testing.T) {
		t.Parallel()
		xdg := runtimeDir(t)
		dir := fixtureDir(t)
		r := startCtl(t, xdg, dir)
		stale := r.waitSocket(xdg)
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL) // mcpflow and its server
		r.waitExit()
		if _, err := os.Lstat(stale); err != nil {
			t.Fatalf("a killed instance cannot remove its socket, yet it is gone: %v", err)
		}
		out, errOut, code := mcpflow(t, xdg, dir, "status", "-c", "mcpflow.toml")
		if code != 0 || !strings.Contains(out, "no mcpflow instance running") {
			t.Fatalf("status with a stale socket: exit %d\n%s%s", code, out, errOut)
		}
		r2 := startCtl(t, xdg, dir)
		r2.waitSocket(xdg)
		if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the next instance left the stale socket: %v", err)
		}
	})
}

// startCtlStderrPipe is startCtl with stderr a pipe drained by the test
// until r.stderrReader is closed.
func startCtlStderrPipe(t *testing.T, xdg, dir string) *ctlRun {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &ctlRun{t: t, stderr: &testkit.Buffer{}, exited: make(chan error, 1), stderrReader: pr}
	r.cmd = testkit.Command(testkit.Tag(t), []string{"XDG_RUNTIME_DIR=" + xdg}, mcpflowBin, "watch")
	r.cmd.Dir = dir
	r.cmd.Stderr = pw
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if r.stdout, err = r.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go io.Copy(r.stderr, pr)
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-r.exited:
			r.exited <- err
		default:
			syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.exited
		}
	})
	return r
}

// TestControlOtherUsers: the runtime folder is 0700 and the socket 0600;
// a folder others may enter is refused; and (as root, where another uid
// can be tried) another user can neither reach the socket through the
// folder nor, with the permissions opened, be served by it.
func TestControlOtherUsers(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir := fixtureDir(t)
	r := startCtl(t, xdg, dir)
	sock := r.waitSocket(xdg)
	folder := filepath.Dir(sock)
	if st, _ := os.Stat(folder); st.Mode().Perm() != 0o700 {
		t.Errorf("runtime folder mode %v, want 0700", st.Mode().Perm())
	}
	if st, _ := os.Lstat(sock); st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", st.Mode().Perm())
	}

	// A folder whose permissions let others in is refused, with the fix.
	os.Chmod(folder, 0o755)
	_, errOut, code := mcpflow(t, xdg, dir, "status")
	os.Chmod(folder, 0o700)
	if code != 1 || !strings.Contains(errOut, "chmod 700") {
		t.Fatalf("status with a 0755 folder: exit %d: %s", code, errOut)
	}

	if os.Geteuid() != 0 {
		t.Skip("connecting as another user needs root")
	}
	// A python3 another user may run connects as that user.
	py := ""
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o001 != 0 {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no python3 that another user may run, to connect as that user")
	}
	const nobody = 65534
	os.Chmod(xdg, 0o755) // the folder above is the user's own business
	asNobody := func() string {
		script := `import socket,sys
s=socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect:", e.strerror); sys.exit(0)
try:
    s.sendall(b'GET /status HTTP/1.1\r\nHost: mcpflow\r\n\r\n')
except OSError:
    pass  # refused: the instance may have closed already, its answer waits to be read
print(s.makefile().read())`
		cmd := exec.Command(py, "-c", script, sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python as uid %d: %v\n%s", nobody, err, out)
		}
		return string(out)
	}
	// The 0700 folder keeps another user out.
	if out := asNobody(); !strings.Contains(out, "connect: Permission denied") {
		t.Fatalf("another user reached the socket: %s", out)
	}
	// Even with the permissions opened, the instance checks the peer's uid.
	os.Chmod(folder, 0o711)
	os.Chmod(sock, 0o666)
	out := asNobody()
	os.Chmod(folder, 0o700)
	os.Chmod(sock, 0o600)
	if !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, fmt.Sprintf("uid %d may not control", nobody)) {
		t.Fatalf("another user was not refused: %s", out)
	}
	// And the instance serves its own user as before.
	if out, _, code := mcpflow(t, xdg, dir, "status"); code != 0 || !strings.Contains(out, "running") {
		t.Fatalf("status after the refusal: exit %d\n%s", code, out)
	}
}

// TestControlGarbage: requests that are not control requests, and one
// over the size limit, are answered with errors; the control socket and
// the MCP session carry on.
func TestControlGarbage(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir := fixtureDir(t)
	r := startCtl(t, xdg, dir)
	r.connect("2025-11-25", nil)
	sock := r.waitSocket(xdg)
	// ask sends req on a connection of its own: the instance may end one
	// after a bad request.
	ask := func(req string) (int, string) {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer to %.40q: %v", req, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, bad := range []struct {
		req  string
		code int
		want string
	}{
		{"garbage \x00\xff\r\n\r\n", http.StatusBadRequest, ""},
		{"{\"method\":\"status\"}\n", http.StatusBadRequest, ""},
		{"GET /format_disk HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound, ""},
		{"POST /rebuild?name=nosuch HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusUnprocessableEntity, `not \"nosuch\"`},
		{"GET /status HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("x", control.MaxRequest+8<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge, ""},
	} {
		if code, body := ask(bad.req); code != bad.code || !strings.Contains(body, bad.want) {
			t.Errorf("%.40q answered %d %s, want %d with %q", bad.req, code, body, bad.code, bad.want)
		}
	}
	if code, body := ask("GET /status HTTP/1.1\r\nHost: x\r\n\r\n"); code != http.StatusOK || !strings.Contains(body, `"servers":[{`) {
		t.Fatalf("status after the garbage: %d %s", code, body)
	}
	if got := r.call("echo", map[string]any{"text": "still here"}); got != "still here" {
		t.Fatalf("the MCP session after the garbage: %q", got)
	}
	if strings.Contains(r.stderr.String(), "panic") {
		t.Fatalf("mcpflow panicked:\n%s", r.stderr.String())
	}
}

// lineRecorder keeps the lines written to it.
type lineRecorder struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines [][]byte
}

func (l *lineRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		l.lines = append(l.lines, bytes.Clone(l.buf.Next(i + 1)[:i]))
	}
}

// TestControlTrafficCapture: with --traffic, the file's client hop holds
// every message the client sent, in order and byte for byte; its server
// hop every answer of both server generations, across a restart, and the
// handshake mcpflow replayed into the second; the list_changed mcpflow
// sent is on the client hop.
func TestControlTrafficCapture(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			xdg := runtimeDir(t)
			dir := fixtureDir(t)
			file := filepath.Join(t.TempDir(), "traffic.jsonl")
			r := startCtl(t, xdg, dir, "--traffic", file)
			sent := &lineRecorder{}
			r.connect(era.Version, sent)
			r.call("echo", map[string]any{"text": "before"})
			drain(r.changed)
			os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644) // a rebuild and restart
			select {
			case <-r.changed:
			case <-time.After(time.Minute):
				t.Fatal("no tools/list_changed after the change")
			}
			if got := r.call("reverse", map[string]any{"text": "after"}); got != "retfa" {
				t.Fatalf("reverse: %q", got)
			}
			r.cs.Close()
			if code := r.waitExit(); code != 0 {
				t.Fatalf("exit status %d", code)
			}

			type rec struct {
				T   time.Time       `json:"t"`
				Hop string          `json:"hop"`
				Dir string          `json:"dir"`
				Gen int             `json:"gen"`
				Msg json.RawMessage `json:"msg"`
			}
			var recs []rec
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
				var x rec
				if err := json.Unmarshal(l, &x); err != nil || x.Msg == nil {
					t.Fatalf("line %d is not a record: %v\n%s", i+1, err, l)
				}
				if i > 0 && x.T.Before(recs[i-1].T) {
					t.Errorf("line %d goes back in time", i+1)
				}
				recs = append(recs, x)
			}
			// Every client message, in order, as sent.
			var c2s [][]byte
			for _, x := range recs {
				if x.Hop == "client" && x.Dir == "c2s" {
					c2s = append(c2s, x.Msg)
				}
			}
			sent.mu.Lock()
			want := sent.lines
			sent.mu.Unlock()
			if len(c2s) != len(want) {
				t.Fatalf("%d client messages recorded, the client sent %d\n%s", len(c2s), len(want), data)
			}
			for i := range want {
				if !bytes.Equal(c2s[i], bytes.TrimSpace(want[i])) {
					t.Fatalf("client message %d recorded as\n%s\nsent as\n%s", i+1, c2s[i], want[i])
				}
			}
			// The server's answers: echo from generation 1, reverse from 2.
			answered := map[int]string{}
			replayed, changed := 0, 0
			for _, x := range recs {
				if x.Hop == "server" && x.Dir == "s2c" && bytes.Contains(x.Msg, []byte(`"before"`)) {
					answered[x.Gen] += "echo "
				}
				if x.Hop == "server" && x.Dir == "s2c" && bytes.Contains(x.Msg, []byte(`"retfa"`)) {
					answered[x.Gen] += "reverse "
				}
				if x.Hop == "server" && x.Dir == "c2s" && x.Gen == 2 && bytes.Contains(x.Msg, []byte(`"method":"initialize"`)) {
					replayed++
				}
				if x.Hop == "client" && x.Dir == "s2c" && bytes.Contains(x.Msg, []byte(`"notifications/tools/list_changed"`)) {
					changed++
				}
			}
			if era.Name == "legacy" && replayed != 1 {
				t.Errorf("the handshake replayed into generation 2 is recorded %d times on the server hop, want 1", replayed)
			}
			if changed == 0 {
				t.Errorf("no tools/list_changed on the client hop\n%s", data)
			}
			if answered[1] != "echo " || answered[2] != "reverse " {
				t.Fatalf("server answers by generation: %v\n%s", answered, data)
			}
			// The reverse call went to generation 2.
			for _, x := range recs {
				if x.Hop == "server" && x.Dir == "c2s" && bytes.Contains(x.Msg, []byte(`"after"`)) && x.Gen != 2 {
					t.Fatalf("the reverse call is recorded for generation %d", x.Gen)
				}
			}
		})
	}
}

// TestControlCLI: a [cli] run has a control socket too: status says mode
// cli with the schema's tool count, and rebuild builds and re-reads the
// schema.
func TestControlCLI(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir, _ := cliProject(t, "", "30s")
	r := startCtl(t, xdg, dir)
	r.connect("", nil)
	r.waitSocket(xdg)
	waitFor(t, "the CLI's schema", func() bool {
		out, _, _ := mcpflow(t, xdg, dir, "status")
		return strings.Contains(out, " cli ") && strings.Contains(out, "serving")
	})
	out, errOut, code := mcpflow(t, xdg, dir, "status", "--json")
	var st []control.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 || st[0].Mode != control.ModeCLI ||
		len(st[0].Servers) != 1 || st[0].Servers[0].Tools < 1 {
		t.Fatalf("status --json of a [cli] run: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = mcpflow(t, xdg, dir, "rebuild")
	if code != 0 || !strings.Contains(out, "build ok") {
		t.Fatalf("rebuild of a [cli] run: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestControlMux: a mux run has a control socket: status shows mode mux
// with a row per server, rebuild NAME reloads that server (a name is
// required with several), and the traffic file names each message's
// server.
func TestControlMux(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir := muxProject(t)
	traffic := filepath.Join(dir, "traffic.jsonl")
	r := startCtl(t, xdg, dir, "--traffic", traffic)
	r.connect("", nil)
	r.waitSocket(xdg)
	waitFor(t, "both servers running", func() bool {
		out, _, _ := mcpflow(t, xdg, dir, "status", "--json")
		var st []control.Status
		if json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 || st[0].Mode != control.ModeMux || len(st[0].Servers) != 2 {
			return false
		}
		for _, s := range st[0].Servers {
			if s.State != "running" {
				return false
			}
		}
		return true
	})
	if _, errOut, code := mcpflow(t, xdg, dir, "rebuild"); code == 0 || !strings.Contains(errOut, "echo") || !strings.Contains(errOut, "notes") {
		t.Fatalf("rebuild without a name in a mux of two: exit %d: %s", code, errOut)
	}
	out, errOut, code := mcpflow(t, xdg, dir, "rebuild", "echo")
	if code != 0 || !strings.Contains(out, "build ok") {
		t.Fatalf("rebuild echo: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := r.call("echo__echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatalf("echo__echo after rebuild: %q", got)
	}
	r.cs.Close()
	if code := r.waitExit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(traffic)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"server":"echo"`) || !strings.Contains(string(b), `"server":"notes"`) {
		t.Errorf("the traffic file does not name both servers:\n%.2000s", b)
	}
}
