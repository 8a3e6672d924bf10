package control

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// helperEnv makes the test binary a bare instance that listens in the
// folder the variable names, prints its socket path and waits to be
// killed.
const helperEnv = "MCPFLOW_CONTROL_TEST_HELPER"

// clientEnv makes the test binary a client that asks the socket the
// variable names for its status and prints the outcome.
const clientEnv = "MCPFLOW_CONTROL_TEST_CLIENT"

func TestMain(m *testing.M) {
	if sock := os.Getenv(clientEnv); sock != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := dialSocket(sock)
		_, err := c.Status(ctx)
		fmt.Println("status:", err)
		return
	}
	if dir := os.Getenv(helperEnv); dir != "" {
		s, err := Listen(Info{Dir: dir, Config: "/helper/mcpflow.toml", Project: "/helper", Mode: ModeMux, Target: &fakeTarget{}})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(s.Path())
		select {}
	}
	os.Exit(m.Run())
}

// fakeTarget is an instance with one server and a scripted rebuild.
type fakeTarget struct {
	mu       sync.Mutex
	name     string
	build    result.Build
	rebuilds int
	block    bool          // Rebuild waits for ctx to end or for release
	started  chan struct{} // a blocking Rebuild sends on it when it starts, if set
	release  chan struct{} // closed: a blocking Rebuild returns build
	canceled chan struct{} // closed when a blocking Rebuild's ctx ended, if set
	panicky  bool
}

func (f *fakeTarget) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panicky {
		panic("status exploded")
	}
	return Status{
		Client: ClientInfo{Name: "claude-code", Version: "2.1.330", Protocol: "2026-07-28", Era: "modern"},
		Servers: []ServerStatus{{
			Name: f.name, State: "running", Pid: 4242, Gen: 3, Started: time.Now().Add(-90 * time.Second),
			Restarts: 2, Crashes: 1, Tools: 4, Served: 57, InFlight: 1,
			Build: BuildStatusOf(result.Build{OK: false, Errors: "\n./main.go:12:3: undefined: foo\nmore", Duration: 380 * time.Millisecond}, time.Now()),
		}},
	}
}

func (f *fakeTarget) Rebuild(ctx context.Context, name string) (result.Build, error) {
	f.mu.Lock()
	f.rebuilds++
	b, block := f.build, f.block
	f.mu.Unlock()
	if name != f.name {
		return result.Build{}, fmt.Errorf("no server %q: servers are %s", name, f.name)
	}
	if block {
		if f.started != nil {
			f.started <- struct{}{}
		}
		select {
		case <-f.release:
			return b, nil
		case <-ctx.Done():
			if f.canceled != nil {
				close(f.canceled)
			}
			return result.Build{Canceled: true, Err: ctx.Err()}, nil
		}
	}
	return b, nil
}

// shortDir is a runtime folder with a path short enough for a socket.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	d = filepath.Join(d, "mcpflow")
	return d
}

