//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The guard tests SIGKILL the real mcpflow binary (alone, or with its
// guard) while its process groups hold a grandchild each (a build's, a
// server's, a [cli] call's) and check that within a few seconds no
// process of any group mcpflow started is left, the guard included.
// Without the guard and the groups' sentinels the grandchildren survive:
// the parent-death signal reaches only mcpflow's direct children.

// guardRun is mcpflow started by a guard test, a raw MCP client on its
// stdin and stdout.
type guardRun struct {
	t      *testing.T
	dir    string
	tag    string // in the environment of mcpflow and all it starts
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // mcpflow's stdout, closed at EOF
	stderr *testkit.Buffer
	exited chan error
}

// startGuarded writes files into a new temp dir and starts "mcpflow watch"
// there, in a group of its own (as a client starts it).
func startGuarded(t *testing.T, files map[string]string) *guardRun {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &guardRun{t: t, dir: dir, tag: testkit.Tag(t), lines: make(chan string, 64), stderr: &testkit.Buffer{}, exited: make(chan error, 1)}
	r.cmd = testkit.Command(r.tag, nil, mcpflowBin, "watch")
	r.cmd.Dir = dir
	r.cmd.Stderr = r.stderr
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case r.lines <- sc.Text():
			default: // nobody waits for it
			}
		}
		close(r.lines)
	}()
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.exited
		r.exited <- nil
		testkit.Procs{Dir: dir, Tag: r.tag}.Kill()
		if t.Failed() {
			t.Logf("mcpflow stderr:\n%s", r.stderr.String())
		}
	})
	return r
}

