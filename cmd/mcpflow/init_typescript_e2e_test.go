//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// shellIn runs script with sh -c in dir, as mcpflow runs build commands.
func shellIn(dir, script string) (string, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInitTypeScript runs init on TypeScript projects as npm and tsc leave
// them, checks what it derived, runs the generated config under mcpflow
// with the Go SDK client (which builds with the generated command), saves a
// new tool, and checks that the generated build command emits nothing on a
// type error.
func TestInitTypeScript(t *testing.T) {
	t.Parallel()
	deps := testkit.TSCDeps(t)
	cases := []struct {
		name      string
		files     map[string]string
		build     string
		run       string
		exclude   string
		entrySrc  string
		save      bool // save a new tool under mcpflow
		typeError bool // check that a type error emits nothing
	}{
		{
			name:      "npm default",
			files:     map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig},
			build:     "npm run build -- --noEmitOnError",
			run:       `["node", "dist/index.js"]`,
			exclude:   `"node_modules/**", "package-lock.json", "dist/**"`,
			entrySrc:  "src/index.ts",
			save:      true,
			typeError: true,
		},
		{
			name: "bin string",
			files: map[string]string{
				"package.json":  testkit.NPMInitPackage(`"bin": "./dist/index.js",`),
				"tsconfig.json": testkit.TSCInitConfig,
			},
			build:    "npm run build -- --noEmitOnError",
			run:      `["node", "dist/index.js"]`,
			exclude:  `"node_modules/**", "package-lock.json", "dist/**"`,
			entrySrc: "src/index.ts",
		},
		{
			name: "bin object, outDir build, no build script",
			files: map[string]string{
				"package.json": `{"name": "@acme/notes-server", "type": "module", "bin": {"other": "./build/other.js", "notes-server": "./build/server.js"}}`,
				"tsconfig.json": strings.NewReplacer(`"./dist"`, `"./build"`, `"strict": true,`, `"strict": true, "noEmitOnError": false,`).
					Replace(testkit.TSCInitConfig),
			},
			build:     "npx --no -- tsc --noEmitOnError",
			run:       `["node", "build/server.js"]`,
			exclude:   `"node_modules/**", "package-lock.json", "build/**"`,
			entrySrc:  "src/server.ts",
			typeError: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			testkit.WriteFiles(t, dir, c.files)
			testkit.WriteFiles(t, dir, map[string]string{c.entrySrc: testkit.TSServer(false)})
			if err := os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
				t.Fatal(err)
			}
			out, cfg := runInit(t, dir)
			if !strings.Contains(out, "project: typescript") {
				t.Errorf("init output: %s", out)
			}
			toml := testkit.ReadFile(t, filepath.Join(dir, "mcpflow.toml"))
			for _, want := range []string{
				"command = " + config.TOMLString(c.build),
				"command = " + c.run,
				"exclude = [\n  " + c.exclude + ",\n  # Your MCP clients'",
				"--noEmitOnError: tsc writes its JavaScript even when type-checking fails",
			} {
				if !strings.Contains(toml, want) {
					t.Errorf("mcpflow.toml lacks %s:\n%s", want, toml)
				}
			}
			if strings.Contains(out, "Check:") {
				t.Errorf("init warns about a layout that works:\n%s", out)
			}
			if w := project.NodeEntryWarning(cfg.Dir, cfg.Run.Command); w != "" {
				t.Errorf("nodeEntryWarning before the build: %s", w)
			}

			// The generated config builds and runs the server under mcpflow.
			h := startE2E(t, dir, "", "watch", "-c", "mcpflow.toml")
			h.waitTools("add")
			if got, isErr := h.call("add", map[string]any{"a": 2, "b": 3}); isErr || got != "5" {
				t.Fatalf("add: %q %v", got, isErr)
			}
			if c.save {
				testkit.WriteFiles(t, dir, map[string]string{c.entrySrc: testkit.TSServer(true)})
				h.waitTools("sub")
				if got, isErr := h.call("sub", map[string]any{"a": 2, "b": 3}); isErr || got != "-1" {
					t.Fatalf("sub: %q %v", got, isErr)
				}
			}
			if !c.typeError {
				return
			}
			// A type error fails the generated build command and leaves the
			// last good output in place (mcpflow's own build of the save runs
			// the same command).
			entry := filepath.Join(dir, cfg.Run.Command.Argv[1])
			good := testkit.ReadFile(t, entry)
			testkit.WriteFiles(t, dir, map[string]string{c.entrySrc: testkit.TSServer(c.save) + "\nconst broken: number = \"text\";\n"})
			build := cfg.Build.Command.Argv[0]
			if out, err := shellIn(dir, build); err == nil {
				t.Fatalf("%s passed on a type error:\n%s", build, out)
			}
			if got := testkit.ReadFile(t, entry); got != good {
				t.Fatalf("a failed build rewrote %s:\n%s", entry, got)
			}
		})
	}
}

// TestInitStartsGoAndJavaScript: the configs init writes for a Go module
// (examples/echo without its mcpflow.toml) and for a plain JavaScript
// project as npm leaves it (main: index.js, no build) start their server
// under mcpflow, and a Go SDK client calls a tool.
func TestInitStartsGoAndJavaScript(t *testing.T) {
	t.Parallel()
	t.Run("go", func(t *testing.T) {
		dir := copyExample(t)
		if err := os.Remove(filepath.Join(dir, "mcpflow.toml")); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Join(dir, ".mcpflow"))
		out, _ := runInit(t, dir)
		if !strings.Contains(out, "project: go") {
			t.Errorf("init output: %s", out)
		}
		h := startE2E(t, dir, "", "watch")
		h.waitTools("echo")
		if got, isErr := h.call("echo", map[string]any{"text": "from init"}); isErr || got != "from init" {
			t.Fatalf("echo: %q %v", got, isErr)
		}
	})
	t.Run("javascript", func(t *testing.T) {
		deps := testkit.TSCDeps(t)
		dir := t.TempDir()
		js := strings.Replace(testkit.TSServer(false), `const server = new McpServer({ name: "notes", version: "1.0.0" });`, `const server = new McpServer({ name: "js", version: "1.0.0" });`, 1)
		testkit.WriteFiles(t, dir, map[string]string{
			"package.json": `{"name": "js-server", "version": "1.0.0", "type": "module", "main": "index.js", "scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}`,
			"index.js":     js,
		})
		if err := os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		_, cfg := runInit(t, dir)
		if b := cfg.Build.Command.Argv; len(b) != 1 || !strings.HasSuffix(b[0], "node --check") || strings.Join(cfg.Run.Command.Argv, " ") != "node index.js" {
			t.Fatalf("init for plain JavaScript: build %v, run %v", cfg.Build.Command.Argv, cfg.Run.Command.Argv)
		}
		h := startE2E(t, dir, "", "watch")
		h.waitTools("add")
		if got, isErr := h.call("add", map[string]any{"a": 2, "b": 3}); isErr || got != "5" {
			t.Fatalf("add: %q %v", got, isErr)
		}
	})
}
