//go:build linux

package main

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// racingRequests are what a client of another user sends before it
// closes at once: a session-less 2026-07-28 tools/call of the fixture's
// spawn tool (which writes path when served) and a legacy initialize.
func racingRequests(host, path string) (modern, legacy string) {
	req := func(body string, hdr ...string) string {
		return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s",
			host, strings.Join(hdr, ""), len(body), body)
	}
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"spawn","arguments":{"path":%q},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"racer","version":"1"}}}}`, path)
	return req(call, "Mcp-Protocol-Version: 2026-07-28\r\n", "Mcp-Method: tools/call\r\n", "Mcp-Name: spawn\r\n"), req(initBody)
}

// raceFront has uid (not mcpflow's) connect tries times per era to the
// front at rawURL, send its request and close at once (bash's /dev/tcp:
// the connection is closed before mcpflow reads it), then waits for
// mcpflow to log each refusal and checks that nothing was served: no
// spawn, every connection refused.
func raceFront(t *testing.T, h *httpRun, uid string, tries int) {
	t.Helper()
	u, _ := url.Parse(h.url)
	spawned := filepath.Join(h.dir, "spawned.pid")
	modern, legacy := racingRequests(u.Host, spawned)
	script := `trap '' PIPE # mcpflow may close first: the write fails, the loop goes on
for i in $(seq ` + fmt.Sprint(tries) + `); do
  for req in "$MODERN" "$LEGACY"; do
    exec 3<>/dev/tcp/` + strings.Replace(u.Host, ":", "/", 1) + ` && { printf '%s' "$req" >&3 || true; }
    exec 3>&-
  done
done`
	cmd := exec.Command("setpriv", "--reuid="+uid, "--regid="+uid, "--clear-groups", "bash", "-c", script)
	cmd.Env = []string{"MODERN=" + modern, "LEGACY=" + legacy, "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the racing client: %v\n%s", err, out)
	}
	want := 2 * tries
	refusals := func() int { return strings.Count(h.stderr.String(), "refused an HTTP connection of another user") }
	deadline := time.Now().Add(30 * time.Second)
	for refusals() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := refusals(); n != want {
		t.Errorf("%d of %d racing connections refused and logged", n, want)
	}
	time.Sleep(200 * time.Millisecond) // a spawn served would have written its file by now
	if _, err := os.Stat(spawned); err == nil {
		t.Errorf("a racing client of uid %s had spawn served", uid)
	}
}

// needRoot skips a test that runs processes as other users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run clients (and mcpflow) as other users")
	}
	for _, p := range []string{"setpriv", "bash"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("needs %s", p)
		}
	}
}

// A client of another user that connects, sends a tools/call (or an
// initialize) and closes at once, 100 times in each era, is never served,
// whether mcpflow runs as root (a closed socket is listed with uid 0) or
// as a normal user: each connection is refused and logged.
func TestHTTPFrontRefusesRacingOtherUser(t *testing.T) {
	t.Parallel()
	needRoot(t)
	t.Run("root", func(t *testing.T) {
		t.Parallel()
		h := startHTTP(t, frontProject(t), watchHTTPArgs()...)
		raceFront(t, h, "65534", 100)
	})
	t.Run("user", func(t *testing.T) {
		t.Parallel()
		// mcpflow as uid 65534, from copies of the binaries it can run,
		// in a project it owns; the other user is 65533.
		bin := t.TempDir()
		os.Chmod(filepath.Dir(bin), 0o755) // the test's temp folder
		os.Chmod(bin, 0o755)
		if out, err := exec.Command("cp", mcpflowBin, fixtureBin, bin).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "mcpflow.toml"), fmt.Appendf(nil, fixtureProject+"[http]\nlisten = \"127.0.0.1:0\"\n", filepath.Join(bin, filepath.Base(fixtureBin))), 0o644)
		os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1"), 0o644)
		for _, p := range []string{dir, filepath.Join(dir, "mcpflow.toml"), filepath.Join(dir, "src.txt")} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		h := startHTTPWith(t, []string{"HOME=" + dir, "XDG_RUNTIME_DIR=" + dir}, dir, filepath.Join(bin, filepath.Base(mcpflowBin)), func(c *exec.Cmd) {
			c.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
		}, watchHTTPArgs()...)
		raceFront(t, h, "65533", 100)
		out, _ := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "curl"}, curlArgs(h.url)...)...).CombinedOutput()
		if !strings.Contains(string(out), "status=200") {
			t.Errorf("the owner (uid 65534): %s, want 200", out)
		}
	})
}
