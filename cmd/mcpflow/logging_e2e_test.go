//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
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

// The tests of issue 24's items 5, 7 and 8 run the real mcpflow binary
// (mcpflowBin, built by TestMain) on a project whose server is the
// fixture, with a shell in front of it that floods stderr.

// boundRun is mcpflow watch started by one of these tests.
type boundRun struct {
	t      *testing.T
	dir    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}
	err    error
}

// boundProject writes mcpflow.toml (config, with the log file
// .mcpflow/mcpflow.log) and server.sh (script, then exec of the fixture)
// into a new temp dir.
func boundProject(t *testing.T, config, script string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"mcpflow.toml": config,
		"server.sh":    script + fmt.Sprintf("exec %q\n", fixtureBin),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startBound starts mcpflow watch in dir with stderr going to stderr; the
// test holds its stdin, its stdout is discarded.
func startBound(t *testing.T, dir string, stderr io.Writer) *boundRun {
	t.Helper()
	r := &boundRun{t: t, dir: dir, exited: make(chan struct{})}
	r.cmd = testkit.Command(testkit.Tag(t), nil, mcpflowBin, "watch")
	r.cmd.Dir = dir
	r.cmd.Stderr = stderr
	r.cmd.Stdout = io.Discard
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			r.cmd.Process.Signal(syscall.SIGKILL)
			<-r.exited
		}
		// What a failed test left: the server's group and its flood.
		testkit.Procs{Dir: dir}.Kill()
	})
	return r
}

func (r *boundRun) logPath() string { return filepath.Join(r.dir, ".mcpflow", "mcpflow.log") }

// log is the log file, its rotated predecessor first.
func (r *boundRun) log() string {
	old, _ := os.ReadFile(r.logPath() + ".1")
	cur, _ := os.ReadFile(r.logPath())
	return string(old) + string(cur)
}

// waitLog waits up to d for the log to contain want.
func (r *boundRun) waitLog(want string, d time.Duration) bool {
	return testkit.Wait(d, func() bool { return strings.Contains(r.log(), want) })
}

// waitExit waits for mcpflow to exit, cleanly. Its bound (a minute) is a
// guard against a hang, not a measure of speed: how soon mcpflow exits
// is make bench's.
func (r *boundRun) waitExit() {
	r.t.Helper()
	select {
	case <-r.exited:
	case <-time.After(time.Minute):
		r.t.Fatalf("mcpflow did not exit\n%s", r.log())
	}
	if r.err != nil {
		r.t.Errorf("mcpflow exited with %v", r.err)
	}
}

// TestLogFileRotatesUnderFlood: a server floods stderr for 10 s, every
// line of which mcpflow logs; the log file and its one predecessor each
// stay under log.max_size all along, and both are 0600.
func TestLogFileRotatesUnderFlood(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	dir := boundProject(t, `[run]
command = ["sh", "server.sh"]
stop_timeout = "300ms"
[watch]
enabled = false
[log]
file = ".mcpflow/mcpflow.log"
max_size = "1MiB"
`, `timeout 10 yes "flood: the quick brown fox jumps over the lazy dog 0123456789" >&2 &
`)
	r := startBound(t, dir, io.Discard)
	var largest int64
	var written int64 // bytes of log seen going by, rotations included
	var last int64
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for _, p := range []string{r.logPath(), r.logPath() + ".1"} {
			if st, err := os.Stat(p); err == nil {
				largest = max(largest, st.Size())
				if st.Size() > limit {
					t.Fatalf("%s is %d bytes, over log.max_size (%d)", p, st.Size(), limit)
				}
			}
		}
		if st, err := os.Stat(r.logPath()); err == nil {
			if st.Size() < last {
				written += last
			}
			last = st.Size()
		}
	}
	r.stdin.Close()
	r.waitExit()
	for _, p := range []string{r.logPath(), r.logPath() + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("no rotation: %v", err)
		}
		if st.Size() > limit {
			t.Errorf("%s is %d bytes, over log.max_size (%d)", p, st.Size(), limit)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
		// Every record whole: each line a record of this instance.
		b, _ := os.ReadFile(p)
		pid := fmt.Sprintf(" mcpflow_pid=%d", r.cmd.Process.Pid)
		for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if !strings.HasSuffix(l, pid) {
				t.Fatalf("%s line %d is no whole record: %q", p, i+1, l)
			}
		}
	}
	written += last
	t.Logf("after the flood: %d bytes logged at least, the largest file %d bytes (cap %d)", written, largest, limit)
}

// chattyScript writes "flood N" for N = 1, 2, ... to stderr until killed,
// about 5000 lines a second: far more than a stalled stderr holds, and
// little enough for mcpflow (built with -race) to log as they come, so that
// stopping the server does not wait for a backlog of its stderr to be
// logged. Each line is one write, so the fixture's own stderr line cannot
// split one.
const chattyScript = `awk 'BEGIN { for (i = 1; ; i++) { print "flood " i; fflush(); if (i % 100 == 0) system("sleep 0.02") } }' >&2 &
`

