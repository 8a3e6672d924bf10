//go:build unix

package project

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// pyFixture is the standard-library MCP server the Python layouts run.
func pyFixture(t *testing.T) string {
	t.Helper()
	return testkit.ReadFile(t, filepath.Join("testdata", "python", "server.py"))
}

// startGenerated starts the run command of cfg as mcpflow would (in
// run.cwd, with run.env added) under the Go SDK client, and returns the
// session; the process group is killed at cleanup.
func startGenerated(t *testing.T, cfg *config.Config) *mcp.ClientSession {
	t.Helper()
	argv := cfg.Run.Command.Argv
	if cfg.Run.Command.Shell {
		argv = []string{"sh", "-c", argv[0]}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if strings.ContainsRune(argv[0], '/') {
		cmd.Path = config.AbsFrom(cfg.Run.Cwd, argv[0])
	}
	cmd.Dir = cfg.Run.Cwd
	cmd.Env = os.Environ()
	for k, v := range cfg.Run.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "init-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		t.Fatalf("connect to %q: %v", argv, err)
	}
	t.Cleanup(func() {
		cs.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestInitPython runs init on the Python layouts people use, checks the
// run command it picked, then starts that command under the Go SDK client
// and calls its tools.
func TestInitPython(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	server := pyFixture(t)
	scripts := "[project]\nname = \"notes-server\"\nversion = \"0.1.0\"\n[project.scripts]\nnotes-server = \"notes_server.app:main\"\n"
	cases := []struct {
		name  string
		files map[string]string
		venv  bool     // create .venv with the python3 on PATH
		needs string   // a tool the run command needs, skipped without it
		run   []string // the run command init must write
		env   map[string]string
		note  string // in init's output, "" for none
	}{
		{
			name:  "pyproject and server.py",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"notes-server\"\nversion = \"0.1.0\"\n", "server.py": server},
			run:   []string{"python3", "server.py"},
		},
		{
			name:  "main.py only",
			files: map[string]string{"main.py": server},
			run:   []string{"python3", "main.py"},
		},
		{
			name:  "server.py beside app.py",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n", "app.py": "raise SystemExit(1)\n", "server.py": server},
			run:   []string{"python3", "server.py"},
			note:  "Picked server.py: it is the most likely top-level script (server.py, main.py, app.py, in that order). Also found: app.py.",
		},
		{
			name:  "package with __main__.py",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"notes-server\"\n", "notes/__init__.py": "", "notes/__main__.py": server},
			run:   []string{"python3", "-m", "notes"},
		},
		{
			name:  "src layout package",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"notes-server\"\n", "src/notes/__init__.py": "", "src/notes/__main__.py": server},
			run:   []string{"python3", "-m", "notes"},
			env:   map[string]string{"PYTHONPATH": "src"},
		},
		{
			name:  "scripts entry",
			files: map[string]string{"pyproject.toml": scripts, "notes_server/__init__.py": "", "notes_server/app.py": server, "tool.py": "print(1)\n"},
			run:   []string{"python3", "-c", "import sys; from notes_server.app import main; sys.exit(main())"},
			note:  "Picked the script notes-server (notes_server.app:main): [project.scripts] is how the project says it is run. Also found: tool.py.",
		},
		{
			name:  "scripts entry, src layout",
			files: map[string]string{"pyproject.toml": scripts, "src/notes_server/__init__.py": "", "src/notes_server/app.py": server},
			run:   []string{"python3", "-c", "import sys; from notes_server.app import main; sys.exit(main())"},
			env:   map[string]string{"PYTHONPATH": "src"},
		},
		{
			name:  "virtual environment",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"notes-server\"\n", "server.py": server},
			venv:  true,
			run:   []string{".venv/bin/python", "server.py"},
		},
		{
			name:  "uv",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"notes-server\"\nversion = \"0.1.0\"\nrequires-python = \">=3.8\"\n", "uv.lock": "version = 1\n", "server.py": server},
			needs: "uv",
			run:   []string{"uv", "run", "server.py"},
		},
		{
			name:  "uv, scripts entry with a build system",
			files: map[string]string{"pyproject.toml": scripts + "[build-system]\nrequires = [\"hatchling\"]\nbuild-backend = \"hatchling.build\"\n", "uv.lock": "version = 1\n", "notes_server/__init__.py": "", "notes_server/app.py": server},
			needs: "uv",
			run:   []string{"uv", "run", "notes-server"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			testkit.WriteFiles(t, dir, c.files)
			if c.venv {
				if out, err := exec.Command("python3", "-m", "venv", "--without-pip", filepath.Join(dir, ".venv")).CombinedOutput(); err != nil {
					t.Fatalf("python3 -m venv: %v\n%s", err, out)
				}
			}
			out, cfg := runInit(t, dir)
			if !strings.Contains(out, "project: python") {
				t.Errorf("init output: %s", out)
			}
			if !slices.Equal(cfg.Run.Command.Argv, c.run) {
				t.Fatalf("run.command = %q, want %q", cfg.Run.Command.Argv, c.run)
			}
			for k, v := range c.env {
				if cfg.Run.Env[k] != v {
					t.Errorf("run.env[%s] = %q, want %q", k, cfg.Run.Env[k], v)
				}
			}
			if len(c.env) == 0 && len(cfg.Run.Env) != 0 {
				t.Errorf("run.env = %v, want none", cfg.Run.Env)
			}
			if b := cfg.Build.Command.Argv; len(b) != 1 || !strings.Contains(b[0], "xargs -0 "+cfg.Run.Command.Argv[0]) || !strings.HasSuffix(b[0], " -m py_compile") {
				t.Errorf("a Python project's build is not a syntax check with its interpreter: %v (run %v)", cfg.Build.Command, cfg.Run.Command)
			}
			switch {
			case c.note == "" && strings.Contains(out, "Check:"):
				t.Errorf("unexpected note:\n%s", out)
			case c.note != "" && !strings.Contains(out, c.note):
				t.Errorf("init output lacks %q:\n%s", c.note, out)
			}
			if c.needs != "" {
				if _, err := exec.LookPath(c.needs); err != nil {
					t.Skipf("%s not installed: the generated command is checked, not run", c.needs)
				}
			}
			cs := startGenerated(t, cfg)
			if got := callText(t, cs, "add", map[string]any{"a": 2, "b": 3}); got != "5" {
				t.Fatalf("add = %q", got)
			}
			if c.venv {
				want, _ := filepath.EvalSymlinks(filepath.Join(dir, ".venv"))
				got, _ := filepath.EvalSymlinks(callText(t, cs, "where", nil))
				if got != want {
					t.Fatalf("the server ran in %s, not the project's .venv (%s)", got, want)
				}
			}
		})
	}
}
