//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A large result passes whole, and what carried it is let go: a 1 MiB
// text (a 1.2 MB line, with JSON escapes, far over the 64 KiB read
// buffer, so its string goes through a spool file, never the heap) comes
// byte for byte through watch, the mux and the HTTP front, from a stdio
// and an HTTP child, each way in one era and both eras among them; once
// the client has it, mcpflow holds no spool file open.
func TestLargeResultsPassWhole(t *testing.T) {
	t.Parallel()
	want := bigText(1 << 20)
	for i, way := range []string{"watch", "mux", "http front", "http child", "http front, http child", "watch"} {
		era := []testkit.Era{testkit.Legacy, testkit.Modern}[i%2] // the stub is the same in both eras: each way in one, both in all
		t.Run(way+"/"+era.Name, func(t *testing.T) {
			t.Parallel()
			tool, args := "big", []string{"watch"}
			var dir string
			switch way {
			case "watch", "http front":
				dir = fixtureDir(t)
			case "mux":
				dir, tool, args = t.TempDir(), "a__big", []string{"mux", "-c", "mcpflow.toml"}
				os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte("[servers.a.run]\ncommand = [\""+fixtureBin+"\", \"-name\", \"a\"]\n"), 0o644)
			default:
				dir = httpDir(t, "{port}", "20s", eraArgs(era)...)
			}
			var call func() (string, bool)
			var pid int
			if strings.HasPrefix(way, "http front") {
				f, _ := os.OpenFile(filepath.Join(dir, "mcpflow.toml"), os.O_APPEND|os.O_WRONLY, 0)
				fmt.Fprint(f, "[http]\nlisten = \"127.0.0.1:0\"\n")
				f.Close()
				h := startHTTP(t, dir, args...)
				c := h.connect("c", era.Version)
				testkit.Eventually(t, 30*time.Second, tool, func() bool { return slices.Contains(c.tools(), tool) })
				call, pid = func() (string, bool) { return c.call(tool, map[string]any{"mib": 1}) }, h.cmd.Process.Pid
			} else {
				h := startE2E(t, dir, era.Version, args...)
				h.waitTools(tool)
				call, pid = func() (string, bool) { return h.call(tool, map[string]any{"mib": 1}) }, h.cmd.Process.Pid
			}
			for i := range 2 {
				if got, isErr := call(); isErr || got != want {
					t.Fatalf("call %d: %d bytes (isError %v), want %d bytes as the server wrote them", i, len(got), isErr, len(want))
				}
			}
			testkit.Eventually(t, 5*time.Second, "no spool file open in mcpflow", func() bool { return len(spoolsOpen(pid)) == 0 })
		})
	}
}

