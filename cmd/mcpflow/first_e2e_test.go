//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The first-minute tests run the real mcpflow binary on a project whose
// build sleeps the seconds in the file "delay", copies src.txt (the
// fixture's variant: v1, or v2 with one more tool, reverse) to variant,
// writes bin/server, and creates "built" last: a test knows whether an
// answer came before the build ended. A build killed midway leaves no
// "built". Every build appends a line to builds.log.

const firstBuildScript = `rm -f built
echo "$$" >> builds.log
sleep "$(cat delay)"
mkdir -p bin
cp src.txt variant
printf '#!/bin/sh\nexec %q -name srv -variant-file variant %s\n' > bin/server
chmod +x bin/server
touch built
`

const firstConfig = `[build]
command = "sh build.sh"
[run]
command = ["./bin/server"]
stop_timeout = "1s"
[watch]
exclude = ["variant", "built", "delay", "builds.log", "bin/**"]
debounce = "50ms"
[log]
file = "mcpflow.log"
`

// firstProject writes a cold project (no .mcpflow) whose build takes
// delay seconds; serverFlags are given to the fixture server.
func firstProject(t *testing.T, delay int, serverFlags string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"mcpflow.toml": firstConfig,
		"build.sh":     fmt.Sprintf(firstBuildScript, fixtureBin, serverFlags),
		"src.txt":      "v1",
		"delay":        fmt.Sprint(delay),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func built(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "built"))
	return err == nil
}

// TestFirstStartWaitsAsLongAsTheClient: with no record, the client's
// first messages wait for the first build as long as the client itself
// waits for a server (Claude Code 25 s, Codex 8 s, by clientInfo's name):
// a 2 s and a 6 s build are invisible, the first answers are the
// server's. A client mcpflow knows nothing of waits 4 s: past it mcpflow
// answers alone, in the client's era (server/discover is answered, never
// declined), and sends list_changed once the server is up.
func TestFirstStartWaitsAsLongAsTheClient(t *testing.T) {
	cases := []struct {
		client string
		delay  int
		real   bool // the first answers are the server's
	}{
		{"claude-code", 2, true},
		{"claude-code", 6, true},
		{"codex-mcp-client", 2, true},
		{"codex-mcp-client", 6, true},
		{"some-client", 6, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%ds", c.client, c.delay), func(t *testing.T) {
			t.Parallel()
			testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
				t.Parallel()
				dir := firstProject(t, c.delay, "")
				h := startE2EAs(t, c.client, mcpflowBin, dir, era.Version, nil, "watch")
				init := h.cs.InitializeResult()
				if init.ProtocolVersion != era.Protocol {
					t.Errorf("the session speaks %s, want %s (the client's era)", init.ProtocolVersion, era.Protocol)
				}
				tools := h.tools()
				if c.real {
					if init.ServerInfo.Name != "srv" || !slices.Contains(tools, "echo") {
						t.Fatalf("first answers not the server's: serverInfo %+v, tools %v\nlog:\n%s", init.ServerInfo, tools, readLog(dir))
					}
					return
				}
				if built(dir) || slices.Contains(tools, "echo") {
					t.Fatalf("answered by the server (tools %v) though the client waits only 4 s", tools)
				}
				h.waitListChanged()
				h.waitTools("echo")
				if text, _ := h.call("echo", map[string]any{"text": "hi"}); text != "srv:hi" {
					t.Fatalf("echo after the build: %q", text)
				}
			})
		})
	}
}

