//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestConfigEditsLoseNothing: 30 edits of mcpflow.toml, each starting a
// new engine, while a client keeps calls in flight — over stdio and over
// HTTP, in front of a stdio and an HTTP server: every request gets
// exactly one answer, a result (the old engine finishes what it holds, or
// the request moves to the new one), and afterwards the session is served
// by one child: one process of the server runs.
func TestConfigEditsLoseNothing(t *testing.T) {
	t.Parallel()
	for _, setup := range []struct {
		name string
		mode transparencyMode
		run  childRun
	}{
		{"stdio-front", transparencyModes[0], childRun{command: []string{fixtureBin}}},
		{"http-front", transparencyModes[1], childRun{command: []string{fixtureBin}}},
		{"http-front-http-child", transparencyModes[1], childRun{command: []string{fixtureBin, "-http", "127.0.0.1:{port}"}, http: true}},
	} {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			dir := mcpflowProject(t, setup.mode, setup.run)
			file := filepath.Join(dir, "mcpflow.toml")
			base, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c *rawClient
			var tag string
			var pid int
			var stderr func() string
			if setup.mode.http {
				h := startHTTP(t, dir, "watch", "-c", "mcpflow.toml", "--http", "127.0.0.1:0")
				c, tag, pid, stderr = rawHTTP(t, h.url), h.tag, h.cmd.Process.Pid, h.stderr.String
			} else {
				p := startTProc(t, dir, nil, mcpflowBin, "watch", "-c", "mcpflow.toml")
				c, tag, pid, stderr = rawStdio(t, p), p.tag, p.cmd.Process.Pid, p.stderr.String
			}
			c.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"edits","version":"1"}}`)
			c.notify("notifications/initialized")
			c.afterInit()

			// Callers keep calls in flight, short and long, while the
			// edits land.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			var bad []string
			sent := 0
			for w := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						params := fmt.Sprintf(`{"name":"echo","arguments":{"text":"w%d-%d"}}`, w, i)
						if w%2 == 1 {
							params = fmt.Sprintf(`{"name":"slow","arguments":{"ms":%d}}`, 50+100*(i%4))
						}
						time.Sleep(10 * time.Millisecond)
						_, resp := c.request("tools/call", params)
						mu.Lock()
						sent++
						if resp.env.Result == nil || strings.Contains(string(resp.env.Result), `"isError":true`) {
							bad = append(bad, resp.String())
						}
						mu.Unlock()
					}
				})
			}
			for i := range 30 {
				edit := fmt.Sprintf("%s[run.env]\nEDIT = \"%d\"\n", base, i)
				if err := os.WriteFile(file, []byte(edit), 0o644); err != nil {
					t.Fatal(err)
				}
				time.Sleep(300 * time.Millisecond) // each edit applies (200 ms quiet) while calls run
			}
			close(stop)
			wg.Wait()

			answers := map[string]int{}
			for _, m := range c.log.all() {
				if m.dir == "in" && m.isResponse() {
					answers[string(m.env.ID)]++
				}
			}
			for _, m := range c.log.all() {
				if m.dir == "out" && m.isRequest() && answers[string(m.env.ID)] != 1 {
					t.Errorf("request %s got %d answers", m.env.ID, answers[string(m.env.ID)])
				}
			}
			if len(bad) > 0 {
				t.Errorf("%d of %d calls did not get their result: %q", len(bad), sent, bad)
			}
			t.Logf("%d calls across 30 edits, %d new engines", sent, strings.Count(stderr(), "the config changed"))
			// The edits were applied: the last one's variable is the child's.
			if !testkit.Wait(30*time.Second, func() bool {
				_, resp := c.request("tools/call", `{"name":"env","arguments":{"text":"EDIT"}}`)
				return strings.Contains(string(resp.env.Result), `"29"`)
			}) {
				t.Error("the last edit's variable is not the child's")
			}
			if n := strings.Count(stderr(), "the config changed"); n < 20 {
				t.Errorf("%d of 30 edits started a new engine", n)
			}
			servers := func() []string { // each has its process group's sentinel beside it
				return slices.DeleteFunc(testkit.Procs{Tag: tag, Except: []int{pid}}.Live(), func(p string) bool { return !strings.Contains(p, "fixture") })
			}
			if !testkit.Wait(30*time.Second, func() bool { return len(servers()) == 1 }) {
				t.Errorf("the server's processes after the edits: %q, want one", servers())
			}
		})
	}
}

// TestIdleSessionStopsItsChild: a client session that stays idle past
// http.session_idle ends, and its server process with it; a new session
// gets a process of its own.
func TestIdleSessionStopsItsChild(t *testing.T) {
	t.Parallel()
	dir := mcpflowProject(t, transparencyModes[1], childRun{command: []string{fixtureBin}})
	f, err := os.OpenFile(filepath.Join(dir, "mcpflow.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("[http]\nsession_idle = \"1s\"\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h := startHTTP(t, dir, "watch", "-c", "mcpflow.toml", "--http", "127.0.0.1:0")
	servers := func() []string {
		return slices.DeleteFunc(testkit.Procs{Tag: h.tag, Except: []int{h.cmd.Process.Pid}}.Live(), func(p string) bool { return !strings.Contains(p, "fixture") })
	}
	c := rawHTTP(t, h.url)
	c.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}`)
	c.notify("notifications/initialized")
	if _, resp := c.request("tools/call", `{"name":"echo","arguments":{"text":"x"}}`); resp.env.Result == nil {
		t.Fatalf("echo: %s", resp.raw)
	}
	if n := len(servers()); n != 1 {
		t.Fatalf("%d server processes for one session", n)
	}
	if !testkit.Wait(30*time.Second, func() bool { return len(servers()) == 0 }) {
		t.Errorf("the idle session's server still runs: %q", servers())
	}
	c2 := rawHTTP(t, h.url)
	c2.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"next","version":"1"}}`)
	c2.notify("notifications/initialized")
	if _, resp := c2.request("tools/call", `{"name":"echo","arguments":{"text":"y"}}`); resp.env.Result == nil {
		t.Fatalf("echo in a new session: %s", resp.raw)
	}
	if n := len(servers()); n != 1 {
		t.Errorf("%d server processes for the new session", n)
	}
}
