//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// A client that never reads a flood costs only itself: while it holds a
// call that floods it with progress notifications and reads none of
// them, another session's ping (an echo in 2026-07-28), every 100 ms, is
// answered within 1 s, through the HTTP front of watch and of mux, for
// session-less clients too (they share one child).
func TestHTTPStalledClientCostsOnlyItself(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ mode, era string }{{"watch", "legacy"}, {"watch", "modern"}, {"mux", "legacy"}, {"mux", "modern"}} {
		mode := c.mode
		t.Run(c.mode+"/"+c.era, func(t *testing.T) {
			t.Parallel()
			var h *httpRun
			tool, echo := "progress", "echo"
			if mode == "watch" {
				h = startHTTP(t, frontProject(t), watchHTTPArgs()...)
			} else {
				dir := t.TempDir()
				os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte("[servers.a.run]\ncommand = [\""+fixtureBin+"\", \"-name\", \"a\"]\n\n[http]\nlisten = \"127.0.0.1:0\"\n"), 0o644)
				h = startHTTP(t, dir, "mux", "-c", "mcpflow.toml")
				tool, echo = "a__progress", "a__echo"
			}
			era := testkit.Legacy
			if c.era == "modern" {
				era = testkit.Modern
			}
			pinger := h.connect("pinger", era.Version)
			testkit.Eventually(t, 30*time.Second, tool, func() bool { return slices.Contains(pinger.tools(), tool) })
			u, _ := url.Parse(h.url)
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// The flooding client speaks the pinger's era: a legacy session
			// of its own, or a session-less 2026-07-28 request (they share
			// one session inside mcpflow).
			hdr, meta := "", `"_meta":{"progressToken":"flood"}`
			if c.era == "legacy" {
				hdr = "Mcp-Session-Id: " + rawSession(t, h.url) + "\r\nMcp-Protocol-Version: 2025-06-18\r\n"
			} else {
				hdr = "Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: " + tool + "\r\n"
				meta = `"_meta":{"progressToken":"flood","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"flooder","version":"1"}}`
			}
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":{"n":2000000},%s}}`, tool, meta)
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s",
				u.Path, u.Host, hdr, len(body), body)
			// The flood fills the socket; the pings run meanwhile.
			var worst time.Duration
			for range 60 {
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				var err error
				if c.era == "legacy" {
					err = pinger.cs.Ping(ctx, nil)
				} else { // the SDK's ping carries no 2026-07-28 _meta: an echo instead
					_, err = pinger.cs.CallTool(ctx, &mcp.CallToolParams{Name: echo, Arguments: map[string]any{"text": "x"}})
				}
				cancel()
				took := time.Since(start)
				worst = max(worst, took)
				if err != nil {
					t.Fatalf("ping: %v after %s", err, took)
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("the slowest of 60 pings: %s", worst)
			// Session-less clients share one connection to the server (one
			// stdio child): an echo's answer waits in the child's output
			// behind the flood (at most a pipe's 64 KiB), until the
			// flooder, which reads nothing, is cut off (httpmcp's
			// sendBuffer and sharedQueueBytes) and its request cancelled.
			bound := time.Second
			if c.era == "modern" && !strings.Contains(h.stderr.String(), "wait for a session-less client (its server connection is shared)") {
				t.Error("the flooder was not cut off")
			}
			if worst > bound {
				t.Errorf("a ping took %s while another client stalled, want ≤ %s", worst.Round(time.Millisecond), bound)
			}
		})
	}
}
