//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The end-to-end tests run the real mcpflow binary on a copy of
// examples/echo (a real Go build of a real Go SDK server), edit its real
// source files, and talk to it with the Go SDK client, in both eras.

// mcpflowBin (with the race detector) and fixtureBin (the kit's fixture
// server) are built once, before the tests.
var mcpflowBin, fixtureBin string

func TestMain(m *testing.M) {
	testkit.Main(m, func() {
		mcpflowBin = testkit.MustBuild(testkit.MCPFlowPkg, "-race")
		fixtureBin = testkit.MustBuild(testkit.FixturePkg)
	})
}

type e2e struct {
	t           *testing.T
	dir         string
	tag         string // in the environment of mcpflow and all it starts
	cmd         *exec.Cmd
	cs          *mcp.ClientSession
	listChanged chan struct{}
	stderr      *testkit.Buffer
	exited      chan error
}

// copyExample copies examples/echo into a temp dir.
func copyExample(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "examples", "echo")
	dst := t.TempDir()
	for _, name := range []string{"main.go", "go.mod", "go.sum", "mcpflow.toml"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// startE2E runs mcpflow in dir with args and connects a client.
func startE2E(t *testing.T, dir, version string, args ...string) *e2e {
	t.Helper()
	return startE2EWith(t, dir, version, nil, args...)
}

// startE2EWith is startE2E with client options (the list_changed handler
// is always installed).
func startE2EWith(t *testing.T, dir, version string, copts *mcp.ClientOptions, args ...string) *e2e {
	t.Helper()
	return startE2EBin(t, mcpflowBin, dir, version, copts, args...)
}

// startE2EBin is startE2EWith with the mcpflow binary bin.
func startE2EBin(t *testing.T, bin, dir, version string, copts *mcp.ClientOptions, args ...string) *e2e {
	t.Helper()
	return startE2EAs(t, "e2e", bin, dir, version, copts, args...)
}

// startE2EAs is startE2EBin with a client that calls itself name.
func startE2EAs(t *testing.T, name, bin, dir, version string, copts *mcp.ClientOptions, args ...string) *e2e {
	t.Helper()
	h := &e2e{t: t, dir: dir, tag: testkit.Tag(t), listChanged: make(chan struct{}, 16), stderr: &testkit.Buffer{}, exited: make(chan error, 1)}
	h.cmd = testkit.Command(h.tag, nil, bin, args...)
	h.cmd.Dir = dir
	h.cmd.Stderr = h.stderr
	stdin, err := h.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.exited <- h.cmd.Wait() }()
	t.Cleanup(func() {
		h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(20 * time.Second):
			h.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, in the log below
			select {
			case <-h.exited:
			case <-time.After(3 * time.Second):
			}
			syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
			t.Error("mcpflow did not exit on SIGTERM")
		}
		if t.Failed() {
			t.Logf("mcpflow stderr:\n%s", h.stderr.String())
		}
	})
	if copts == nil {
		copts = &mcp.ClientOptions{}
	}
	copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case h.listChanged <- struct{}{}:
		default:
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, copts)
	h.cs = testkit.Connect(t, version, client, testkit.Stdio(stdout, stdin))
	return h
}

func (h *e2e) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *e2e) call(name string, args map[string]any) (string, bool) {
	h.t.Helper()
	res, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("call %s: %v\nstderr:\n%s", name, err, h.stderr.String())
	}
	return testkit.Text(res), res.IsError
}

