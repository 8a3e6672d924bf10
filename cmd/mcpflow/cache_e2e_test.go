//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The cache tests run the real mcpflow binary on a project whose build
// records each run in builds.log (and an overlap of two runs in
// overlap.log), writes the server script bin/server, and copies src.txt
// into an output folder that the watch globs cover.

// cacheBuildScript is the build: "building" is its lock, holding the pid
// of the build that runs. A lock whose build is gone (one killed by
// SIGKILL, as every build is when mcpflow exits under it, cannot remove
// it) is no overlap.
const cacheBuildScript = `if ! mkdir building 2>/dev/null; then
  if kill -0 "$(cat building/pid 2>/dev/null)" 2>/dev/null; then echo OVERLAP >> overlap.log; fi
fi
echo "$$" > building/pid
trap 'rm -rf building; exit 143' TERM
echo "$$" >> builds.log
if [ -e slow ]; then sleep 1; fi
mkdir -p bin %[2]s
cp src.txt %[2]s/out.txt
printf '#!/bin/sh\nexec %[1]q\n' > bin/server
chmod +x bin/server
rm -rf building
`

const cacheConfig = `[build]
command = "sh build.sh"
[run]
command = ["./bin/server"]
stop_timeout = "1s"
[watch]
include = ["**/*"]
exclude = ["builds.log", "overlap.log", "building/**", "slow"]
debounce = "50ms"
[log]
file = "mcpflow.log"
`

// cacheProject writes the project into a new temp dir; the build writes
// into outDir.
func cacheProject(t *testing.T, outDir string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"mcpflow.toml": cacheConfig,
		"build.sh":     fmt.Sprintf(cacheBuildScript, fixtureBin, outDir),
		"src.txt":      "v0\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func countBuilds(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "builds.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(strings.Fields(string(b)))
}

// waitLog waits until mcpflow.log holds n lines containing s.
func waitLog(t *testing.T, dir, s string, n int) {
	t.Helper()
	if !testkit.Wait(time.Minute, func() bool { return strings.Count(readLog(dir), s) >= n }) {
		t.Fatalf("the log never held %d × %q:\n%s", n, s, readLog(dir))
	}
}

// stopE2E ends mcpflow with SIGTERM and waits for it.
func stopE2E(t *testing.T, h *e2e) {
	t.Helper()
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.exited:
		h.exited <- err // for the cleanup's wait
	case <-time.After(30 * time.Second):
		t.Fatal("mcpflow did not exit on SIGTERM")
	}
}

func noOverlap(t *testing.T, dir string) {
	t.Helper()
	if b, _ := os.ReadFile(filepath.Join(dir, "overlap.log")); len(b) > 0 {
		t.Errorf("two builds ran at once")
	}
}