func listenT(t *testing.T, info Info) *Server {
	t.Helper()
	s, err := Listen(info)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTwoInstancesListedAndStatusJSON(t *testing.T) {
	dir := shortDir(t)
	a := listenT(t, Info{Dir: dir, Config: "/p/a/mcpflow.toml", Project: "/p/a", Mode: ModeSingle, Version: "v1", Target: &fakeTarget{name: "a"}})
	b := listenT(t, Info{Dir: dir, Config: "/p/b/mcpflow.toml", Project: "/p/b", Mode: ModeMux, Target: &fakeTarget{name: "b"}})
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 && runtime.GOOS != "windows" {
		t.Fatalf("runtime folder: %v, mode %v", err, st.Mode().Perm())
	}
	if a.Path() == b.Path() || filepath.Base(a.Path()) != fmt.Sprintf("%d"+endpointExt, os.Getpid()) {
		t.Fatalf("socket paths %s and %s", a.Path(), b.Path())
	}

	ctx := ctxT(t)
	insts, err := Instances(Filter{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 2 {
		t.Fatalf("Instances found %d, want 2: %+v", len(insts), insts)
	}
	var sts []Status
	for _, in := range insts {
		if in.Pid != os.Getpid() {
			t.Errorf("pid %d", in.Pid)
		}
		c := Dial(in)
		st, err := c.Status(ctx)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	var buf bytes.Buffer
	if err := WriteStatusJSON(&buf, sts); err != nil {
		t.Fatal(err)
	}
	var parsed []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &parsed); err != nil {
		t.Fatalf("status --json does not parse: %v\n%s", err, buf.String())
	}
	if len(parsed) != 2 {
		t.Fatalf("%d entries", len(parsed))
	}
	var back []Status
	json.Unmarshal(buf.Bytes(), &back)
	modes := map[string]bool{}
	for _, st := range back {
		modes[st.Mode] = true
		sv := st.Servers[0]
		if st.Pid != os.Getpid() || st.Client.Era != "modern" || sv.Served != 57 || sv.InFlight != 1 || sv.Crashes != 1 ||
			sv.Uptime < Millis(90*time.Second) || sv.Build == nil || sv.Build.FirstError != "./main.go:12:3: undefined: foo" ||
			st.Started.IsZero() || st.Uptime < 0 {
			t.Errorf("status lost something on the way: %+v", st)
		}
	}
	if !modes[ModeSingle] || !modes[ModeMux] {
		t.Errorf("modes %v", modes)
	}

	buf.Reset()
	WriteStatus(&buf, back)
	text := buf.String()
	for _, want := range []string{"mcpflow pid", "/p/a/mcpflow.toml", "/p/b/mcpflow.toml", "claude-code 2.1.330, protocol 2026-07-28 (modern)",
		"SERVER", "running", "4242", "1m30s", "2 (1 crash)", "FAILED 380ms", "57 (1 in flight)", "a: build failed: ./main.go:12:3: undefined: foo"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}

	// Filters: by config file, by a folder inside the project.
	sub := Filter{Dir: dir, Project: "/p/b/cmd/server"}
	if got, _ := Instances(sub); len(got) != 1 || got[0].Project != "/p/b" || got[0].Mode != ModeMux {
		t.Errorf("project filter: %+v", got)
	}
	if got, _ := Instances(Filter{Dir: dir, Config: "/p/a/mcpflow.toml"}); len(got) != 1 || got[0].Config != "/p/a/mcpflow.toml" {
		t.Errorf("config filter: %+v", got)
	}
	if got, _ := Instances(Filter{Dir: dir, Project: "/p/ab"}); len(got) != 0 {
		t.Errorf("/p/ab matched %+v", got)
	}
}

func TestRebuildReturnsTheInstanceResult(t *testing.T) {
	dir := shortDir(t)
	want := result.Build{
		Seq: 7, Trigger: "recompile", OK: true, Duration: 1214 * time.Millisecond,
		Restart: &result.Restart{Gen: 4, Pid: 999, Duration: 38 * time.Millisecond,
			Tools:     result.ToolDiff{Known: true, Added: []string{"reverse"}, Removed: []string{"old"}, Current: []string{"echo", "reverse"}},
			Handshake: []string{"instructions changed"}},
	}
	ft := &fakeTarget{name: "notes", build: want}
	s := listenT(t, Info{Dir: dir, Target: ft})
	ctx := ctxT(t)
	c := dialSocket(s.Path())
	defer c.Close()
	got, err := c.Rebuild(ctx, "notes")
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 7 || !got.OK || got.Duration != want.Duration || got.Restart == nil || got.Restart.Pid != 999 ||
		strings.Join(got.Restart.Tools.Added, ",") != "reverse" || got.Restart.Err != nil {
		t.Fatalf("got %+v", got)
	}
	if ExitCode(got) != 0 {
		t.Error("good build: exit status should be 0")
	}
	var buf bytes.Buffer
	WriteBuild(&buf, "notes", got)
	for _, w := range []string{"notes: build ok in 1.21s", "restart ok in 38ms (generation 4, pid 999)", "tools: +reverse -old (2 now)", "handshake: instructions changed"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("rebuild text lacks %q:\n%s", w, buf.String())
		}
	}

	// A failed build: errors come through, exit status 1; same connection.
	ft.mu.Lock()
	ft.build = result.Build{Seq: 8, Errors: "./main.go:12:3: undefined: foo", Err: errors.New("exit status 1"), Duration: 380 * time.Millisecond}
	ft.mu.Unlock()
	got, err = c.Rebuild(ctx, "notes")
	if err != nil {
		t.Fatal(err)
	}
	if got.OK || got.Err == nil || got.Err.Error() != "exit status 1" || ExitCode(got) != 1 {
		t.Fatalf("failed build came back as %+v", got)
	}
	buf.Reset()
	WriteBuild(&buf, "", got)
	if !strings.HasPrefix(buf.String(), "build FAILED in 380ms: exit status 1\n./main.go:12:3: undefined: foo\n") {
		t.Errorf("failed rebuild text:\n%s", buf.String())
	}

	// An error of the instance is an error, and the connection goes on.
	if _, err := c.Rebuild(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `no server "nope"`) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRebuildCanceledWhenThePersonLeaves(t *testing.T) {
	dir := shortDir(t)
	ft := &fakeTarget{name: "x", block: true, started: make(chan struct{}, 1), canceled: make(chan struct{})}
	s := listenT(t, Info{Dir: dir, Target: ft})
	ctx := ctxT(t)
	c := dialSocket(s.Path())
	defer c.Close()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := c.Rebuild(rctx, "x"); done <- err }()
	<-ft.started
	cancel()
	select {
	case <-ft.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the rebuild's context did not end when the client left")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's rebuild ended with %v", err)
	}
}

func TestLogsAndFollow(t *testing.T) {
	dir := shortDir(t)
	ring := logring.New(0)
	for i := range 5 {
		fmt.Fprintf(ring, "old %d\n", i)
	}
	s := listenT(t, Info{Dir: dir, Target: &fakeTarget{}, Logs: ring})
	ctx := ctxT(t)

	c := dialSocket(s.Path())
	var buf bytes.Buffer
	if err := c.Logs(ctx, &buf, false, 2); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "old 3\nold 4\n" {
		t.Fatalf("logs tail 2 = %q", buf.String())
	}
	c.Close()

	// Follow: the backlog, then lines written later, until ctx ends.
	c = dialSocket(s.Path())
	defer c.Close()
	fctx, cancel := context.WithCancel(ctx)
	pr := newLineWaiter()
	done := make(chan error, 1)
	go func() { done <- c.Logs(fctx, pr, true, 0) }()
	pr.waitFor(t, "old 4")
	fmt.Fprintln(ring, "new line")
	ring.Write([]byte("torn "))
	ring.Write([]byte("line\n"))
	pr.waitFor(t, "torn line")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v", err)
	}
	if got := pr.String(); got != "old 0\nold 1\nold 2\nold 3\nold 4\nnew line\ntorn line\n" {
		t.Fatalf("followed %q", got)
	}

	// A follower ends cleanly when the instance closes.
	c2 := dialSocket(s.Path())
	defer c2.Close()
	pr2 := newLineWaiter()
	go func() { done <- c2.Logs(ctx, pr2, true, 1) }()
	pr2.waitFor(t, "torn line")
	s.Close()
	if err := <-done; err != nil {
		t.Fatalf("follow across Close ended with %v", err)
	}

	// No ring: a clear error.
	s2 := listenT(t, Info{Dir: dir, Target: &fakeTarget{}})
	c3 := dialSocket(s2.Path())
	defer c3.Close()
	if err := c3.Logs(ctx, &buf, false, 0); err == nil || !strings.Contains(err.Error(), "keeps no log") {
		t.Fatalf("logs without a ring: %v", err)
	}
}

// lineWaiter is an io.Writer that lets a test wait for a line.
type lineWaiter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	news chan struct{}
}

