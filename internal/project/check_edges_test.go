package project

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/mux"
	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/mcpflow/mcpflow/internal/watcher"
)

// A build in watch mode is found in the command, through runners, and
// through the package.json scripts it runs; one that builds once is not.
func TestWatchModeBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{"package.json": `{"scripts": {
		"build": "tsc", "build:w": "tsc -b -w", "dev": "tsx watch src/index.ts", "watch": "node build.mjs",
		"both": "tsc && npm run bundle -- --watch", "bundle": "esbuild src/x.ts --bundle",
		"serve": "vite", "ok": "vite build && rollup -c", "loop": "npm run loop"}}`})
	for _, c := range []struct {
		cmd       string
		part, via string // "" part: no watch mode
	}{
		{"tsc --watch", "tsc --watch", ""},
		{"npx tsc -w -p .", "tsc -w -p .", ""},
		{"npm run build:w", "tsc -b -w", `package.json's "build:w" script`},
		{"npm run build -- --watch", "tsc --watch", `package.json's "build" script`},
		{"pnpm dev", "tsx watch src/index.ts", `package.json's "dev" script`},
		{"yarn run both", "esbuild src/x.ts --bundle --watch", `package.json's "both" → "bundle" scripts`},
		{"npm run watch", "npm run watch", ""},
		{"npm run serve", "vite", `package.json's "serve" script`},
		{"NODE_ENV=dev nodemon dist/index.js", "nodemon dist/index.js", ""},
		{"node --watch server.js", "node --watch server.js", ""},
		{"cargo watch -x build", "cargo watch -x build", ""},
		{"go run github.com/air-verse/air@latest -c .air.toml", "go run github.com/air-verse/air@latest -c .air.toml", ""},
		{"make generate && make watch", "make watch", ""},
		{"rollup -c -w", "rollup -c -w", ""},
		{"webpack --watch=true", "webpack --watch=true", ""},
		{"dotnet watch build", "dotnet watch build", ""},
		{"watchexec -e go -- go build .", "watchexec -e go -- go build .", ""},
		// Once.
		{"npm run build", "", ""},
		{"npm run ok", "", ""},
		{"npm run loop", "", ""},
		{"go build -o .mcpflow/server .", "", ""},
		{"cargo build", "", ""},
		{"grep -w x file && go build", "", ""},
		{"esbuild --watch=false x.ts", "", ""},
		{"npm run missing", "", ""},
		{"echo 'tsc --watch'", "", ""},
	} {
		w := watchModeBuild(dir, config.Command{Argv: []string{c.cmd}, Shell: true})
		switch {
		case c.part == "" && w != nil:
			t.Errorf("%q: watch mode %+v", c.cmd, *w)
		case c.part != "" && w == nil:
			t.Errorf("%q: no watch mode found", c.cmd)
		case w != nil && (w.part != c.part || w.via != c.via || w.instead == ""):
			t.Errorf("%q: %+v, want part %q via %q", c.cmd, *w, c.part, c.via)
		}
	}
	// An array command, as run.command or build.command may be written.
	if w := watchModeBuild(dir, config.Command{Argv: []string{"tsc", "--watch"}}); w == nil {
		t.Error(`["tsc", "--watch"]: no watch mode found`)
	}
	if w := watchModeBuild(dir, config.Command{}); w != nil {
		t.Errorf("no build: %+v", *w)
	}
}

// The script file an interpreter runs, through the runners that start it,
// with the folder it is relative to.
func TestScriptOf(t *testing.T) {
	testkit.UnixOnly(t, "compares Unix absolute paths (/p)")
	t.Parallel()
	for _, c := range []struct {
		argv        []string
		script, dir string // "" script: none
	}{
		{[]string{"python3", "sever.py"}, "sever.py", "/p"},
		{[]string{"python3", "-u", "-W", "ignore", "server.py", "--port", "1"}, "server.py", "/p"},
		{[]string{".venv/bin/python", "-X", "utf8", "app.py"}, "app.py", "/p"},
		{[]string{"python3", "-m", "notes"}, "", ""},
		{[]string{"python3", "-c", "import x"}, "", ""},
		{[]string{"uv", "run", "server.py"}, "server.py", "/p"},
		{[]string{"uv", "run", "--with", "mcp", "--directory", "srv", "python", "main.py"}, "main.py", "/p/srv"},
		{[]string{"uv", "run", "--directory=srv", "app/main.py"}, "app/main.py", "/p/srv"},
		{[]string{"uv", "run", "notes"}, "", ""},
		{[]string{"poetry", "run", "python", "x.py"}, "x.py", "/p"},
		{[]string{"env", "A=1", "ruby", "-C", "lib", "-I", "inc", "s.rb"}, "s.rb", "/p/lib"},
		{[]string{"ruby", "-e", "puts 1"}, "", ""},
		{[]string{"bash", "-e", "run.sh"}, "run.sh", "/p"},
		{[]string{"sh", "-c", "exec cat"}, "", ""},
		{[]string{"node", "-r", "dotenv/config", "dist/index.js"}, "dist/index.js", "/p"},
		{[]string{"node", "--import=tsx", "src/index.ts"}, "src/index.ts", "/p"},
		{[]string{"node", "-e", "1"}, "", ""},
		{[]string{"npx", "-y", "tsx", "src/index.ts"}, "src/index.ts", "/p"},
		{[]string{"deno", "run", "-A", "--config", "deno.json", "main.ts"}, "main.ts", "/p"},
		{[]string{"deno", "run", "-A", "jsr:@std/http/file-server"}, "", ""},
		{[]string{"deno", "task", "start"}, "", ""},
		{[]string{"deno", "main.ts"}, "main.ts", "/p"},
		{[]string{"bun", "run", "src/index.ts"}, "src/index.ts", "/p"},
		{[]string{"bun", "--cwd", "srv", "index.ts"}, "index.ts", "/p/srv"},
		{[]string{"bun", "run", "start"}, "", ""},
		{[]string{"php", "-d", "x=1", "-f", "s.php"}, "s.php", "/p"},
		{[]string{"./server", "x.py"}, "", ""},
	} {
		sr, ok := scriptOf(c.argv, "/p")
		if ok != (c.script != "") || ok && (sr.script != c.script || sr.dir != filepath.FromSlash(c.dir)) {
			t.Errorf("%q: %+v %v, want %q in %q", c.argv, sr, ok, c.script, c.dir)
		}
	}
}

