package mux

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Single mode (Config.Single) serves exactly one server, Config.Servers[0],
// as if it were that server: its tools and prompts under their own names,
// its own instructions, no management tools, and one tool of mcpflow's,
// Config.SingleTool ("recompile" by default), that rebuilds and restarts
// it as reload_server would. It is the era bridge of single-server mode:
// the mux is a real MCP server toward the client and a real MCP client
// toward the child, so a legacy client can use a child that refuses the
// legacy handshake (and the reverse).

// defaultSingleTool is the rebuild tool's name in single mode.
const defaultSingleTool = "recompile"

// join is the name the client sees for a child's tool or prompt.
func (m *Mux) join(server, name string) string {
	if m.cfg.Single {
		return name
	}
	return joinName(server, m.sep, name)
}

// only is the single server's name.
func (m *Mux) only() string {
	if len(m.cfg.Servers) == 0 {
		return ""
	}
	return m.cfg.Servers[0].Name
}

// singleUnknownTool explains a call to a tool single mode does not list.
// m.mu is held.
func (m *Mux) singleUnknownTool(name string) string {
	s, ok := m.servers[m.only()]
	switch {
	case !ok:
		return fmt.Sprintf("unknown tool %q: the MCP server is not running", name)
	case s.status == StatusCrashed || s.status == StatusBuildFailed:
		return fmt.Sprintf("the MCP server is down (%s): %s\n\nWhat to do: fix it, then call %s.", s.status, s.report, m.cfg.SingleTool)
	case s.status == StatusStarting:
		return fmt.Sprintf("the MCP server is still starting; call %q again in a moment", name)
	}
	return fmt.Sprintf("unknown tool %q; the tools are: %s", name, strings.Join(s.front, ", "))
}

// addSingleTool adds the rebuild tool of single mode.
func (m admin) addSingleTool(srv *mcp.Server) {
	desc := "Rebuild (when a build is configured) and restart the MCP server behind mcpflow; on a failed build the running one keeps serving. Reports the compiler output or the tool changes."
	mcp.AddTool(srv, &mcp.Tool{Name: m.cfg.SingleTool, Description: desc}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		out, err := m.Reload(ctx, m.only())
		if err != nil {
			return textResult(true, out, "%s: %v", m.cfg.SingleTool, err), nil, nil
		}
		return textResult(false, out, "%s", m.reloadText("the server restarted", m.only(), out)), nil, nil
	})
}

// reloadHint is the call that rebuilds server, as a crash report names it.
func (m *Mux) reloadHint(server string) string {
	if m.cfg.Single {
		return m.cfg.SingleTool
	}
	return "reload_server {\"name\": \"" + server + "\"}"
}
