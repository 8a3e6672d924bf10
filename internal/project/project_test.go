package project

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpflow/mcpflow/internal/config"
)

func TestRunOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		argv  []string
		shell bool
		want  string
	}{
		{[]string{"./bin/server", "--stdio"}, false, filepath.Join(dir, "bin", "server")},
		{[]string{"node", "--enable-source-maps", "dist/index.js"}, false, filepath.Join(dir, "dist", "index.js")},
		{[]string{"python3", "server.py"}, false, filepath.Join(dir, "server.py")},
		{[]string{"node", "-e", "1"}, false, ""},
		{[]string{"npm", "start"}, false, ""},
		{[]string{"./bin/server"}, true, ""},
	} {
		cfg := config.Default(dir)
		cfg.Run.Command = config.Command{Argv: c.argv, Shell: c.shell}
		if got := RunOutput(cfg); got != c.want {
			t.Errorf("RunOutput(%q, shell %v) = %q, want %q", c.argv, c.shell, got, c.want)
		}
	}
}

// TestSplitCommandLine: RenderCLIConfig splits the schema command into words as a shell splits them, with no expansion.
func TestSplitCommandLine(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		`./bin/tool schema --json`:       {"./bin/tool", "schema", "--json"},
		`  a   'b c'  "d \"e\" $x" f\ g`: {"a", "b c", `d "e" $x`, "f g"},
		`python3 -m tool schema`:         {"python3", "-m", "tool", "schema"},
		`x '' ""`:                        {"x", "", ""},
		`$(rm -rf /) ~ *`:                {"$(rm", "-rf", "/)", "~", "*"},
	}
	for in, want := range cases {
		_, got, err := RenderCLIConfig(Project{}, in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("RenderCLIConfig(%q) schema = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{``, `   `, `a 'b`, `a "b`} {
		if _, _, err := RenderCLIConfig(Project{}, bad); err == nil {
			t.Errorf("RenderCLIConfig(%q): no error", bad)
		}
	}
}