func newLineWaiter() *lineWaiter { return &lineWaiter{news: make(chan struct{}, 1)} }

func (l *lineWaiter) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf.Write(p)
	l.mu.Unlock()
	select {
	case l.news <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *lineWaiter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lineWaiter) waitFor(t *testing.T, line string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(l.String(), line+"\n") {
		select {
		case <-l.news:
		case <-deadline:
			t.Fatalf("no line %q in %q", line, l.String())
		}
	}
}

func TestSocketRemovedOnClose(t *testing.T) {
	dir := shortDir(t)
	s, err := Listen(Info{Dir: dir, Target: &fakeTarget{}})
	if err != nil {
		t.Fatal(err)
	}
	// An idle client does not hold Close up.
	idle, err := rawDial(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := os.Stat(s.Path()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.Path()); !os.IsNotExist(err) {
		t.Fatalf("socket still there after Close: %v", err)
	}
	s.Close() // twice is fine
	if got, err := Instances(Filter{Dir: dir}); err != nil || len(got) != 0 {
		t.Fatalf("after Close: %+v, %v", got, err)
	}
}

func TestStaleSocketsSkippedThenCleaned(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix sockets")
	}
	dir := shortDir(t)
	live := listenT(t, Info{Dir: dir, Project: "/live", Target: &fakeTarget{}})

	// A real instance in another process, killed with SIGKILL: its socket
	// stays behind.
	cmd := proc.Command(context.Background(), proc.Spec{Argv: []string{os.Args[0], "-test.run=^$"}, Env: append(os.Environ(), helperEnv+"="+dir)}, time.Second)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			cmd.Kill()
			cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error:") {
		t.Fatalf("helper: %q %v", line, err)
	}
	helperSock := strings.TrimSpace(line)
	if got, _ := Instances(Filter{Dir: dir}); len(got) != 2 {
		t.Fatalf("with the helper running, Instances found %+v", got)
	}
	cmd.Kill()
	cmd.Wait()
	waited = true
	if _, err := os.Lstat(helperSock); err != nil {
		t.Fatalf("SIGKILL should leave the socket behind: %v", err)
	}

	// Another leftover: a socket of a pid that cannot exist, nothing on it.
	ghost := filepath.Join(dir, "99999999.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: ghost, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	// And a file of this process's pid, as after pid reuse.
	mine := filepath.Join(dir, fmt.Sprintf("%d-3.sock", os.Getpid()))
	ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: mine, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()

	got, err := Instances(Filter{Dir: dir})
	if err != nil || len(got) != 1 || got[0].Project != "/live" || got[0].Socket != live.Path() {
		t.Fatalf("Instances with stale sockets: %+v, %v", got, err)
	}
	for _, p := range []string{helperSock, ghost, mine} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("a client must not remove %s: %v", p, err)
		}
	}

	next := listenT(t, Info{Dir: dir, Target: &fakeTarget{}})
	for _, p := range []string{helperSock, ghost} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("stale %s not cleaned by Listen: %v", p, err)
		}
	}
	if _, err := os.Lstat(live.Path()); err != nil {
		t.Errorf("Listen removed a live socket: %v", err)
	}
	if got, _ := Instances(Filter{Dir: dir}); len(got) != 2 || got[1].Socket != next.Path() && got[0].Socket != next.Path() {
		t.Errorf("after cleaning: %+v", got)
	}
}

func TestFolderOfOthersRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	dir := shortDir(t)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	// A socket someone put there: neither listed nor joined.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "1.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(Info{Dir: dir, Target: &fakeTarget{}})
	if err == nil || !strings.Contains(err.Error(), "permissions 0755") || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("Listen in a 0755 folder: %v", err)
	}
	if _, err := Instances(Filter{Dir: dir}); err == nil || !strings.Contains(err.Error(), "permissions") {
		t.Fatalf("Instances in a 0755 folder: %v", err)
	}

	// A symlink to a good folder is refused too.
	good := shortDir(t)
	os.Mkdir(good, 0o700)
	link := filepath.Join(filepath.Dir(good), "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(Info{Dir: link, Target: &fakeTarget{}}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Listen through a symlink: %v", err)
	}

	// A folder of another user (needs root to make one).
	if os.Geteuid() != 0 {
		t.Log("not root: foreign owner case skipped")
		return
	}
	other := shortDir(t)
	os.Mkdir(other, 0o700)
	if err := os.Chown(other, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(Info{Dir: other, Target: &fakeTarget{}}); err == nil || !strings.Contains(err.Error(), "belongs to uid 12345") {
		t.Fatalf("Listen in a folder of uid 12345: %v", err)
	}
	if _, err := Instances(Filter{Dir: other}); err == nil {
		t.Fatal("Instances in a folder of uid 12345: no error")
	}
}