// Data files in the watched tree: logs, databases, JSON that is no
// config; source and config are not.
func TestDataFile(t *testing.T) {
	t.Parallel()
	for f, glob := range map[string]string{
		"notes.json":          "notes.json",
		"server.log":          "**/*.log",
		"logs/app.txt":        "logs/**",
		"sub/data/x.json":     "sub/data/**",
		"state.db":            "state.db",
		"state.db-wal":        "state.db-wal",
		"events.jsonl":        "events.jsonl",
		"app.log.1":           "app.log.1",
		"package.json":        "",
		"tsconfig.build.json": "",
		".eslintrc.json":      "",
		"server.json":         "",
		"src/strings.json":    "",
		"data/loader.py":      "",
		"src/index.ts":        "",
		"main.go":             "",
	} {
		got, ok := dataFile(f)
		if got != glob || ok != (glob != "") {
			t.Errorf("dataFile(%q) = %q %v, want %q", f, got, ok, glob)
		}
	}
}

// Editing the clients' files never rebuilds, also with a config written
// before init excluded them (a TypeScript project's "**/*.json"); a
// project file still does.
func TestClientFilesNeverWatched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{
		"mcpflow.toml": "[run]\ncommand = [\"node\", \"dist/index.js\"]\n[watch]\ninclude = [\"**/*.ts\", \"**/*.json\"]\nexclude = [\"node_modules/**\", \"dist/**\"]\ndebounce = \"20ms\"\n",
		"package.json": "{}", ".mcp.json": "{}", ".vscode/mcp.json": "{}", ".cursor/mcp.json": "{}",
		".claude/settings.json": "{}", ".gemini/settings.json": "{}", ".codex/config.json": "{}",
	})
	cfg, err := config.Load(filepath.Join(dir, "mcpflow.toml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := watcher.Scan(WatchConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(files, []string{"package.json"}) {
		t.Errorf("watched files %q, want only package.json", files)
	}
	w, err := watcher.New(WatchConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan watcher.Batch, 4)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, out) }()
	defer func() { cancel(); <-done }()
	<-w.Ready()
	for _, f := range []string{".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json", ".claude/settings.json", ".claude/settings.local.json", ".gemini/settings.json", ".codex/config.json"} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f)), []byte(`{"changed": true}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WriteFiles(t, dir, map[string]string{"src/a.json": "{}"})
	select {
	case b := <-out:
		if !slices.Equal(b.Paths, []string{"src/a.json"}) {
			t.Errorf("batch %q, want only src/a.json", b.Paths)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no batch for src/a.json")
	}
}

// The warnings of run.cwd and of an interpreter's script, at the key to
// fix; a build that may write them softens them.
func TestCommandWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{"server.py": "", "file": ""})
	load := func(doc string) checkView {
		t.Helper()
		cfg, err := config.Parse("mcpflow.toml", []byte(doc), dir)
		if err != nil {
			t.Fatal(err)
		}
		return checkView{cfg: cfg}
	}
	for _, c := range []struct {
		doc, want, not string
	}{
		{"[run]\ncommand = [\"python3\", \"sever.py\"]\n", "mcpflow.toml:2:11: run.command: python3 runs sever.py, which does not exist", ""},
		{"[build]\ncommand = \"make\"\n[run]\ncommand = [\"python3\", \"gen.py\"]\n", "python3 runs gen.py, which does not exist yet", ""},
		{"[build]\ncommand = \"make\"\n[run]\ncommand = [\"python3\", \"build/gen.py\"]\n", "", "gen.py"},
		{"[run]\ncommand = [\"python3\", \"server.py\"]\n", "", "server.py"},
		{"[run]\ncommand = [\"./server\"]\ncwd = \"nowhere\"\n", "mcpflow.toml:3:7: run.cwd: " + filepath.Join(dir, "nowhere") + " does not exist", "not found"},
		{"[run]\ncommand = [\"./server\"]\ncwd = \"file\"\n", "run.cwd: " + filepath.Join(dir, "file") + " is not a folder", "not found"},
		{"[build]\ncommand = \"make\"\n[run]\ncommand = [\"./server\"]\ncwd = \"out\"\n", "does not exist yet: fine if build.command creates it", "not found"},
		{"[cli]\nschema = [\"python3\", \"tool.py\", \"schema\"]\n", "mcpflow.toml:2:10: cli.schema: python3 runs tool.py, which does not exist", ""},
	} {
		_, warnings := commandChecks(load(c.doc))
		got := strings.Join(warnings, "\n")
		if c.want != "" && !strings.Contains(got, c.want) || c.want == "" && c.not == "" && got != "" {
			t.Errorf("%s: warnings %q, want %q", c.doc, got, c.want)
		}
		if c.not != "" && strings.Contains(got, c.not) {
			t.Errorf("%s: warnings %q mention %q", c.doc, got, c.not)
		}
	}
}

// A mux's names: a separator that lets a server's tool take a management
// tool's name, and server names past what the mux accepts.
func TestMuxNameWarnings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		doc  string
		want []string
	}{
		{"[servers.api.run]\ncommand = [\"x\"]\n", nil},
		{"[mux]\nseparator = \"-\"\n[servers.api.run]\ncommand = [\"x\"]\n", nil},
		{"[mux]\nseparator = \"_\"\n[servers.api.run]\ncommand = [\"x\"]\n", []string{`mux.separator: "_" makes`, `a server "list" with a tool "servers" would be listed as list_servers`}},
		{"[mux]\nseparator = \"_s\"\n[servers.add.run]\ncommand = [\"x\"]\n", []string{`a server "add" with a tool "erver" would be listed as add_server`, `servers.add: with mux.separator "_s", this server's tool "erver"`}},
		{"[mux]\nseparator = \".\"\n[relay]\ncall_tool = \"call.tool\"\n[servers.call.run]\ncommand = [\"x\"]\n", []string{`servers.call: with mux.separator ".", this server's tool "tool" would be listed as call.tool`}},
		{"[servers." + strings.Repeat("n", mux.MaxServerName+1) + ".run]\ncommand = [\"x\"]\n", []string{"is 33 characters long: the mux refuses names over 32"}},
		{"[mux]\nseparator = \"--------------------\"\n[servers." + strings.Repeat("n", 30) + ".run]\ncommand = [\"x\"]\n", []string{"leaves 14 characters for its tools' names"}},
	} {
		cfg, err := config.Parse("mcpflow.toml", []byte(c.doc), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(muxNameWarnings(cfg), "\n")
		if len(c.want) == 0 && got != "" {
			t.Errorf("%s: warnings %q", c.doc, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: warnings lack %q:\n%s", c.doc, w, got)
			}
		}
	}
}

