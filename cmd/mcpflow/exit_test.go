//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The exit tests run the real mcpflow binary on a project whose server
// leaves a grandchild (a background loop of its shell) and whose build,
// once the file "slow" exists, runs for minutes. Each test gets mcpflow to
// the point where the server, its grandchild and a build are all running,
// ends mcpflow one way, and checks that nothing it started survives.

const exitServerScript = `echo $$ > server.pid
( while [ ! -e speak ]; do sleep 0.1; done; echo speaking >&2; exec sleep 300 ) &
echo $! > grandchild.pid
exec %q
`

const exitBuildScript = `if [ -e slow ]; then echo $$ >> build.pid; sleep 300; fi
`

const exitConfig = `[build]
command = "sh build.sh"
[run]
command = ["sh", "server.sh"]
stop_timeout = "1s"
[watch]
paths = ["."]
include = ["*.txt"]
debounce = "50ms"
[log]
level = "info"
file = "mcpflow.log"
`

// exitProject writes the project into a new temp dir.
func exitProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"mcpflow.toml": exitConfig,
		"server.sh":    fmt.Sprintf(exitServerScript, fixtureBin),
		"build.sh":     exitBuildScript,
		"src.txt":      "v1\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// exitRun is mcpflow started by a test, with the test holding the other
// ends of its stdin and stdout.
type exitRun struct {
	t      *testing.T
	dir    string
	tag    string // in the environment of mcpflow and all it starts
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	exited chan error
}

// startExit starts mcpflow watch in dir; stdin nil gives it a pipe held
// by the test, stderr nil a buffer.
func startExit(t *testing.T, dir string, stdin *os.File, stderr io.Writer) *exitRun {
	t.Helper()
	r := &exitRun{t: t, dir: dir, tag: testkit.Tag(t), exited: make(chan error, 1)}
	r.cmd = testkit.Command(r.tag, nil, mcpflowBin, "watch")
	r.cmd.Dir = dir
	if stderr == nil {
		stderr = &testkit.Buffer{}
	}
	r.cmd.Stderr = stderr
	var err error
	if stdin != nil {
		r.cmd.Stdin = stdin
	} else if r.stdin, err = r.cmd.StdinPipe(); err != nil {
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
		case <-r.exited:
		default:
			r.cmd.Process.Signal(syscall.SIGKILL)
			<-r.exited
		}
		testkit.Procs{Dir: dir, Tag: r.tag}.Kill()
		if t.Failed() {
			t.Logf("mcpflow log:\n%s", readLog(dir))
		}
	})
	return r
}

func readLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "mcpflow.log"))
	return string(b)
}

// waitFile waits for dir/name to exist with content and returns it.
func waitFile(t *testing.T, dir, name string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s\nlog:\n%s", name, readLog(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// busy waits for the server and its grandchild, then starts a build that
// runs until it is killed, and waits for that build to be running.
func (r *exitRun) busy() {
	r.t.Helper()
	waitFile(r.t, r.dir, "server.pid")
	waitFile(r.t, r.dir, "grandchild.pid")
	// The startup build's restart is over once its cycle line is logged;
	// only then does a change start a new build.
	if !testkit.Wait(time.Minute, func() bool { return strings.Contains(readLog(r.dir), "startup → build") }) {
		r.t.Fatalf("no startup cycle\nlog:\n%s", readLog(r.dir))
	}
	if err := os.WriteFile(filepath.Join(r.dir, "slow"), nil, 0o644); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "src.txt"), []byte("v2\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	waitFile(r.t, r.dir, "build.pid")
}

// wait waits for mcpflow to exit and returns its exit status (-1 when a
// signal killed it).
func (r *exitRun) wait() int {
	r.t.Helper()
	select {
	case err := <-r.exited:
		r.exited <- err
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.t.Logf("mcpflow killed by %v", ws.Signal())
			}
			return ee.ExitCode()
		}
		r.t.Fatalf("wait: %v", err)
	case <-time.After(30 * time.Second):
		r.t.Fatalf("mcpflow did not exit\nlog:\n%s", readLog(r.dir))
	}
	return 0
}

// expectExit checks that mcpflow exits with status want and that nothing
// it started survives it.
func (r *exitRun) expectExit(want int) {
	r.t.Helper()
	if got := r.wait(); got != want {
		r.t.Errorf("exit status %d, want %d", got, want)
	}
	checkNoLeftovers(r.t, r.dir, r.tag)
}

// recordedPIDs are the pids the server, its grandchild and the builds
// wrote into dir.
func recordedPIDs(t *testing.T, dir string) []int {
	var pids []int
	for _, name := range []string{"server.pid", "grandchild.pid", "build.pid"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s: %q", name, b)
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkNoLeftovers fails unless, within a few seconds (SIGKILLed
// processes take a moment to be reaped), no recorded pid is alive, no
// process works in dir and none has tag in its environment.
func checkNoLeftovers(t *testing.T, dir, tag string) {
	t.Helper()
	pids := recordedPIDs(t, dir)
	if len(pids) < 3 {
		t.Fatalf("expected the server, grandchild and build pids, got %v", pids)
	}
	testkit.NoLeftovers(t, testkit.Procs{Pids: pids, Dir: dir, Tag: tag})
}

func TestExitStdinEOF(t *testing.T) {
	t.Parallel()
	dir := exitProject(t)
	r := startExit(t, dir, nil, nil)
	r.busy()
	r.stdin.Close()
	r.expectExit(exitOK)
}

func TestExitSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := exitProject(t)
			r := startExit(t, dir, nil, nil)
			r.busy()
			r.cmd.Process.Signal(sig)
			r.expectExit(exitOK)
		})
	}
}

