//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The HTTP child: a stdio client (the Go SDK's) → mcpflow → a server that
// serves Streamable HTTP ([run] url), the kit's fixture with -http, or a
// TypeScript SDK server.

// httpProject is a project whose build copies src.txt to the fixture's
// variant file ("v2" adds reverse), served over HTTP at url (command's
// address is url's host and port); more is added to [run].
const httpProject = `[build]
command = "cp src.txt variant"
[run]
command = [%q, "-variant-file", "variant", "-http", %q%s]
url = %q
stop_timeout = "1s"
[relay]
handshake_timeout = %q
[watch]
paths = ["."]
include = ["src.txt"]
debounce = "50ms"
[log]
level = "debug"
`

// httpDir writes an HTTP child project: port is "{port}" or a number.
func httpDir(t *testing.T, port string, handshake string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	var more string
	for _, a := range args {
		more += fmt.Sprintf(", %q", a)
	}
	addr := "127.0.0.1:" + port
	toml := fmt.Sprintf(httpProject, fixtureBin, addr, more, "http://"+addr+"/mcp", handshake)
	os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(toml), 0o644)
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1"), 0o644)
	return dir
}

// eraArgs are the fixture's arguments for a client of era: the SDK's
// handler speaks 2026-07-28 only without sessions.
func eraArgs(era testkit.Era) []string {
	if era == testkit.Modern {
		return []string{"-http-stateless"}
	}
	return nil
}

// noBridge fails the test if the session went to the era bridge: the
// client's era is the child's.
func noBridge(t *testing.T, h *e2e) {
	t.Helper()
	if strings.Contains(h.stderr.String(), "era bridge") {
		t.Error("the session went to the era bridge")
	}
}

// freeTCPPort is a port that was free a moment ago.
func freeTCPPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestHTTPChildReload: tools, a call, an edit gives list_changed and the
// new tool is callable in the same session, in both eras, with a fixed
// port and with {port}.
func TestHTTPChildReload(t *testing.T) {
	t.Parallel()
	for _, port := range []string{"{port}", "fixed"} {
		t.Run(strings.Trim(port, "{}"), func(t *testing.T) {
			t.Parallel()
			testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
				t.Parallel()
				p := port
				if p == "fixed" {
					p = freeTCPPort(t)
				}
				dir := httpDir(t, p, "20s", eraArgs(era)...)
				h := startE2E(t, dir, era.Version, "watch")
				h.waitTools("echo")
				if got, isErr := h.call("echo", map[string]any{"text": "hello"}); isErr || got != "hello" {
					t.Fatalf("echo: %q %v", got, isErr)
				}
				pid := h.call1("state")
				drain(h.listChanged)
				os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
				h.waitListChanged()
				h.waitTools("reverse")
				if got, isErr := h.call("reverse", map[string]any{"text": "abc"}); isErr || got != "cba" {
					t.Fatalf("reverse: %q %v", got, isErr)
				}
				if again := h.call1("state"); again == pid {
					t.Fatalf("the same server after the edit: %s", again)
				}
				noBridge(t, h)
				// The debug line names the hop and the transport; the
				// child's stdout is in the log.
				for _, re := range []string{`from server .*via=http`, `server: fixture serving http://127\.0\.0\.1:\d+/mcp`} {
					if !regexp.MustCompile(re).MatchString(h.stderr.String()) {
						t.Errorf("the log has no %s", re)
					}
				}
			})
		})
	}
}

// try calls a tool and returns its text, "" on any error.
func (h *e2e) try(name string, args map[string]any) string {
	res, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		return ""
	}
	return testkit.Text(res)
}

// call1 calls a tool without arguments and returns its text.
func (h *e2e) call1(name string) string {
	h.t.Helper()
	got, isErr := h.call(name, nil)
	if isErr {
		h.t.Fatalf("%s: %s", name, got)
	}
	return got
}

