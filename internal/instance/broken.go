package instance

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// brokenConfig serves a client while the config does not load: mcpflow
// answers for itself (the Go SDK's server), with problem — the file,
// line, column and fix, as check prints them — as its instructions and as
// the answer of its one tool, the rebuild tool.
func brokenConfig(problem string, logger *slog.Logger) wire.Opener {
	text := texts.BrokenConfig(problem, relay.DefaultTool)
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpflow", Version: Version}, &mcp.ServerOptions{Instructions: text})
	srv.AddTool(&mcp.Tool{Name: relay.DefaultTool, Description: texts.RecompileDescription, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	return wire.SDKServer{Server: srv, Log: logger}
}
