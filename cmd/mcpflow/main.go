// Command mcpflow is a hot-reload dev server for MCP servers.
package main

import (
	_ "github.com/pelletier/go-toml/v2"
)

func main() {}