// TestHTTPChildServerMessages: what the server sends outside a call's
// answer reaches the client: its own list_changed on the standalone GET
// stream (legacy), progress and logs during a call, a sampling request.
func TestHTTPChildServerMessages(t *testing.T) {
	t.Parallel()
	dir := httpDir(t, "{port}", "20s")
	logs := make(chan string, 16)
	copts := &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "yes"}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			logs <- fmt.Sprint(req.Params.Data)
		},
	}
	h := startE2EWith(t, dir, testkit.Legacy.Version, copts, "watch")
	h.waitTools("echo")
	if err := h.cs.SetLoggingLevel(h.ctx(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.call("legacy_sample", map[string]any{"text": "ok?"}); got != "model said: yes" {
		t.Fatalf("legacy_sample: %q", got)
	}
	h.call("log", map[string]any{"text": "a log line"})
	select {
	case l := <-logs:
		if l != "a log line" {
			t.Fatalf("log: %q", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no log message")
	}
	drain(h.listChanged)
	// grow adds tools after its answer's stream may have ended: their
	// list_changed come on the standalone stream or on the call's.
	if got, _ := h.call("grow", map[string]any{"n": 2}); got != "grown" {
		t.Fatalf("grow: %q", got)
	}
	h.waitListChanged()
	h.waitTools("dyn_1")
}

// TestHTTPChildCrash: a crash is reported and the server restarted; the
// call that crashed it gets the crash report, the next call works.
func TestHTTPChildCrash(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		dir := httpDir(t, "{port}", "20s", eraArgs(era)...)
		h := startE2E(t, dir, era.Version, "watch")
		h.waitTools("echo")
		noBridge(t, h)
		_, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: "exit", Arguments: map[string]any{"code": 7}})
		if err == nil || !strings.Contains(err.Error(), "crashed (exit status 7)") {
			t.Fatalf("exit: %v", err)
		}
		testkit.Eventually(t, 30*time.Second, "the server back", func() bool {
			return h.try("echo", map[string]any{"text": "again"}) == "again"
		})
	})
}

// TestHTTPChildNeverListens: a server that never answers at its URL
// fails its start within relay.handshake_timeout, with a report that
// names the command and the URL and shows its stderr.
func TestHTTPChildNeverListens(t *testing.T) {
	t.Parallel()
	dir := httpDir(t, "{port}", "2s", "-listen-after-ms", "600000")
	h := startE2E(t, dir, testkit.Legacy.Version, "watch")
	text, isErr := h.call("echo", map[string]any{"text": "x"})
	if !isErr {
		t.Fatalf("echo answered: %q", text)
	}
	for _, want := range []string{"did not answer at http://127.0.0.1:", fixtureBin, "not listening for 600000 ms"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
}

// TestHTTPChildSIGTERM: SIGTERM to mcpflow leaves no process of the
// HTTP child's.
func TestHTTPChildSIGTERM(t *testing.T) {
	t.Parallel()
	dir := httpDir(t, "{port}", "20s")
	h := startE2E(t, dir, "", "watch")
	h.waitTools("echo")
	pids := h.serverPIDs()
	if len(pids) == 0 {
		t.Fatal("no server pid in the log")
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.exited:
		if err != nil {
			t.Fatalf("mcpflow exit: %v", err)
		}
		h.exited <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("mcpflow did not exit")
	}
	testkit.NoLeftovers(t, testkit.Procs{Groups: pids, Tag: h.tag})
}

// TestHTTPChildTypeScriptServer: a TypeScript SDK server that serves
// Streamable HTTP (testdata/node/httpserver.mjs, stateful) behind
// mcpflow, with the Go SDK client in both eras (the modern client's
// session crosses the era bridge: the server speaks the legacy versions).
func TestHTTPChildTypeScriptServer(t *testing.T) {
	t.Parallel()
	tsHTTPServerScript(t)
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		dir := tsHTTPProject(t, "[log]\nlevel = \"debug\"\n")
		h := startE2E(t, dir, era.Version, "watch")
		h.waitTools("hello")
		if got, isErr := h.call("hello", map[string]any{"name": "go"}); isErr || got != "hello, go" {
			t.Fatalf("hello: %q %v", got, isErr)
		}
		drain(h.listChanged)
		os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
		h.waitListChanged()
		h.waitTools("reverse")
		if got, isErr := h.call("reverse", map[string]any{"text": "abc"}); isErr || got != "cba" {
			t.Fatalf("reverse: %q %v", got, isErr)
		}
		_, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: "exit", Arguments: map[string]any{"code": 3}})
		if err == nil || !strings.Contains(err.Error(), "exit status 3") {
			t.Fatalf("exit: %v", err)
		}
		testkit.Eventually(t, 30*time.Second, "the server back", func() bool {
			return h.try("hello", map[string]any{"name": "again"}) == "hello, again"
		})
		if !strings.Contains(h.stderr.String(), "ts-http-server v2 serving http://127.0.0.1:") {
			t.Error("the server's stdout is not in the log")
		}
	})
}