// TestStderrNeverRead: mcpflow's stderr is a pipe nobody reads, and the
// server is chatty on its stderr. mcpflow still exits within 5 s of stdin EOF or
// SIGTERM; the log file has every line the server wrote, in order, and
// says how many log lines stderr missed.
func TestStderrNeverRead(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stdin EOF", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir := boundProject(t, `[run]
command = ["sh", "server.sh"]
stop_timeout = "300ms"
[watch]
enabled = false
[log]
file = ".mcpflow/mcpflow.log"
max_size = "64MiB"
`, chattyScript)
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close() // never read; closed only once the test is over
			r := startBound(t, dir, pw)
			pw.Close()
			// Well past what the pipe (64 KiB) and mcpflow's queue (1024
			// records) hold.
			// (The bound is a hang guard: a log that waited on stderr
			// never gets there.)
			if !r.waitLog("server: flood 5000 ", time.Minute) {
				t.Fatalf("no 5000 lines logged: the log waits on stderr")
			}
			if how == "SIGTERM" {
				r.cmd.Process.Signal(syscall.SIGTERM)
			} else {
				r.stdin.Close()
			}
			r.waitExit()
			log := r.log()
			if !strings.Contains(log, "log lines were dropped: stderr was not read") {
				t.Errorf("the log file does not say that stderr lines were dropped:\n%.2000s", log)
			}
			n := checkFloodLines(t, log)
			t.Logf("the log file has flood lines 1 to %d", n)
		})
	}
}

// checkFloodLines checks that the log's "flood N" lines run 1, 2, 3, ...
// without a gap, and returns the last N.
func checkFloodLines(t *testing.T, log string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		_, rest, ok := strings.Cut(sc.Text(), "server: flood ")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, " ")
		got, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if got != n+1 {
			t.Fatalf("the log file has flood %d after flood %d: records are missing", got, n)
		}
		n = got
	}
	if n < 1000 {
		t.Errorf("only %d flood lines logged", n)
	}
	return n
}

// TestExitDuringScan: the initial scan of a large tree (200 files of 60
// MiB, 12 GB to hash) is running when stdin closes; mcpflow exits within
// 5 s all the same.
func TestExitDuringScan(t *testing.T) {
	t.Parallel()
	dir := boundProject(t, `[run]
command = ["sh", "server.sh"]
stop_timeout = "300ms"
[watch]
paths = ["big"]
[log]
file = ".mcpflow/mcpflow.log"
`, "")
	for i := range 200 {
		p := filepath.Join(dir, "big", fmt.Sprintf("d%d", i%8), fmt.Sprintf("f%03d.bin", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, 60<<20); err != nil {
			t.Fatal(err)
		}
	}
	r := startBound(t, dir, io.Discard)
	if !r.waitLog("mcpflow started", 30*time.Second) {
		t.Fatalf("mcpflow did not start:\n%s", r.log())
	}
	// The scan has begun: mcpflow has read a file's worth of the tree.
	pid := r.cmd.Process.Pid
	if _, ok := testkit.BytesRead(pid); !ok {
		t.Skip("no /proc/PID/io: the scan's progress cannot be seen")
	}
	testkit.Eventually(t, 30*time.Second, "the scan to read its first file", func() bool {
		n, _ := testkit.BytesRead(pid)
		return n >= 60<<20
	})
	if strings.Contains(r.log(), "watching root=") {
		t.Fatalf("the scan was over before stdin closed: the test shows nothing\n%s", r.log())
	}
	r.stdin.Close()
	r.waitExit()
	// mcpflow exited in the middle of the scan, not at its end.
	if strings.Contains(r.log(), "watching root=") {
		t.Errorf("mcpflow finished the scan before it exited on stdin EOF\n%s", r.log())
	}
}

// A clean run logs no ERRO or WARN line: one-shot tools runs (the server
// stopped as soon as the list is read, its start maybe still running),
// piped clients that close, a probe of server/discover that closes, and a
// client that probes server/discover on a legacy server, then falls back
// to initialize.
func TestCleanRunsLogNoErrors(t *testing.T) {
	t.Parallel()
	dir, logFile := t.TempDir(), filepath.Join(t.TempDir(), "mcpflow.log")
	writeFile(t, filepath.Join(dir, "mcpflow.toml"), fmt.Sprintf("[build]\ncommand = \"cp src.txt variant\"\n[run]\ncommand = [%q, \"-no-discover\", \"-variant-file\", \"variant\"]\n[watch]\npaths = [\".\"]\ninclude = [\"src.txt\"]\n[log]\nfile = %q\n", fixtureBin, logFile))
	xdg := runtimeDir(t)
	for i := range 4 {
		writeFile(t, filepath.Join(dir, "src.txt"), fmt.Sprintf("v%d", i%2+1))
		if out, errOut, code := mcpflow(t, xdg, dir, "tools"); code != 0 || !strings.Contains(out, "echo") {
			t.Fatalf("tools: exit %d\n%s%s", code, out, errOut)
		}
	}
	const (
		discover   = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"probe","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		initialize = `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`
		list       = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	)
	tag := testkit.Tag(t)
	for _, in := range []string{initialize + "\n" + list, initialize + "\n" + list, discover, discover + "\n" + initialize + "\n" + list} {
		cmd := testkit.Command(tag, []string{"XDG_RUNTIME_DIR=" + xdg}, mcpflowBin, "watch")
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(in+"\n")
		out, err := cmd.Output()
		if n := strings.Count(in, `"id"`); err != nil || strings.Count(string(out), "\n") != n || !strings.Contains(string(out), `"id":`+strconv.Itoa(n)) {
			t.Fatalf("a piped client: %v, want %d answers:\n%s", err, n, out)
		}
	}
	log, _ := os.ReadFile(logFile)
	for line := range strings.Lines(string(log)) {
		if strings.Contains(line, " ERRO ") || strings.Contains(line, " WARN ") {
			t.Errorf("a clean run logged: %s", line)
		}
	}
	if !strings.Contains(string(log), "startup →") {
		t.Fatalf("no log in %s:\n%s", logFile, log)
	}
}
