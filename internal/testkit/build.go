package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The packages the tests build, relative to the module's root.
const (
	MCPFlowPkg    = "./cmd/mcpflow"
	FixturePkg    = "./internal/testkit/testdata/fixture"
	ExampleCLIPkg = "./examples/cli"
)

// MCPFlow is the mcpflow binary, built with the race detector.
func MCPFlow(tb testing.TB) string {
	tb.Helper()
	return Build(tb, MCPFlowPkg, "-race")
}

// Fixture is the fixture server (testdata/fixture: its doc comment lists
// its tools and options); flags are go build's, as for Build. Fixture(tb,
// FixtureV2) has the v2 tools when no -variant-file says otherwise.
func Fixture(tb testing.TB, flags ...string) string {
	tb.Helper()
	return Build(tb, FixturePkg, flags...)
}

// FixtureV2 is the go build flag that makes v2 the fixture's variant when
// no -variant-file gives one.
const FixtureV2 = "-ldflags=-X main.variant=v2"

// ExampleCLI is examples/cli, the CLI the [cli] tests serve.
func ExampleCLI(tb testing.TB) string {
	tb.Helper()
	return Build(tb, ExampleCLIPkg)
}

// Build returns the path of the binary of pkg (a package path relative to
// the module's root, "./cmd/mcpflow") built with the go build flags. Each
// pkg and flags is built once per test binary, by the first test that
// asks; the others wait for it. Go's build cache shares the compiled
// packages across test binaries. The binaries go when Main returns.
func Build(tb testing.TB, pkg string, flags ...string) string {
	tb.Helper()
	b, err := builds.get(pkg, flags)
	if err == nil {
		b.once.Do(func() { b.path, b.err = builds.build(b.n, pkg, flags) })
		err = b.err
	}
	if err != nil {
		tb.Fatalf("testkit.Build %s %s: %v", pkg, strings.Join(flags, " "), err)
	}
	return b.path
}

// MustBuild is Build for the setup of Main: a failure ends the test
// binary.
func MustBuild(pkg string, flags ...string) string {
	b, err := builds.get(pkg, flags)
	if err == nil {
		b.once.Do(func() { b.path, b.err = builds.build(b.n, pkg, flags) })
		err = b.err
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testkit.MustBuild %s %s: %v\n", pkg, strings.Join(flags, " "), err)
		builds.remove()
		os.Exit(1)
	}
	return b.path
}

// Root is the module's root folder.
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := moduleRoot()
	if err != nil {
		tb.Fatalf("testkit.Root: %v", err)
	}
	return dir
}

var root struct {
	once sync.Once
	dir  string
	err  error
}

func moduleRoot() (string, error) {
	root.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		mod := strings.TrimSpace(string(out))
		switch {
		case err != nil:
			root.err = fmt.Errorf("go env GOMOD: %v", err)
		case mod == "" || mod == os.DevNull:
			root.err = fmt.Errorf("not in a module")
		default:
			root.dir = filepath.Dir(mod)
		}
	})
	return root.dir, root.err
}

type buildSet struct {
	mu  sync.Mutex
	dir string // where the binaries go; "" outside Main
	// goflags is GOFLAGS as go test set it, before Main added BuildFlags.
	goflags string
	byKey   map[string]*binary
}

type binary struct {
	n    int // for the file's name
	once sync.Once
	path string
	err  error
}

var builds buildSet

func (s *buildSet) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, err := os.MkdirTemp("", "mcpflow-testkit-")
	if err != nil {
		panic(err)
	}
	s.dir = dir
	s.byKey = map[string]*binary{}
}

func (s *buildSet) remove() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func (s *buildSet) get(pkg string, flags []string) (*binary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		return nil, fmt.Errorf("the package's TestMain must call testkit.Main(m)")
	}
	key := pkg + "\x00" + strings.Join(flags, "\x00")
	b := s.byKey[key]
	if b == nil {
		b = &binary{n: len(s.byKey)}
		s.byKey[key] = b
	}
	return b, nil
}

func (s *buildSet) build(n int, pkg string, flags []string) (string, error) {
	if dir := os.Getenv(PrebuiltEnv); dir != "" {
		return prebuilt(dir, pkg, flags)
	}
	dir, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(s.dir, strconv.Itoa(n), filepath.Base(pkg))
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if slices.Contains(flags, "-race") {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOFLAGS="+s.goflags)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, b)
	}
	return out, nil
}

// TSCDeps returns the folder holding the TypeScript compiler and SDK that
// the TypeScript tests build with (internal/project/testdata/tsc), or
// skips the test when they are not installed (make node-deps installs
// them); under CI (the CI variable set) a missing install fails.
func TSCDeps(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(Root(tb), "internal", "project", "testdata", "tsc")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("tsc not installed in " + dir + ": make node-deps")
		}
		tb.Skip("tsc not installed in " + dir + ": run make node-deps")
	}
	return dir
}

// WriteFiles writes files (slash paths relative to dir → contents) under
// dir, creating folders.
func WriteFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// ReadFile is the contents of path; the test fails when it cannot be read.
func ReadFile(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// PrebuiltEnv names a folder of binaries built beforehand, which Build
// returns instead of building: make test-windows sets it, as a Windows
// test binary under Wine has no Go toolchain.
const PrebuiltEnv = "MCPFLOW_PREBUILT"

// prebuilt is pkg's binary in dir: NAME.exe (NAME-v2.exe with FixtureV2),
// built without the race detector.
func prebuilt(dir, pkg string, flags []string) (string, error) {
	name := filepath.Base(pkg)
	for _, f := range flags {
		switch f {
		case "-race":
		case FixtureV2:
			name += "-v2"
		default:
			return "", fmt.Errorf("%s holds no build with %s", dir, f)
		}
	}
	p, err := filepath.Abs(filepath.Join(dir, name+".exe"))
	if err == nil {
		_, err = os.Stat(p)
	}
	return p, err
}

// UnixOnly skips the test on Windows, saying why it is Unix's (it runs sh,
// cat, or compares Unix paths).
func UnixOnly(tb testing.TB, why string) {
	tb.Helper()
	if runtime.GOOS == "windows" {
		tb.Skip("Unix only: " + why)
	}
}

// SkipUnderWine skips a test that fails only because of Wine (tools/wine's
// README lists Wine's gaps), saying which gap.
func SkipUnderWine(tb testing.TB, gap string) {
	tb.Helper()
	if UnderWine() {
		tb.Skip("Wine: " + gap)
	}
}
