//go:build linux

// Command bench measures mcpflow against the goals of issue #23, beside
// the floor in one run: the latency a small call gains through mcpflow
// watch, mcpflow mux and [cli]; large results through watch and the mux,
// and the memory they take; the mux's memory and tools/list over 20
// servers × 50 tools. It also keeps what users feel of the earlier rounds:
// restart cost, save → list_changed, memory and leaks over restarts, and
// the watcher. Timing goals live here, not in tests: a missed goal is
// reported (✗ miss), and the exit status is 0 unless something broke (a
// call failed, a process outlived its parent).
//
// Usage:
//
//	go run ./bench -mcpflow bin/mcpflow [-quick] [-rounds N] [-md FILE] [-only SECTIONS]
//
// It prints a table per section (name, n, median, p99, min, ratio, goal,
// verdict) and writes the same tables as markdown to -md (default
// bench-results.md), ready for BENCHMARKS.md.
//
// Each comparison runs its ways side by side in one run, interleaved in
// rounds (one call each way per round, the order rotating), so drift in
// the machine's speed hits every way alike. All ways are driven by the same
// raw JSON-RPC client (write a line, read lines). The binary has two more
// modes, started by the benchmark itself:
//
//	bench -floor -- CMD ARGS   the floor: two io.Copy loops between the client and CMD
//	bench -canned              a raw MCP server whose big tool writes prebuilt results
//
// The test server is the test kit's fixture (echo, big, grow, variants;
// before the kit, the relay's and the mux's), built into a temporary
// directory at start; the [cli] ways serve /bin/echo. The benchmark makes
// itself a child subreaper, so a server that outlives mcpflow is found,
// reported and killed at the end; every process runs in its own process
// group, and the temporary directory is removed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	mcpflow       string
	md            string
	quick         bool
	only          string
	rounds        int // per-call rounds, per era
	bigRounds     int
	listRounds    int
	restartRounds int
	saveRounds    int
	leakRestarts  int
	watchRounds   int
	treeScale     float64
	idle          time.Duration
}

type bench struct {
	opt         options
	tmp         string
	root        string // the module's directory
	fixture     string // the relay's fixture: echo, big, -variant-file
	muxFixture  string // the mux's fixture: grow
	built       map[string]string
	fixtureDirs []string
	mcpflow     string
	self        string
	seq         int

	mu    sync.Mutex
	peers []*peer
}

func (b *bench) track(p *peer) {
	b.mu.Lock()
	b.peers = append(b.peers, p)
	b.mu.Unlock()
}

// killAll kills every process group we started that has not been waited.
func (b *bench) killAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.peers {
		p.kill()
	}
}

// dir makes a fresh directory under the work dir.
func (b *bench) dir(name string) (string, error) {
	d := filepath.Join(b.tmp, name)
	return d, os.MkdirAll(d, 0o755)
}

type section struct {
	key, title string
	run        func(b *bench) (*result, error)
}

var sections = []section{
	{"overhead", "1. Added latency per small call: watch, mux, [cli]", overhead},
	{"large", "2. Large messages: big tool results through watch and the mux", large},
	{"mux", "3. Mux: memory, add_server, tools/list over 20 servers × 50 tools", muxBench},
	{"restart", "4. Restart cost: recompile with no build step; [cli] refresh", restartCost},
	{"save", "5. Save → notifications/tools/list_changed", saveToList},
	{"memory", "6. Memory and leaks over restarts", memory},
	{"watcher", "7. Watcher: start-up on a large tree, idle CPU", watcherBench},
	{"http", "8. Streamable HTTP: added latency per call; 1, 3 and 10 sessions of a stdio server: RSS, save → every session's list_changed", httpBench},
}

func numCPU() int { return runtime.NumCPU() }

func main() { os.Exit(run()) }

