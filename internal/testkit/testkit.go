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

// Main runs setup (where MustBuild may build what every test of the
// package needs), then the tests; it removes the binaries Build made, and
// fails the run if a process started by a test (one that inherited RunKey)
// is still alive a few seconds after the last test ended.
func Main(m *testing.M, setup ...func()) {
	run := RunKey + "=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	k, v, _ := strings.Cut(run, "=")
	// The one environment change of the kit: a test binary's own.
	if err := os.Setenv(k, v); err != nil {
		fmt.Fprintln(os.Stderr, "testkit:", err)
		os.Exit(1)
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
