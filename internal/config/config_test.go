package config

import (
	"errors"
	"github.com/mcpflow/mcpflow/internal/testkit"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// plain returns c without the bookkeeping that differs between equal
// settings (how the file was named and where its keys were).
func plain(c *Config) Config {
	cc := *c
	cc.name, cc.src = "", nil
	return cc
}

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	c, err := Parse("mcpflow.toml", []byte(doc), "/proj")
	if err != nil {
		t.Fatalf("Parse:\n%s\nerror: %v", doc, err)
	}
	return c
}

const minimal = "[run]\ncommand = [\"./bin/server\"]\n"

// located matches a message that names the file, the line and the column.
var located = regexp.MustCompile(`^mcpflow\.toml:[1-9][0-9]*:[1-9][0-9]*: `)

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		// want is the first line of the error, up to its end or a prefix
		// of it; more lists the prefixes of further lines.
		want string
		more []string
	}{
		// TOML syntax: go-toml's position and words.
		{"syntax", minimal + "x = = 1\n",
			`mcpflow.toml:3:5: unexpected character U+003D '=' at start of value`, nil},
		{"syntax unterminated string", "[run]\ncommand = \"./bin/server\n",
			`mcpflow.toml:2:24: basic strings cannot have new lines`, nil},
		{"duplicate key", minimal + "command = [\"y\"]\n",
			`mcpflow.toml:3:1: run.command: key command is already defined`, nil},
		{"duplicate table", minimal + "[run]\n",
			`mcpflow.toml:3:2: run: table run already exists`, nil},

		// Unknown keys, with suggestions.
		{"unknown table", minimal + "\n[bulid]\ncommand = \"make\"\n",
			`mcpflow.toml:4:1: unknown key "bulid" (did you mean "build"?)`, nil},
		{"unknown dotted key", "bulid.command = \"make\"\n" + minimal,
			`mcpflow.toml:1:1: unknown key "bulid" (did you mean "build"?)`, nil},
		{"unknown key in table", "[run]\ncomand = [\"x\"]\n",
			`mcpflow.toml:2:1: unknown key "comand" in [run] (did you mean "command"?)`, nil},
		{"unknown key dash and case", minimal + "Stop-Timeout = \"1s\"\n",
			`mcpflow.toml:3:1: unknown key "Stop-Timeout" in [run] (did you mean "stop_timeout"?)`, nil},
		{"unknown key part of a word", minimal + "timeout = \"1s\"\n",
			`mcpflow.toml:3:1: unknown key "timeout" in [run] (did you mean "stop_timeout"?)`, nil},
		{"unknown key of another table", minimal + "include = [\"**/*.go\"]\n",
			`mcpflow.toml:3:1: unknown key "include" in [run] (did you mean "include" under [watch]?)`, nil},
		{"top-level key of a table", "command = [\"x\"]\n" + minimal,
			`mcpflow.toml:1:1: unknown key "command" (did you mean "command" under [build] or [run] or [cli]?)`, nil},
		{"unknown key no suggestion", minimal + "zzz = 1\n",
			`mcpflow.toml:3:1: unknown key "zzz" in [run]`, nil},
		{"unknown key in inline table", "run = { comand = [\"x\"] }\n",
			`mcpflow.toml:1:9: unknown key "comand" in [run] (did you mean "command"?)`, nil},
		{"unknown key in sub-table", minimal + "[relay.extra]\nx = 1\n",
			`mcpflow.toml:3:1: unknown key "extra" in [relay]`, nil},
		{"key case", "[Run]\ncommand = [\"x\"]\n",
			`mcpflow.toml:1:1: unknown key "Run" (keys are case-sensitive: write "run")`, nil},
		{"several unknown keys", "[run]\ncommand = [\"x\"]\nenvs = {}\n[watch]\ndebunce = \"1s\"\n",
			`mcpflow.toml:3:1: unknown key "envs" in [run] (did you mean "env"?)`,
			[]string{`mcpflow.toml:5:1: unknown key "debunce" in [watch] (did you mean "debounce"?)`}},

		// Wrong types.
		{"duration as integer", minimal + "stop_timeout = 2\n",
			`mcpflow.toml:3:16: run.stop_timeout: expected a duration like "2s", got integer 2; durations are strings with a unit: write "2s" or "2ms"`, nil},
		{"duration as float", minimal + "[watch]\ndebounce = 0.5\n",
			`mcpflow.toml:4:12: watch.debounce: expected a duration like "2s", got float 0.5; durations are strings with a unit: write "0.5s" or "0.5ms"`, nil},
		{"duration as boolean", minimal + "[build]\ntimeout = true\n",
			`mcpflow.toml:4:11: build.timeout: expected a duration like "2s", got boolean true`, nil},
		{"boolean as string", minimal + "[relay]\nnotices = \"yes\"\n",
			`mcpflow.toml:4:11: relay.notices: expected true or false, got string "yes"`, nil},
		{"boolean quoted", minimal + "[watch]\nenabled = 'false'\n",
			`mcpflow.toml:4:11: watch.enabled: expected true or false, got string 'false'; remove the quotes: false`, nil},
		{"integer as string", minimal + "[relay]\nqueue_size = \"12\"\n",
			`mcpflow.toml:4:14: relay.queue_size: expected a whole number, got string "12"; remove the quotes: 12`, nil},
		{"integer as float", minimal + "[relay]\nqueue_size = 1.5\n",
			`mcpflow.toml:4:14: relay.queue_size: expected a whole number, got float 1.5`, nil},
		{"string as integer", minimal + "[relay]\ntool = 7\n",
			`mcpflow.toml:4:8: relay.tool: expected a string, got integer 7; quote it: "7"`, nil},
		{"env value as integer", minimal + "env = { PORT = 8080 }\n",
			`mcpflow.toml:3:16: run.env.PORT: expected a string, got integer 8080; quote it: "8080"`, nil},
		{"env value in sub-table", minimal + "[run.env]\nPORT = 8080\n",
			`mcpflow.toml:4:8: run.env.PORT: expected a string, got integer 8080; quote it: "8080"`, nil},
		{"env as string", minimal + "env = \"A=1\"\n",
			`mcpflow.toml:3:7: run.env: expected a table of strings, like { KEY = "value" }, got string "A=1"`, nil},
		{"array as string", minimal + "[watch]\npaths = \"src\"\n",
			`mcpflow.toml:4:9: watch.paths: expected an array of strings, like ["a", "b"], got string "src"; write an array: ["src"]`, nil},
		{"array element", minimal + "[watch]\nexclude = [\"a\", 1]\n",
			`mcpflow.toml:4:17: watch.exclude[1]: expected a string, got integer 1; quote it: "1"`, nil},
		{"table as value", "run = 1\n",
			`mcpflow.toml:1:7: run: expected a table, like [run], got integer 1`, nil},
		{"command as integer", "[run]\ncommand = 1\n",
			`mcpflow.toml:2:11: run.command: expected a command: a string (run by sh -c) or an array of strings, like ["./bin/server", "--stdio"], got integer 1`, nil},
		{"command element", "[run]\ncommand = [\"./bin/server\", 2]\n",
			`mcpflow.toml:2:11: run.command: expected a command: a string (run by sh -c) or an array of strings, like ["./bin/server", "--stdio"], got integer 2 as item 2`, nil},
		{"command element in inline table", "run = { command = [\"x\", true] }\n",
			`mcpflow.toml:1:19: run.command: expected a command`, nil},
		{"command as table header", "[run.command]\nx = 1\n",
			`mcpflow.toml:1:1: run.command: expected a command: a string (run by sh -c) or an array of strings, like ["./bin/server", "--stdio"], got a table`, nil},
		{"command as dotted table", "[run]\ncommand.x = 1\n",
			`mcpflow.toml:2:1: run.command: expected a command: a string (run by sh -c) or an array of strings, like ["./bin/server", "--stdio"], got a table (run.command.x)`, nil},
		{"env value as table", minimal + "[run.env.A]\nx = 1\n",
			`mcpflow.toml:3:1: run.env.A: expected a string, got a table`, nil},
		{"array of tables", "[[run]]\ncommand = [\"x\"]\n",
			`mcpflow.toml:1:1: run: [[run]] makes an array of tables; write [run]`, nil},

		// Durations.
		{"duration bad string", minimal + "stop_timeout = \"2 secs\"\n",
			`mcpflow.toml:3:16: run.stop_timeout: expected a duration like "2s", got string "2 secs"; write a number with a unit (ns, us, ms, s, m, h), e.g. "500ms", "2s", "1m30s"`, nil},
		{"duration without unit", minimal + "[relay]\nqueue_timeout = \"30\"\n",
			`mcpflow.toml:4:17: relay.queue_timeout: expected a duration like "2s", got string "30" with no unit; write "30s" or "30ms"`, nil},
		{"duration days", minimal + "[build]\ntimeout = \"1d\"\n",
			`mcpflow.toml:4:11: build.timeout: expected a duration like "2s", got string "1d"; write a number with a unit (ns, us, ms, s, m, h)`, nil},
		{"duration empty", minimal + "[watch]\ndebounce = \"\"\n",
			`mcpflow.toml:4:12: watch.debounce: expected a duration like "2s", got an empty string; write a number with a unit`, nil},
		{"duration negative", minimal + "stop_timeout = \"-1s\"\n",
			`mcpflow.toml:3:16: run.stop_timeout: must not be negative, got "-1s"`, nil},
		{"duration zero timeout", minimal + "[build]\ntimeout = \"0s\"\n",
			`mcpflow.toml:4:11: build.timeout: must be more than 0, got "0s"`, nil},
		{"queue_timeout zero", minimal + "[relay]\nqueue_timeout = \"0\"\n",
			`mcpflow.toml:4:17: relay.queue_timeout: must be more than 0, got "0s"`, nil},

		// Sizes.
		{"size bad string", minimal + "[relay]\nmax_message = \"64 megs\"\n",
			`mcpflow.toml:4:15: relay.max_message: expected a size like "64MiB", got string "64 megs"; write a number of bytes, or a number with a unit: KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "512KiB", "64MiB", "1GB"`, nil},
		{"size ambiguous unit", minimal + "[relay]\nmax_message = \"64M\"\n",
			`mcpflow.toml:4:15: relay.max_message: expected a size like "64MiB", got string "64M"; "M" is ambiguous: write MiB (powers of 1024) or MB (powers of 1000)`, nil},
		{"size negative", minimal + "[relay]\nqueue_bytes = -1\n",
			`mcpflow.toml:4:15: relay.queue_bytes: expected a size like "64MiB", got integer -1; a size cannot be negative`, nil},
		{"size float", minimal + "[relay]\nqueue_bytes = 1.5\n",
			`mcpflow.toml:4:15: relay.queue_bytes: expected a size like "64MiB", got float 1.5; write a number of bytes`, nil},
		{"size overflow", minimal + "[relay]\nqueue_bytes = \"9000000TiB\"\n",
			`mcpflow.toml:4:15: relay.queue_bytes: expected a size like "64MiB", got string "9000000TiB"; write a number of bytes`, nil},
		{"size too small", minimal + "[relay]\nmax_message = \"1000B\"\n",
			`mcpflow.toml:4:15: relay.max_message: must be at least 1KiB, got 1000`, nil},
		{"queue_bytes too small", minimal + "[relay]\nqueue_bytes = 0\n",
			`mcpflow.toml:4:15: relay.queue_bytes: must be at least 1KiB, got 0`, nil},

		// The run command.
		{"missing run", "",
			`mcpflow.toml: run.command is required: the command that starts your MCP server, e.g. command = ["./bin/server"]`, nil},
		{"missing run with other tables", "[build]\ncommand = \"make\"\n",
			`mcpflow.toml: run.command is required: the command that starts your MCP server, e.g. command = ["./bin/server"]`, nil},
		{"run without command", "[build]\ncommand = \"make\"\n\n[run]\ncwd = \"x\"\n",
			`mcpflow.toml:4:1: run.command is required: the command that starts your MCP server, e.g. command = ["./bin/server"]`, nil},
		{"empty command array", "[run]\ncommand = []\n",
			`mcpflow.toml:2:11: run.command is required: the command that starts your MCP server, e.g. command = ["./bin/server"]`, nil},
		{"blank command string", "[run]\ncommand = \"  \"\n",
			`mcpflow.toml:2:11: run.command is required: the command that starts your MCP server`, nil},
		{"empty program", "[run]\ncommand = [\"\", \"x\"]\n",
			`mcpflow.toml:2:11: run.command: the program name (the first item) is empty`, nil},
		{"empty build program", minimal + "[build]\ncommand = [\"\"]\n",
			`mcpflow.toml:4:11: build.command: the program name (the first item) is empty`, nil},

		// Enumerations and names.
		{"on_crash", minimal + "[relay]\non_crash = \"restarts\"\n",
			`mcpflow.toml:4:12: relay.on_crash: "restarts" is not one of "restart", "wait" (did you mean "restart"?)`, nil},
		{"on_crash far", minimal + "[relay]\non_crash = \"explode\"\n",
			`mcpflow.toml:4:12: relay.on_crash: "explode" is not one of "restart", "wait"`, nil},
		{"log level", minimal + "[log]\nlevel = \"warning\"\n",
			`mcpflow.toml:4:9: log.level: "warning" is not one of "debug", "info", "warn", "error" (did you mean "warn"?)`, nil},
		{"log level case", minimal + "[log]\nlevel = \"DEBUG\"\n",
			`mcpflow.toml:4:9: log.level: "DEBUG" is not one of "debug", "info", "warn", "error" (did you mean "debug"?)`, nil},
		{"tool name", minimal + "[relay]\ntool = \"re compile\"\n",
			`mcpflow.toml:4:8: relay.tool: "re compile" is not a valid tool name: use letters, digits, '_', '.' and '-' only (found ' ')`, nil},
		{"tool name empty", minimal + "[relay]\ntool = \"\"\n",
			`mcpflow.toml:4:8: relay.tool: must not be empty`, nil},
		{"tool name long", minimal + "[relay]\ntool = \"" + strings.Repeat("a", 129) + "\"\n",
			`mcpflow.toml:4:8: relay.tool: is 129 characters long; tool names have at most 128`, nil},
		{"call_tool same as tool", minimal + "[relay]\ntool = \"rebuild\"\ncall_tool = \"rebuild\"\n",
			`mcpflow.toml:5:13: relay.call_tool: must differ from relay.tool (both are "rebuild")`, nil},
		{"call_tool same as default tool", minimal + "[relay]\ncall_tool = \"recompile\"\n",
			`mcpflow.toml:4:13: relay.call_tool: must differ from relay.tool (both are "recompile")`, nil},
		{"call_tool name", minimal + "[relay]\ncall_tool = \"call/tool\"\n",
			`mcpflow.toml:4:13: relay.call_tool: "call/tool" is not a valid tool name`, nil},

		// Other ranges.
		{"queue_size", minimal + "[relay]\nqueue_size = 0\n",
			`mcpflow.toml:4:14: relay.queue_size: must be at least 1, got 0`, nil},
		{"restart_marker", minimal + "[relay]\nrestart_marker = \"a\\nb\"\n",
			`mcpflow.toml:4:18: relay.restart_marker: must be a single line`, nil},
		{"env name", minimal + "env = { \"A=B\" = \"x\" }\n",
			`mcpflow.toml:3:17: run.env."A=B": a variable name cannot contain '=' or NUL`, nil},
		{"env_overridable name", minimal + "env_overridable = [\"A\", \"\"]\n",
			`mcpflow.toml:3:25: run.env_overridable: "": the name is empty`, nil},
		{"watch paths empty", minimal + "[watch]\npaths = []\n",
			`mcpflow.toml:4:9: watch.paths: is empty: list at least one folder to watch`, nil},
		{"watch path blank", minimal + "[watch]\npaths = [\".\", \"\"]\n",
			`mcpflow.toml:4:15: watch.paths: item 2 is empty`, nil},
		{"include empty", minimal + "[watch]\ninclude = []\n",
			`mcpflow.toml:4:11: watch.include: is empty; remove it to include every file (the default, ["**/*"]), or list globs such as ["**/*.go", "go.mod"]`, nil},
		{"bad glob", minimal + "[watch]\nexclude = [\"ok/**\", \"[a\"]\n",
			`mcpflow.toml:4:21: watch.exclude: pattern "[a" is not a valid glob`, nil},
		{"absolute glob", minimal + "[watch]\ninclude = [\"/src/**\"]\n",
			`mcpflow.toml:4:12: watch.include: pattern "/src/**" is absolute; patterns match paths relative to the config file's folder, e.g. "src/**"`, nil},

		// Several problems at once, in the order of the document.
		{"several", minimal + "[relay]\ntool = \"a b\"\nmax_message = 12\n[log]\nlevel = \"loud\"\n",
			`mcpflow.toml:4:8: relay.tool: `,
			[]string{`mcpflow.toml:5:15: relay.max_message: `, `mcpflow.toml:7:9: log.level: `}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("mcpflow.toml", []byte(tt.doc), "/proj")
			if err == nil {
				t.Fatalf("no error for:\n%s", tt.doc)
			}
			lines := strings.Split(err.Error(), "\n")
			if !strings.HasPrefix(lines[0], tt.want) {
				t.Errorf("error:\n got: %s\nwant: %s", lines[0], tt.want)
			}
			if len(lines) != 1+len(tt.more) {
				t.Errorf("got %d lines, want %d:\n%s", len(lines), 1+len(tt.more), err)
			}
			for i, want := range tt.more {
				if i+1 < len(lines) && !strings.HasPrefix(lines[i+1], want) {
					t.Errorf("line %d:\n got: %s\nwant: %s", i+2, lines[i+1], want)
				}
			}
			// Every error names the line and column, except "no run
			// command" when the file has no [run] at all.
			if !strings.HasPrefix(tt.name, "missing run") {
				for _, l := range lines {
					if !located.MatchString(l) {
						t.Errorf("no file:line:col in %q", l)
					}
				}
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	testkit.UnixOnly(t, "compares Unix absolute paths (/proj)")
	c := Default("/proj")
	want := Config{Dir: "/proj"}
	want.Build.Timeout = 10 * time.Minute
	want.Run.Cwd = "/proj"
	want.Run.Env = map[string]string{}
	want.Run.EnvOverridable = []string{}
	want.Run.StopTimeout = 2 * time.Second
	want.Relay.Tool = "recompile"
	want.Relay.MaxMessage = 64 << 20
	want.Relay.Notices = true
	want.Relay.OnCrash = "restart"
	want.Relay.MaxChildren = 16
	want.Relay.QueueSize = 256
	want.Relay.QueueBytes = 32 << 20
	want.Relay.QueueTimeout = 30 * time.Second
	want.Relay.Handshake = 30 * time.Second
	want.Relay.Drain = 5 * time.Second
	want.Watch.Enabled = true
	want.Watch.Paths = []string{"/proj"}
	want.Watch.Include = []string{"**/*"}
	want.Watch.Exclude = []string{}
	want.Watch.GitIgnore = true
	want.Watch.Debounce = 50 * time.Millisecond
	want.Watch.Ignore = ClientFiles()
	want.Log.Level = "info"
	want.Log.Format = "text"
	want.Log.MaxSize = 16 << 20
	want.Log.TrafficMaxMessage = 64 << 10
	want.Log.TrafficMaxSize = 16 << 20
	want.HTTP = HTTPConfig{MaxSessions: 1000, IdleTimeout: 30 * time.Minute}
	want.Mux = MuxConfig{Separator: "__", AddServer: true, AllowedCommands: []string{}, AllowedEnv: []string{}, Drain: 5 * time.Second}
	if !reflect.DeepEqual(plain(c), want) {
		t.Errorf("defaultConfig:\n got %+v\nwant %+v", plain(c), want)
	}
	if err := c.Validate(); err == nil || err.Error() != `run.command is required: the command that starts your MCP server, e.g. command = ["./bin/server"]` {
		t.Errorf("validate without a run command: %v", err)
	}
	c.Run.Command = Command{Argv: []string{"server"}}
	if err := c.Validate(); err != nil {
		t.Errorf("validate defaults: %v", err)
	}

	// A file with only the run command resolves to the defaults.
	got := mustParse(t, minimal)
	want.Run.Command = Command{Argv: []string{"./bin/server"}}
	if !reflect.DeepEqual(plain(got), want) {
		t.Errorf("minimal file:\n got %+v\nwant %+v", plain(got), want)
	}
}

func TestDefaultConfigRelativeDir(t *testing.T) {
	c := Default("testdata")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "testdata"); c.Dir != want || c.Run.Cwd != want || c.Watch.Paths[0] != want {
		t.Errorf("Dir %q, Cwd %q, Paths %q; want all %q", c.Dir, c.Run.Cwd, c.Watch.Paths, want)
	}
}

func TestFlagsConfigValidate(t *testing.T) {
	c := Default("/proj")
	c.Run.Command = Command{Argv: []string{"x"}}
	c.Relay.Tool = "a b"
	c.Watch.Debounce = -time.Second
	err := c.Validate()
	want := "relay.tool: \"a b\" is not a valid tool name: use letters, digits, '_', '.' and '-' only (found ' ')\n" +
		"watch.debounce: must not be negative, got \"-1s\""
	if err == nil || err.Error() != want {
		t.Errorf("validate:\n got %v\nwant %s", err, want)
	}
}

func TestLoadConfig(t *testing.T) {
	testkit.UnixOnly(t, "compares Unix absolute paths (/proj)")
	c, err := Load("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wd, "testdata")
	want := *Default(dir)
	want.File = filepath.Join(dir, "full.toml")
	want.Build.Command = Command{Argv: []string{"go", "build", "-o", "bin/server", "./cmd/server"}}
	want.Build.Timeout = 90 * time.Second
	want.Run.Command = Command{Argv: []string{"./bin/server --stdio 2>&1"}, Shell: true}
	want.Run.Cwd = filepath.Join(dir, "srv")
	want.Run.Env = map[string]string{"LOG_LEVEL": "debug", "my.var": `a "quoted" value`}
	want.Run.EnvOverridable = []string{"LOG_LEVEL"}
	want.Run.StopTimeout = 500 * time.Millisecond
	want.Relay.Tool = "rebuild"
	want.Relay.MaxMessage = 1 << 20
	want.Relay.Notices = false
	want.Relay.OnCrash = "wait"
	want.Relay.RestartMarker = "RESTART ME"
	want.Relay.ServerSuffix = "-dev"
	want.Relay.CallTool = "call"
	want.Relay.QueueSize = 16
	want.Relay.QueueBytes = 1 << 20
	want.Relay.QueueTimeout = time.Minute
	want.Watch.Enabled = false
	want.Watch.Paths = []string{filepath.Join(dir, "src"), filepath.Join(wd, "shared"), "/abs/dir"}
	want.Watch.Include = []string{"**/*.go", "go.mod"}
	want.Watch.Exclude = []string{"**/*_test.go"}
	want.Watch.GitIgnore = false
	want.Watch.Debounce = 250 * time.Millisecond
	want.Watch.Poll = time.Second
	want.Log.Level = "debug"
	want.Log.File = filepath.Join(dir, "logs", "mcpflow.log")
	if !reflect.DeepEqual(plain(c), plain(&want)) {
		t.Errorf("loadConfig:\n got %+v\nwant %+v", plain(c), plain(&want))
	}
}

func TestLoadConfigErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "mcpflow.toml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}

	path := filepath.Join(t.TempDir(), "mcpflow.toml")
	if err := os.WriteFile(path, []byte("[run]\ncommand = [\"x\"]\nstop_timeout = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if want := path + `:3:16: run.stop_timeout: expected a duration like "2s", got integer 2`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want prefix %s", err, want)
	}
}

func TestPaths(t *testing.T) {
	testkit.UnixOnly(t, "compares Unix absolute paths (/proj)")
	c := mustParse(t, `
[run]
command = ["./bin/server"]
cwd = "cmd/server/../server/"

[watch]
paths = [".", "..", "/etc/x", "sub/dir"]
include = ["./**/*.go", ".//x", "go.mod"]
exclude = ["./vendor/**"]

[log]
file = "log/out.log"
`)
	if c.Dir != "/proj" || c.File != "" {
		t.Errorf("Dir %q File %q", c.Dir, c.File)
	}
	if c.Run.Cwd != "/proj/cmd/server" {
		t.Errorf("Cwd %q", c.Run.Cwd)
	}
	if want := []string{"/proj", "/", "/etc/x", "/proj/sub/dir"}; !slices.Equal(c.Watch.Paths, want) {
		t.Errorf("Paths %q, want %q", c.Watch.Paths, want)
	}
	if want := []string{"**/*.go", "x", "go.mod"}; !slices.Equal(c.Watch.Include, want) {
		t.Errorf("Include %q, want %q", c.Watch.Include, want)
	}
	if want := []string{"vendor/**"}; !slices.Equal(c.Watch.Exclude, want) {
		t.Errorf("Exclude %q, want %q", c.Watch.Exclude, want)
	}
	if c.Log.File != "/proj/log/out.log" {
		t.Errorf("Log.File %q", c.Log.File)
	}
	// The program of an exec'd command is left alone: it is resolved
	// against run.cwd when the server starts.
	if c.Run.Command.Argv[0] != "./bin/server" {
		t.Errorf("Argv %q", c.Run.Command.Argv)
	}

	abs := mustParse(t, minimal+"cwd = \"/srv\"\n[log]\nfile = \"/var/log/m.log\"\n")
	if abs.Run.Cwd != "/srv" || abs.Log.File != "/var/log/m.log" {
		t.Errorf("absolute paths changed: %q %q", abs.Run.Cwd, abs.Log.File)
	}
}

func TestCommandForms(t *testing.T) {
	tests := []struct {
		name, doc string
		want      Command
	}{
		{"string", `command = "go run ./cmd/server"`, Command{Argv: []string{"go run ./cmd/server"}, Shell: true}},
		{"literal string", `command = 'echo "$HOME"'`, Command{Argv: []string{`echo "$HOME"`}, Shell: true}},
		{"escapes", `command = "printf 'a\tb\n' \u00e9"`, Command{Argv: []string{"printf 'a\tb\n' é"}, Shell: true}},
		{"multi-line string", "command = \"\"\"\nmake &&\n./server\"\"\"", Command{Argv: []string{"make &&\n./server"}, Shell: true}},
		{"array", `command = ["./bin/server", "--stdio"]`, Command{Argv: []string{"./bin/server", "--stdio"}}},
		{"array with spaces", `command = ["my server", "a b"]`, Command{Argv: []string{"my server", "a b"}}},
		{"multi-line array", "command = [\n  \"./bin/server\", # the binary\n  \"--stdio\",\n]", Command{Argv: []string{"./bin/server", "--stdio"}}},
		{"one-element array", `command = ["./bin/server"]`, Command{Argv: []string{"./bin/server"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, doc := range []string{
				"[run]\n" + tt.doc + "\n",
				"[build]\n" + tt.doc + "\n[run]\n" + tt.doc + "\n",
			} {
				c := mustParse(t, doc)
				if !reflect.DeepEqual(c.Run.Command, tt.want) {
					t.Errorf("run.command = %#v, want %#v", c.Run.Command, tt.want)
				}
				if strings.HasPrefix(doc, "[build]") && !reflect.DeepEqual(c.Build.Command, tt.want) {
					t.Errorf("build.command = %#v, want %#v", c.Build.Command, tt.want)
				}
			}
		})
	}

	// Other ways to write the table.
	for _, doc := range []string{
		"run = { command = [\"a\", \"b\"] }\n",
		"run.command = [\"a\", \"b\"]\n",
		"[run]\ncommand = [ 'a', \"b\" ]\n",
	} {
		if c := mustParse(t, doc); !slices.Equal(c.Run.Command.Argv, []string{"a", "b"}) || c.Run.Command.Shell {
			t.Errorf("%q: %#v", doc, c.Run.Command)
		}
	}

	// An empty build command means no build step.
	for _, doc := range []string{minimal, minimal + "[build]\ncommand = \"\"\n", minimal + "[build]\ncommand = []\n"} {
		if c := mustParse(t, doc); !c.Build.Command.IsZero() {
			t.Errorf("%q: build command %#v, want none", doc, c.Build.Command)
		}
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{`"100ms"`, 100 * time.Millisecond},
		{`"2s"`, 2 * time.Second},
		{`"5m"`, 5 * time.Minute},
		{`"1h30m"`, 90 * time.Minute},
		{`"1m 30s"`, 90 * time.Second},
		{`" 2s "`, 2 * time.Second},
		{`"1.5s"`, 1500 * time.Millisecond},
		{`"250us"`, 250 * time.Microsecond},
		{`"250µs"`, 250 * time.Microsecond},
		{`"0"`, 0},
		{`"0s"`, 0},
		{`'3s'`, 3 * time.Second},
	}
	for _, tt := range tests {
		c := mustParse(t, minimal+"stop_timeout = "+tt.in+"\n[watch]\ndebounce = "+tt.in+"\n")
		if c.Run.StopTimeout != tt.want || c.Watch.Debounce != tt.want {
			t.Errorf("%s: stop_timeout %v, debounce %v, want %v", tt.in, c.Run.StopTimeout, c.Watch.Debounce, tt.want)
		}
	}

	// poll: "" is off.
	if c := mustParse(t, minimal+"[watch]\npoll = \"\"\n"); c.Watch.Poll != 0 {
		t.Errorf("poll \"\" = %v, want 0", c.Watch.Poll)
	}
	if c := mustParse(t, minimal+"[watch]\npoll = \"500ms\"\n"); c.Watch.Poll != 500*time.Millisecond {
		t.Errorf("poll = %v, want 500ms", c.Watch.Poll)
	}

	// Every duration key takes a duration and rejects a bare integer.
	for _, key := range []string{"build.timeout", "run.stop_timeout", "relay.queue_timeout", "watch.debounce", "watch.poll"} {
		table, name, _ := strings.Cut(key, ".")
		doc := minimal + "[" + table + "]\n" + name + " = 7\n"
		if table == "run" {
			doc = minimal + name + " = 7\n"
		}
		c := mustParse(t, strings.Replace(doc, " = 7", ` = "7s"`, 1))
		got := map[string]time.Duration{
			"build.timeout": c.Build.Timeout, "run.stop_timeout": c.Run.StopTimeout,
			"relay.queue_timeout": c.Relay.QueueTimeout, "watch.debounce": c.Watch.Debounce, "watch.poll": c.Watch.Poll,
		}[key]
		if got != 7*time.Second {
			t.Errorf("%s = %v, want 7s", key, got)
		}
		_, err := Parse("mcpflow.toml", []byte(doc), "/proj")
		if want := key + `: expected a duration like "2s", got integer 7; durations are strings with a unit: write "7s" or "7ms"`; err == nil || !strings.HasSuffix(err.Error(), want) || !located.MatchString(err.Error()) {
			t.Errorf("%s = 7: %v", key, err)
		}
	}
}

func TestSizes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{`1048576`, 1 << 20},
		{`1_048_576`, 1 << 20},
		{`0x100000`, 1 << 20},
		{`"1048576"`, 1 << 20},
		{`"2048B"`, 2048},
		{`"512KiB"`, 512 << 10},
		{`"64MiB"`, 64 << 20},
		{`"64mib"`, 64 << 20},
		{`"64 MiB"`, 64 << 20},
		{`"1GiB"`, 1 << 30},
		{`"1TiB"`, 1 << 40},
		{`"1.5MiB"`, 3 << 19},
		{`"2KB"`, 2000},
		{`"64MB"`, 64e6},
		{`"1GB"`, 1e9},
		{`"2TB"`, 2e12},
		{`"1.0005MB"`, 1000500},
		{`"1.00000001KiB"`, 1024},
	}
	for _, tt := range tests {
		c := mustParse(t, minimal+"[relay]\nmax_message = "+tt.in+"\nqueue_bytes = "+tt.in+"\n")
		if c.Relay.MaxMessage != tt.want || c.Relay.QueueBytes != tt.want {
			t.Errorf("%s: max_message %d, queue_bytes %d, want %d", tt.in, c.Relay.MaxMessage, c.Relay.QueueBytes, tt.want)
		}
	}
	for _, bad := range []string{"", "MiB", "1.2.3MiB", ".5MiB", "5.MiB", "-1MiB", "1 PiB", "1e6", "64M", "lots", "10000000000TB"} {
		if n, _, ok := parseSize(bad); ok {
			t.Errorf("parseSize(%q) = %d, want an error", bad, n)
		}
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"command", "timeout", "stop_timeout", "queue_size", "env", "env_overridable"}
	tests := []struct{ word, want string }{
		{"comand", "command"},
		{"commnad", "command"},
		{"Command", "command"},
		{"stop-timeout", "stop_timeout"},
		{"timeot", "timeout"},
		{"envs", "env"},
		{"size", "queue_size"},
		{"overridable", "env_overridable"},
		{"command", ""}, // already valid
		{"zzz", ""},
		{"cmd", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Suggest(tt.word, keys); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	if got := Suggest("bulid", []string{"build", "run", "relay", "watch", "log"}); got != "build" {
		t.Errorf("Suggest(bulid) = %q", got)
	}
	if got := Suggest("warning", lookup("log", "level", false).values); got != "warn" {
		t.Errorf("Suggest(warning) = %q", got)
	}
}

// schemaKeyPaths lists every key of the schema as "table.key", the keys of
// a mux's servers as "servers.NAME.table.key".
func schemaKeyPaths() []string {
	var paths []string
	for _, s := range settings {
		paths = append(paths, s.key)
	}
	for _, t := range serverTables {
		for _, k := range keysOf(t, true) {
			paths = append(paths, "servers.NAME."+t+"."+k)
		}
	}
	return paths
}

// modeKeyPaths lists the keys that apply to c's mode, and the keys of its
// servers.
func modeKeyPaths(c *Config) []string {
	var out []string
	for _, s := range settings {
		if s.modes.has(c.Mode()) {
			out = append(out, s.key)
		}
	}
	if len(c.Servers) > 0 {
		for _, k := range schemaKeyPaths() {
			if strings.HasPrefix(k, "servers.") {
				out = append(out, k)
			}
		}
	}
	return out
}

// The defaults of the sections, for tests that build a Config by hand.
func defaultCLI(dir string) *CLIConfig    { return Default(dir).newCLI() }
func defaultBuild() BuildConfig           { return Default("/").Build }
func defaultRun(dir string) RunConfig     { return Default(dir).Run }
func defaultWatch(dir string) WatchConfig { return Default(dir).Watch }

// TestSettingsTable: each entry of the table names a field of the kind's
// Go type (in ServerConfig too for a key a mux's server sets), a default
// of that kind, and a doc that fits a row of the README.
func TestSettingsTable(t *testing.T) {
	seen := map[string]bool{}
	for i := range settings {
		s := &settings[i]
		if seen[s.key] || strings.Count(s.key, ".") != 1 || strings.ToLower(s.key) != s.key {
			t.Errorf("%s: keys are unique, lowercase, table.name", s.key)
		}
		seen[s.key] = true
		roots := []reflect.Value{reflect.ValueOf(&Config{CLI: &CLIConfig{}}).Elem()}
		if s.modes&inServer != 0 {
			roots = append(roots, reflect.ValueOf(&ServerConfig{CLI: &CLIConfig{}}).Elem())
		}
		for _, root := range roots {
			if f := fieldOf(root, s); !f.IsValid() || f.Type() != goType(s.kind) {
				t.Errorf("%s: %s has no field %s of type %v", s.key, root.Type(), s.field, goType(s.kind))
			}
		}
		if reflect.TypeOf(defaults[s]) != goType(s.kind) {
			t.Errorf("%s: default %s is not a %v", s.key, s.def, goType(s.kind))
		}
		if len(s.values) > 0 && !slices.Contains(s.values, defaults[s].(string)) {
			t.Errorf("%s: default %s is not one of its values", s.key, s.def)
		}
		if s.modes&everywhere == 0 {
			t.Errorf("%s applies to no mode", s.key)
		}
		if s.doc == "" || strings.ContainsAny(s.doc, "|\n") || strings.HasSuffix(s.doc, ".") {
			t.Errorf("%s: the doc is one line of Markdown with no '|' and no final period: %q", s.key, s.doc)
		}
	}
}

// goType is the type of a field that holds a value of k.
func goType(k kind) reflect.Type {
	switch k {
	case kBool:
		return reflect.TypeFor[bool]()
	case kInt:
		return reflect.TypeFor[int]()
	case kDuration:
		return reflect.TypeFor[time.Duration]()
	case kSize:
		return reflect.TypeFor[int64]()
	case kList, kPaths, kGlobs:
		return reflect.TypeFor[[]string]()
	case kCommand:
		return reflect.TypeFor[Command]()
	case kEnv:
		return reflect.TypeFor[map[string]string]()
	}
	return reflect.TypeFor[string]()
}

// keysIn decodes a TOML document and lists the key paths of its values,
// in the schema's spelling (servers.NAME.run.command).
func keysIn(t *testing.T, doc string) map[string]bool {
	t.Helper()
	var m map[string]any
	if err := toml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var walk func(path []string, v map[string]any)
	walk = func(path []string, v map[string]any) {
		for k, val := range v {
			p := append(slices.Clip(path), k)
			sub, ok := val.(map[string]any)
			table := len(p) == 1 || (p[0] == "servers" && len(p) < 4)
			switch {
			case table && ok:
				walk(p, sub)
			case table:
				t.Errorf("key %q is not a table", strings.Join(p, "."))
			default:
				keys[schemaPath(p)] = true
			}
		}
	}
	walk(nil, m)
	return keys
}

// exampleDocs returns the documents of mcpflow.toml.example: the file
// itself, then each commented-out block (a run of "# " lines whose first
// one opens a table), uncommented.
func exampleDocs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../mcpflow.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{string(data)}
	var block []string
	flush := func() {
		if len(block) > 0 {
			docs = append(docs, strings.Join(block, "\n")+"\n")
		}
		block = nil
	}
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case block == nil && strings.HasPrefix(l, "# ["):
			block = []string{l[2:]}
		case block != nil && (l == "#" || strings.HasPrefix(l, "# ")):
			block = append(block, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
		default:
			flush()
		}
	}
	flush()
	return docs
}

