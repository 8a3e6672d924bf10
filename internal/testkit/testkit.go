// Package testkit is what mcpflow's tests share: binaries built once per
// test binary (Build, MCPFlow, Fixture, ExampleCLI), the two protocol eras
// (Eras, EachEra), a Go SDK client connected to a command or to a pair of
// pipes (Connect, Pipes, Text), and processes: Alive (a zombie is dead), a
// tag in the environment that every descendant inherits (Tag), and the one
// check that nothing a test started is left (Procs, NoLeftovers).
//
// Only _test.go files import it (internal/archtest says so). A package
// that builds binaries calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { testkit.Main(m) }
//
// Main also tags every process the test binary starts (its environment
// holds RunKey=...), and after the last test it fails the run if one of
// them is still alive, and kills it.
package testkit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RunKey is the environment variable Main sets to a value of its own in
// the test binary's environment, so that every process the tests start
// inherits it (unless a test gives a process an environment built from
// nothing).
const RunKey = "MCPFLOW_TESTKIT_RUN"

// BuildFlags are added to GOFLAGS in the test binary's environment (Main):
// release-like (-trimpath) and quick to link (no DWARF).
const BuildFlags = "-trimpath -ldflags=-w"

// Main sets the test binary's environment for the Go builds the tests
// start (Build's, and those mcpflow runs for them) to the configuration of
// the release build (CGO_ENABLED=0, -trimpath: packaging/dist builds so),
// so that the compile cache holds the standard library and the modules
// once for all of them, and links them without DWARF (-ldflags=-w), which
// makes a link faster. Builds with the race detector keep the
// environment go test had (CGO_ENABLED=1, GOFLAGS as they were), so that
// they share the race-instrumented packages with the test binaries.
// It runs setup (where MustBuild may build what every test of the
// package needs), then the tests; it removes the binaries Build made, and
// fails the run if a process started by a test (one that inherited RunKey)
// is still alive a few seconds after the last test ended.
func Main(m *testing.M, setup ...func()) {
	run := RunKey + "=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	k, v, _ := strings.Cut(run, "=")
	builds.goflags = os.Getenv("GOFLAGS")
	// The environment changes of the kit, inherited by every process a
	// test starts: the run's key, and no second of sleep at the exit of a
	// binary built with -race (the race runtime's default), which would
	// add one to every mcpflow exit a test waits for.
	env := [][2]string{{k, v}}
	if _, set := os.LookupEnv("GORACE"); !set {
		env = append(env, [2]string{"GORACE", "atexit_sleep_ms=0"})
	}
	for _, e := range env {
		if err := os.Setenv(e[0], e[1]); err != nil {
			fmt.Fprintln(os.Stderr, "testkit:", err)
			os.Exit(1)
		}
	}
	builds.start()
	for _, f := range setup {
		f()
	}
	code := m.Run()
	builds.remove()
	if left := waitGone(Procs{Tag: run}, 10*time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "testkit: processes started by the tests outlived them (killed now):\n")
		for _, p := range left {
			fmt.Fprintf(os.Stderr, "\t%s\n", p)
		}
		Procs{Tag: run}.Kill()
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
