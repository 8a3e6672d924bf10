//go:build unix

package builder

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// outputScript builds by copying src into dir/out.js, after waiting for a
// file named gate when src says "gate".
const outputScript = `
echo "$$" >> builds.log
mkdir -p "$1"
case "$(cat src)" in gate*) while [ ! -e gate ]; do sleep 0.02; done; rm -f gate ;; esac
cat src > "$1/out.js"
`

func outputHarness(t *testing.T, dir string, cfg Config) *harness {
	cfg.Command, cfg.Shell = []string{outputScript, dir}, true
	return newHarness(t, cfg, nil, true)
}

// expect waits for the next result and checks its trigger and paths.
func (h *harness) expect(seq uint64, trigger string, changed ...string) {
	h.t.Helper()
	res := h.next()
	if res.Seq != seq || res.Trigger != trigger || !slices.Equal(res.Changed, changed) || !res.OK {
		h.t.Fatalf("result %d %s %q (ok %v, err %v), want %d %s %q", res.Seq, res.Trigger, res.Changed, res.OK, res.Err, seq, trigger, changed)
	}
}

func TestOutputFolderWrittenByBuildNeverBuilds(t *testing.T) {
	h := outputHarness(t, "dist", Config{})
	h.write("src", "v1")
	h.b.Startup(context.Background())
	h.expect(1, triggerStartup)
	// What the watcher reports after the build: its output, and a file
	// it deleted.
	h.b.Changed([]string{"dist/out.js"})
	h.b.Changed([]string{"dist/old.js"})
	// A save: exactly one build, for the save alone.
	h.write("src", "v2")
	h.b.Changed([]string{"src"})
	h.expect(2, triggerWatch, "src")
	h.b.Changed([]string{"dist/out.js"})
	h.recompile(context.Background()).wait(t)
	h.expect(3, TriggerRecompile)
	if n := len(h.builds()); n != 3 {
		t.Errorf("%d builds, want 3", n)
	}
	if got := h.outputs(); !slices.Equal(got, []string{"dist/out.js"}) {
		t.Errorf("outputs() = %q", got)
	}
	h.noMoreResults()
}

func TestOutputLearnedFromTheBuild(t *testing.T) {
	var mu sync.Mutex
	var learned []string
	h := outputHarness(t, "gen", Config{OnOutputs: func(o []string) {
		mu.Lock()
		learned = o
		mu.Unlock()
	}})
	h.write("src", "v1")
	h.b.Startup(context.Background())
	h.expect(1, triggerStartup)
	// gen/ is no known output folder: the first time, the file may be a
	// save, so it builds; that build writes it again, which makes it
	// known.
	h.b.Changed([]string{"gen/out.js"})
	h.expect(2, triggerWatch, "gen/out.js")
	if got := h.outputs(); !slices.Equal(got, []string{"gen/out.js"}) {
		t.Fatalf("outputs() = %q after the build rewrote gen/out.js", got)
	}
	mu.Lock()
	if !slices.Equal(learned, []string{"gen/out.js"}) {
		t.Errorf("OnOutputs got %q", learned)
	}
	mu.Unlock()
	for i, v := range []string{"v2", "v3"} {
		h.write("src", v)
		h.b.Changed([]string{"src"})
		h.expect(uint64(3+i), triggerWatch, "src")
		h.b.Changed([]string{"gen/out.js"})
	}
	h.recompile(context.Background()).wait(t)
	h.expect(5, TriggerRecompile)
	if n := len(h.builds()); n != 5 {
		t.Errorf("%d builds, want 5", n)
	}
	h.noMoreResults()
}

func TestKnownOutputsSkipTheFirstExtraBuild(t *testing.T) {
	h := outputHarness(t, "gen", Config{Outputs: []string{"gen/out.js"}})
	h.write("src", "v1")
	h.b.Startup(context.Background())
	h.expect(1, triggerStartup)
	h.b.Changed([]string{"gen/out.js"})
	h.recompile(context.Background()).wait(t)
	h.expect(2, TriggerRecompile)
	h.noMoreResults()
}

func TestSaveDuringBuildBuildsOnceMore(t *testing.T) {
	h := outputHarness(t, "dist", Config{})
	h.write("src", "v1")
	h.b.Startup(context.Background())
	h.expect(1, triggerStartup)

	h.write("src", "gate v2")
	h.b.Changed([]string{"src"})
	h.waitBuilds(2)
	// Saved while the build runs: a file never seen before.
	h.write("lib.ts", "export {}")
	h.b.Changed([]string{"lib.ts"})
	h.waitBuilds(3)
	h.write("gate", "")
	h.expect(3, triggerWatch, "src", "lib.ts")
	h.b.Changed([]string{"dist/out.js"})
	h.write("src", "v3")
	h.recompile(context.Background()).wait(t)
	h.expect(4, TriggerRecompile)
	if got := h.outputs(); slices.Contains(got, "lib.ts") {
		t.Errorf("a save is taken for the build's output: %q", got)
	}
	h.noMoreResults()
}

func TestEditedOutputBuilds(t *testing.T) {
	h := outputHarness(t, "gen", Config{Outputs: []string{"gen/out.js"}})
	h.write("src", "v1")
	h.b.Startup(context.Background())
	h.expect(1, triggerStartup)
	// An edit after the build (the sleep only makes sure its time
	// lies past the build's).
	time.Sleep(200 * time.Millisecond)
	h.write("gen/out.js", "edited by hand")
	h.b.Changed([]string{"gen/out.js"})
	h.expect(2, triggerWatch, "gen/out.js")
	if got := h.outputs(); len(got) != 0 {
		t.Errorf("outputs() = %q: an edited file is still taken for output", got)
	}
}

// outputs returns the paths the builder knows as written by builds, sorted.
func (h *harness) outputs() []string {
	h.b.guard.mu.Lock()
	defer h.b.guard.mu.Unlock()
	return h.b.guard.snapshot(true)
}