// TestFirstStartFromTheRecord: after a good start, the next start with a
// changed source and a build longer than the client's wait (4 s) answers
// the handshake and the lists from the record once that wait passed,
// before the build ends (the server's name, its tools), a call
// made at once is served by the new build, then list_changed brings the
// new tool. A failed build writes no record.
func TestFirstStartFromTheRecord(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		dir := firstProject(t, 0, "")
		h := startE2E(t, dir, era.Version, "watch")
		h.waitTools("echo")
		stopE2E(t, h)
		if _, err := os.Stat(filepath.Join(dir, ".mcpflow", "last-start.json")); err != nil {
			t.Fatalf("no record after a good start: %v", err)
		}

		os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
		os.WriteFile(filepath.Join(dir, "delay"), []byte("8"), 0o644)
		os.Remove(filepath.Join(dir, "built"))
		start := time.Now()
		h = startE2E(t, dir, era.Version, "watch")
		tools := h.tools()
		answered := time.Since(start)
		init := h.cs.InitializeResult()
		if built(dir) {
			t.Fatalf("the handshake and tools/list waited for the build (%v)", answered)
		}
		if init.ServerInfo.Name != "srv" || init.ProtocolVersion != era.Protocol || !slices.Contains(tools, "echo") || !slices.Contains(tools, "recompile") {
			t.Fatalf("not the recorded answers: serverInfo %+v, protocol %s, tools %v", init.ServerInfo, init.ProtocolVersion, tools)
		}
		t.Logf("handshake and tools/list answered from the record in %v", answered)
		if text, isErr := h.call("reverse", map[string]any{"text": "abc"}); isErr || text != "cba" {
			t.Fatalf("a call made at once: %q (isError %v)", text, isErr)
		}
		if !built(dir) {
			t.Fatal("the call was answered before the build ended")
		}
		h.waitListChanged()
		if tools := h.tools(); !slices.Contains(tools, "reverse") {
			t.Fatalf("tools after list_changed: %v", tools)
		}
		stopE2E(t, h)

		// A build that fails: the record stays the last good start's.
		rec, _ := os.ReadFile(filepath.Join(dir, ".mcpflow", "last-start.json"))
		os.WriteFile(filepath.Join(dir, "build.sh"), []byte("exit 1\n"), 0o644)
		h = startE2E(t, dir, era.Version, "watch")
		if text, isErr := h.call("reverse", map[string]any{"text": "abc"}); !isErr {
			t.Fatalf("a call while the build fails: %q", text)
		}
		stopE2E(t, h)
		if now, _ := os.ReadFile(filepath.Join(dir, ".mcpflow", "last-start.json")); string(now) != string(rec) {
			t.Fatalf("a failed build changed the record")
		}
	})
}

// TestFirstStartFromTheRecordTypeScript is TestFirstStartFromTheRecord
// with the TypeScript SDK's client (a name mcpflow does not know: 4 s).
func TestFirstStartFromTheRecordTypeScript(t *testing.T) {
	t.Parallel()
	peers := nodePeers(t)
	dir := firstProject(t, 0, "")
	h := startE2E(t, dir, "", "watch")
	h.waitTools("echo")
	stopE2E(t, h)
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
	os.WriteFile(filepath.Join(dir, "delay"), []byte("8"), 0o644)
	os.Remove(filepath.Join(dir, "built"))
	tag := testkit.Tag(t)
	cmd := testkit.Command(tag, nil, "node", "first.mjs", mcpflowBin, dir, "ts-client")
	cmd.Dir = peers
	stderr := &testkit.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		ls, _ := exec.Command("ls", "-la", dir, filepath.Join(dir, ".mcpflow")).CombinedOutput()
		t.Fatalf("TypeScript client: %v\n%s%s\nlog:\n%s\n%s", err, out, stderr, readLog(dir), ls)
	}
	var seen struct {
		Server                   string
		Tools, ToolsAfter        []string
		BuiltAtList, BuiltAtCall bool
		ListMs                   int
		Reverse                  string
	}
	if err := json.Unmarshal(out, &seen); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if seen.Server != "srv" || !slices.Contains(seen.Tools, "echo") || seen.BuiltAtList {
		t.Fatalf("not answered from the record before the build ended: %+v", seen)
	}
	if seen.Reverse != "cba" || !seen.BuiltAtCall || !slices.Contains(seen.ToolsAfter, "reverse") {
		t.Fatalf("the call and the list after the build: %+v", seen)
	}
	t.Logf("connected and listed from the record in %d ms", seen.ListMs)
	testkit.NoLeftovers(t, testkit.Procs{Tag: tag})
}