// schemaPath turns a key path of a document into the schema's spelling:
// servers.api.run.command is servers.NAME.run.command.
func schemaPath(path []string) string {
	if len(path) > 1 && path[0] == "servers" {
		path = append([]string{"servers", "NAME"}, path[2:]...)
	}
	return strings.Join(path, ".")
}

func TestExample(t *testing.T) {
	docs := exampleDocs(t)
	if len(docs) != 3 {
		t.Fatalf("mcpflow.toml.example has %d documents, want 3 (the file, the [cli] block, the mux block)", len(docs))
	}
	set := map[string]bool{}
	for i, doc := range docs {
		c, err := Parse("mcpflow.toml.example", []byte(doc), "/proj")
		if err != nil {
			t.Fatalf("document %d of the example does not parse: %v\n%s", i, err, doc)
		}
		for k := range keysIn(t, doc) {
			set[k] = true
		}

		// Each key has a line of explanation just above it.
		lines := strings.Split(doc, "\n")
		assign := regexp.MustCompile(`^([a-z_]+)\s*=`)
		for n, l := range lines {
			if m := assign.FindStringSubmatch(l); m != nil && (n == 0 || !strings.HasPrefix(lines[n-1], "# ")) {
				t.Errorf("document %d, line %d: key %s has no comment above it", i, n+1, m[1])
			}
		}

		// Its values are the defaults, except for the commands.
		want := Default("/proj")
		switch c.Mode() {
		case Single:
			want.Build.Command = Command{Argv: []string{"go build -o bin/server ./cmd/server"}, Shell: true}
			want.Run.Command = Command{Argv: []string{"./bin/server"}}
		case CLI:
			want.Run = RunConfig{}
			want.CLI = defaultCLI("/proj")
			want.CLI.Schema = []string{"./bin/tool", "schema", "--json"}
			want.CLI.Command = []string{"./bin/tool"}
		case Mux:
			api := ServerConfig{Name: "api", Build: defaultBuild(), Run: defaultRun("/proj"), Relay: want.Relay, Watch: defaultWatch("/proj")}
			api.Build.Command = Command{Argv: []string{"go build -o bin/api ./cmd/api"}, Shell: true}
			api.Run.Command = Command{Argv: []string{"./bin/api"}}
			tool := ServerConfig{Name: "tool", Build: defaultBuild(), CLI: defaultCLI("/proj"), Relay: want.Relay, Watch: defaultWatch("/proj")}
			tool.CLI.Schema = []string{"./bin/tool", "schema", "--json"}
			tool.CLI.Command = []string{"./bin/tool"}
			want.Servers = []ServerConfig{api, tool}
			want.Build, want.Run, want.Watch = BuildConfig{}, RunConfig{}, WatchConfig{}
		}
		want.mode = c.mode
		if !reflect.DeepEqual(plain(c), plain(want)) {
			t.Errorf("document %d: the example's values are not the defaults:\n got %+v\nwant %+v", i, plain(c), plain(want))
		}
	}

	// Together they show every key of the schema.
	for _, key := range schemaKeyPaths() {
		if !set[key] {
			t.Errorf("mcpflow.toml.example does not show %s", key)
		}
	}
}

