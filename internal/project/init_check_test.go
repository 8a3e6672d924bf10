package project

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestInitThenCheckWarnsNothing: for each language init supports, check
// has nothing to say about the config init just wrote for a fresh
// project (nothing built yet, no lock file yet).
func TestInitThenCheckWarnsNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		needs string // the interpreter the run command names, on PATH
		files map[string]string
	}{
		{"go", "", map[string]string{"go.mod": "module example.com/echo\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n"}},
		{"go cmd", "", map[string]string{"go.mod": "module example.com/echo\n\ngo 1.22\n", "cmd/echo-server/main.go": "package main\n\nfunc main() {}\n"}},
		{"rust", "", map[string]string{"Cargo.toml": "[package]\nname = \"echo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n", "src/main.rs": "fn main() {}\n"}},
		{"rust bin", "", map[string]string{"Cargo.toml": "[package]\nname = \"echo\"\nversion = \"0.1.0\"\n\n[[bin]]\nname = \"echo-mcp\"\npath = \"src/main.rs\"\n", "src/main.rs": "fn main() {}\n"}},
		{"typescript", "node", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig, "src/index.ts": testkit.TSServer(false)}},
		{"javascript package", "node", map[string]string{"package.json": `{"name": "echo", "version": "1.0.0", "main": "index.js", "type": "module"}`, "index.js": "console.log(1)\n"}},
		{"lone server.js", "node", map[string]string{"server.js": "console.log(1)\n"}},
		{"lone index.js", "node", map[string]string{"index.js": "console.log(1)\n"}},
		{"python pyproject", "python3", map[string]string{"pyproject.toml": "[project]\nname = \"echo\"\nversion = \"0.1.0\"\n", "server.py": "print(1)\n"}},
		{"python scripts", "python3", map[string]string{
			"pyproject.toml":           "[project]\nname = \"echo-mcp\"\nversion = \"0.1.0\"\n\n[project.scripts]\necho-mcp = \"echo_mcp.server:main\"\n",
			"src/echo_mcp/__init__.py": "", "src/echo_mcp/server.py": "def main():\n    pass\n"}},
		{"lone server.py", "python3", map[string]string{"server.py": "print(1)\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.needs != "" {
				if _, err := exec.LookPath(c.needs); err != nil {
					t.Skipf("%s is not on PATH", c.needs)
				}
			}
			dir := t.TempDir()
			testkit.WriteFiles(t, dir, c.files)
			if _, err := Init(dir, "", LauncherFor("/usr/local/bin/mcpflow", "")); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(filepath.Join(dir, "mcpflow.toml"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(cfg.Run.Command.Argv, " ") == "./server" {
				t.Fatalf("init detected no project: run.command %q", cfg.Run.Command.Argv)
			}
			scans, warnings, err := Check(cfg)
			if err != nil || len(warnings) > 0 {
				t.Errorf("check after init: %v, warnings:\n%s\nmcpflow.toml:\n%s", err, strings.Join(warnings, "\n"), testkit.ReadFile(t, filepath.Join(dir, "mcpflow.toml")))
			}
			if len(scans) != 1 || len(scans[0].Programs) != 1 {
				t.Errorf("check says nothing of the run program: %+v", scans)
			}
		})
	}
}

// TestRunProgramAndBuild: check tells a run program that exists or that
// the build writes from one that is neither, naming both, with the likely
// fix; when the build's output cannot be told, a missing program is only
// mentioned.
func TestRunProgramAndBuild(t *testing.T) {
	testkit.UnixOnly(t, "its programs have no .exe")
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{
		"Cargo.toml": "[package]\nname = \"echo\"\nversion = \"0.1.0\"\n",
		"bin/tool":   "",
	})
	for _, c := range []struct {
		build, run string
		note, warn string // a substring of the note, or of the one warning
	}{
		{"go build -o .mcpflow/echo .", ".mcpflow/echo", "run.command .mcpflow/echo: not built yet; the build writes it (go build -o .mcpflow/echo .)", ""},
		{"go build -o .mcpflow/echo .", ".mcpflow/ecoh", "",
			`mcpflow.toml:4:11: run.command ".mcpflow/ecoh" does not exist (` + filepath.Join(dir, ".mcpflow", "ecoh") + `) and the build does not write it: it writes .mcpflow/echo (go build -o .mcpflow/echo .); fix run.command or the build's output (did you mean .mcpflow/echo?)`},
		{"go build -o bin/ ./cmd/...", "bin/server", "the build writes it (go build -o bin/ ./cmd/...)", ""},
		{"cargo build", "target/debug/echo", "the build writes it (cargo build)", ""},
		{"cargo build", "target/debug/eco", "", "it writes target/debug/echo (cargo build); fix run.command or the build's output (did you mean target/debug/echo?)"},
		{"cargo build --release", "target/debug/echo", "", "it writes target/release/echo (cargo build --release)"},
		{"cargo build --release", "target/release/echo", "the build writes it (cargo build --release)", ""},
		{"esbuild src/main.ts --bundle --outfile=out/server.js && chmod +x out/server.js", "out/server.js", "the build writes it", ""},
		{"make", "bin/server", "", `run.command "bin/server" does not exist yet (` + filepath.Join(dir, "bin", "server") + `); fine if the build writes it`},
		{"go build -o .mcpflow/echo .", "bin/tool", "run.command bin/tool: exists (" + filepath.Join(dir, "bin", "tool") + ")", ""},
	} {
		doc := "[build]\ncommand = " + config.TOMLString(c.build) + "\n[run]\ncommand = [" + config.TOMLString(c.run) + "]\n"
		cfg, err := config.Parse("mcpflow.toml", []byte(doc), dir)
		if err != nil {
			t.Fatal(err)
		}
		v := checkView{cfg: cfg}
		notes, warns := commandChecks(v)
		if c.warn == "" && (len(warns) > 0 || len(notes) != 1 || !strings.Contains(notes[0], c.note)) ||
			c.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0], c.warn) || len(notes) > 0) {
			t.Errorf("build %q, run %q: notes %q, warnings %q; want note %q, warning %q", c.build, c.run, notes, warns, c.note, c.warn)
		}
	}
}