func TestPeerOfAnotherUidRefused(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" && runtime.GOOS != "freebsd" {
		t.Skip("the OS does not tell the peer's uid")
	}
	dir := shortDir(t)
	s, err := listen(Info{Dir: dir, Target: &fakeTarget{}}, os.Geteuid()+1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := ctxT(t)
	c := dialSocket(s.Path())
	defer c.Close()
	if _, err := c.Status(ctx); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("status from the wrong uid: %v", err)
	}
}

// ask sends a raw request on a new connection and returns the answer's
// status code and body.
func ask(t *testing.T, sock, req string) (int, string) {
	t.Helper()
	c, err := rawDial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, tok, _ := readEndpoint(sock); tok != "" { // Windows: the token is asked
		req = strings.Replace(req, "Host: x\r\n", "Host: x\r\n"+tokenHeader+": "+tok+"\r\n", 1)
	}
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("after %.40q: %v", req, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestBadRequestsAnswered(t *testing.T) {
	dir := shortDir(t)
	ft := &fakeTarget{name: "x"}
	s := listenT(t, Info{Dir: dir, Target: ft})
	for _, c := range []struct {
		req  string
		code int
		want string
	}{
		{"garbage\r\n\r\n", http.StatusBadRequest, ""},
		{"\x00\xff{{\r\n\r\n", http.StatusBadRequest, ""},
		{"GET /shutdown HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound, ""},
		{"GET /rebuild HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusMethodNotAllowed, ""},
		{"POST /rebuild?name=nope HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusUnprocessableEntity, `no server \"nope\"`},
		{"POST /rebuild?name=x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", http.StatusRequestEntityTooLarge, "no body"},
		{"GET /logs HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound, "keeps no log"},
		{"GET /status HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", MaxRequest+8<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge, ""},
		{"GET /status HTTP/1.1\r\nHost: y\r\n\r\n", cmp.Or(map[bool]int{true: http.StatusForbidden}[s.token != ""], 200), ""}, // no token
	} {
		code, body := ask(t, s.Path(), c.req)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%.40q: %d %s, want %d with %q", c.req, code, body, c.code, c.want)
		}
	}
	ft.mu.Lock()
	if ft.rebuilds != 1 {
		t.Errorf("%d rebuilds ran, want 1 (of the unknown name)", ft.rebuilds)
	}
	ft.mu.Unlock()

	// A panic in the instance is an error answer, not a crash.
	ctx := ctxT(t)
	c := dialSocket(s.Path())
	defer c.Close()
	ft.mu.Lock()
	ft.panicky = true
	ft.mu.Unlock()
	if _, err := c.Status(ctx); err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("panicking status: %v", err)
	}
	ft.mu.Lock()
	ft.panicky = false
	ft.mu.Unlock()
	if inst, err := c.Hello(ctx); err != nil || inst.Pid != os.Getpid() || inst.Socket != s.Path() {
		t.Fatalf("hello: %+v %v", inst, err)
	}
	if st, err := c.Status(ctx); err != nil || st.Servers[0].Name != "x" {
		t.Fatalf("status after the bad requests: %+v %v", st, err)
	}
}

// A peer that sends half a request, a follower that never reads and a
// rebuild that runs on do not keep others from being served, nor Close
// from returning.
func TestSlowPeersDoNotBlockOthers(t *testing.T) {
	dir := shortDir(t)
	ring := logring.New(100)
	ft := &fakeTarget{name: "x", block: true, started: make(chan struct{}, 1)}
	s, err := Listen(Info{Dir: dir, Target: ft, Logs: ring})
	if err != nil {
		t.Fatal(err)
	}
	half, err := rawDial(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	io.WriteString(half, "GET /status HTTP/1.1\r\nHost: x\r\n")

	stuck, err := rawDial(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	io.WriteString(stuck, "GET /logs?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n")
	line := strings.Repeat("x", 1000)
	for range 20000 { // 20 MB: far more than the socket buffers hold
		fmt.Fprintln(ring, line)
	}

	ctx := ctxT(t)
	rebuilder := dialSocket(s.Path())
	defer rebuilder.Close()
	go rebuilder.Rebuild(ctx, "x")
	<-ft.started

	c := dialSocket(s.Path())
	defer c.Close()
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Logs(ctx, &buf, false, 1); err != nil || buf.String() != line+"\n" {
		t.Fatalf("logs -n 1: %v %.40q", err, buf.String())
	}
	if _, err := c.Rebuild(ctx, "x"); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("a second rebuild: %v", err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close hangs on slow peers")
	}
}

// Concurrent rebuilds, each as mcpflow rebuild makes it (Instances, Pick
// by pid, Dial, Rebuild): one runs, every other is told busy; none is
// told there is no such instance.
func TestConcurrentRebuildsOkOrBusy(t *testing.T) {
	dir := shortDir(t)
	ft := &fakeTarget{name: "x", build: result.Build{OK: true}, block: true, started: make(chan struct{}, 1), release: make(chan struct{})}
	listenT(t, Info{Dir: dir, Target: ft})
	ctx := ctxT(t)
	const n = 50
	results := make(chan error, n)
	for range n {
		go func() {
			insts, err := Instances(Filter{Dir: dir})
			var inst Instance
			if err == nil {
				inst, err = Pick(insts, os.Getpid())
			}
			if err != nil {
				results <- err
				return
			}
			c := Dial(inst)
			defer c.Close()
			_, err = c.Rebuild(ctx, "x")
			results <- err
		}()
	}
	<-ft.started
	for range n - 1 {
		if err := <-results; !errors.Is(err, ErrBusy) {
			t.Errorf("a rebuild while one runs: %v, want busy", err)
		}
	}
	close(ft.release)
	if err := <-results; err != nil {
		t.Fatalf("the rebuild that ran: %v", err)
	}
}

// maxConns followers take every connection the instance serves: the next
// peer is told busy, and Instances still lists the instance; once a
// follower leaves, peers are served again.
func TestConnectionsBounded(t *testing.T) {
	dir := shortDir(t)
	ring := logring.New(0)
	fmt.Fprintln(ring, "hello")
	s := listenT(t, Info{Dir: dir, Target: &fakeTarget{name: "x"}, Logs: ring})
	ctx := ctxT(t)
	type follower struct {
		cancel context.CancelFunc
		done   chan error
	}
	var fs []follower
	defer func() {
		for _, f := range fs {
			f.cancel()
		}
	}()
	for range maxConns {
		c := dialSocket(s.Path())
		defer c.Close()
		fctx, cancel := context.WithCancel(ctx)
		f := follower{cancel, make(chan error, 1)}
		fs = append(fs, f)
		w := newLineWaiter()
		go func() { f.done <- c.Logs(fctx, w, true, 0) }()
		w.waitFor(t, "hello")
	}

	c := dialSocket(s.Path())
	defer c.Close()
	if _, err := c.Status(ctx); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "too many control connections") {
		t.Fatalf("status over the limit: %v", err)
	}
	if got, err := Instances(Filter{Dir: dir}); err != nil || len(got) != 1 || got[0].Socket != s.Path() || got[0].Pid != os.Getpid() {
		t.Fatalf("Instances over the limit: %+v %v", got, err)
	}

	fs[0].cancel()
	if err := <-fs[0].done; err != nil {
		t.Fatal(err)
	}
	for { // the instance frees the slot once it sees the follower gone
		_, err := c.Status(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrBusy) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBuildStatusOf(t *testing.T) {
	bs := BuildStatusOf(result.Build{OK: true, Duration: time.Second, Restart: &result.Restart{Err: errors.New("child exited: status 2\nstack")}}, time.Time{})
	if bs.FirstError != "" || bs.RestartError != "child exited: status 2" {
		t.Errorf("%+v", bs)
	}
	bs = BuildStatusOf(result.Build{Err: errors.New("build timed out after 5m")}, time.Time{})
	if bs.OK || bs.FirstError != "build timed out after 5m" {
		t.Errorf("%+v", bs)
	}
	if ExitCode(result.Build{OK: true, Restart: &result.Restart{Err: errors.New("x")}}) != 1 ||
		ExitCode(result.Build{OK: true, Canceled: true}) != 1 || ExitCode(result.Build{OK: true, Skipped: true}) != 0 {
		t.Error("ExitCode")
	}
}

func TestPickAndStatuses(t *testing.T) {
	dir := shortDir(t)
	a := listenT(t, Info{Dir: dir, Config: "/p/a/mcpflow.toml", Target: &fakeTarget{name: "a"}})
	b := listenT(t, Info{Dir: dir, Target: &fakeTarget{name: "b"}})
	insts, err := Instances(Filter{Dir: dir})
	if err != nil || len(insts) != 2 {
		t.Fatalf("%+v %v", insts, err)
	}
	if _, err := Pick(insts, 0); err == nil || !strings.Contains(err.Error(), "--pid") {
		t.Errorf("two instances, no pid: %v", err)
	}
	if _, err := Pick(nil, 0); err == nil || !strings.Contains(err.Error(), "no mcpflow instance") {
		t.Errorf("none: %v", err)
	}
	if _, err := Pick(insts, 1); err == nil {
		t.Error("pid 1 picked")
	}
	if in, err := Pick(insts[1:], 0); err != nil || in != insts[1] {
		t.Errorf("one instance: %+v %v", in, err)
	}
	if in, err := Pick(insts, os.Getpid()); err != nil || in != insts[0] {
		t.Errorf("by pid: %+v %v", in, err)
	}
	b.Close() // gone between Instances and Statuses: left out
	sts := Statuses(ctxT(t), insts)
	if len(sts) != 1 || sts[0].Config != "/p/a/mcpflow.toml" || sts[0].Servers[0].Name != "a" {
		t.Fatalf("Statuses: %+v", sts)
	}
	_ = a
}

// An instance listens under $XDG_RUNTIME_DIR when set, else under a
// folder named by the uid alone; Instances searches both, so one started
// with a bare environment is found from a terminal that has XDG_RUNTIME_DIR.
func TestRuntimeDirDefault(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix sockets")
	}
	base, err := os.MkdirTemp("", "xdg")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	byUID := filepath.Join("/tmp", fmt.Sprintf("mcpflow-%d", os.Geteuid()))
	t.Setenv("XDG_RUNTIME_DIR", base)
	if d := runtimeDirs(); !slices.Equal(d, []string{filepath.Join(base, "mcpflow"), byUID}) {
		t.Fatalf("runtimeDirs = %q", d)
	}
	s := listenT(t, Info{Target: &fakeTarget{}})
	if filepath.Dir(s.Path()) != filepath.Join(base, "mcpflow") {
		t.Fatalf("socket %s not in %s", s.Path(), base)
	}

	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base, "missing"))
	if d := runtimeDirs(); !slices.Equal(d, []string{byUID}) {
		t.Fatalf("with a missing XDG_RUNTIME_DIR: %q, want %q", d, byUID)
	}
	bare := listenT(t, Info{Target: &fakeTarget{}})
	if filepath.Dir(bare.Path()) != byUID {
		t.Fatalf("socket %s not in %s", bare.Path(), byUID)
	}

	t.Setenv("XDG_RUNTIME_DIR", base)
	got, err := Instances(Filter{})
	sockets := map[string]bool{}
	for _, in := range got {
		sockets[in.Socket] = true
	}
	if err != nil || !sockets[s.Path()] || !sockets[bare.Path()] {
		t.Fatalf("Instances finds %+v, %v; want %s and %s", got, err, s.Path(), bare.Path())
	}
}

func TestSocketPathTooLong(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix sockets")
	}
	dir := filepath.Join(shortDir(t), strings.Repeat("d", 120))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(Info{Dir: dir, Target: &fakeTarget{}}); err == nil || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
		t.Fatalf("Listen with a long path: %v", err)
	}
}

// The rebuild answer carries the recompile tool's structuredContent keys,
// and converts back to the same build.
func TestBuildJSONIsTheToolsStructuredContent(t *testing.T) {
	b := result.Build{Seq: 3, Trigger: "recompile", OK: true, Duration: 1500 * time.Millisecond,
		Restart: &result.Restart{Gen: 2, Pid: 77, Duration: 40 * time.Millisecond,
			Tools: result.ToolDiff{Known: true, Added: []string{"x"}, Current: []string{"x"}}}}
	raw, err := json.Marshal(BuildToJSON(b))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(b.Structured())
	var got, tool map[string]any
	json.Unmarshal(raw, &got)
	json.Unmarshal(want, &tool)
	for k, v := range tool {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("key %q: %v, the tool says %v", k, got[k], v)
		}
	}
	var j BuildJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	back := j.Result()
	if back.Seq != 3 || !back.OK || back.Duration != b.Duration || back.Restart == nil || back.Restart.Pid != 77 ||
		back.Restart.Gen != 2 || strings.Join(back.Restart.Tools.Added, ",") != "x" {
		t.Fatalf("round trip: %+v", back)
	}
}

func TestFirstErrorLine(t *testing.T) {
	for in, want := range map[string]string{
		"# example.com/echo\n./main.go:35:2: undefined: x\n": "./main.go:35:2: undefined: x",
		"\nerror: something broke\n  at line 3\n":            "error: something broke",
		"# only a heading\n":                                 "# only a heading",
		"":                                                   "",
	} {
		if got := firstErrorLine(in); got != want {
			t.Errorf("firstErrorLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// A start from the build cache (no build ran: the last good build's
// output is current) shows as cached, not as "no build command".
func TestCachedBuildRendered(t *testing.T) {
	cached := result.Build{Trigger: "startup", Skipped: true, Cached: true, OK: true,
		Output: "sources unchanged since the last good build; starting bin/server"}
	var buf bytes.Buffer
	st := Status{Pid: 1, Servers: []ServerStatus{{Name: "api", State: "running", Build: BuildStatusOf(cached, time.Time{})}}}
	if err := WriteStatus(&buf, []Status{st}); err != nil {
		t.Fatal(err)
	}
	cell := ""
	for l := range strings.SplitSeq(buf.String(), "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[0] == "api" {
			cell = f[5] // LAST BUILD
		}
	}
	if cell != "cached" {
		t.Errorf("status of a cached start: last build %q, want cached:\n%s", cell, buf.String())
	}
	// Through the wire and back, for mcpflow rebuild.
	raw, err := json.Marshal(BuildToJSON(cached))
	if err != nil {
		t.Fatal(err)
	}
	var j BuildJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	back := j.Result()
	if !back.Cached || !back.Skipped {
		t.Fatalf("cached lost on the wire: %s", raw)
	}
	buf.Reset()
	WriteBuild(&buf, "", cached)
	if text := buf.String(); !strings.Contains(text, "build cached: sources unchanged") || strings.Contains(text, "no build command") {
		t.Errorf("rebuild of a cached start:\n%s", text)
	}
	buf.Reset()
	WriteBuild(&buf, "", result.Build{Skipped: true, OK: true})
	if !strings.Contains(buf.String(), "no build command") {
		t.Errorf("no build command:\n%s", buf.String())
	}
}

// dialSocket is a client of the control endpoint at path.
func dialSocket(path string) *Client { return Dial(Instance{Socket: path}) }

// rawDial connects to the control endpoint at path (with no token).
func rawDial(path string) (net.Conn, error) {
	addr, _, err := readEndpoint(path)
	if err != nil {
		return nil, err
	}
	return net.Dial(endpointNet, addr)
}
