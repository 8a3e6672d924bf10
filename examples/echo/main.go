// Command echo is the MCP server the mcpflow demo and README use: a Go SDK
// server with one tool, built by mcpflow.toml in this folder. Edit it while
// mcpflow runs and watch the client receive the new tools.
package main

import (
	"context"
	"log"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type textArgs struct {
	Text string `json:"text" jsonschema:"the text to work on"`
}

func main() {
	// stdout carries the protocol: log to stderr only.
	logger := log.New(os.Stderr, "echo: ", 0)
	server := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)

	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Return the text unchanged."},
		func(ctx context.Context, req *mcp.CallToolRequest, args textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil, nil
		})

	mcp.AddTool(server, &mcp.Tool{Name: "shout", Description: "Return the text in upper case."},
		func(ctx context.Context, req *mcp.CallToolRequest, args textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(args.Text)}}}, nil, nil
		})

	// New tools go here.

	logger.Println("serving on stdio")
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		logger.Fatal(err)
	}
}
