//go:build unix

package builder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// long bounds every wait in these tests: generous, for a busy machine. No
// test asserts how fast anything is.
const long = 30 * time.Second

// script is the build used by most tests. It copies src to out, after
// doing what src's first word says: "slow" starts a long sleep in the
// background and waits for it, "gate" waits until a file named gate
// exists, "fail" fails like the Go compiler. A lock directory holding its
// owner's pid catches two builds running at once (a lock left by a build
// that was killed before it could remove it has a dead owner); builds.log
// records each build's shell pid.
const script = `
trap 'if [ -e slowdeath ]; then sleep 0.5; fi; rm -rf lock; exit 143' TERM
if ! mkdir lock 2>/dev/null; then
	owner=$(cat lock/pid 2>/dev/null)
	if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then echo OVERLAP >> overlap.log; fi
fi
echo "$$" > lock/pid
echo "$$" >> builds.log
src=$(cat src)
case "$src" in
slow*) sleep 100 & echo $! > sleep.pid; wait ;;
gate*) while [ ! -e gate ]; do sleep 0.02; done ;;
fail*) echo "./main.go:3:1: undefined: nope" >&2; rm -rf lock; exit 1 ;;
v*) sleep 0.05 ;;
esac
cp src out
echo "copied $src"
rm -rf lock
`

type fakeRestarter struct {
	calls   atomic.Int32
	entered chan struct{} // receives a value as each Restart starts, if not nil
	block   chan struct{} // Restart waits for it to be closed, if not nil
	ctxErr  atomic.Value  // the ctx error seen by the last Restart, if any
}

func (f *fakeRestarter) Restart(ctx context.Context) (*result.Restart, error) {
	n := f.calls.Add(1)
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			f.ctxErr.Store(ctx.Err())
			return nil, ctx.Err()
		}
	}
	return &result.Restart{Gen: int(n)}, nil
}

type harness struct {
	t       *testing.T
	dir     string
	b       *Builder
	r       *fakeRestarter
	results chan result.Build
	ctx     context.Context // Run's
	cancel  context.CancelFunc
	started bool // Run was started
	done    chan struct{}
}

// newHarness makes a builder running script (unless cfg has a command) in
// a temporary directory. run says whether to start Run now.
func newHarness(t *testing.T, cfg Config, r *fakeRestarter, run bool) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), r: r, results: make(chan result.Build, 100), done: make(chan struct{})}
	if cfg.Command == nil {
		cfg.Command, cfg.Shell = []string{script}, true
	} else if len(cfg.Command) == 0 {
		cfg.Command = nil
	}
	cfg.Dir = h.dir
	cfg.OnResult = func(res result.Build) { h.results <- res }
	if r == nil {
		h.r = &fakeRestarter{}
	}
	h.b = New(cfg, h.r)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() {
		h.cancel()
		if !h.started {
			return
		}
		select {
		case <-h.done:
		case <-time.After(long):
			t.Error("Run did not return after its ctx was canceled")
		}
	})
	if run {
		h.run()
	}
	h.write("src", "v0")
	return h
}

// run starts Run in a goroutine.
func (h *harness) run() {
	h.started = true
	go func() {
		defer close(h.done)
		h.b.Run(h.ctx)
	}()
}

func (h *harness) path(name string) string { return filepath.Join(h.dir, name) }

