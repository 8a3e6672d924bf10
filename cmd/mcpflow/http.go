package main

// httpFlag adds --http to a serving command's flags.
func httpFlag(fs *flagSet) *string {
	return fs.String("http", "", "serve MCP over Streamable HTTP at http://ADDR/mcp (ADDR = host:port, port 0 = a free one) instead of stdin/stdout; [http] listen")
}