func (h *e2e) tools() []string {
	h.t.Helper()
	var names []string
	for tool, err := range h.cs.Tools(h.ctx(), nil) {
		if err != nil {
			h.t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func (h *e2e) waitListChanged() {
	h.t.Helper()
	select {
	case <-h.listChanged:
	case <-time.After(2 * time.Minute):
		h.t.Fatalf("no tools/list_changed\nstderr:\n%s", h.stderr.String())
	}
}

// waitTools waits until the server's tools include want (the server is
// started by the first build, which may still be running).
func (h *e2e) waitTools(want string) {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !slices.Contains(h.tools(), want) {
		if time.Now().After(deadline) {
			h.t.Fatalf("tool %s never appeared\nstderr:\n%s", want, h.stderr.String())
		}
		select {
		case <-h.listChanged:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

const reverseTool = `	mcp.AddTool(server, &mcp.Tool{Name: "reverse", Description: "Reverse the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, args textArgs) (*mcp.CallToolResult, any, error) {
			r := []rune(args.Text)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(r)}}}, nil, nil
		})
`

// editSource rewrites main.go as an editor does: write a temp file, rename
// it over the original.
func editSource(t *testing.T, dir string, edit func(string) string) {
	t.Helper()
	path := filepath.Join(dir, "main.go")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := edit(string(b))
	if out == string(b) {
		t.Fatal("edit changed nothing")
	}
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func addReverse(src string) string {
	return strings.Replace(src, "\t// New tools go here.\n", "\t// New tools go here.\n"+reverseTool, 1)
}

func breakBuild(src string) string {
	return strings.Replace(src, "\t// New tools go here.\n", "\t// New tools go here.\n\tundefinedThing()\n", 1)
}

func TestE2ESaveAddsToolWithoutAnyCall(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir := copyExample(t)
			h := startE2E(t, dir, era.Version, "watch")
			h.waitTools("echo")
			if got, _ := h.call("echo", map[string]any{"text": "hello"}); got != "hello" {
				t.Fatalf("echo: %q", got)
			}
			drain(h.listChanged)
			editSource(t, dir, addReverse)
			h.waitListChanged()
			h.waitTools("reverse")
			if got, isErr := h.call("reverse", map[string]any{"text": "mcpflow"}); isErr || got != "wolfpcm" {
				t.Fatalf("reverse: %q %v", got, isErr)
			}
			// The log file has the cycle line.
			logText, _ := os.ReadFile(filepath.Join(dir, ".mcpflow", "mcpflow.log"))
			if !regexp.MustCompile(`changed main\.go → build .* ✓ → restart .* ✓ → tools \+reverse`).Match(logText) {
				t.Fatalf("no cycle line in the log file:\n%s", logText)
			}
		})
	}
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func TestE2EBrokenBuildKeepsOldServer(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir := copyExample(t)
			h := startE2E(t, dir, era.Version, "watch")
			h.waitTools("echo")
			editSource(t, dir, breakBuild)
			// The automatic build fails; the old server keeps serving, and
			// the next call carries a short notice.
			deadline := time.Now().Add(2 * time.Minute)
			for {
				got, isErr := h.call("echo", map[string]any{"text": "still here"})
				if isErr || !strings.HasPrefix(got, "still here") {
					t.Fatalf("echo during a broken build: %q %v", got, isErr)
				}
				if strings.Contains(got, "automatic rebuild") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no notice about the failed automatic rebuild\nstderr:\n%s", h.stderr.String())
				}
				time.Sleep(200 * time.Millisecond)
			}
			text, isErr := h.call("recompile", nil)
			if !isErr || !regexp.MustCompile(`main\.go:\d+:\d+: undefined: undefinedThing`).MatchString(text) || !strings.Contains(text, "still running") {
				t.Fatalf("recompile with a broken build: %v %q", isErr, text)
			}
			if got, _ := h.call("echo", map[string]any{"text": "old server"}); got != "old server" {
				t.Fatalf("old server after failed recompile: %q", got)
			}
		})
	}
}

func TestE2EBrokenAtStartupThenFixed(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir := copyExample(t)
			editSource(t, dir, breakBuild)
			h := startE2E(t, dir, era.Version, "watch", "-c", "mcpflow.toml")
			if names := h.tools(); !slices.Equal(names, []string{"recompile"}) {
				t.Fatalf("tools with a broken first build: %v", names)
			}
			// recompile waits for the first build, if it still runs.
			text, isErr := h.call("recompile", nil)
			if !isErr || !strings.Contains(text, "main.go:") {
				t.Fatalf("recompile while still broken: %v %q", isErr, text)
			}
			text, isErr = h.call("echo", map[string]any{"text": "x"})
			if !isErr || !strings.Contains(text, "undefinedThing") {
				t.Fatalf("call with a broken first build: %v %q", isErr, text)
			}
			// Fix it (a real edit: the watcher may get there first; either
			// way recompile must leave the server up).
			editSource(t, dir, func(s string) string { return strings.Replace(s, "\tundefinedThing()\n", "", 1) })
			if text, isErr := h.call("recompile", nil); isErr {
				t.Fatalf("recompile after the fix: %q", text)
			}
			h.waitTools("echo")
			if got, _ := h.call("echo", map[string]any{"text": "up"}); got != "up" {
				t.Fatalf("echo after recovery: %q", got)
			}
		})
	}
}

var pidRE = regexp.MustCompile(`server started pid=(\d+)`)

func (h *e2e) serverPIDs() []int {
	var pids []int
	for _, m := range pidRE.FindAllStringSubmatch(h.stderr.String(), -1) {
		p, _ := strconv.Atoi(m[1])
		pids = append(pids, p)
	}
	return pids
}

func TestE2EShutdownLeavesNoProcess(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		stop func(h *e2e)
	}{
		{"stdin closed", func(h *e2e) { h.cs.Close() }},
		{"SIGTERM", func(h *e2e) { h.cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGINT", func(h *e2e) { h.cmd.Process.Signal(syscall.SIGINT) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := copyExample(t)
			// The server is started through sh -c, which leaves a
			// grandchild: the whole group must go.
			toml := strings.Replace(testkit.ReadFile(t, filepath.Join(dir, "mcpflow.toml")), `command = [".mcpflow/echo"]`, `command = "sleep 300 & exec .mcpflow/echo"`, 1)
			os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(toml), 0o644)
			h := startE2E(t, dir, "", "watch")
			h.waitTools("echo")
			pids := h.serverPIDs()
			if len(pids) == 0 {
				t.Fatal("no server pid in the log")
			}
			c.stop(h)
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
		})
	}
}