// Two clients of different eras on one HTTP front get large results at
// the same time, each whole and each its own: a legacy session and a
// 2026-07-28 one, through watch and the mux (a stdio child each: a
// process per legacy session, the fan-in for the 2026-07-28 one) and
// through watch with an HTTP child.
func TestLargeResultsTwoErasAtOnce(t *testing.T) {
	t.Parallel()
	for _, way := range []string{"watch", "mux", "http child"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			tool, args, dir := "big", []string{"watch"}, ""
			switch way {
			case "watch":
				dir = fixtureDir(t)
			case "mux":
				dir, tool, args = t.TempDir(), "a__big", []string{"mux", "-c", "mcpflow.toml"}
				os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte("[servers.a.run]\ncommand = [\""+fixtureBin+"\", \"-name\", \"a\"]\n"), 0o644)
			default:
				dir = httpDir(t, "{port}", "20s")
			}
			f, _ := os.OpenFile(filepath.Join(dir, "mcpflow.toml"), os.O_APPEND|os.O_WRONLY, 0)
			fmt.Fprint(f, "[http]\nlisten = \"127.0.0.1:0\"\n")
			f.Close()
			h := startHTTP(t, dir, args...)
			eras := []testkit.Era{testkit.Legacy, testkit.Modern}
			var clients []*httpClient
			for _, era := range eras {
				c := h.connect(era.Name, era.Version)
				testkit.Eventually(t, 30*time.Second, tool, func() bool { return slices.Contains(c.tools(), tool) })
				clients = append(clients, c)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i, c := range clients { // both at once
				era, mib := eras[i], 1+i // each its own size: a piece of the other's is seen
				want := bigText(mib << 20)
				wg.Go(func() {
					for n := range 2 {
						res, err := c.cs.CallTool(c.ctx(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"mib": mib}})
						if err != nil {
							errs <- fmt.Errorf("%s, call %d: %v", era.Name, n, err)
						} else if got := testkit.Text(res); res.IsError || got != want {
							errs <- fmt.Errorf("%s, call %d: %d bytes (isError %v), want %d bytes as the server wrote them", era.Name, n, len(got), res.IsError, len(want))
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			testkit.Eventually(t, 5*time.Second, "no spool file open in mcpflow", func() bool { return len(spoolsOpen(h.cmd.Process.Pid)) == 0 })
		})
	}
}

// mcpflow stopped in the middle of writing a large result to a client that
// stopped reading it (SIGTERM, SIGINT, the end of its input) exits within
// its bounds, leaves no process and no spool file behind.
func TestExitDuringLargeWrite(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"SIGTERM", "SIGINT", "EOF"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir, tmp, tag := fixtureDir(t), t.TempDir(), testkit.Tag(t)
			cmd := testkit.Command(tag, []string{"TMPDIR=" + tmp}, mcpflowBin, "watch")
			cmd.Dir, cmd.Stderr = dir, &testkit.Buffer{}
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill(); testkit.Procs{Dir: dir, Tag: tag}.Kill() })
			fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"mib":8}}}`)
			// Read until 64 KiB of one long line came, then read no more.
			r := bufio.NewReaderSize(stdout, 4096)
			for line := 0; line < 64<<10; {
				b, err := r.ReadSlice('\n')
				switch {
				case err == bufio.ErrBufferFull:
					line += len(b)
				case err != nil:
					t.Fatalf("stdout: %v\n%s", err, cmd.Stderr)
				default:
					line = 0
				}
			}
			t0 := time.Now()
			switch how {
			case "SIGTERM":
				cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				cmd.Process.Signal(syscall.SIGINT)
			default:
				stdin.Close()
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("mcpflow: %v\n%s", err, cmd.Stderr)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("mcpflow did not exit while its client did not read\n%s", cmd.Stderr)
			}
			t.Logf("exited %v after the stop", time.Since(t0))
			testkit.NoLeftovers(t, testkit.Procs{Dir: dir, Tag: tag})
			if left, _ := filepath.Glob(filepath.Join(tmp, "mcpflow-line-*")); len(left) > 0 {
				t.Errorf("spool files left: %v", left)
			}
		})
	}
}

// The same over the HTTP front: SIGTERM while a client reads no more of a
// large result's response.
func TestHTTPExitDuringLargeWrite(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	f, _ := os.OpenFile(filepath.Join(dir, "mcpflow.toml"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, "[http]\nlisten = \"127.0.0.1:0\"\n")
	f.Close()
	h := startHTTP(t, dir, "watch")
	_, hdr, _ := rawPost(t, h.url, "", initBody)
	sid := hdr.Get("Mcp-Session-Id")
	rawPost(t, h.url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"mib":8}}}`))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-06-18"}}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
		t.Fatalf("%d: %v\n%s", resp.StatusCode, err, h.stderr)
	}
	t0 := time.Now()
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.exited:
		if err != nil {
			t.Errorf("mcpflow: %v\n%s", err, h.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpflow did not exit while its client did not read\n%s", h.stderr)
	}
	t.Logf("exited %v after the stop", time.Since(t0))
}

// bigText is the fixture's text of n bytes.
func bigText(n int) string {
	const pat = "0123456789abcdefghijklmnopqrstuvwxyz\\\"<>&"
	return strings.Repeat(pat, n/len(pat)+1)[:n]
}

// spoolsOpen lists the spool files process pid holds open.
func spoolsOpen(pid int) []string {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	var open []string
	for _, fd := range fds {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); strings.Contains(l, "mcpflow-line-") {
			open = append(open, l)
		}
	}
	return open
}