func (h *harness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(h.path(name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) read(name string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.path(name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.t.Fatal(err)
	}
	return string(b)
}

// builds returns the pids of the builds started so far.
func (h *harness) builds() []int {
	h.t.Helper()
	var pids []int
	for _, f := range strings.Fields(h.read("builds.log")) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			h.t.Fatalf("builds.log: %v", err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// eventually waits until cond holds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	testkit.Eventually(h.t, long, what, cond)
}

// waitBuilds waits until n builds have started.
func (h *harness) waitBuilds(n int) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%d builds to start", n), func() bool { return len(h.builds()) >= n })
}

// pidFile waits for a file holding a pid and returns the pid.
func (h *harness) pidFile(name string) int {
	h.t.Helper()
	var pid int
	h.eventually(name, func() bool {
		var err error
		pid, err = strconv.Atoi(strings.TrimSpace(h.read(name)))
		return err == nil
	})
	return pid
}

// next returns the next result passed to OnResult.
func (h *harness) next() result.Build {
	h.t.Helper()
	select {
	case res := <-h.results:
		return res
	case <-time.After(long):
		h.t.Fatal("no result")
		return result.Build{}
	}
}

// noMoreResults checks that OnResult has not been called again.
func (h *harness) noMoreResults() {
	h.t.Helper()
	select {
	case res := <-h.results:
		h.t.Errorf("unexpected result: %+v", res)
	default:
	}
}

func (h *harness) noOverlap() {
	h.t.Helper()
	if s := h.read("overlap.log"); s != "" {
		h.t.Errorf("two builds ran at once: %q", s)
	}
}

func (h *harness) gone(pid int) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("process %d to die", pid), func() bool { return !testkit.Alive(pid) })
}

// recompile calls Recompile in a goroutine, recording its progress.
type recompileCall struct {
	res      chan result.Build
	mu       sync.Mutex
	msgs     []string
	joined   chan struct{} // closed at the first progress message
	returned atomic.Bool
	late     atomic.Bool // progress called after Recompile returned
}

func (h *harness) recompile(ctx context.Context) *recompileCall {
	c := &recompileCall{res: make(chan result.Build, 1), joined: make(chan struct{})}
	go func() {
		res := h.b.Recompile(ctx, func(msg string) {
			if c.returned.Load() {
				c.late.Store(true)
			}
			c.mu.Lock()
			if len(c.msgs) == 0 {
				close(c.joined)
			}
			c.msgs = append(c.msgs, msg)
			c.mu.Unlock()
		})
		c.returned.Store(true)
		c.res <- res
	}()
	return c
}

func (c *recompileCall) wait(t *testing.T) result.Build {
	t.Helper()
	select {
	case res := <-c.res:
		if c.late.Load() {
			t.Error("progress called after Recompile returned")
		}
		return res
	case <-time.After(long):
		t.Fatal("Recompile did not return")
		return result.Build{}
	}
}

func (c *recompileCall) waitJoined(t *testing.T) {
	t.Helper()
	select {
	case <-c.joined:
	case <-time.After(long):
		t.Fatal("Recompile reported no progress")
	}
}

func (c *recompileCall) messages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}

func TestGoodBuildRestartsOnce(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.write("src", "v1")
	call := h.recompile(context.Background())
	res := call.wait(t)
	if !res.OK || res.Skipped || res.Canceled || res.Err != nil {
		t.Fatalf("result: %+v", res)
	}
	if res.Seq != 1 || res.Trigger != TriggerRecompile {
		t.Errorf("Seq %d Trigger %q, want 1 recompile", res.Seq, res.Trigger)
	}
	if res.Restart == nil || res.Restart.Gen != 1 || res.Restart.Err != nil {
		t.Errorf("restart fields: %+v", res)
	}
	if n := h.r.calls.Load(); n != 1 {
		t.Errorf("Restart called %d times, want 1", n)
	}
	if got := h.read("out"); got != "v1" {
		t.Errorf("out = %q", got)
	}
	if res.Output != "copied v1\n" || res.Errors != "" {
		t.Errorf("Output %q Errors %q", res.Output, res.Errors)
	}
	msgs := call.messages()
	if len(msgs) != 4 || !strings.HasPrefix(msgs[0], "building: ") ||
		!strings.HasPrefix(msgs[1], "build ok in ") || msgs[2] != "restarting" ||
		!strings.HasPrefix(msgs[3], "restarted in ") {
		t.Errorf("progress: %q", msgs)
	}
	if got := h.next(); got.Seq != 1 || got.Restart == nil || got.Restart.Gen != res.Restart.Gen {
		t.Errorf("OnResult got %+v", got)
	}
	h.noMoreResults()
}