func TestE2EZeroConfigWatch(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1"), 0o644)
			h := startE2E(t, dir, era.Version, "watch", "--build", "cp src.txt variant", "--", fixtureBin, "-variant-file", "variant")
			h.waitTools("echo")
			if slices.Contains(h.tools(), "reverse") {
				t.Fatal("reverse before the change")
			}
			drain(h.listChanged)
			os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
			h.waitListChanged()
			h.waitTools("reverse")
			if got, _ := h.call("reverse", map[string]any{"text": "abc"}); got != "cba" {
				t.Fatalf("reverse: %q", got)
			}
		})
	}
}

func TestE2ERecompileReportsProgress(t *testing.T) {
	t.Parallel()
	dir := copyExample(t)
	progress := make(chan string, 32)
	h := startE2EWith(t, dir, "", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	}, "watch")
	h.waitTools("echo")
	params := &mcp.CallToolParams{Name: "recompile", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	res, err := h.cs.CallTool(h.ctx(), params)
	if err != nil || res.IsError {
		t.Fatalf("recompile: %v %+v", err, res)
	}
	var msgs []string
	timeout := time.After(10 * time.Second)
	for joined := ""; !strings.Contains(joined, "building") || !strings.Contains(joined, "restart"); joined = strings.Join(msgs, " | ") {
		select {
		case m := <-progress:
			msgs = append(msgs, m)
		case <-timeout:
			t.Fatalf("progress messages: %q", joined)
		}
	}
}

// nodePeers returns the folder of the TypeScript SDK peers, or skips when
// their packages are not installed (make test installs them: make node-deps).
func nodePeers(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "node"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "client")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("TypeScript SDK peers not installed: make node-deps")
		}
		t.Skip("TypeScript SDK peers not installed: run make node-deps")
	}
	// mcpflow keeps its record of the server's answers in the project's
	// .mcpflow/; a record left by another test would be served first.
	forget := func() { os.RemoveAll(filepath.Join(dir, ".mcpflow")) }
	forget()
	t.Cleanup(forget)
	return dir
}

// TestE2ETypeScriptClient drives mcpflow with the TypeScript SDK's client:
// a non-Go peer sees the recompile, the notification and the new tool.
func TestE2ETypeScriptClient(t *testing.T) {
	// Not parallel: the TypeScript tests share testdata/node as the project.
	dir := nodePeers(t)
	tag := testkit.Tag(t)
	cmd := testkit.Command(tag, nil, "node", "client.mjs", mcpflowBin, fixtureBin, filepath.Join(t.TempDir(), "variant"))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("TypeScript client: %v\n%s", err, out)
	}
	testkit.NoLeftovers(t, testkit.Procs{Tag: tag})
}

// TestE2ETypeScriptModernClient drives mcpflow with the TypeScript SDK 2.x
// client in "auto" version negotiation, as Claude Code's
// MCP_PROTOCOL_NEGOTIATION=auto: it probes server/discover on a sibling
// mcpflow it then kills, and must end up in the 2026-07-28 era with a
// working reload.
func TestE2ETypeScriptModernClient(t *testing.T) {
	// Not parallel: the TypeScript tests share testdata/node as the project.
	dir := nodePeers(t)
	variant := filepath.Join(t.TempDir(), "variant")
	tag := testkit.Tag(t)
	cmd := testkit.Command(tag, nil, "node", "client2.mjs", mcpflowBin, fixtureBin, variant)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK modern 2026-07-28") {
		t.Fatalf("TypeScript 2.x client: %v\n%s", err, out)
	}
	// The probe's sibling mcpflow and its server are gone too.
	testkit.NoLeftovers(t, testkit.Procs{Tag: tag})
}

// TestE2ETypeScriptServer relays a TypeScript SDK server, which writes its
// results before their ids, to the Go SDK client in both eras.
func TestE2ETypeScriptServer(t *testing.T) {
	// Not parallel: the TypeScript tests share testdata/node as the project.
	dir := nodePeers(t)
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			h := startE2E(t, dir, era.Version, "watch", "--", "node", "server.mjs")
			h.waitTools("hello")
			if got, isErr := h.call("hello", map[string]any{"name": "go"}); isErr || got != "hello, go" {
				t.Fatalf("hello: %q %v", got, isErr)
			}
			const n = 3 << 20
			if got, isErr := h.call("big", map[string]any{"n": n}); isErr || got != strings.Repeat("x", n) {
				t.Fatalf("big: %d bytes, isError %v", len(got), isErr)
			}
			if text, isErr := h.call("recompile", nil); isErr || !strings.Contains(text, "Tools: unchanged") {
				t.Fatalf("recompile: %q", text)
			}
		})
	}
}

// runInit runs "mcpflow init DIR" in-process and returns its output; the
// generated config must load.
func runInit(t *testing.T, dir string) (string, *config.Config) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getwd: func() (string, error) { return dir, nil }}
	if code := cmdInit(e, []string{dir}); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	cfg, err := config.Load(filepath.Join(dir, "mcpflow.toml"))
	if err != nil {
		t.Fatalf("the generated config does not load: %v", err)
	}
	return out.String(), cfg
}
