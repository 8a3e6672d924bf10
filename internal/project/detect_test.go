package project

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestStripJSONC: comments and trailing commas go, strings stay whole.
func TestStripJSONC(t *testing.T) {
	t.Parallel()
	in := `{
  // a comment with "quotes", and a comma,
  "a": "http://x/*y*/", /* block
  comment */ "b": [1, 2,],
  "c": "say \"//hi\"",
  "d": {"e": true,},
}`
	var got map[string]any
	if err := json.Unmarshal(stripJSONC([]byte(in)), &got); err != nil {
		t.Fatalf("%v\n%s", err, stripJSONC([]byte(in)))
	}
	if got["a"] != "http://x/*y*/" || got["c"] != `say "//hi"` || len(got["b"].([]any)) != 2 || got["d"].(map[string]any)["e"] != true {
		t.Fatalf("got %v", got)
	}
	for _, s := range []string{`{"a": "unterminated`, `/* open`, `{,}`, ``, `"\`} {
		stripJSONC([]byte(s)) // never panics
	}
}

// TestTSOutput: a source maps through rootDir into outDir.
func TestTSOutput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ts   tsConfig
		src  string
		want string
	}{
		{tsConfig{OutDir: "dist", RootDir: "src"}, "src/index.ts", "dist/index.js"},
		{tsConfig{OutDir: "dist", RootDir: "src"}, "src/sub/a.mts", "dist/sub/a.mjs"},
		{tsConfig{OutDir: "dist", RootDir: "src"}, "other/a.ts", ""},
		{tsConfig{OutDir: "dist"}, "src/index.ts", "dist/index.js"},
		{tsConfig{OutDir: "dist", Major: 6}, "src/index.ts", "dist/src/index.js"},
		{tsConfig{OutDir: "dist", RootDir: "."}, "src/index.cts", "dist/src/index.cjs"},
		{tsConfig{}, "src/index.ts", "src/index.js"},
		{tsConfig{OutDir: "dist"}, "", ""},
	}
	for _, c := range cases {
		if got := tsOutput(c.ts, c.src); got != c.want {
			t.Errorf("tsOutput(%+v, %q) = %q, want %q", c.ts, c.src, got, c.want)
		}
	}
}

// TestNodeEntryWarning is what mcpflow check reports for a node entry point
// that neither exists nor will be built.
func TestNodeEntryWarning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{
		"tsconfig.json": `{"compilerOptions": {"rootDir": "./src", "outDir": "./dist",},}`,
		"src/index.ts":  "export {}",
		"server.js":     "",
	})
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"node", "dist/index.js"}, ""},
		{[]string{"node", "--enable-source-maps", "./dist/index.js"}, ""},
		{[]string{"node", "server.js"}, ""},
		{[]string{"./server"}, ""},
		{[]string{"node", "index.js"}, "run.command starts index.js, which does not exist, and tsc will not write it (tsconfig.json: outDir \"dist\", rootDir \"src\"); the build writes src/index.ts → dist/index.js"},
	} {
		if got := NodeEntryWarning(dir, config.Command{Argv: c.argv}); got != c.want {
			t.Errorf("%q: %q, want %q", c.argv, got, c.want)
		}
	}
	if got := projectOutputs(dir); len(got) != 1 || got[0] != filepath.Join(dir, "dist") {
		t.Errorf("projectOutputs = %q", got)
	}
	plain := t.TempDir()
	if got := NodeEntryWarning(plain, config.Command{Argv: []string{"node", "index.js"}}); !strings.Contains(got, "no tsconfig.json") {
		t.Errorf("without tsconfig.json: %q", got)
	}
	if got := projectOutputs(plain); got != nil {
		t.Errorf("projectOutputs without tsconfig.json = %q", got)
	}
}

// TestProjectWarnings: what check reports for a TypeScript project whose
// config runs a file tsc never writes and watches tsc's output; the config
// init writes for it has neither problem.
func TestProjectWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{
		"package.json":  `{"name": "n", "main": "index.js", "scripts": {"build": "tsc"}}`,
		"tsconfig.json": `{"compilerOptions": {"rootDir": "src", "outDir": "dist"}}`,
		"src/index.ts":  "export {}",
		"bad.toml":      "[build]\ncommand = \"npm run build\"\n[run]\ncommand = [\"node\", \"index.js\"]\n[watch]\ninclude = [\"**/*.ts\", \"**/*.js\"]\n",
	})
	cfg, err := config.Load(filepath.Join(dir, "bad.toml"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(projectWarnings(cfg), "\n")
	for _, want := range []string{
		"run.command starts index.js, which does not exist, and tsc will not write it",
		`the watch globs cover dist/, where the build writes (tsconfig.json outDir)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	_, cfg = runInit(t, dir)
	if w := projectWarnings(cfg); len(w) != 0 {
		t.Errorf("warnings for the config init wrote: %q", w)
	}
}

// testExe is the mcpflow binary the init tests say is running.
const testExe = "/opt/mcpflow/bin/mcpflow"

// runInit runs init on dir (Init, as mcpflow init DIR does) and returns
// what it tells the user; the generated config must load.
func runInit(t *testing.T, dir string) (string, *config.Config) {
	t.Helper()
	out, err := Init(dir, "", LauncherFor(testExe, ""))
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	cfg, err := config.Load(filepath.Join(dir, "mcpflow.toml"))
	if err != nil {
		t.Fatalf("the generated config does not load: %v", err)
	}
	return out, cfg
}

// TestInitEmptyFolder: init in an empty folder writes nothing and says
// where to run it; one with only a ./server binary gets its config.
func TestInitEmptyFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{".git/HEAD": "ref: refs/heads/main\n"})
	if _, err := Init(dir, "", LauncherFor(testExe, "")); err == nil || !strings.Contains(err.Error(), "is empty: run mcpflow init in your server's folder") {
		t.Errorf("init in an empty folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcpflow.toml")); err == nil {
		t.Error("init in an empty folder wrote mcpflow.toml")
	}
	testkit.WriteFiles(t, dir, map[string]string{"server": "#!/bin/sh\n"})
	if _, cfg := runInit(t, dir); cfg.Run.Command.Argv[0] != "./server" {
		t.Errorf("run.command %q", cfg.Run.Command.Argv)
	}
}
