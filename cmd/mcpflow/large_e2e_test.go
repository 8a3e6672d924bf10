//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
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