func TestStartup(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	res := h.b.Startup(context.Background())
	if !res.OK || res.Trigger != triggerStartup || res.Seq != 1 || res.Restart == nil {
		t.Fatalf("result: %+v", res)
	}
	if n := h.r.calls.Load(); n != 1 {
		t.Errorf("Restart called %d times, want 1", n)
	}
}

func TestFailedBuildDoesNotRestart(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.write("src", "fail")
	res := h.b.Startup(context.Background())
	if res.OK || res.Restart != nil || res.Canceled {
		t.Fatalf("result: %+v", res)
	}
	if res.Errors != "./main.go:3:1: undefined: nope" {
		t.Errorf("Errors = %q", res.Errors)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "exit status 1") {
		t.Errorf("Err = %v", res.Err)
	}
	if n := h.r.calls.Load(); n != 0 {
		t.Errorf("Restart called %d times", n)
	}
	if got := h.next(); got.OK || got.Seq != 1 {
		t.Errorf("OnResult got %+v", got)
	}
}

func TestChangedKillsRunningBuild(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.write("src", "slow")
	h.b.Changed([]string{"a.go"})
	sleepPID := h.pidFile("sleep.pid")
	firstBuild := h.builds()[0]

	h.write("src", "final")
	h.b.Changed([]string{"b.go", "a.go"})
	res := h.next()
	if !res.OK || res.Seq != 2 || res.Trigger != triggerWatch {
		t.Fatalf("result: %+v", res)
	}
	if !slices.Equal(res.Changed, []string{"a.go", "b.go"}) {
		t.Errorf("Changed = %q, want the union", res.Changed)
	}
	if got := h.read("out"); got != "final" {
		t.Errorf("out = %q, want the last source", got)
	}
	h.gone(firstBuild)
	h.gone(sleepPID)
	if n := len(h.builds()); n != 2 {
		t.Errorf("%d builds, want 2", n)
	}
	if n := h.r.calls.Load(); n != 1 {
		t.Errorf("Restart called %d times, want 1", n)
	}
	h.noOverlap()
	h.noMoreResults()
}

func TestBurstOfChangesBuildsAtMostTwice(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.write("slowdeath", "") // a canceled build takes a while to exit
	h.write("src", "gate")
	h.b.Changed([]string{"p0"})
	h.waitBuilds(1)
	want := []string{"p0"}
	h.write("src", "v29")
	for i := 1; i < 30; i++ {
		p := fmt.Sprintf("p%d", i%10)
		h.b.Changed([]string{p})
		if !slices.Contains(want, p) {
			want = append(want, p)
		}
	}
	res := h.next()
	if !res.OK || res.Seq != 2 {
		t.Fatalf("result: %+v", res)
	}
	if !slices.Equal(res.Changed, want) {
		t.Errorf("Changed = %q, want %q", res.Changed, want)
	}
	if got := h.read("out"); got != "v29" {
		t.Errorf("out = %q", got)
	}
	if n := len(h.builds()); n > 2 {
		t.Errorf("%d builds for one burst, want at most 2", n)
	}
	h.noOverlap()
}

func TestNeverTwoBuildsAtOnce(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	for i := range 15 {
		h.write("src", fmt.Sprintf("v%d", i))
		h.b.Changed([]string{fmt.Sprintf("f%d", i)})
		time.Sleep(time.Duration(i%4) * 15 * time.Millisecond) // changes at uneven gaps, some within a build, some between: the subject
	}
	h.write("src", "v-final")
	h.b.Changed([]string{"last"})
	for {
		res := h.next()
		if slices.Contains(res.Changed, "last") {
			if !res.OK {
				t.Fatalf("last result: %+v", res)
			}
			break
		}
	}
	if got := h.read("out"); got != "v-final" {
		t.Errorf("out = %q", got)
	}
	h.noOverlap()
}