// TestFirstStartBridgesALegacyServer: a modern client whose
// server/discover mcpflow answered during the first build, and a server
// that speaks only the legacy era: the session goes on through the era
// bridge, with the server's tools.
func TestFirstStartBridgesALegacyServer(t *testing.T) {
	t.Parallel()
	dir := firstProject(t, 6, "-no-discover")
	h := startE2EAs(t, "some-client", mcpflowBin, dir, testkit.Modern.Version, nil, "watch")
	if v := h.cs.InitializeResult().ProtocolVersion; v != testkit.Modern.Protocol {
		t.Fatalf("the session speaks %s", v)
	}
	h.waitTools("echo")
	if text, isErr := h.call("echo", map[string]any{"text": "hi"}); isErr || text != "srv:hi" {
		t.Fatalf("echo through the bridge: %q", text)
	}
	if !strings.Contains(readLog(dir), "handed to the era bridge") {
		t.Fatalf("the log does not say the bridge took over:\n%s", readLog(dir))
	}
}

// TestFirstStartShortCheck: a status check (connect, list, disconnect) of
// a client that waits 8 s gets the server's tools from a 2 s build, which
// is kept: the next start builds nothing. A client gone after a second
// (the build killed under it) leaves nothing a later start takes for a
// good build. mcpflow exits within 5 s of either client leaving. (A
// client whose input ended is a one-shot: its build runs to its end,
// TestOneShotPipeColdBuild; a client gone is one stopped with SIGTERM.)
func TestFirstStartShortCheck(t *testing.T) {
	t.Parallel()
	dir := firstProject(t, 2, "")
	h := startE2EAs(t, "codex-mcp-client", mcpflowBin, dir, "", nil, "watch")
	if tools := h.tools(); !slices.Contains(tools, "echo") {
		t.Fatalf("the check listed %v", tools)
	}
	closeAndWait(t, h)
	if !built(dir) || countBuilds(t, dir) != 1 {
		t.Fatalf("the check's build: built %v, %d builds", built(dir), countBuilds(t, dir))
	}
	h = startE2E(t, dir, "", "watch")
	h.waitTools("echo")
	if n := countBuilds(t, dir); n != 1 {
		t.Fatalf("the start after the check built again (%d builds)", n)
	}
	closeAndWait(t, h)

	// A changed source, a 6 s build, a client gone (mcpflow stopped)
	// once the build began, after its initialize.
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
	os.WriteFile(filepath.Join(dir, "delay"), []byte("6"), 0o644)
	os.Remove(filepath.Join(dir, "built"))
	builds := countBuilds(t, dir)
	cmd := testkit.Command(testkit.Tag(t), nil, mcpflowBin, "watch")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"codex-mcp-client","version":"1"}}}`)
	// The client leaves once the build has begun (it logs itself first).
	testkit.Eventually(t, 30*time.Second, "the build to begin", func() bool { return countBuilds(t, dir) > builds })
	cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("mcpflow still running a minute after the client left")
	}
	if built(dir) {
		t.Fatal("the build was not interrupted; the test proves nothing")
	}
	os.WriteFile(filepath.Join(dir, "delay"), []byte("0"), 0o644)
	before := countBuilds(t, dir)
	h = startE2E(t, dir, "", "watch")
	h.waitTools("reverse")
	if n := countBuilds(t, dir); n != before+1 {
		t.Fatalf("after an interrupted build the next start did not build (%d builds, %d before)", n, before)
	}
}

// closeAndWait closes the client's session (mcpflow's stdin) and waits
// at most 5 s for mcpflow to exit.
func closeAndWait(t *testing.T, h *e2e) {
	t.Helper()
	h.cs.Close()
	select {
	case err := <-h.exited:
		h.exited <- err
		if err != nil {
			t.Fatalf("mcpflow: %v\n%s", err, h.stderr.String())
		}
	case <-time.After(5 * time.Second):
		h.cmd.Process.Signal(syscall.SIGKILL)
		t.Fatalf("mcpflow still running 5 s after the client left\n%s", h.stderr.String())
	}
}