// TestHTTPChildInMux: [servers.NAME.run] url: a mux of two HTTP children
// (a fixed port and {port}) and a stdio one; an edit reloads one HTTP
// child, whose new tool is callable, and SIGTERM leaves nothing.
func TestHTTPChildInMux(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freeTCPPort(t)
	server := func(name, addr, url string) string {
		return fmt.Sprintf(`[servers.%[1]s.build]
command = "cp %[1]s.txt %[1]s.variant"
[servers.%[1]s.run]
command = [%[2]q, "-name", %[1]q, "-variant-file", "%[1]s.variant", "-http", %[3]q]
url = %[4]q
[servers.%[1]s.watch]
include = ["%[1]s.txt"]
debounce = "50ms"
`, name, fixtureBin, addr, url)
	}
	toml := server("a", "127.0.0.1:"+port, "http://127.0.0.1:"+port+"/mcp") +
		server("b", "127.0.0.1:{port}", "http://127.0.0.1:{port}/mcp") +
		fmt.Sprintf("[servers.c.run]\ncommand = [%q, \"-name\", \"c\"]\n", fixtureBin)
	os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(toml), 0o644)
	for _, n := range []string{"a", "b"} {
		os.WriteFile(filepath.Join(dir, n+".txt"), []byte("v1"), 0o644)
	}
	h := startE2E(t, dir, "", "watch")
	for _, n := range []string{"a", "b", "c"} {
		h.waitTools(n + "__echo")
		if got := h.mustCall(n+"__echo", map[string]any{"text": "x"}); got != n+":x" {
			t.Fatalf("%s__echo: %q", n, got)
		}
	}
	drain(h.listChanged)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("v2"), 0o644)
	h.waitListChanged()
	h.waitTools("b__reverse")
	if got := h.mustCall("b__reverse", map[string]any{"text": "abc"}); got != "cba" {
		t.Fatalf("b__reverse: %q", got)
	}
	var pids []int
	for _, s := range h.servers() {
		pids = append(pids, s.Pid)
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
		h.exited <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("mcpflow did not exit")
	}
	testkit.NoLeftovers(t, testkit.Procs{Groups: pids, Tag: h.tag})
}

// TestHTTPChildDrain: a call in flight when an edit lands finishes on the
// old child (drain before swap) and the call sent meanwhile is held and
// answered by the new child. With a fixed port the new child starts only
// once the old one stopped (it could not bind otherwise); with {port} it
// starts while the old one drains.
func TestHTTPChildDrain(t *testing.T) {
	t.Parallel()
	for _, port := range []string{"{port}", "fixed"} {
		t.Run(strings.Trim(port, "{}"), func(t *testing.T) {
			t.Parallel()
			p := port
			if p == "fixed" {
				p = freeTCPPort(t)
			}
			dir := httpDir(t, p, "20s")
			h := startE2E(t, dir, testkit.Legacy.Version, "watch")
			h.waitTools("echo")
			slow := make(chan string, 1)
			go func() { slow <- h.try("slow", map[string]any{"ms": 1500}) }()
			testkit.Eventually(t, 10*time.Second, "the slow call at the server", func() bool {
				return strings.Contains(h.stderr.String(), "method=tools/call")
			})
			os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
			testkit.Eventually(t, 10*time.Second, "the calls in flight draining", func() bool {
				return strings.Contains(h.stderr.String(), "letting the calls in flight finish")
			})
			if got := h.try("reverse", map[string]any{"text": "abc"}); got != "cba" {
				t.Fatalf("reverse, held during the swap: %q", got)
			}
			if got := <-slow; got != "slept 1500" {
				t.Fatalf("slow, drained: %q", got)
			}
			log := h.stderr.String()
			started := strings.Index(log, "starting the next server while the calls in flight finish")
			answered := strings.Index(log, "for=tools/call latency=1.")
			if answered < 0 {
				t.Fatal("no answer to slow in the log")
			}
			if overlap := started >= 0 && started < answered; overlap != (port == "{port}") {
				t.Errorf("the new child started while the old one drained: %v", overlap)
			}
			if strings.Contains(log, "address already in use") {
				t.Error("a child could not bind its port")
			}
		})
	}
}