func TestRecompileJoinsRunningBuild(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.write("src", "gate")
	h.b.Changed([]string{"a.go"})
	h.waitBuilds(1)
	call := h.recompile(context.Background())
	call.waitJoined(t)
	h.write("gate", "")
	res := call.wait(t)
	watch := h.next()
	if !res.OK || res.Seq != 1 || watch.Seq != 1 || res.Trigger != triggerWatch {
		t.Fatalf("Recompile got %+v, OnResult got %+v", res, watch)
	}
	if n := len(h.builds()); n != 1 {
		t.Errorf("%d builds, want 1", n)
	}
	if n := h.r.calls.Load(); n != 1 {
		t.Errorf("Restart called %d times, want 1", n)
	}
	if msgs := call.messages(); !strings.Contains(msgs[0], "already running") {
		t.Errorf("progress: %q", msgs)
	}
}

func TestRecompileFollowsReplacementCycle(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.write("src", "gate")
	h.b.Changed([]string{"a.go"})
	h.waitBuilds(1)
	call := h.recompile(context.Background())
	call.waitJoined(t)
	h.write("src", "final")
	h.b.Changed([]string{"b.go"})
	res := call.wait(t)
	if !res.OK || res.Canceled || res.Seq != 2 || !slices.Equal(res.Changed, []string{"a.go", "b.go"}) {
		t.Fatalf("result: %+v", res)
	}
	if got := h.read("out"); got != "final" {
		t.Errorf("out = %q", got)
	}
	msgs := strings.Join(call.messages(), "\n")
	if !strings.Contains(msgs, "canceled by newer changes") {
		t.Errorf("progress: %s", msgs)
	}
}

func TestRecompileWhenIdleBuilds(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	for i := 1; i <= 2; i++ {
		h.write("src", fmt.Sprintf("v%d", i))
		res := h.b.Recompile(context.Background(), nil)
		if !res.OK || res.Seq != uint64(i) || res.Trigger != TriggerRecompile {
			t.Fatalf("result %d: %+v", i, res)
		}
		if got := h.read("out"); got != fmt.Sprintf("v%d", i) {
			t.Errorf("out = %q", got)
		}
	}
	if n := len(h.builds()); n != 2 {
		t.Errorf("%d builds, want 2", n)
	}
}

func TestRecompileCtxCancelReturns(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.write("src", "gate")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	call := h.recompile(ctx)
	res := call.wait(t)
	if !errors.Is(res.Err, context.DeadlineExceeded) || res.OK {
		t.Fatalf("result: %+v", res)
	}
	// The build goes on for the others.
	h.write("gate", "")
	if got := h.next(); !got.OK || got.Seq != 1 {
		t.Errorf("OnResult got %+v", got)
	}
}

func TestTimeout(t *testing.T) {
	h := newHarness(t, Config{Timeout: time.Second}, nil, true)
	h.write("src", "slow")
	res := h.b.Recompile(context.Background(), nil)
	if res.OK || res.Canceled || res.Err == nil {
		t.Fatalf("result: %+v", res)
	}
	if msg := res.Err.Error(); !strings.Contains(msg, "timed out") || !strings.Contains(msg, "build.timeout") {
		t.Errorf("Err = %q", msg)
	}
	// On a very busy machine the timeout may strike before the script
	// started its sleep; check the sleep only if it did.
	if pid, err := strconv.Atoi(strings.TrimSpace(h.read("sleep.pid"))); err == nil {
		h.gone(pid)
	} else {
		t.Log("the build timed out before it started its sleep")
	}
	if n := h.r.calls.Load(); n != 0 {
		t.Errorf("Restart called %d times", n)
	}
}

func TestOnResultForEachCycle(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.b.Startup(context.Background())
	if got := h.next(); got.Seq != 1 || got.Trigger != triggerStartup {
		t.Errorf("first: %+v", got)
	}
	h.write("src", "fail")
	h.b.Changed([]string{"x.go"})
	if got := h.next(); got.Seq != 2 || got.Trigger != triggerWatch || got.OK {
		t.Errorf("second: %+v", got)
	}
	h.write("src", "v2")
	h.b.Recompile(context.Background(), nil)
	if got := h.next(); got.Seq != 3 || got.Trigger != TriggerRecompile || !got.OK {
		t.Errorf("third: %+v", got)
	}
	h.noMoreResults()
}