func TestDescribe(t *testing.T) {
	full, err := Load("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	odd := mustParse(t, minimal)
	odd.Run.Command = Command{Argv: []string{"printf '%s\\n' \"a\tb\" \\ \x01"}, Shell: true}
	odd.Run.Env = map[string]string{"a.b": "x", "a b": "y\nz", "Z": "", "é": "\\"}
	odd.Relay.MaxMessage = 1<<20 + 1
	odd.Relay.QueueBytes = 3 << 30
	odd.Watch.Poll = 1500 * time.Millisecond

	flags := Default("/proj") // mcpflow watch -- srv
	flags.Run.Command = Command{Argv: []string{"srv"}}
	cli, err := Load("testdata/cli.toml")
	if err != nil {
		t.Fatal(err)
	}
	mux, err := Load("testdata/mux.toml")
	if err != nil {
		t.Fatal(err)
	}
	empty := mustParse(t, "[mux]\n")

	for name, c := range map[string]*Config{
		"example": mustParse(t, minimal), "full": full, "odd": odd, "flags": flags,
		"cli": cli, "mux": mux, "empty mux": empty,
	} {
		t.Run(name, func(t *testing.T) {
			text := c.Describe()
			set := keysIn(t, text)
			for _, key := range modeKeyPaths(c) {
				if !set[key] {
					t.Errorf("Describe does not show %s:\n%s", key, text)
				}
			}
			// It parses back into the same settings.
			back, err := Parse("describe", []byte(text), "/elsewhere")
			if err != nil {
				t.Fatalf("Describe output does not parse: %v\n%s", err, text)
			}
			back.File, back.Dir = c.File, c.Dir
			if !reflect.DeepEqual(plain(back), plain(c)) {
				t.Errorf("round trip:\n got %+v\nwant %+v\n%s", plain(back), plain(c), text)
			}
		})
	}

	text := mustParse(t, minimal).Describe()
	for _, want := range []string{
		"\n[build]\ncommand = \"\"  # no build step\ntimeout = \"10m\"\n",
		"\ncommand = [\"./bin/server\"]  # executed directly\n",
		"\nmax_message = \"64MiB\"\n",
		"\ndebounce = \"50ms\"\npoll = \"\"  # off: fsnotify\n",
		"\nfile = \"\"  # stderr only\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Describe lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(full.Describe(), "# config: "+full.File+"\n") {
		t.Errorf("Describe does not name the file:\n%s", full.Describe())
	}
}

func TestFormatters(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m", 2 * time.Second: "2s",
		100 * time.Millisecond: "100ms", 90 * time.Second: "1m30s", 0: "0s", time.Hour + time.Second: "1h0m1s",
	} {
		if got := DurationText(d); got != want {
			t.Errorf("DurationText(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{64 << 20: "64MiB", 1 << 10: "1KiB", 1000: "1000", 0: "0", 3 << 30: "3GiB", 1<<20 + 1: "1048577"} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	example, err := os.ReadFile("../../mcpflow.toml.example")
	if err != nil {
		f.Fatal(err)
	}
	full, err := os.ReadFile("testdata/full.toml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	f.Add(string(full))
	for _, name := range []string{"testdata/cli.toml", "testdata/mux.toml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("[servers.a.run]\ncommand = \"x\"\n[servers.a.cli]\nschema = [\"\"]\n[mux]\nseparator = \"_\"\n")
	f.Add(minimal + "env = { A = 1 }\n[watch]\npaths = [\".\", 1]\n")
	f.Add("run = { command = [\"x\", { a = 1 }], env = { A = { B = 1 } } }\n")
	f.Add("[run.command]\nx = 1\n[[run.env]]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := Parse("mcpflow.toml", []byte(doc), "/proj")
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(l, "mcpflow.toml:") {
					t.Fatalf("error line without the file name: %q", l)
				}
			}
			return
		}
		back, err := Parse("describe", []byte(c.Describe()), "/proj")
		if err != nil {
			t.Fatalf("Describe output does not parse: %v\n%s", err, c.Describe())
		}
		if !reflect.DeepEqual(plain(back), plain(c)) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", plain(back), plain(c))
		}
	})
}