// node's script is missing before the build: fine when a build other
// than tsc writes it (esbuild's --outfile, a dist/ folder), named when
// there is no build to write it.
func TestNodeScriptOfOtherBuilds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		doc  string
		warn bool
	}{
		{"[build]\ncommand = \"esbuild src/x.js --bundle --outfile=out/server.js\"\n[run]\ncommand = [\"node\", \"out/server.js\"]\n", false},
		{"[build]\ncommand = \"npm run bundle\"\n[run]\ncommand = [\"node\", \"dist/index.js\"]\n", false},
		{"[build]\ncommand = \"make\"\n[run]\ncommand = [\"node\", \"server.js\"]\n", true},
		{"[run]\ncommand = [\"node\", \"dist/index.js\"]\n", true},
	} {
		cfg, err := config.Parse("mcpflow.toml", []byte(c.doc), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(projectWarnings(cfg), "\n")
		if c.warn != strings.Contains(got, "which does not exist") {
			t.Errorf("%s: warnings %q", c.doc, got)
		}
	}
}

// What the build command says it writes is never watched: -o, --outdir,
// --outfile, attached or not, in a shell line of several commands, and
// tsconfig.json's outDir.
func TestBuildOutputsIgnored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{
		"mcpflow.toml":  "[build]\ncommand = \"go build -o bin/server . && esbuild web/x.ts --outfile=web/x.js && cp a b --outdir out\"\n[run]\ncommand = [\"bin/server\"]\n",
		"tsconfig.json": `{"compilerOptions": {"outDir": "dist"}}`,
	})
	cfg, err := config.Load(filepath.Join(dir, "mcpflow.toml"))
	if err != nil {
		t.Fatal(err)
	}
	got := IgnoredOutputs(cfg)
	for _, want := range []string{"bin/server", "web/x.js", "out", "dist"} {
		if !slices.Contains(got, filepath.Join(dir, want)) {
			t.Errorf("%s is watched; ignored: %q", want, got)
		}
	}
}