func TestSkippedWithoutCommand(t *testing.T) {
	h := newHarness(t, Config{Command: []string{}}, nil, true)
	res := h.b.Startup(context.Background())
	if !res.OK || !res.Skipped || res.Restart == nil || res.Seq != 1 || res.Output != "" {
		t.Fatalf("result: %+v", res)
	}
	if n := h.r.calls.Load(); n != 1 {
		t.Errorf("Restart called %d times, want 1", n)
	}
	if len(h.builds()) != 0 {
		t.Error("a build ran")
	}
}

func TestChangedDuringRestartWaitsForIt(t *testing.T) {
	r := &fakeRestarter{entered: make(chan struct{}, 10), block: make(chan struct{})}
	h := newHarness(t, Config{}, r, true)
	h.write("src", "v1")
	h.b.Changed([]string{"a.go"})
	select {
	case <-r.entered:
	case <-time.After(long):
		t.Fatal("Restart not called")
	}
	h.write("src", "v2")
	h.b.Changed([]string{"b.go"})
	close(r.block)
	first, second := h.next(), h.next()
	if first.Seq != 1 || first.Restart == nil || first.Restart.Err != nil {
		t.Errorf("first: %+v", first)
	}
	if second.Seq != 2 || !second.OK || !slices.Equal(second.Changed, []string{"b.go"}) {
		t.Errorf("second: %+v", second)
	}
	if r.ctxErr.Load() != nil {
		t.Error("the restart was canceled")
	}
	if got := h.read("out"); got != "v2" {
		t.Errorf("out = %q", got)
	}
}

func TestRunCancelLeavesNoProcess(t *testing.T) {
	h := newHarness(t, Config{}, nil, true)
	h.write("src", "slow")
	h.b.Changed([]string{"a.go"})
	sleepPID := h.pidFile("sleep.pid")
	shellPID := h.builds()[0]
	if !testkit.Alive(sleepPID) || !testkit.Alive(shellPID) {
		t.Fatal("the build is not running")
	}
	call := h.recompile(context.Background())
	call.waitJoined(t)

	h.cancel()
	select {
	case <-h.done:
	case <-time.After(long):
		t.Fatal("Run did not return")
	}
	if testkit.Alive(shellPID) {
		t.Error("the build's shell survived Run")
	}
	h.gone(sleepPID)
	if res := call.wait(t); !res.Canceled || res.Err == nil {
		t.Errorf("joined Recompile got %+v", res)
	}
	if res := h.b.Recompile(context.Background(), nil); res.Err == nil || !strings.Contains(res.Err.Error(), "stopped") {
		t.Errorf("Recompile after Run: %+v", res)
	}
	h.b.Changed([]string{"ignored"}) // must not block or panic
	h.noMoreResults()
}

func TestChangedBeforeRun(t *testing.T) {
	h := newHarness(t, Config{}, nil, false)
	h.write("src", "v1")
	h.b.Changed([]string{"a.go"})
	h.run()
	if res := h.next(); !res.OK || res.Seq != 1 {
		t.Errorf("result: %+v", res)
	}
}

func TestArgvCommand(t *testing.T) {
	h := newHarness(t, Config{Command: []string{"cp", "src", "out"}}, nil, true)
	h.write("src", "plain argv")
	if res := h.b.Recompile(context.Background(), nil); !res.OK {
		t.Fatalf("result: %+v", res)
	}
	if got := h.read("out"); got != "plain argv" {
		t.Errorf("out = %q", got)
	}
}

func TestShellArgs(t *testing.T) {
	h := newHarness(t, Config{Command: []string{`printf '%s' "$1" > out`, "first arg"}, Shell: true}, nil, true)
	if res := h.b.Recompile(context.Background(), nil); !res.OK {
		t.Fatalf("result: %+v", res)
	}
	if got := h.read("out"); got != "first arg" {
		t.Errorf("out = %q", got)
	}
}

