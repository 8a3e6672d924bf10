//go:build unix

package project

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

const goHTTPMain = `package main

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	server := mcp.NewServer(&mcp.Implementation{Name: "notes"}, nil)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	http.Handle("/rpc/mcp", handler)
	%s
}
`

const goStdioMain = `package main

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	server := mcp.NewServer(&mcp.Implementation{Name: "notes"}, nil)
	server.Run(context.Background(), &mcp.StdioTransport{})
}
`

const pyProject = "[project]\nname = \"notes\"\nversion = \"0.1.0\"\n"

// fastMCP is a FastMCP server whose last line is run.
func fastMCP(run string) string {
	return "import os\nfrom fastmcp import FastMCP\n\nmcp = FastMCP(\"notes\")\n\n@mcp.tool\ndef add(a: int, b: int) -> int:\n    return a + b\n\nif __name__ == \"__main__\":\n    " + run + "\n"
}

// TestInitHTTP: init writes run.url for a server that serves only
// Streamable HTTP (TypeScript and JavaScript SDK transports, FastMCP run
// over http, the Go SDK's handler): {port} when the source reads $PORT,
// else the port it names (FastMCP's 8000 when none), else {port} with a
// note; and no url for a stdio server, one with both transports, or one
// whose HTTP mention is only in a test, an example or a dependency.
func TestInitHTTP(t *testing.T) {
	t.Parallel()
	goMod := "module example.com/notes\n\ngo 1.26\n"
	cases := []struct {
		name  string
		files map[string]string
		url   string // "" = stdio
		says  string // in init's output
	}{
		{"ts reads PORT", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig,
			"src/index.ts": testkit.TSHTTPServer(`app.listen(Number(process.env.PORT ?? 3000));`)},
			"http://127.0.0.1:{port}/mcp", "StreamableHTTPServerTransport at src/index.ts:3 serves Streamable HTTP; it reads $PORT (process.env.PORT at src/index.ts:14)"},
		{"ts destructures PORT", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig,
			"src/index.ts": testkit.TSHTTPServer("const { PORT = \"3000\" } = process.env;\napp.listen(Number(PORT));")},
			"http://127.0.0.1:{port}/mcp", "it reads $PORT"},
		{"ts literal port", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig,
			"src/index.ts": testkit.TSHTTPServer(`app.listen(3000, () => console.error("listening"));`)},
			"http://127.0.0.1:3000/mcp", "it listens on port 3000 (at src/index.ts:14); path /mcp (at src/index.ts:8)"},
		{"js sdk 2 no port", map[string]string{"package.json": `{"name": "notes", "type": "module", "main": "server.mjs"}`,
			"server.mjs": "import { NodeStreamableHTTPServerTransport } from \"@modelcontextprotocol/node\";\nimport { createServer } from \"node:http\";\nconst opts = JSON.parse(process.argv[2]);\ncreateServer(handle).listen(opts.port);\n"},
			"http://127.0.0.1:{port}/mcp", "Check: The server serves Streamable HTTP (NodeStreamableHTTPServerTransport at server.mjs:1), but init found no port"},
		{"ts fastmcp httpStream", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig,
			"src/index.ts": "import { FastMCP } from \"fastmcp\";\nconst server = new FastMCP({ name: \"notes\", version: \"1.0.0\" });\nserver.start({\n  transportType: \"httpStream\",\n  httpStream: { port: 8080 },\n});\n"},
			"http://127.0.0.1:8080/mcp", `transportType: "httpStream" at src/index.ts:4 serves Streamable HTTP; it listens on port 8080 (at src/index.ts:5)`},
		{"ts stdio", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig, "src/index.ts": testkit.TSServer(false)}, "", ""},
		{"ts both", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig,
			"src/index.ts": testkit.TSServer(false) + "\nimport { StreamableHTTPServerTransport } from \"@modelcontextprotocol/sdk/server/streamableHttp.js\";\n"},
			"", "Note: the source has both a stdio transport (StdioServerTransport at src/index.ts:2) and a Streamable HTTP one"},
		{"ts http only in tests and node_modules", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig,
			"src/index.ts":      "import { McpServer } from \"@modelcontextprotocol/sdk/server/mcp.js\";\n",
			"src/http.test.ts":  testkit.TSHTTPServer("app.listen(3000);"),
			"examples/http.ts":  testkit.TSHTTPServer("app.listen(3000);"),
			"node_modules/x.js": testkit.TSHTTPServer("app.listen(3000);")}, "", ""},
		{"python http, port", map[string]string{"pyproject.toml": pyProject,
			"server.py": fastMCP(`mcp.run(transport="http", host="127.0.0.1", port=9000)`)},
			"http://127.0.0.1:9000/mcp", `transport="http" at server.py:11 serves Streamable HTTP; it listens on port 9000 (at server.py:11)`},
		{"python streamable-http, PORT", map[string]string{"pyproject.toml": pyProject,
			"server.py": fastMCP(`mcp.run(transport="streamable-http", port=int(os.environ.get("PORT", "8000")), path="/api/mcp")`)},
			"http://127.0.0.1:{port}/api/mcp", `it reads $PORT (environ.get("PORT" at server.py:11)`},
		{"python http, default port", map[string]string{"pyproject.toml": pyProject, "server.py": fastMCP(`mcp.run(transport="http")`)},
			"http://127.0.0.1:8000/mcp", "8000 is FastMCP's default"},
		{"python sse", map[string]string{"pyproject.toml": pyProject, "server.py": fastMCP(`mcp.run(transport="sse", port=8000)`)},
			"", `Check: The server serves the legacy HTTP+SSE transport (transport="sse" at server.py:11), which mcpflow does not speak`},
		{"python stdio run()", map[string]string{"pyproject.toml": pyProject, "server.py": fastMCP(`mcp.run()`)}, "", ""},
		{"python stdio", map[string]string{"pyproject.toml": pyProject, "server.py": fastMCP(`mcp.run(transport="stdio")`)}, "", ""},
		{"python stdlib", map[string]string{"server.py": pyFixture(t)}, "", ""},
		{"go literal port", map[string]string{"go.mod": goMod, "main.go": fmt.Sprintf(goHTTPMain, `http.ListenAndServe("localhost:8080", nil)`)},
			"http://127.0.0.1:8080/rpc/mcp", "NewStreamableHTTPHandler at main.go:11 serves Streamable HTTP; it listens on port 8080 (at main.go:13); path /rpc/mcp (at main.go:12)"},
		{"go reads PORT", map[string]string{"go.mod": goMod, "main.go": strings.Replace(fmt.Sprintf(goHTTPMain, `http.ListenAndServe(":"+os.Getenv("PORT"), nil)`), `"net/http"`, "\"net/http\"\n\t\"os\"", 1)},
			"http://127.0.0.1:{port}/rpc/mcp", `it reads $PORT (Getenv("PORT") at main.go:`},
		{"go port after a DSN", map[string]string{"go.mod": goMod, "main.go": fmt.Sprintf(goHTTPMain, "db := \"localhost:5432\"\n\t_ = db\n\tsrv := &http.Server{Addr: \":9090\"}\n\tsrv.ListenAndServe()")},
			"http://127.0.0.1:9090/rpc/mcp", "it listens on port 9090 (at main.go:15)"},
		{"go stdio", map[string]string{"go.mod": goMod, "main.go": goStdioMain}, "", ""},
		{"rust rmcp http", map[string]string{"Cargo.toml": "[package]\nname = \"notes\"\n", "src/main.rs": "use rmcp::transport::streamable_http_server::StreamableHttpService;\nasync fn main() {\n    let router = axum::Router::new().nest_service(\"/mcp\", service);\n    let listener = tokio::net::TcpListener::bind(\"127.0.0.1:8000\").await;\n}\n"},
			"http://127.0.0.1:8000/mcp", "StreamableHttpService at src/main.rs:1 serves Streamable HTTP; it listens on port 8000 (at src/main.rs:4)"},
		{"rust rmcp stdio", map[string]string{"Cargo.toml": "[package]\nname = \"notes\"\n", "src/main.rs": "use rmcp::{ServiceExt, transport::stdio};\nasync fn main() {\n    Counter::new().serve(stdio()).await;\n}\n"}, "", ""},
		{"ts stdio proxy with an HTTP client", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig,
			"src/index.ts": testkit.TSServer(false) + "\nimport { StreamableHTTPClientTransport } from \"@modelcontextprotocol/sdk/client/streamableHttp.js\";\nconst port = 3000;\n"}, "", ""},
		{"python stdio with an HTTP client", map[string]string{"pyproject.toml": pyProject,
			"server.py": "from mcp.client.streamable_http import streamablehttp_client\n" + fastMCP(`mcp.run()`)}, "", ""},
		{"go names the handler without the SDK", map[string]string{"go.mod": goMod,
			"main.go": "package main\n\n// Serves stdio; see mcp.NewStreamableHTTPHandler for HTTP.\nconst usage = `proxy to NewStreamableHTTPHandler servers on \":8080\"`\n\nfunc main() {}\n"}, "", ""},
		{"go main chooses stdio", map[string]string{"go.mod": goMod, "main.go": goStdioMain,
			"internal/web/web.go": strings.Replace(fmt.Sprintf(goHTTPMain, `http.ListenAndServe(":8080", nil)`), "package main", "package web", 1)}, "", ""},
		{"go main in cmd, handler elsewhere", map[string]string{"go.mod": goMod, "cmd/notes/main.go": "package main\n\nimport \"example.com/notes/internal/web\"\n\nfunc main() { web.Serve() }\n",
			"internal/web/web.go": strings.Replace(fmt.Sprintf(goHTTPMain, `http.ListenAndServe(":8080", nil)`), "package main", "package web", 1)},
			"http://127.0.0.1:8080/rpc/mcp", "NewStreamableHTTPHandler at internal/web/web.go:11"},
		{"go http only in a test", map[string]string{"go.mod": goMod, "main.go": goStdioMain,
			"main_test.go": fmt.Sprintf(goHTTPMain, `http.ListenAndServe(":8080", nil)`)}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			testkit.WriteFiles(t, dir, c.files)
			out, cfg := runInit(t, dir)
			if cfg.Run.URL != c.url {
				t.Errorf("run.url = %q, want %q\n%s", cfg.Run.URL, c.url, out)
			}
			if c.says != "" && !strings.Contains(out, c.says) {
				t.Errorf("init's output lacks %q:\n%s", c.says, out)
			}
			b, err := os.ReadFile(filepath.Join(dir, "mcpflow.toml"))
			if err != nil {
				t.Fatal(err)
			}
			toml := string(b)
			if c.url == "" {
				if strings.Contains(out, "  url:") || !strings.Contains(toml, "# The MCP server, speaking stdio.") || !strings.Contains(toml, "\n# url = \"http://127.0.0.1:{port}/mcp\"\n") {
					t.Errorf("a stdio server's config:\n%s\n%s", out, toml)
				}
				return
			}
			if !strings.Contains(out, "  url:   "+c.url+" (the server serves Streamable HTTP)") || !strings.Contains(out, "remove it if the server speaks stdio") {
				t.Errorf("init does not say the url and how to change it:\n%s", out)
			}
			if !strings.Contains(toml, "# Why this url: ") || !strings.Contains(toml, "\nurl = "+config.TOMLString(c.url)+"\n") || !strings.Contains(toml, "# after SIGTERM, before SIGKILL") {
				t.Errorf("mcpflow.toml:\n%s", toml)
			}
			// What init wrote raises no warning of check's about it.
			for _, w := range servingWarnings(checkView{cfg: cfg}) {
				t.Errorf("check warns about what init wrote: %s", w)
			}
		})
	}
}

