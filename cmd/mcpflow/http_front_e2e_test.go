//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The HTTP front end to end: the real mcpflow with [http] listen =
// "127.0.0.1:0" in front of the kit's fixture (its variant file is "the
// code": v2 adds the reverse tool), driven by the Go SDK's Streamable HTTP
// client in both eras, several at once, and by the TypeScript SDK's.

// httpRun is one mcpflow serving HTTP.
type httpRun struct {
	t      *testing.T
	dir    string
	tag    string
	cmd    *exec.Cmd
	url    string
	stderr *testkit.Buffer
	exited chan error
}

var frontURL = regexp.MustCompile(`url=(http://\S+/mcp)`)

// startHTTP runs mcpflow args in dir (serving HTTP at 127.0.0.1:0) and
// waits for the URL it logs. When the test ends it gets SIGTERM, must
// exit, and must leave no process.
func startHTTP(t *testing.T, dir string, args ...string) *httpRun {
	t.Helper()
	return startHTTPEnv(t, nil, dir, args...)
}

// startHTTPEnv is startHTTP with env added to mcpflow's environment.
func startHTTPEnv(t *testing.T, env []string, dir string, args ...string) *httpRun {
	t.Helper()
	return startHTTPWith(t, env, dir, mcpflowBin, nil, args...)
}

// startHTTPWith is startHTTPEnv with the binary bin and, when not nil,
// setup called on the command before it starts.
func startHTTPWith(t *testing.T, env []string, dir, bin string, setup func(*exec.Cmd), args ...string) *httpRun {
	t.Helper()
	h := &httpRun{t: t, dir: dir, tag: testkit.Tag(t), stderr: &testkit.Buffer{}, exited: make(chan error, 1)}
	h.cmd = testkit.Command(h.tag, env, bin, args...)
	h.cmd.Dir = dir
	if setup != nil {
		setup(h.cmd)
	}
	h.cmd.Stderr = h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.exited <- h.cmd.Wait() }()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("mcpflow stderr:\n%s", h.stderr.String())
		}
		testkit.NoLeftovers(t, testkit.Procs{Tag: h.tag})
	})
	testkit.Eventually(t, 30*time.Second, "mcpflow to log its HTTP URL", func() bool {
		if m := frontURL.FindStringSubmatch(h.stderr.String()); m != nil {
			h.url = m[1]
			return true
		}
		return false
	})
	return h
}

// stop sends SIGTERM and waits for mcpflow to exit (once).
func (h *httpRun) stop() {
	if h.cmd.ProcessState != nil {
		return
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(20 * time.Second):
		h.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, on stderr
		time.Sleep(time.Second)               // failing already: time for the dump to be written
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		h.t.Error("mcpflow did not exit on SIGTERM")
		<-h.exited
	}
}

// httpClient is one Go SDK client of the front.
type httpClient struct {
	h           *httpRun
	cs          *mcp.ClientSession
	listChanged chan struct{}
}

func (h *httpRun) connect(name, version string) *httpClient {
	h.t.Helper()
	c := &httpClient{h: h, listChanged: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.listChanged <- struct{}{}:
			default:
			}
		},
	})
	c.cs = testkit.Connect(h.t, version, client, &mcp.StreamableClientTransport{Endpoint: h.url, MaxRetries: -1})
	return c
}

func (c *httpClient) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	c.h.t.Cleanup(cancel)
	return ctx
}