// One save, one build: the build's writes into the watched output folders
// never start another build, whether the folder is a usual output folder
// (dist) or one the builder learned (gen: learned in a first run, where it
// may cost one more build, once, and kept in the build cache).
func TestOneSaveOneBuild(t *testing.T) {
	t.Parallel()
	for _, out := range []string{"dist", "gen"} {
		t.Run(out, func(t *testing.T) {
			t.Parallel()
			dir := cacheProject(t, out)
			save := func(text string) {
				if err := os.WriteFile(filepath.Join(dir, "src.txt"), []byte(text+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if out == "gen" {
				h := startE2E(t, dir, "", "watch")
				save("learn")
				waitLog(t, dir, "the build writes gen/out.txt", 1)
				stopE2E(t, h)
				save("v0")
			}
			// The log holds the learning run's lines too: count past them.
			runLog := len(readLog(dir))
			starts, changes := strings.Count(readLog(dir), "startup →"), strings.Count(readLog(dir), "changed src.txt")
			h := startE2E(t, dir, "", "watch")
			waitLog(t, dir, "startup →", starts+1)
			first := countBuilds(t, dir)
			for i := 1; i <= 3; i++ {
				save(fmt.Sprintf("v%d", i))
				waitLog(t, dir, "changed src.txt", changes+i)
			}
			// The recompile runs after every cycle asked for before it.
			if text, isErr := h.call("recompile", nil); isErr {
				t.Fatalf("recompile: %s", text)
			}
			if got := countBuilds(t, dir) - first; got != 4 || strings.Contains(readLog(dir)[runLog:], "changed "+out+"/") {
				t.Errorf("%d builds for 3 saves and a recompile, want 4; none started by the build's output\nlog:\n%s", got, readLog(dir))
			}
			noOverlap(t, dir)
		})
	}
}

func TestCacheSecondStartRunsNoBuild(t *testing.T) {
	t.Parallel()
	dir := cacheProject(t, "dist")
	start := time.Now()
	h := startE2E(t, dir, "", "watch")
	waitLog(t, dir, "startup →", 1)
	cold := time.Since(start)
	stopE2E(t, h)
	if n := countBuilds(t, dir); n != 1 {
		t.Fatalf("%d builds at the first start", n)
	}

	start = time.Now()
	h = startE2E(t, dir, "", "watch")
	waitLog(t, dir, "startup →", 2)
	warm := time.Since(start)
	if n := countBuilds(t, dir); n != 1 {
		t.Errorf("the second start with unchanged sources built (%d builds)\nlog:\n%s", n, readLog(dir))
	}
	if !strings.Contains(readLog(dir), "sources unchanged since the last good build at ") ||
		!strings.Contains(readLog(dir), "starting bin/server without building") {
		t.Errorf("the log does not say the build was skipped:\n%s", readLog(dir))
	}
	if len(h.tools()) == 0 {
		t.Error("no tools from the server started without a build")
	}
	// The agent's recompile always builds.
	if text, isErr := h.call("recompile", nil); isErr {
		t.Fatalf("recompile: %s", text)
	}
	if n := countBuilds(t, dir); n != 2 {
		t.Errorf("recompile with unchanged sources: %d builds, want 2", n)
	}
	stopE2E(t, h)
	t.Logf("startup until the server runs: %s building, %s from the cache", cold, warm)

	// A changed source builds again, and so does a missing output.
	if err := os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h = startE2E(t, dir, "", "watch")
	waitLog(t, dir, "startup →", 3)
	if n := countBuilds(t, dir); n != 3 {
		t.Errorf("a changed source: %d builds, want 3", n)
	}
	stopE2E(t, h)
	if err := os.Remove(filepath.Join(dir, "bin", "server")); err != nil {
		t.Fatal(err)
	}
	startE2E(t, dir, "", "watch")
	waitLog(t, dir, "startup →", 4)
	if n := countBuilds(t, dir); n != 4 {
		t.Errorf("a missing output: %d builds, want 4", n)
	}
}

func TestCacheFailedBuildIsNeverReused(t *testing.T) {
	t.Parallel()
	dir := cacheProject(t, "dist")
	h := startE2E(t, dir, "", "watch")
	waitLog(t, dir, "startup →", 1)
	// A build that fails after writing its output, then sources back as
	// they were (same size, same time): the output on disk is the failed
	// build's, so the next start builds.
	fi, err := os.Stat(filepath.Join(dir, "src.txt"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "build.sh")
	good, _ := os.ReadFile(script)
	if err := os.WriteFile(script, append(good, []byte("exit 1\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if text, isErr := h.call("recompile", nil); !isErr {
		t.Fatalf("recompile of a failing build: %s", text)
	}
	stopE2E(t, h)
	if err := os.WriteFile(script, good, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, "src.txt"), fi.ModTime(), fi.ModTime())
	before := countBuilds(t, dir)
	startE2E(t, dir, "", "watch")
	waitLog(t, dir, "startup →", 2)
	if n := countBuilds(t, dir); n != before+1 {
		t.Errorf("after a failed build the next start did not build (%d builds, %d before)\nlog:\n%s", n, before, readLog(dir))
	}
}

func TestTwoInstancesBuildOnce(t *testing.T) {
	t.Parallel()
	dir := cacheProject(t, "dist")
	if err := os.WriteFile(filepath.Join(dir, "slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan *e2e, 2)
	for range 2 {
		go func() { done <- startE2E(t, dir, "", "watch") }()
	}
	a, b := <-done, <-done
	waitLog(t, dir, "startup →", 2)
	if n := countBuilds(t, dir); n != 1 {
		t.Errorf("two instances started at once ran %d builds, want 1\nlog:\n%s", n, readLog(dir))
	}
	if !strings.Contains(readLog(dir), "sources unchanged since the last good build") {
		t.Errorf("the second instance did not start the first one's output:\n%s", readLog(dir))
	}
	for _, h := range []*e2e{a, b} {
		if len(h.tools()) == 0 {
			t.Error("an instance has no tools")
		}
	}
	// A save seen by both: one builds, the other starts its output.
	if err := os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, dir, "changed src.txt", 2)
	if n := countBuilds(t, dir); n != 2 {
		t.Errorf("one save seen by two instances ran %d builds, want 1\nlog:\n%s", n-1, readLog(dir))
	}
	noOverlap(t, dir)
}