// send writes one JSON-RPC message to mcpflow.
func (r *guardRun) send(msg string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, msg+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// initialize opens the session and waits for mcpflow's answer.
func (r *guardRun) initialize() {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"guard-test","version":"1"}}}`)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("stdout closed before the initialize answer\nstderr:\n%s", r.stderr.String())
			}
			if strings.Contains(line, `"id":1`) {
				r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				return
			}
		case <-timeout:
			r.t.Fatalf("no answer to initialize\nstderr:\n%s", r.stderr.String())
		}
	}
}

// call sends a tools/call without waiting for its answer.
func (r *guardRun) call(id int, tool, args string) {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
}

// pidFile waits for dir/name to hold a pid and returns it.
func (r *guardRun) pidFile(name string) int {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(r.dir, name))
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return pid
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no %s\nstderr:\n%s", name, r.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killAndCheck notes the groups mcpflow started (those its children lead,
// but the guard's), checks that grandchild is in one of them, SIGKILLs
// mcpflow's group (mcpflow alone: the guard has a session of its own),
// the guard first when withGuard (as "kill -9 GUARD MCPFLOW" does), and
// checks that within a few seconds mcpflow's stdout is closed (the guard
// holds none of the client's pipes), no process of those groups is left,
// and the guard has exited.
func (r *guardRun) killAndCheck(grandchild int, withGuard bool) {
	r.t.Helper()
	pid := r.cmd.Process.Pid
	groups, guard := startedGroups(pid)
	if pg, err := syscall.Getpgid(grandchild); err != nil || !slices.Contains(groups, pg) {
		r.t.Fatalf("grandchild %d (group %d, %v) is in none of mcpflow's groups %v", grandchild, pg, err, groups)
	}
	if guard == 0 {
		r.t.Error("mcpflow has no guard among its children")
	}
	if withGuard && guard != 0 {
		if err := syscall.Kill(guard, syscall.SIGKILL); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-r.lines:
		case <-deadline:
			r.t.Fatal("mcpflow's stdout is still open after it was killed")
		}
	}
	select {
	case <-r.exited:
		r.exited <- nil
	case <-deadline:
		r.t.Fatal("mcpflow's stderr is still open after it was killed")
	}
	left := testkit.Procs{Groups: groups}
	if guard != 0 {
		left.Pids = []int{guard}
	}
	testkit.NoLeftovers(r.t, left)
}

// startedGroups lists the groups led by pid's children, and the child that
// is the guard (0 if none).
func startedGroups(pid int) (groups []int, guard int) {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			c, _ := strconv.Atoi(f)
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
			switch pg, err := syscall.Getpgid(c); {
			case bytes.Contains(cmdline, []byte("\x00"+guardCommand+"\x00")):
				guard = c
			case err == nil && pg == c:
				groups = append(groups, c)
			}
		}
	}
	return groups, guard
}

// TestGuardKillDuringBuild: mcpflow is killed while its first build runs
// and has started a background child.
func TestGuardKillDuringBuild(t *testing.T) {
	t.Parallel()
	r := startGuarded(t, map[string]string{
		"mcpflow.toml": "[build]\ncommand = \"sh build.sh\"\n[run]\ncommand = [\"sh\", \"-c\", \"exec sleep 300\"]\n[watch]\nenabled = false\n",
		"build.sh":     "sleep 300 &\necho $! > build.pid\nwait\n",
	})
	r.killAndCheck(r.pidFile("build.pid"), false)
}

// TestGuardKillDuringCall: mcpflow is killed during a tool call, after a
// call of the server's spawn tool started a grandchild in its group.
func TestGuardKillDuringCall(t *testing.T) {
	t.Parallel()
	r := startGuarded(t, map[string]string{
		"mcpflow.toml": fmt.Sprintf("[run]\ncommand = [%q]\n[watch]\nenabled = false\n", fixtureBin),
	})
	r.initialize()
	r.call(2, "spawn", fmt.Sprintf(`{"path":%q}`, filepath.Join(r.dir, "spawn.pid")))
	grandchild := r.pidFile("spawn.pid")
	r.call(3, "slow", `{"ms":60000}`) // in flight when mcpflow is killed
	r.killAndCheck(grandchild, false)
}

// TestGuardKillDuringCLICall: in [cli] mode, mcpflow is killed while a
// call runs whose process started a child.
func TestGuardKillDuringCLICall(t *testing.T) {
	t.Parallel()
	r := startGuarded(t, map[string]string{
		"mcpflow.toml": "[cli]\nschema = [\"cat\", \"schema.json\"]\ncommand = [\"sh\", \"tool.sh\"]\ntimeout = \"5m\"\n[watch]\nenabled = false\n",
		"schema.json":  `{"tools": [{"name": "hold", "description": "Start a child, then wait.", "parameters": {"type": "object", "properties": {}}, "cli_command": ["hold"]}]}`,
		"tool.sh":      "sleep 300 &\necho $! > child.pid\nwait\n",
	})
	r.initialize()
	r.call(2, "hold", `{}`)
	r.killAndCheck(r.pidFile("child.pid"), false)
}

// TestGuardKillMux: in a mux, mcpflow is killed while a server's shell
// has left a background child in the server's group.
func TestGuardKillMux(t *testing.T) {
	t.Parallel()
	r := startGuarded(t, map[string]string{
		"mcpflow.toml": fmt.Sprintf("[servers.a.run]\ncommand = [\"sh\", \"-c\", \"sleep 300 & echo $! > a.pid; exec %s\"]\n[servers.a.watch]\nenabled = false\n", fixtureBin),
	})
	r.killAndCheck(r.pidFile("a.pid"), false)
}

// TestGuardKilledWithMcpflowBuild: mcpflow and its guard are killed
// together while a build runs that double-forked a child (its parent
// exited: it is nobody's child in mcpflow's tree).
func TestGuardKilledWithMcpflowBuild(t *testing.T) {
	t.Parallel()
	r := startGuarded(t, map[string]string{
		"mcpflow.toml": "[build]\ncommand = \"sh build.sh\"\n[run]\ncommand = [\"sh\", \"-c\", \"exec sleep 300\"]\n[watch]\nenabled = false\n",
		"build.sh":     "(sleep 300 & echo $! > build.pid)\nsleep 300\n",
	})
	r.killAndCheck(r.pidFile("build.pid"), true)
}

// TestGuardKilledWithMcpflowServer: mcpflow and its guard are killed
// together while a server runs that double-forked a child.
func TestGuardKilledWithMcpflowServer(t *testing.T) {
	t.Parallel()
	r := startGuarded(t, map[string]string{
		"mcpflow.toml": fmt.Sprintf("[run]\ncommand = [\"sh\", \"-c\", \"(sleep 300 & echo $! > a.pid); exec %s\"]\n[watch]\nenabled = false\n", fixtureBin),
	})
	r.initialize()
	r.killAndCheck(r.pidFile("a.pid"), true)
}

// TestGuardDeathLogged: when only the guard is killed, mcpflow says so,
// and a new guard takes over.
func TestGuardDeathLogged(t *testing.T) {
	t.Parallel()
	r := startGuarded(t, map[string]string{
		"mcpflow.toml": fmt.Sprintf("[run]\ncommand = [%q]\n[watch]\nenabled = false\n", fixtureBin),
	})
	r.initialize()
	_, guard := startedGroups(r.cmd.Process.Pid)
	if guard == 0 {
		t.Fatal("mcpflow has no guard among its children")
	}
	if err := syscall.Kill(guard, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "mcpflow's log of its guard's death", func() bool {
		return strings.Contains(r.stderr.String(), "guard died") && strings.Contains(r.stderr.String(), "took over")
	})
	if _, g := startedGroups(r.cmd.Process.Pid); g == 0 || g == guard {
		t.Errorf("no new guard (was %d, now %d)", guard, g)
	}
}

// TestGuardKilledWithMcpflowHangupIgnored: mcpflow and its guard are
// killed together while a server's group holds a child and a
// double-forked daemon that both ignore SIGHUP (as nohup leaves them):
// the orphaned group's sentinel kills its group.
func TestGuardKilledWithMcpflowHangupIgnored(t *testing.T) {
	t.Parallel()
	r := startGuarded(t, map[string]string{
		"mcpflow.toml": fmt.Sprintf("[run]\ncommand = [\"sh\", \"-c\", \"trap '' HUP; sleep 300 & echo $! > a.pid; (sleep 300 & echo $! > b.pid); exec %s\"]\n[watch]\nenabled = false\n", fixtureBin),
	})
	r.initialize()
	r.pidFile("a.pid")
	r.killAndCheck(r.pidFile("b.pid"), true)
}
