// Package relay is the JSON-RPC relay between an MCP client and a child MCP server.
package relay

import (
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
)