// TestExitStderrClosed: the client that read mcpflow's stderr is gone; the
// next log line must not kill mcpflow with SIGPIPE but shut it down
// cleanly, with the log file still written.
func TestExitStderrClosed(t *testing.T) {
	t.Parallel()
	dir := exitProject(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	go io.Copy(io.Discard, pr)
	r := startExit(t, dir, nil, pw)
	pw.Close()
	r.busy()
	pr.Close()
	// The grandchild writes a line to the server's stderr, which mcpflow
	// logs.
	if err := os.WriteFile(filepath.Join(dir, "speak"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.expectExit(exitOK)
	if log := readLog(dir); !strings.Contains(log, "speaking") || !strings.Contains(log, "stopping reason=\"stderr closed") {
		t.Fatalf("the log file lacks the logged line or the reason:\n%s", log)
	}
}

// TestExitStdoutClosed: the client closed its end of mcpflow's stdout
// while stdin stays open; the answer to its request finds the pipe broken.
func TestExitStdoutClosed(t *testing.T) {
	t.Parallel()
	dir := exitProject(t)
	r := startExit(t, dir, nil, nil)
	r.busy()
	r.stdout.Close()
	if _, err := io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	r.expectExit(exitOK)
	if log := readLog(dir); !strings.Contains(log, "stopping reason=\"stdout closed") {
		t.Fatalf("the log file lacks the reason:\n%s", log)
	}
}

// TestExitStdoutClosedIdle: the client closed its end of mcpflow's stdout
// and keeps stdin open, with nothing for mcpflow to write: mcpflow ends
// as at stdin's end, within 5 s, and nothing it started is left.
func TestExitStdoutClosedIdle(t *testing.T) {
	t.Parallel()
	dir := exitProject(t)
	r := startExit(t, dir, nil, nil)
	r.busy()
	start := time.Now()
	r.stdout.Close()
	r.expectExit(exitOK)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("mcpflow exited %s after its stdout was closed, want ≤ 5 s", took.Round(time.Millisecond))
	}
	if log := readLog(dir); !strings.Contains(log, "stopping reason=\"stdout closed") {
		t.Fatalf("the log file lacks the reason:\n%s", log)
	}
}

// TestExitParentDies: mcpflow's parent is SIGKILLed while mcpflow's stdin
// and stdout stay open (the test holds them), as when a client dies
// without closing its pipes for everyone who holds them.
func TestExitParentDies(t *testing.T) {
	t.Parallel()
	dir := exitProject(t)
	// The parent shell runs mcpflow in the background with the test's
	// stdin (a background job's stdin would be /dev/null) and waits.
	tag := testkit.Tag(t)
	parent := testkit.Command(tag, nil, "sh", "-c", `exec 3<&0; "$0" watch <&3 3<&- & echo $! > mcpflow.pid; wait`, mcpflowBin)
	parent.Dir = dir
	// Plain files and pipes, so that waiting for the parent does not wait
	// for mcpflow, which inherits them.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdoutR.Close()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	parent.Stdin, parent.Stdout, parent.Stderr = stdinR, stdoutW, stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	stdoutW.Close()
	parentExited := make(chan struct{})
	go func() { parent.Wait(); close(parentExited) }()
	pid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, dir, "mcpflow.pid")))
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		testkit.Procs{Dir: dir}.Kill()
	})
	r := &exitRun{t: t, dir: dir}
	r.busy()
	parent.Process.Signal(syscall.SIGKILL)
	<-parentExited
	// mcpflow is no longer the test's child: it has exited once it is
	// gone or a zombie.
	if !testkit.Wait(30*time.Second, func() bool { return !testkit.Alive(pid) }) {
		t.Fatalf("mcpflow did not exit when its parent died\nlog:\n%s", readLog(dir))
	}
	checkNoLeftovers(t, dir, tag)
	if log := readLog(dir); !strings.Contains(log, "stopping reason=\"the parent process exited") {
		t.Fatalf("the log file lacks the reason:\n%s", log)
	}
}

// tcpStdin is one end of a TCP connection, as a file to give a child for
// stdin; reset makes the other end reset the connection, so that the
// child's next read fails.
func tcpStdin(t *testing.T) (f *os.File, reset func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	if f, err = client.(*net.TCPConn).File(); err != nil {
		t.Fatal(err)
	}
	return f, func() {
		peer.(*net.TCPConn).SetLinger(0)
		peer.Close()
	}
}

// TestExitFatalError: reading from the client fails (a TCP connection as
// stdin, reset by the peer): mcpflow exits 1, after stopping everything.
func TestExitFatalError(t *testing.T) {
	t.Parallel()
	dir := exitProject(t)
	f, reset := tcpStdin(t)
	r := startExit(t, dir, f, nil)
	f.Close()
	r.busy()
	reset()
	r.expectExit(exitFailure)
	if log := readLog(dir); !strings.Contains(log, "reading from client") {
		t.Fatalf("the log file lacks the error:\n%s", log)
	}
}