// TestInitHTTPSnippet: the snippet says how to connect a client to
// mcpflow over HTTP: the watch --http command, Claude Code's line, and
// the .mcp.json / VS Code entry, in JSON that parses.
func TestInitHTTPSnippet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig})
	out, _ := runInit(t, dir)
	cfg := filepath.Join(dir, "mcpflow.toml")
	if got, want := snippetLine(t, out, testExe+" watch --http"), testExe+" watch --http 127.0.0.1:8931 -c "+shellQuote(cfg); got != want {
		t.Errorf("watch line %q, want %q", got, want)
	}
	if got := snippetLine(t, out, "then: claude mcp add --transport http"); got != "then: claude mcp add --transport http notes-server http://127.0.0.1:8931/mcp" {
		t.Errorf("Claude Code line: %s", got)
	}
	var entry map[string]struct{ Type, URL string }
	line := snippetLine(t, out, `"notes-server": { "type": "http"`)
	if err := json.Unmarshal([]byte("{"+line+"}"), &entry); err != nil || entry["notes-server"].Type != "http" || entry["notes-server"].URL != "http://127.0.0.1:8931/mcp" {
		t.Errorf("HTTP entry %s: %v %+v", line, err, entry)
	}
}

// TestCheckHTTP: check's warnings about run.url and [http] listen: a url
// the source contradicts, a missing url, {port} for a server that reads no
// PORT, a port another process holds (named), a listen address open to
// the network, a port two listeners share; and none for a config that
// fits.
func TestCheckHTTP(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	port := busy.Addr().(*net.TCPAddr).Port
	holder := "is in use by "
	if runtime.GOOS == "linux" {
		holder += fmt.Sprintf("pid %d (", os.Getpid())
	}
	ts := map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig}
	with := func(files map[string]string, more map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range files {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	run := "[run]\ncommand = [\"node\", \"dist/index.js\"]\n"
	cases := []struct {
		name  string
		files map[string]string
		toml  string
		want  []string // each in the warnings; none = no warning about HTTP
	}{
		{"url on a stdio server", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false)}), run + "url = \"http://127.0.0.1:{port}/mcp\"\n",
			[]string{"mcpflow.toml:3:7: run.url: set, but the server looks like a stdio server (StdioServerTransport at src/index.ts:2; no Streamable HTTP transport found)", "remove run.url"}},
		{"no url on an HTTP server", with(ts, map[string]string{"src/index.ts": testkit.TSHTTPServer("app.listen(Number(process.env.PORT));")}), run,
			[]string{"run.url: not set, so mcpflow talks to the server on its stdin and stdout, but the source serves Streamable HTTP (StreamableHTTPServerTransport at src/index.ts:3)", `add url = "http://127.0.0.1:{port}/mcp" to [run]`}},
		{"{port} on a fixed port", with(ts, map[string]string{"src/index.ts": testkit.TSHTTPServer("app.listen(3000);")}), run + "url = \"http://127.0.0.1:{port}/mcp\"\n",
			[]string{"its source reads no PORT and listens on port 3000 (at src/index.ts:14)", `write url = "http://127.0.0.1:3000/mcp"`}},
		{"url port in use", with(ts, map[string]string{"src/index.ts": testkit.TSHTTPServer(fmt.Sprintf("app.listen(%d);", port))}), run + fmt.Sprintf("url = \"http://127.0.0.1:%d/mcp\"\n", port),
			[]string{fmt.Sprintf("mcpflow.toml:3:7: run.url: port %d %s", port, holder), "stop that process"}},
		{"listen port in use", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false)}), run + fmt.Sprintf("[http]\nlisten = \"127.0.0.1:%d\"\n", port),
			[]string{fmt.Sprintf("mcpflow.toml:4:10: http.listen: 127.0.0.1:%d: port %d %s", port, port, holder), "mcpflow watch could not serve there"}},
		{"listen open to the network", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false)}), run + "[http]\nlisten = \"0.0.0.0:0\"\n",
			[]string{"http.listen: 0.0.0.0:0 is open to other machines"}},
		{"listen and url share a port", with(ts, map[string]string{"src/index.ts": testkit.TSHTTPServer("app.listen(8931);")}), run + "url = \"http://127.0.0.1:8931/mcp\"\n[http]\nlisten = \"127.0.0.1:8931\"\n",
			[]string{"run.url: port 8931 is also [http] listen's"}},
		{"mux servers share a port", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false)}),
			"[servers.a.run]\ncommand = [\"node\", \"a.js\"]\nurl = \"http://127.0.0.1:8932/mcp\"\n[servers.b.run]\ncommand = [\"node\", \"b.js\"]\nurl = \"http://localhost:8932/mcp\"\n",
			[]string{"servers.b.run.url: port 8932 is also servers.a.run.url's"}},
		{"fits: HTTP server with {port}", with(ts, map[string]string{"src/index.ts": testkit.TSHTTPServer("app.listen(Number(process.env.PORT));")}), run + "url = \"http://127.0.0.1:{port}/mcp\"\n[http]\nlisten = \"127.0.0.1:0\"\n", nil},
		{"fits: both transports, url", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false) + "\nimport { StreamableHTTPServerTransport } from \"@modelcontextprotocol/sdk/server/streamableHttp.js\";\n"}), run + "url = \"http://127.0.0.1:{port}/mcp\"\n", nil},
		{"fits: both transports, no url", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false) + "\nimport { StreamableHTTPServerTransport } from \"@modelcontextprotocol/sdk/server/streamableHttp.js\";\n"}), run, nil},
		{"run command asks for HTTP", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false) + "\nimport { StreamableHTTPServerTransport } from \"@modelcontextprotocol/sdk/server/streamableHttp.js\";\n"}),
			"[run]\ncommand = [\"node\", \"dist/index.js\", \"--transport\", \"http\"]\n",
			[]string{"run.url: not set, so mcpflow talks to the server on its stdin and stdout, but the run command asks for Streamable HTTP (--transport http)"}},
		{"run env asks for stdio", with(ts, map[string]string{"src/index.ts": testkit.TSHTTPServer("app.listen(Number(process.env.PORT));")}),
			run + "url = \"http://127.0.0.1:{port}/mcp\"\nenv = { MCP_TRANSPORT = \"stdio\" }\n",
			[]string{`run.url: set, but the run command asks for stdio (run.env MCP_TRANSPORT = "stdio")`}},
		{"fits: run command asks for HTTP, url", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false)}),
			"[run]\ncommand = \"TRANSPORT=http node dist/index.js\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n", nil},
		{"sse server", with(ts, map[string]string{"src/index.ts": "import { SSEServerTransport } from \"@modelcontextprotocol/sdk/server/sse.js\";\n"}), run,
			[]string{"run.url: the server serves the legacy HTTP+SSE transport (SSEServerTransport at src/index.ts:1), which mcpflow does not speak"}},
		{"run under uvicorn --reload", map[string]string{"pyproject.toml": pyProject, "server.py": fastMCP(`mcp.run(transport="http")`)},
			"[run]\ncommand = [\"uv\", \"run\", \"--with\", \"uvicorn\", \"uvicorn\", \"server:app\", \"--reload\"]\nurl = \"http://127.0.0.1:8000/mcp\"\n",
			[]string{"mcpflow.toml:2:11: run.command: restarts the server itself on each change: uvicorn server:app --reload;", "drop an HTTP client's session; run instead the same without --reload: uvicorn server:app"}},
		{"run under python -m uvicorn --reload", map[string]string{"server.py": fastMCP(`mcp.run(transport="http")`)},
			"[run]\ncommand = [\"python3\", \"-m\", \"uvicorn\", \"server:app\", \"--reload\", \"--port\", \"8000\"]\nurl = \"http://127.0.0.1:8000/mcp\"\n",
			[]string{"restarts the server itself on each change: python3 -m uvicorn server:app --reload --port 8000;"}},
		{"run a script that restarts", with(ts, map[string]string{"package.json": `{"name": "notes", "scripts": {"dev": "tsx watch src/index.ts"}}`, "src/index.ts": testkit.TSServer(false)}),
			"[run]\ncommand = \"npm run dev\"\n",
			[]string{`run.command: restarts the server itself on each change: tsx watch src/index.ts (package.json's "dev" script)`, `run instead the program it restarts, e.g. ["node", "dist/index.js"]`}},
		{"fits: node with flags", with(ts, map[string]string{"src/index.ts": testkit.TSServer(false)}), "[run]\ncommand = [\"node\", \"--enable-source-maps\", \"dist/index.js\"]\n", nil},
		{"fits: cli", map[string]string{"tool.sh": ""}, "[cli]\nschema = [\"sh\", \"tool.sh\", \"schema\"]\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			testkit.WriteFiles(t, dir, with(c.files, map[string]string{"mcpflow.toml": c.toml}))
			cfg, err := config.Load(filepath.Join(dir, "mcpflow.toml"))
			if err != nil {
				t.Fatal(err)
			}
			_, all, err := Check(cfg)
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			var warnings []string
			for _, w := range all {
				if strings.Contains(w, "url") || strings.Contains(w, "listen") || strings.Contains(w, "HTTP") {
					warnings = append(warnings, strings.TrimPrefix(w, dir+string(filepath.Separator)))
				}
			}
			got := strings.Join(warnings, "\n")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("warnings lack %q:\n%s", w, got)
				}
			}
			if len(c.want) > 0 && got == "" {
				t.Logf("check:\n%s", strings.Join(all, "\n"))
			}
			if len(c.want) == 0 && got != "" {
				t.Errorf("warnings about a config that fits:\n%s", got)
			}
		})
	}
}

