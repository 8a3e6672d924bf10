package config

import "github.com/mcpflow/mcpflow/mux"

// Tool names in a mux: a server's tool is listed as NAME + separator +
// tool, and clients refuse long names. The limits are the mux's own.
const (
	// MaxJoinedToolName is the longest tool name clients accept: MCP
	// allows 128 characters, Claude Code and OpenAI's function names 64.
	// mcpflow check warns about names a mux would list past it; the mux
	// leaves such tools out.
	MaxJoinedToolName = mux.MaxToolName
	// MaxServerName is the longest server name a mux accepts, so that
	// NAME + separator + tool stays within MaxJoinedToolName for tools of
	// common lengths.
	MaxServerName = mux.MaxServerName
)