func run() int {
	var o options
	floor := flag.Bool("floor", false, "relay mode: bench -floor -- CMD ARGS (the floor the relays are compared with)")
	canned := flag.Bool("canned", false, "server mode: a raw MCP server whose big tool writes prebuilt results")
	flag.StringVar(&o.mcpflow, "mcpflow", "", "path of the mcpflow binary (required)")
	flag.StringVar(&o.md, "md", "bench-results.md", "write markdown tables for BENCHMARKS.md to this file")
	flag.BoolVar(&o.quick, "quick", false, "small counts, for a smoke run under a minute")
	flag.StringVar(&o.only, "only", "", "comma-separated sections to run: "+sectionKeys())
	flag.IntVar(&o.rounds, "rounds", 0, "rounds of the per-call test, per protocol era (default 5000, quick 300)")
	flag.IntVar(&o.bigRounds, "big-rounds", 0, "rounds of the large-message test with the canned server; the fixture gets a third (default 12, quick 3)")
	flag.IntVar(&o.listRounds, "list-rounds", 0, "rounds of the mux's tools/list test (default 300, quick 20)")
	flag.IntVar(&o.restartRounds, "restart-rounds", 0, "rounds of the restart-cost test (default 200, quick 15)")
	flag.IntVar(&o.saveRounds, "save-rounds", 0, "rounds of the save → list_changed test (default 30, quick 5)")
	flag.IntVar(&o.leakRestarts, "leak-restarts", 0, "restarts between the memory/leak samples (default 1000, quick 100)")
	flag.IntVar(&o.watchRounds, "watch-rounds", 0, "rounds of the watcher start-up test (default 3, quick 1)")
	flag.Float64Var(&o.treeScale, "tree-scale", 0, "size of the watcher's tree relative to 50,000 files (default 1)")
	flag.DurationVar(&o.idle, "idle", 0, "idle-CPU window of the watcher test (default 5s, quick 2s)")
	flag.Parse()
	if *floor {
		return runFloor(flag.Args())
	}
	if *canned {
		return runCanned()
	}
	if o.mcpflow == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench -mcpflow PATH [-quick] [-rounds N] [-md FILE]")
		flag.PrintDefaults()
		return 2
	}
	def := func(v *int, full, quick int) {
		if *v <= 0 {
			*v = full
			if o.quick {
				*v = quick
			}
		}
	}
	def(&o.rounds, 5000, 300)
	def(&o.bigRounds, 12, 3)
	def(&o.listRounds, 300, 20)
	def(&o.restartRounds, 200, 15)
	def(&o.saveRounds, 30, 5)
	def(&o.leakRestarts, 1000, 100)
	def(&o.watchRounds, 3, 1)
	if o.treeScale <= 0 {
		o.treeScale = 1
	}
	if o.idle <= 0 {
		o.idle = 5 * time.Second
		if o.quick {
			o.idle = 2 * time.Second
		}
	}
	want := map[string]bool{}
	for _, k := range strings.Split(o.only, ",") {
		if k = strings.TrimSpace(k); k != "" {
			if !strings.Contains(","+sectionKeys()+",", ","+k+",") {
				fmt.Fprintf(os.Stderr, "bench: unknown section %q (have %s)\n", k, sectionKeys())
				return 2
			}
			want[k] = true
		}
	}

	if err := setSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: cannot become a child subreaper (orphans will not be found):", err)
	}
	b := &bench{opt: o}
	code := b.main(want)
	return code
}

func sectionKeys() string {
	var k []string
	for _, s := range sections {
		k = append(k, s.key)
	}
	return strings.Join(k, ",")
}

