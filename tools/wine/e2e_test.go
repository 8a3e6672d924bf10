// Package wine holds the Windows end-to-end session of make test-windows:
// mcpflow.exe and a Windows fixture server run under Wine (tools/wine),
// driven from Linux by the Go SDK's client.
package wine

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binEnv names the folder of the Windows binaries (mcpflow.exe,
// fixture.exe, fixture-v2.exe) that tools/wine/test.sh built.
const binEnv = "MCPFLOW_WINE_BIN"

func kit(t *testing.T) (bin, runSh string) {
	bin = os.Getenv(binEnv)
	if bin == "" {
		t.Skip("the Windows session runs under Wine: make test-windows")
	}
	wd, _ := os.Getwd()
	return bin, filepath.Join(wd, "run.sh")
}

// project is a folder whose server is a bare fixture.exe that the build
// replaces, while it runs, by a copy of next\fixture.exe; a change of
// src.txt starts a build. name, when not "", puts it in [servers.NAME].
func project(t *testing.T, bin, name string) string {
	dir := t.TempDir()
	copyFile(t, filepath.Join(bin, "fixture.exe"), filepath.Join(dir, "fixture.exe"))
	copyFile(t, filepath.Join(bin, "fixture.exe"), filepath.Join(dir, "next", "fixture.exe"))
	prefix := ""
	if name != "" {
		prefix = "servers." + name + "."
	}
	toml := fmt.Sprintf("[%sbuild]\ncommand = 'copy /Y next\\fixture.exe fixture.exe'\n[%srun]\ncommand = [\"fixture.exe\"]\n[%swatch]\ninclude = [\"*.txt\"]\n", prefix, prefix, prefix)
	testkit.WriteFiles(t, dir, map[string]string{"mcpflow.toml": toml, "src.txt": "v1\n"})
	return dir
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err == nil {
		os.MkdirAll(filepath.Dir(to), 0o755)
		err = os.WriteFile(to, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// mcpflow runs mcpflow.exe ARGS in dir under Wine.
func mcpflow(runSh, bin, dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(runSh, append([]string{filepath.Join(bin, "mcpflow.exe")}, args...)...)
	cmd.Dir = dir
	return cmd
}

// client connects to the transport and reports each list_changed on changed.
func client(t *testing.T, tr mcp.Transport) (*mcp.ClientSession, chan struct{}) {
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "wine-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	return testkit.Connect(t, "", c, tr), changed
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// replace puts the v2 fixture where the build copies from and saves
// src.txt, then waits for list_changed and the new tool.
func replace(t *testing.T, bin, dir string, cs *mcp.ClientSession, changed chan struct{}, tool string) {
	if slices.Contains(toolNames(t, cs), tool) {
		t.Fatalf("%s listed before the edit", tool)
	}
	copyFile(t, filepath.Join(bin, "fixture-v2.exe"), filepath.Join(dir, "next", "fixture.exe"))
	start := time.Now()
	testkit.WriteFiles(t, dir, map[string]string{"src.txt": "v2\n"})
	for names := []string(nil); !slices.Contains(names, tool); names = toolNames(t, cs) {
		select { // a list_changed of the start may come first
		case <-changed:
		case <-time.After(90 * time.Second):
			t.Fatalf("no list_changed with %s 90 s after the edit: %v", tool, names)
		}
	}
	t.Logf("timing: edit → list_changed with %s %v", tool, time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "abc"}})
	if err != nil || res.IsError {
		t.Fatalf("calling %s: %v %+v", tool, err, res)
	}
}

// windowsProcs lists the prefix's Windows processes of mcpflow, the fixture and cmd.
func windowsProcs(t *testing.T, runSh string) []string {
	out, _ := exec.Command(runSh, "--procs").Output()
	var left []string
	for l := range strings.Lines(string(out)) {
		if strings.Contains(l, "fixture.exe") || strings.Contains(l, "mcpflow.exe") || strings.Contains(l, "'cmd.exe'") {
			left = append(left, strings.TrimSpace(l))
		}
	}
	return left
}

// noneLeft waits (bounded) until no Windows process of the test is left.
func noneLeft(t *testing.T, runSh string) {
	var left []string
	if !testkit.Wait(15*time.Second, func() bool { left = windowsProcs(t, runSh); return len(left) == 0 }) {
		t.Errorf("Windows processes left: %v", left)
	}
}

// waitExit waits for cmd to exit, at most a minute; it must exit 0.
func waitExit(t *testing.T, cmd *exec.Cmd, why string) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("mcpflow.exe after %s: %v", why, err)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("mcpflow.exe still runs a minute after %s", why)
	}
}

// stdio runs ARGS in dir with a client on its stdin and stdout; closing
// the session is the client's EOF.
func stdio(t *testing.T, runSh, bin, dir string, args ...string) (*exec.Cmd, *mcp.ClientSession, chan struct{}) {
	cmd := mcpflow(runSh, bin, dir, args...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	start(t, cmd)
	cs, changed := client(t, testkit.Stdio(out, in))
	return cmd, cs, changed
}

// start starts cmd, to be killed when the test ends, its log shown if the test failed.
func start(t *testing.T, cmd *exec.Cmd) {
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("mcpflow's log:\n%s", logs.String())
		}
	})
}

// TestWatch: watch of a bare fixture.exe; an edit builds a new .exe over
// the running one, which restarts with the new tool (list_changed);
// status and tools find the instance; EOF leaves no Windows process.
func TestWatch(t *testing.T) {
	bin, runSh := kit(t)
	dir := project(t, bin, "")
	cmd, cs, changed := stdio(t, runSh, bin, dir, "watch")
	replace(t, bin, dir, cs, changed, "reverse")
	for _, c := range [][]string{{"status"}, {"tools"}} {
		out, err := mcpflow(runSh, bin, dir, c...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), map[string]string{"status": "running", "tools": "reverse"}[c[0]]) {
			t.Errorf("mcpflow %s: %v\n%s", c[0], err, out)
		}
	}
	cs.Close()
	waitExit(t, cmd, "stdin EOF")
	noneLeft(t, runSh)
}

// TestMux: the same through the mux, the server named s.
func TestMux(t *testing.T) {
	bin, runSh := kit(t)
	dir := project(t, bin, "s")
	cmd, cs, changed := stdio(t, runSh, bin, dir, "mux", "-c", "mcpflow.toml")
	replace(t, bin, dir, cs, changed, "s__reverse")
	cs.Close()
	waitExit(t, cmd, "stdin EOF")
	noneLeft(t, runSh)
}

// TestHTTP: watch --http; the client connects over Streamable HTTP, and
// SIGINT (Ctrl-C to a Windows program under Wine) stops mcpflow.
func TestHTTP(t *testing.T) {
	bin, runSh := kit(t)
	dir := project(t, bin, "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := mcpflow(runSh, bin, dir, "watch", "--http", addr)
	start(t, cmd)
	if !testkit.Wait(time.Minute, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("nothing listens on %s a minute after the start", addr)
	}
	cs, changed := client(t, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"})
	replace(t, bin, dir, cs, changed, "reverse")
	cs.Close()
	cmd.Process.Signal(syscall.SIGINT)
	waitExit(t, cmd, "SIGINT")
	noneLeft(t, runSh)
}