func TestStartError(t *testing.T) {
	h := newHarness(t, Config{Command: []string{"/nonexistent/mcpflow-build-tool"}}, nil, true)
	res := h.b.Recompile(context.Background(), nil)
	if res.OK || res.Err == nil || !strings.Contains(res.Err.Error(), "build.command") {
		t.Fatalf("result: %+v", res)
	}
	if h.r.calls.Load() != 0 {
		t.Error("Restart called")
	}
}

// The build inherits mcpflow's environment, and its output is cut to
// 1 MiB: the head and the tail.
func TestEnvAndMaxOutput(t *testing.T) {
	t.Setenv("MCPFLOW_TEST_VAR", "from-env")
	h := newHarness(t, Config{
		Command: []string{`echo "$MCPFLOW_TEST_VAR"; awk 'BEGIN { for (i = 0; i < 200000; i++) print "line " i }'`},
		Shell:   true,
	}, nil, true)
	res := h.b.Recompile(context.Background(), nil)
	if !res.OK {
		t.Fatalf("result: %+v", res)
	}
	if !strings.HasPrefix(res.Output, "from-env\nline 0\n") || !strings.HasSuffix(res.Output, "line 199999\n") ||
		!strings.Contains(res.Output, "bytes cut") || len(res.Output) < 1<<20-100 || len(res.Output) > 1<<20+100 {
		t.Errorf("Output: %d bytes, head %q", len(res.Output), res.Output[:min(len(res.Output), 40)])
	}
}

func TestCancelKillsProcessThatIgnoresSIGTERM(t *testing.T) {
	h := newHarness(t, Config{
		Command: []string{`echo "$$" >> builds.log; (trap '' TERM; exec sleep 100) & echo $! > sleep.pid; wait`},
		Shell:   true,
	}, nil, true)
	h.b.Changed([]string{"a.go"})
	stubborn := h.pidFile("sleep.pid")
	if !testkit.Alive(stubborn) {
		t.Fatal("the build is not running")
	}
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(long):
		t.Fatal("Run did not return")
	}
	h.gone(stubborn)
}

// A build Prepare says is not needed (the build cache) is reported as
// skipped and cached, with Prepare's reason as the output; no build runs.
func TestPrepareSkipIsCached(t *testing.T) {
	h := newHarness(t, Config{Prepare: func(context.Context, string, func(string)) (string, func(bool), error) {
		return "sources unchanged", nil, nil
	}}, nil, true)
	res := h.b.Startup(context.Background())
	if !res.OK || !res.Skipped || !res.Cached || res.Output != "sources unchanged" || res.Restart == nil {
		t.Fatalf("result: %+v", res)
	}
	if len(h.builds()) != 0 {
		t.Error("a build ran")
	}
	// Without a build command nothing is cached: there is nothing to build.
	h2 := newHarness(t, Config{Command: []string{}}, nil, true)
	if res := h2.b.Startup(context.Background()); res.Cached {
		t.Errorf("no build command reported as cached: %+v", res)
	}
}

// A build that exits 0 while a process it started outside its group keeps
// its output open succeeded: Wait gives up on the output after killGrace
// (exec.Cmd.WaitDelay) and the build is reported good.
func TestBuildThatLeavesItsOutputOpenSucceeds(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	h := newHarness(t, Config{
		Command: []string{`setsid sh -c 'echo $$ > outsider.pid; exec sleep 30' &
while [ ! -s outsider.pid ]; do sleep 0.01; done
echo built`},
		Shell: true,
	}, nil, true)
	res := h.b.Recompile(context.Background(), nil)
	outsider := h.pidFile("outsider.pid")
	t.Cleanup(func() { _ = syscall.Kill(outsider, syscall.SIGKILL) })
	if !res.OK || res.Err != nil || !strings.Contains(res.Output, "built") {
		t.Fatalf("result: %+v", res)
	}
	if !testkit.Alive(outsider) {
		t.Error("the process outside the build's group was killed; only the group is the build's")
	}
}