func (b *bench) main(want map[string]bool) int {
	var err error
	if b.mcpflow, err = filepath.Abs(b.opt.mcpflow); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if fi, err := os.Stat(b.mcpflow); err != nil || fi.IsDir() {
		fmt.Fprintf(os.Stderr, "bench: -mcpflow %s: not a file (run make build first)\n", b.opt.mcpflow)
		return 2
	}
	if b.self, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if b.tmp, err = os.MkdirTemp("", "mcpflow-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	cleanup := func() {
		b.killAll()
		os.RemoveAll(b.tmp)
	}
	defer cleanup()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "\nbench: %v: cleaning up\n", s)
		cleanup()
		sweepOrphans()
		os.Exit(130)
	}()

	fmt.Println("mcpflow benchmark")
	if err := b.buildFixtures(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	head := b.header()
	for _, l := range head {
		fmt.Println("  " + l)
	}

	var md bytes.Buffer
	fmt.Fprintf(&md, "## mcpflow benchmark, %s\n\n", time.Now().Format("2006-01-02 15:04 MST"))
	for _, l := range head {
		fmt.Fprintf(&md, "- %s\n", l)
	}
	failed := false
	var misses []string
	start := time.Now()
	for _, s := range sections {
		if len(want) > 0 && !want[s.key] {
			continue
		}
		t := time.Now()
		res, err := s.run(b)
		if res == nil {
			res = &result{}
		}
		if err != nil {
			failed = true
			res.note("FAILED: %v", err)
		}
		printTable(os.Stdout, s.title, res)
		fmt.Printf("   (%s took %.1fs; load average after it: %s)\n", s.key, time.Since(t).Seconds(), loadAvg())
		res.note("took %.0fs; load average (1, 5, 15 min) after it: %s", time.Since(t).Seconds(), loadAvg())
		writeMarkdown(&md, s.title, res)
		for _, r := range res.rows {
			if strings.HasPrefix(r.verdict, "✗") {
				misses = append(misses, fmt.Sprintf("%s: %s (median %s, p99 %s, ratio %s; goal %s)", s.key, r.name, r.med, r.p99, or(r.ratio, "–"), r.goal))
			}
		}
		b.killAll()
	}
	if leaked := sweepOrphans(); len(leaked) > 0 {
		failed = true
		fmt.Println("\n✗ processes survived their parent (killed now):")
		fmt.Fprintln(&md, "\n**Processes survived their parent:**")
		for _, l := range leaked {
			fmt.Println("   " + l)
			fmt.Fprintln(&md, "- "+l)
		}
	}
	fmt.Printf("\nGoals missed: %d\n", len(misses))
	for _, m := range misses {
		fmt.Println("   ✗ " + m)
	}
	fmt.Printf("total %.1fs\n", time.Since(start).Seconds())
	if err := os.WriteFile(b.opt.md, md.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench: write markdown:", err)
		failed = true
	} else {
		fmt.Printf("markdown rows written to %s\n", b.opt.md)
	}
	if failed {
		return 1
	}
	return 0
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Where the fixtures live: the first that exists is built. The test kit's
// one fixture plays both parts; the others are where they were before it.
var (
	relayFixtureDirs = []string{"internal/testkit/testdata/fixture", "relay/testdata/fixture"}
	muxFixtureDirs   = []string{"internal/testkit/testdata/fixture", "mux/testdata/fixture"}
)

// buildFixtures builds the relay's and the mux's fixture servers into the
// work dir.
func (b *bench) buildFixtures() error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("run the benchmark from inside the mcpflow module")
	}
	b.root = filepath.Dir(gomod)
	if b.fixture, err = b.buildFirst("fixture", relayFixtureDirs); err != nil {
		return err
	}
	b.muxFixture, err = b.buildFirst("muxfixture", muxFixtureDirs)
	return err
}

func (b *bench) buildFirst(name string, dirs []string) (string, error) {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(b.root, d, "main.go")); err != nil {
			continue
		}
		if b.built == nil {
			b.built = map[string]string{}
		}
		if bin, ok := b.built[d]; ok {
			return bin, nil
		}
		bin := filepath.Join(b.tmp, name)
		cmd := exec.Command("go", "build", "-o", bin, "./"+d)
		cmd.Dir = b.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build %s: %v\n%s", d, err, out)
		}
		b.built[d] = bin
		b.fixtureDirs = append(b.fixtureDirs, d)
		return bin, nil
	}
	return "", fmt.Errorf("no fixture server found (looked in %s)", strings.Join(dirs, ", "))
}

// header describes the machine and the binaries.
func (b *bench) header() []string {
	h := machine()
	h = append(h, "Go: "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	v, _ := exec.Command(b.mcpflow, "version").Output()
	h = append(h, "mcpflow: "+strings.TrimSpace(string(v)))
	h = append(h, "fixture: "+strings.Join(b.fixtureDirs, ", "))
	args := append([]string{"go run ./bench"}, os.Args[1:]...)
	h = append(h, "command: `"+strings.Join(args, " ")+"`")
	h = append(h, fmt.Sprintf("counts: per-call %d rounds per era, large %d canned + %d fixture rounds, tools/list %d rounds, restart %d rounds, save %d rounds, leak %d restarts, watcher %d rounds (tree ×%g), idle window %s",
		b.opt.rounds, b.opt.bigRounds, fixtureRounds(b.opt.bigRounds), b.opt.listRounds, b.opt.restartRounds, b.opt.saveRounds, b.opt.leakRestarts, b.opt.watchRounds, b.opt.treeScale, b.opt.idle))
	h = append(h, "load average at start: "+loadAvg())
	return h
}

// loadAvg is the machine's load average over 1, 5 and 15 minutes.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// tomlStr quotes s as a TOML basic string.
func tomlStr(s string) string { return strconv.Quote(s) }

// writeFile writes a file, creating its directory.
func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// closeAll closes peers (stdin first, as a client leaves) and notes any
// that did not exit by themselves or exited badly.
func closeAll(res *result, ps ...*peer) {
	for _, p := range ps {
		if p == nil {
			continue
		}
		exit, killed := p.close(10 * time.Second)
		switch {
		case killed:
			res.note("%s did not exit within 10s of stdin closing; killed", p.name)
		case exit != "exit status 0" && !strings.Contains(exit, "signal: killed"):
			res.note("%s exited with %q after stdin closed", p.name, exit)
		}
	}
}