// The transport a run command asks for, and the words that ask.
func TestCommandTransport(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		argv      []string
		shell     bool
		env       map[string]string
		want, why string
	}{
		{argv: []string{"node", "dist/index.js", "--transport", "http"}, want: "http", why: "--transport http"},
		{argv: []string{"uv", "run", "server.py", "--transport=streamable-http"}, want: "http", why: "--transport=streamable-http"},
		{argv: []string{"./server", "-http", ":8080"}, want: "http", why: "-http :8080"},
		{argv: []string{"./server", "--http=:8080"}, want: "http", why: "--http=:8080"},
		{argv: []string{"node", "index.js", "--stdio"}, want: "stdio", why: "--stdio"},
		{argv: []string{"MCP_TRANSPORT=stdio node index.js && echo"}, shell: true, want: "stdio", why: "MCP_TRANSPORT=stdio"},
		{argv: []string{"node", "index.js"}, env: map[string]string{"TRANSPORT": "HTTP"}, want: "http", why: `run.env TRANSPORT = "HTTP"`},
		{argv: []string{"node", "index.js", "--transport", "sse"}},
		{argv: []string{"node", "index.js", "--transport"}},
		{argv: []string{"node", "index.js", "--port", "3000"}},
	} {
		got, why := commandTransport(config.Command{Argv: c.argv, Shell: c.shell}, c.env)
		if got != c.want || why != c.why {
			t.Errorf("%q %v: %q (%q), want %q (%q)", c.argv, c.env, got, why, c.want, c.why)
		}
	}
}