func (c *httpClient) call(name string, args map[string]any) (string, bool) {
	c.h.t.Helper()
	res, err := c.cs.CallTool(c.ctx(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.h.t.Fatalf("call %s: %v", name, err)
	}
	return testkit.Text(res), res.IsError
}

func (c *httpClient) tools() []string {
	c.h.t.Helper()
	var names []string
	for tool, err := range c.cs.Tools(c.ctx(), nil) {
		if err != nil {
			c.h.t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// waitTool waits for a list_changed on the client's stream after which
// tools/list holds tool (the first build's own output may cause one
// before).
func (c *httpClient) waitTool(tool string) {
	c.h.t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case <-c.listChanged:
		case <-deadline:
			c.h.t.Fatalf("no tools/list_changed on the client's stream that brought %s", tool)
		}
		if slices.Contains(c.tools(), tool) {
			return
		}
	}
}

// frontProject is fixtureDir (a build copies src.txt, v1, to the fixture's
// variant file) with [http] listen = "127.0.0.1:0".
func frontProject(t *testing.T) string {
	t.Helper()
	dir := fixtureDir(t)
	f, err := os.OpenFile(filepath.Join(dir, "mcpflow.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("[http]\nlisten = \"127.0.0.1:0\"\n"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// watchHTTPArgs is mcpflow watch of a frontProject, with flags.
func watchHTTPArgs(flags ...string) []string {
	return append([]string{"watch"}, flags...)
}

// TestHTTPFrontWatch: an HTTP client of mcpflow watch --http sees the
// change on its stream and calls the new tool in the same session; a crash
// is reported and recovered, the session still the same.
func TestHTTPFrontWatch(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		dir := frontProject(t)
		h := startHTTP(t, dir, watchHTTPArgs()...)
		c := h.connect("http-"+era.Name, era.Version)
		if got := c.cs.InitializeResult().ProtocolVersion; got != era.Protocol {
			t.Fatalf("protocol %q, want %q", got, era.Protocol)
		}
		id := c.cs.ID()
		if (era == testkit.Legacy) != (id != "") {
			t.Fatalf("session id %q in the %s era", id, era.Name)
		}
		if got, _ := c.call("echo", map[string]any{"text": "hi"}); got != "hi" {
			t.Fatalf("echo: %q", got)
		}
		if slices.Contains(c.tools(), "reverse") {
			t.Fatal("reverse before the change")
		}
		drain(c.listChanged)
		os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
		c.waitTool("reverse")
		if got, _ := c.call("reverse", map[string]any{"text": "abc"}); got != "cba" {
			t.Fatalf("reverse: %q", got)
		}
		// A crash: the call gets the report (as on stdio: an error answer
		// under its id), the server comes back by itself.
		if _, err := c.cs.CallTool(c.ctx(), &mcp.CallToolParams{Name: "exit", Arguments: map[string]any{"code": 3}}); err == nil || !strings.Contains(err.Error(), "crash") {
			t.Fatalf("exit: %v", err)
		}
		testkit.Eventually(t, 30*time.Second, "the server to be back", func() bool {
			got, isErr := c.call("echo", map[string]any{"text": "back"})
			return !isErr && got == "back"
		})
		if c.cs.ID() != id {
			t.Fatalf("session id %q became %q", id, c.cs.ID())
		}
	})
}

// TestHTTPFrontTwoClients: three clients at once (two legacy, one
// 2026-07-28), each its own session, all told of the change; status shows
// the front and the sessions, the traffic capture and the debug log name
// each message's session.
func TestHTTPFrontTwoClients(t *testing.T) {
	t.Parallel()
	dir := frontProject(t)
	capture := filepath.Join(t.TempDir(), "traffic.jsonl")
	h := startHTTP(t, dir, watchHTTPArgs("--traffic", capture, "--log-level", "debug")...)
	a := h.connect("first", testkit.Legacy.Version)
	b := h.connect("second", testkit.Legacy.Version)
	m := h.connect("third", testkit.Modern.Version)
	if a.cs.ID() == "" || a.cs.ID() == b.cs.ID() {
		t.Fatalf("session ids %q and %q", a.cs.ID(), b.cs.ID())
	}
	for _, c := range []*httpClient{a, b, m} {
		if got, _ := c.call("echo", map[string]any{"text": "x"}); got != "x" {
			t.Fatalf("echo: %q", got)
		}
		drain(c.listChanged)
	}
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
	for _, c := range []*httpClient{a, b, m} {
		c.waitTool("reverse")
		if got, _ := c.call("reverse", map[string]any{"text": "ab"}); got != "ba" {
			t.Fatalf("reverse: %q", got)
		}
	}
	// status shows the front and the sessions.
	out, err := exec.Command(mcpflowBin, "status", "--all").CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	for _, want := range []string{h.url, a.cs.ID(), b.cs.ID(), "first 1", "third 1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	h.stop() // the capture is flushed
	rec, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"hop":"client","dir":"c2s","gen":0,"session":"` + a.cs.ID() + `","msg":{`, `"session":"` + b.cs.ID() + `"`, `"hop":"server"`} {
		if !strings.Contains(string(rec), want) {
			t.Errorf("the traffic capture lacks %s", want)
		}
	}
	if log := h.stderr.String(); !strings.Contains(log, "via=http session="+a.cs.ID()) {
		t.Errorf("no debug line names the HTTP hop and session %s", a.cs.ID())
	}
}

// TestHTTPFrontRefusesForeignOrigin: a web page's origin gets 403; no
// Origin, or this machine's, is served.
func TestHTTPFrontRefusesForeignOrigin(t *testing.T) {
	t.Parallel()
	h := startHTTP(t, frontProject(t), watchHTTPArgs()...)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	for origin, want := range map[string]int{"https://evil.example": 403, "http://localhost:6274": 200, "": 200} {
		req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %q: %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

// TestHTTPFrontSIGTERM: mcpflow exits on SIGTERM with a client's stream
// open, soon, with status 0, and leaves no process (startHTTP's cleanup).
func TestHTTPFrontSIGTERM(t *testing.T) {
	t.Parallel()
	h := startHTTP(t, frontProject(t), watchHTTPArgs()...)
	c := h.connect("sigterm", testkit.Legacy.Version)
	c.call("echo", map[string]any{"text": "x"})
	start := time.Now()
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.exited:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit within 20s of SIGTERM")
	}
	t.Logf("exited %v after SIGTERM", time.Since(start))
}

// TestHTTPFrontCLIAndMux: [cli] and mcpflow mux, each with [http] listen
// in mcpflow.toml, serve a call.
func TestHTTPFrontCLIAndMux(t *testing.T) {
	t.Parallel()
	t.Run("cli", func(t *testing.T) {
		t.Parallel()
		cli := testkit.ExampleCLI(t)
		dir := t.TempDir()
		// [http] listen in the file, not --http.
		cfg := "[cli]\nschema = [\"" + cli + "\", \"schema\", \"--json\"]\ncommand = [\"" + cli + "\"]\n\n[http]\nlisten = \"127.0.0.1:0\"\n"
		os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644)
		h := startHTTP(t, dir, "watch")
		c := h.connect("cli", testkit.Legacy.Version)
		testkit.Eventually(t, 30*time.Second, "the CLI's tools", func() bool { return len(c.tools()) > 1 })
		tools := c.tools()
		if !slices.Contains(tools, "greet") {
			t.Fatalf("tools: %v", tools)
		}
		if got, isErr := c.call("greet", map[string]any{"name": "http"}); isErr || !strings.Contains(got, "http") {
			t.Fatalf("greet: %v %q", isErr, got)
		}
		if out, _ := exec.Command(mcpflowBin, "status", "--all").CombinedOutput(); !strings.Contains(string(out), h.url) || !strings.Contains(string(out), c.cs.ID()+"  cli 1") {
			t.Errorf("status lacks the front or the session %s:\n%s", c.cs.ID(), out)
		}
	})
	t.Run("mux", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cfg := "[servers.a.run]\ncommand = [\"" + fixtureBin + "\", \"-name\", \"a\"]\n\n[http]\nlisten = \"127.0.0.1:0\"\n"
		os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644)
		h := startHTTP(t, dir, "mux", "-c", "mcpflow.toml")
		testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
			c := h.connect("mux-"+era.Name, era.Version)
			testkit.Eventually(t, 30*time.Second, "a__echo", func() bool { return slices.Contains(c.tools(), "a__echo") })
			if got, _ := c.call("a__echo", map[string]any{"text": "x"}); got != "a:x" {
				t.Fatalf("a__echo: %q", got)
			}
		})
	})
}

// TestHTTPFrontTypeScriptClient: the TypeScript SDK's Streamable HTTP
// client, in its default negotiation and in "auto" (Claude Code's
// MCP_PROTOCOL_NEGOTIATION=auto), sees the change on its stream and calls
// the new tool in the same session.
func TestHTTPFrontTypeScriptClient(t *testing.T) {
	// Not parallel with the other TypeScript tests: they share testdata/node.
	node := nodePeers(t)
	for _, mode := range []string{"default", "auto"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := frontProject(t)
			h := startHTTP(t, dir, watchHTTPArgs()...)
			cmd := testkit.Command(h.tag, nil, "node", "httpclient.mjs", h.url, filepath.Join(dir, "src.txt"), mode)
			cmd.Dir = node
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "OK ") {
				t.Fatalf("TypeScript HTTP client: %v\n%s", err, out)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
		})
	}
}

// TestHTTPFrontFlag: mcpflow watch --http ADDR -- CMD (no config file)
// and mcpflow mux --http ADDR serve HTTP; an ADDR that is no host:port is
// a usage error.
func TestHTTPFrontFlag(t *testing.T) {
	t.Parallel()
	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1"), 0o644)
		h := startHTTP(t, dir, "watch", "--http", "127.0.0.1:0", "--build", "cp src.txt variant", "--", fixtureBin, "-variant-file", "variant")
		c := h.connect("flag", testkit.Legacy.Version)
		if got, _ := c.call("echo", map[string]any{"text": "x"}); got != "x" {
			t.Fatalf("echo: %q", got)
		}
		os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
		c.waitTool("reverse")
	})
	t.Run("mux", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cfg := "[servers.a.run]\ncommand = [\"" + fixtureBin + "\", \"-name\", \"a\"]\n"
		os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644)
		h := startHTTP(t, dir, "mux", "-c", "mcpflow.toml", "--http", "127.0.0.1:0")
		c := h.connect("flag-mux", testkit.Modern.Version)
		testkit.Eventually(t, 30*time.Second, "a__echo", func() bool { return slices.Contains(c.tools(), "a__echo") })
	})
	t.Run("bad", func(t *testing.T) {
		t.Parallel()
		out, err := testkit.Command(testkit.Tag(t), nil, mcpflowBin, "watch", "--http", "8931", "--", fixtureBin).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "--http") {
			t.Fatalf("--http 8931: %v\n%s", err, out)
		}
	})
}

// Over HTTP the mux offers add_server only when http.add_server says so:
// any client of the port could otherwise start programs as mcpflow's
// user; the stdio client, which started mcpflow, keeps it.
func TestHTTPMuxAddServerOnlyWhenAllowed(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("http.add_server=%v", allow), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := fmt.Sprintf("[mux]\nadd_server = true\n[http]\nadd_server = %v\n", allow)
			if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			h := startHTTP(t, dir, "mux", "-c", "mcpflow.toml", "--http", "127.0.0.1:0")
			c := h.connect("e2e", testkit.Legacy.Version)
			res, err := c.cs.ListTools(c.ctx(), nil)
			if err != nil {
				t.Fatal(err)
			}
			has := false
			for _, tool := range res.Tools {
				has = has || tool.Name == "add_server"
			}
			if has != allow {
				t.Errorf("add_server listed: %v, want %v", has, allow)
			}
			if logged := fmt.Sprintf("add_server=%v", allow); !strings.Contains(h.stderr.String(), logged) {
				t.Errorf("the log does not say %s:\n%s", logged, h.stderr.String())
			}
		})
	}
}