// TestHTTPChildLostSession: a server that ends a client's session while
// it keeps running (its next answer is 404): the call gets the report, and
// that client gets a new session on the same server (the process serves
// other clients too: it is not stopped).
func TestHTTPChildLostSession(t *testing.T) {
	t.Parallel()
	dir := httpDir(t, "{port}", "20s")
	h := startE2E(t, dir, testkit.Legacy.Version, "watch")
	h.waitTools("echo")
	if got := h.call1("endsession"); got != "ending" {
		t.Fatalf("endsession: %q", got)
	}
	testkit.Eventually(t, 10*time.Second, "the session ended", func() bool {
		return strings.Contains(h.stderr.String(), "ending the session")
	})
	_, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err == nil || !strings.Contains(err.Error(), "HTTP session ended") {
		t.Fatalf("echo after the session ended: %v", err)
	}
	t.Logf("the call's answer: %v", err)
	testkit.Eventually(t, 30*time.Second, "the server back", func() bool {
		return h.try("echo", map[string]any{"text": "again"}) == "again"
	})
}

// TestHTTPFrontToTypeScriptHTTPChild: HTTP on both sides with a
// TypeScript SDK 1.x server written as its README shows (a session per
// initialize, 400 to anything else without a session): mcpflow's own
// first requests (its ping, the era's server/discover) must not take the
// server for a dead one; an edit brings the new tool to the HTTP client.
func TestHTTPFrontToTypeScriptHTTPChild(t *testing.T) {
	t.Parallel()
	tsHTTPServerScript(t)
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		dir := tsHTTPProject(t, "[http]\nlisten = \"127.0.0.1:0\"\n")
		h := startHTTP(t, dir, "watch")
		c := h.connect("front-client", era.Version)
		testkit.Eventually(t, 30*time.Second, "the server's tools", func() bool { return slices.Contains(c.tools(), "hello") })
		if got, isErr := c.call("hello", map[string]any{"name": "http"}); isErr || got != "hello, http" {
			t.Fatalf("hello: %q %v\n%s", got, isErr, h.stderr)
		}
		os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
		c.waitTool("reverse")
		if got, isErr := c.call("reverse", map[string]any{"text": "abc"}); isErr || got != "cba" {
			t.Fatalf("reverse: %q %v", got, isErr)
		}
		if strings.Contains(h.stderr.String(), "ERRO") {
			t.Errorf("errors in the log:\n%s", h.stderr)
		}
	})
}

// tsHTTPServerScript is testdata/node/httpserver.mjs, skipping the test (failing
// it in CI) when the TypeScript SDK peers are not installed.
func tsHTTPServerScript(t *testing.T) string {
	t.Helper()
	script, _ := filepath.Abs(filepath.Join("testdata", "node", "httpserver.mjs"))
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("TypeScript SDK peers not installed: make node-deps")
		}
		t.Skip("TypeScript SDK peers not installed: run make node-deps")
	}
	return script
}

// tsHTTPProject is a project whose server is httpserver.mjs on {port},
// built by copying src.txt (v1; v2 adds reverse) to its variant file,
// with more appended to its mcpflow.toml.
func tsHTTPProject(t *testing.T, more string) string {
	t.Helper()
	dir := t.TempDir()
	toml := fmt.Sprintf(`[build]
command = "cp src.txt variant"
[run]
command = ["node", %q, "variant"]
url = "http://127.0.0.1:{port}/mcp"
stop_timeout = "1s"
[watch]
paths = ["."]
include = ["src.txt"]
debounce = "50ms"
`, tsHTTPServerScript(t))
	if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(toml+more), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
