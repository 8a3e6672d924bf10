package config

import (
	"slices"
	"strings"
	"testing"
)

// The clients' and editors' files are never watched, in every config: the
// defaults hold them, a file's own watch.exclude does not drop them, and a
// mux's servers have them too.
func TestClientFilesIgnoredByDefault(t *testing.T) {
	for _, want := range []string{".mcp.json", ".vscode/**", ".cursor/**", ".claude/**", ".gemini/**", ".codex/**"} {
		if !slices.Contains(ClientFiles(), want) {
			t.Errorf("ClientFiles lacks %s", want)
		}
	}
	for _, c := range []struct {
		name, doc string
		watch     func(*Config) *WatchConfig
		exclude   []string
	}{
		{"defaults", minimal, func(c *Config) *WatchConfig { return &c.Watch }, nil},
		{"a TypeScript config written before", minimal + "[watch]\ninclude = [\"**/*.ts\", \"**/*.json\"]\nexclude = [\"node_modules/**\", \"dist/**\"]\n",
			func(c *Config) *WatchConfig { return &c.Watch }, []string{"node_modules/**", "dist/**"}},
		{"a mux's server", "[servers.api.run]\ncommand = [\"./api\"]\n[servers.api.watch]\nexclude = [\"tmp/**\"]\n",
			func(c *Config) *WatchConfig { return &c.Servers[0].Watch }, []string{"tmp/**"}},
	} {
		cfg := mustParse(t, c.doc)
		got := c.watch(cfg).Excludes(cfg.Dir)
		want := append(slices.Clone(c.exclude), ClientFiles()...)
		if !slices.Equal(got, want) {
			t.Errorf("%s: Excludes = %q, want %q", c.name, got, want)
		}
	}
}

// A config that names files inside an ignored folder, by a watch path or
// by an include glob's fixed start, watches them; one that lists the
// globs in its exclude already gets each once.
func TestClientFilesAskedForByName(t *testing.T) {
	cfg := mustParse(t, minimal+"[watch]\npaths = [\".\", \".vscode/ext\"]\ninclude = [\"**/*.py\", \".claude/hooks/*.py\", \".mcp.json\"]\nexclude = [\".cursor/**\"]\n")
	got := cfg.Watch.Excludes(cfg.Dir)
	for _, g := range []string{".claude/**", ".mcp.json", ".vscode/**"} {
		if slices.Contains(got, g) {
			t.Errorf("Excludes keeps %s though the config names files in it: %q", g, got)
		}
	}
	for _, g := range []string{".gemini/**", ".codex/**", ".aider*"} {
		if !slices.Contains(got, g) {
			t.Errorf("Excludes lacks %s: %q", g, got)
		}
	}
	if n := strings.Count(strings.Join(got, " "), ".cursor/**"); n != 1 {
		t.Errorf(".cursor/** %d times: %q", n, got)
	}
	for glob, want := range map[string]string{".claude/hooks/*.py": ".claude/hooks/", "**/*.json": "", ".mcp.json": ".mcp.json", "src/{a,b}.ts": "src/", "a/b?.go": "a/"} {
		if got := fixedStart(glob); got != want {
			t.Errorf("fixedStart(%q) = %q, want %q", glob, got, want)
		}
	}
}

// check's resolved settings say which files are never watched, and still
// parse back.
func TestDescribeNamesIgnoredFiles(t *testing.T) {
	cfg := mustParse(t, minimal)
	text := cfg.Describe()
	if !strings.Contains(text, "# never watched either (clients' and editors' files): .mcp.json, .vscode/**") {
		t.Errorf("Describe does not name the ignored files:\n%s", text)
	}
	if _, err := Parse("described.toml", []byte(text), "/proj"); err != nil {
		t.Errorf("Describe does not parse back: %v", err)
	}
}

// At words a warning as Parse words an error: at the value the file sets,
// else at its table, else naming the file.
func TestAtLocatesWarnings(t *testing.T) {
	cfg := mustParse(t, "[build]\ncommand = \"make\"\n\n[run]\ncommand = [\"python3\", \"sever.py\"]\n")
	for _, c := range []struct{ key, want string }{
		{"run.command", `mcpflow.toml:5:11: run.command: python3 runs sever.py`},
		{"run.cwd", `mcpflow.toml:4:1: run.cwd: python3 runs sever.py`},
		{"watch.include", `mcpflow.toml: watch.include: python3 runs sever.py`},
	} {
		if got := cfg.At(c.key, "python3 runs %s", "sever.py"); got != c.want {
			t.Errorf("At(%s) = %q, want %q", c.key, got, c.want)
		}
	}
	if got := Default("/proj").At("run.cwd", "x"); got != "run.cwd: x" {
		t.Errorf("At without a file = %q", got)
	}
	if got := cfg.errorAtItem([]string{"run", "command"}, 1, "item 2").Error(); got != "mcpflow.toml:5:23: run.command: item 2" {
		t.Errorf("errorAtItem = %q", got)
	}
	if got := Suggest("sever.py", []string{"main.py", "server.py"}); got != "server.py" {
		t.Errorf("Suggest = %q", got)
	}
}