// TestInitHTTPReachesServer: the url init writes for a real TypeScript
// SDK server over Streamable HTTP is where it answers: started as mcpflow
// starts it ({port} a free port, passed as $PORT), a Go SDK client at the
// url lists and calls its tool.
func TestInitHTTPReachesServer(t *testing.T) {
	t.Parallel()
	deps := testkit.TSCDeps(t)
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{
		"package.json": `{"name": "notes-http", "version": "1.0.0", "type": "module", "main": "server.js"}`,
		"server.js":    testkit.JSHTTPServer,
	})
	if err := os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	_, cfg := runInit(t, dir)
	if cfg.Run.URL != "http://127.0.0.1:{port}/mcp" || strings.Join(cfg.Run.Command.Argv, " ") != "node server.js" {
		t.Fatalf("init: run %q, url %q", cfg.Run.Command.Argv, cfg.Run.URL)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfg.Run.Command.Argv[0], cfg.Run.Command.Argv[1:]...)
	cmd.Dir = cfg.Run.Cwd
	cmd.Env = append(os.Environ(), "PORT="+port)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || !strings.Contains(line, "listening") {
		t.Fatalf("the server did not start: %q %v", line, err)
	}
	url := strings.Replace(cfg.Run.URL, config.PortPlaceholder, port, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "init-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "5" {
		t.Fatalf("add at %s: %v %+v", url, err, res)
	}
}
