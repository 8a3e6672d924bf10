package clitools

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lane answers the calls of the CLI's tools without the MCP server:
// with every tools/call through the server failing, they still work, and
// recompile (the server's own tool) fails.
func TestLaneServesCLICalls(t *testing.T) {
	forEra(t, func(t *testing.T, era string) {
		h := start(t, era, Config{})
		h.srv.MCPServer().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/call" {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "through the server"}}}, nil
				}
				return next(ctx, method, req)
			}
		})
		if s := structured(t, h.call("add", map[string]any{"a": 2, "b": 5})); s["sum"] != 7.0 {
			t.Fatalf("add: %v", s)
		}
		if r := h.call("greet", map[string]any{"name": "Ann"}); r.IsError || !strings.Contains(text(r), "Hello, Ann!") {
			t.Fatalf("greet: %q", text(r))
		}
		// Bad arguments are the lane's answer too, as the handler's.
		if r := h.call("add", map[string]any{"a": "x"}); !r.IsError || !strings.Contains(text(r), "invalid arguments for add") {
			t.Fatalf("bad arguments: %q", text(r))
		}
		if r := h.call(DefaultTool, nil); !r.IsError || strings.TrimSpace(text(r)) != "through the server" {
			t.Fatalf("recompile should reach the server: %q", text(r))
		}
	})
}

// Claim picks the path per call; both paths give the same result, with
// the Note appended, in both eras.
func TestClaimAndNoteOnBothPaths(t *testing.T) {
	forEra(t, func(t *testing.T, era string) {
		var claim atomic.Bool
		var asked atomic.Value
		h := start(t, era, Config{
			Claim: func(tool string) bool { asked.Store(tool); return claim.Load() },
			Note:  func() string { return "a note" },
		})
		results := map[bool]string{}
		for _, lane := range []bool{true, false} {
			claim.Store(lane)
			before := h.sdkCalls.Load()
			r := h.call("add", map[string]any{"a": 1, "b": 2})
			if viaServer := h.sdkCalls.Load() != before; viaServer == lane {
				t.Fatalf("claim %v: the call went through the server: %v", lane, viaServer)
			}
			if r.IsError || len(r.Content) != 2 || r.Content[1].(*mcp.TextContent).Text != "a note" {
				t.Fatalf("claim %v: %#v", lane, r.Content)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			results[lane] = string(b)
		}
		if results[true] != results[false] {
			t.Errorf("the lane's result differs from the server's:\nlane:   %s\nserver: %s", results[true], results[false])
		}
		if asked.Load() != "add" {
			t.Errorf("Claim was asked about %v", asked.Load())
		}
		// A tool the schema does not hold is never claimed: the server
		// answers.
		claim.Store(true)
		asked.Store("")
		if _, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nosuch"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("unknown tool: %v", err)
		}
		if asked.Load() != "" {
			t.Errorf("Claim was asked about a tool outside the schema: %v", asked.Load())
		}
	})
}

// A failed refresh's note reaches the lane's results too.
func TestLaneCarriesRefreshNote(t *testing.T) {
	forEra(t, func(t *testing.T, era string) {
		h := start(t, era, Config{})
		h.srv.cfg.Schema = []string{exampleBin, "nosuch"}
		if _, err := h.srv.Refresh(context.Background()); err == nil {
			t.Fatal("a failing schema command refreshed")
		}
		r := h.call("add", map[string]any{"a": 1, "b": 2})
		if r.IsError || !strings.Contains(text(r), "could not be re-read") {
			t.Fatalf("add: %q", text(r))
		}
		if n := h.sdkCalls.Load(); n != 0 {
			t.Errorf("%d calls reached the server, want 0", n)
		}
	})
}
