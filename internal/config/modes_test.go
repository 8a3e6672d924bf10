package config

import (
	"github.com/mcpflow/mcpflow/internal/testkit"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestModes(t *testing.T) {
	for doc, want := range map[string]Mode{
		minimal:                              Single,
		"[cli]\nschema = [\"t\"]\n":          CLI,
		"cli.schema = [\"t\"]\n":             CLI,
		"[mux]\n":                            Mux,
		"[servers.a.run]\ncommand = \"x\"\n": Mux,
		"servers = { a = { run = { command = [\"x\"] } } }\n": Mux,
	} {
		if c := mustParse(t, doc); c.Mode() != want {
			t.Errorf("%q: mode %s, want %s", doc, c.Mode(), want)
		}
	}
	c := Default("/proj") // mcpflow watch --build make -- srv
	c.Run.Command = Command{Argv: []string{"srv"}}
	c.Build.Command = Command{Argv: []string{"make"}, Shell: true}
	if c.Mode() != Single || c.Validate() != nil {
		t.Errorf("a config from flags: mode %s, %v", c.Mode(), c.Validate())
	}
}

func TestCLIConfig(t *testing.T) {
	testkit.UnixOnly(t, "compares Unix absolute paths (/proj)")
	c := mustParse(t, "[cli]\nschema = [\"./bin/tool\", \"schema\", \"--json\"]\n")
	want := &CLIConfig{
		Schema: []string{"./bin/tool", "schema", "--json"}, Command: []string{"./bin/tool"}, Append: []string{},
		Timeout: 60 * time.Second, MaxOutput: 4 << 20, MaxParallel: 4, Cwd: "/proj", Env: map[string]string{},
	}
	if !reflect.DeepEqual(c.CLI, want) {
		t.Errorf("CLI:\n got %+v\nwant %+v", c.CLI, want)
	}
	if !c.Run.Command.IsZero() || c.Run.Cwd != "" {
		t.Errorf("Run is set in CLI mode: %+v", c.Run)
	}
	c, err := Load("testdata/cli.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.CLI.Command, []string{"./bin/tool", "run"}) || c.CLI.MaxParallel != 2 || c.CLI.MaxOutput != 1<<20 ||
		c.CLI.Timeout != 5*time.Second || !strings.HasSuffix(c.CLI.Cwd, "/testdata/work") || c.CLI.Env["TOOL_MODE"] != "test" {
		t.Errorf("cli.toml: %+v", c.CLI)
	}
}

func TestMuxConfig(t *testing.T) {
	testkit.UnixOnly(t, "compares Unix absolute paths (/proj)")
	c, err := Load("testdata/mux.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode() != Mux || c.Mux.Separator != "--" || c.Mux.AddServer || c.Mux.Drain != 10*time.Second ||
		!slices.Equal(c.Mux.AllowedCommands, []string{"npx", "./bin/api"}) {
		t.Errorf("mux: %+v", c.Mux)
	}
	var names []string
	for _, s := range c.Servers {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"api", "everything", "tool"}) {
		t.Fatalf("servers %q, want the file's order", names)
	}
	api, every, tool := c.Servers[0], c.Servers[1], c.Servers[2]
	if api.Build.Timeout != 2*time.Minute || api.Run.Command.Argv[1] != "--stdio" || !strings.HasSuffix(api.Run.Cwd, "/testdata/api") ||
		api.Relay.OnCrash != "wait" || api.Relay.StartupGrace != 20*time.Second || api.Relay.QueueSize != 8 ||
		api.Watch.Poll != 2*time.Second || api.CLI != nil {
		t.Errorf("api: %+v", api)
	}
	// A server's relay starts from the top-level [relay]; drain is the mux's.
	if every.Relay.QueueSize != 64 || every.Relay.ServerSuffix != "-dev" || every.Relay.Drain != 10*time.Second || every.Watch.Enabled ||
		every.Build.Timeout != 10*time.Minute || !every.Build.Command.IsZero() {
		t.Errorf("everything: %+v", every)
	}
	if tool.CLI == nil || tool.CLI.MaxParallel != 1 || !tool.Run.Command.IsZero() || !tool.Watch.Enabled {
		t.Errorf("tool: %+v %+v", tool, tool.CLI)
	}
	if !c.Build.Command.IsZero() || !c.Run.Command.IsZero() || len(c.Watch.Paths) != 0 {
		t.Errorf("top-level sections set in a mux: %+v %+v %+v", c.Build, c.Run, c.Watch)
	}

	// A mux with no servers: the agent adds them.
	if c := mustParse(t, "[mux]\nadd_server = true\n"); len(c.Servers) != 0 || !c.Mux.AddServer {
		t.Errorf("empty mux: %+v", c)
	}
	// Servers in the order the file first writes them, dotted keys too.
	c = mustParse(t, "servers.zeta.run.command = \"z\"\n[servers.alpha.run]\ncommand = \"a\"\n[servers.zeta.watch]\nenabled = false\n")
	if len(c.Servers) != 2 || c.Servers[0].Name != "zeta" || c.Servers[1].Name != "alpha" || c.Servers[0].Watch.Enabled {
		t.Errorf("order: %+v", c.Servers)
	}
}

func TestCheckServerName(t *testing.T) {
	for _, ok := range []string{"api", "my-server", "a_b", "A1", "x-"} {
		if err := checkServerName(ok, "__"); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":      "must not be empty",
		"a__b":  `contains the separator "__"`,
		"a_":    `ends in '_': "a___tool" would split wrong`,
		"a.b":   `use letters, digits, '-' and '_' only (found '.')`,
		"a b":   `(found ' ')`,
		"héllo": `(found 'é')`,
	} {
		if err := checkServerName(name, "__"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", name, err, want)
		}
	}
	if err := checkServerName("a--b", "--"); err == nil {
		t.Error("a--b with separator --: no error")
	}
}

func TestNewSchemaErrors(t *testing.T) {
	api := "[servers.api.run]\ncommand = [\"./api\"]\n"
	tests := []struct{ name, doc, want string }{
		// Sections that do not go together.
		{"run and servers", minimal + api,
			`mcpflow.toml:1:1: run: [run] cannot go with [servers.NAME] tables (a mux): move it under [servers.NAME.run]`},
		{"cli and servers", api + "[cli]\nschema = [\"t\"]\n",
			`mcpflow.toml:3:1: cli: [cli] cannot go with [servers.NAME] tables`},
		{"dotted run and mux", "[mux]\nseparator = \"__\"\n[watch]\nenabled = false\n",
			`mcpflow.toml:3:1: watch: [watch] cannot go with [servers.NAME] tables`},
		{"mux key in a single config", minimal + "[http]\nadd_server = true\n",
			`mcpflow.toml:4:14: http.add_server: does not apply to a single config: remove it`},
		{"relay.drain in a mux", api + "[relay]\ndrain = \"1s\"\n",
			`mcpflow.toml:4:9: relay.drain: in a mux the drain time is mux.drain: move it there`},
		{"relay.tool in a mux", api + "[relay]\ntool = \"recompile\"\n",
			`mcpflow.toml:4:8: relay.tool: names the rebuild tool of mcpflow watch; behind the mux every server is rebuilt with reload_server`},
		{"run and cli", minimal + "[cli]\nschema = [\"t\"]\n",
			`mcpflow.toml:1:1: run: [run] cannot go with [cli]: [cli] takes the place of [run]`},
		{"server with run and cli", api + "[servers.api.cli]\nschema = [\"t\"]\n",
			`mcpflow.toml:3:1: servers.api.cli: a server has [servers.api.run] or [servers.api.cli], not both`},
		{"server without run", "[servers.api.build]\ncommand = \"make\"\n",
			`mcpflow.toml:1:1: servers.api.run.command is required: the command that starts this MCP server`},

		// Server names.
		{"name with separator", "[servers.a__b.run]\ncommand = \"x\"\n",
			`mcpflow.toml:1:1: servers.a__b: server name "a__b" contains the separator "__"`},
		{"name ending in _", "[servers.api_.run]\ncommand = \"x\"\n",
			`mcpflow.toml:1:1: servers.api_: server name "api_" ends in '_'`},
		{"name with a dot", "[servers.\"a.b\".run]\ncommand = \"x\"\n",
			`mcpflow.toml:1:1: servers."a.b": server name "a.b": use letters, digits, '-' and '_' only (found '.')`},
		{"empty name", "[servers.\"\".run]\ncommand = \"x\"\n",
			`mcpflow.toml:1:1: servers."": a server name must not be empty`},
		{"duplicate name", api + "[servers.api.run]\n",
			`mcpflow.toml:3:2: servers.api.run: table run already exists`},
		{"servers as array", "[[servers]]\nname = \"x\"\n",
			`mcpflow.toml:1:1: servers: [[servers]] makes an array of tables; write [servers]`},
		{"server as value", "[servers]\napi = 1\n",
			`mcpflow.toml:2:7: servers.api: expected a table, like [servers.api], got integer 1`},
		{"servers as value", "servers = 1\n",
			`mcpflow.toml:1:11: servers: expected a table of servers, like [servers.NAME.run], got integer 1`},
		{"unknown key in server", "[servers.api]\nrum = {}\n",
			`mcpflow.toml:2:1: unknown key "rum" in [servers.api] (did you mean "run"?)`},
		{"unknown key in server run", "[servers.api.run]\ncomand = \"x\"\n",
			`mcpflow.toml:2:1: unknown key "comand" in [servers.api.run] (did you mean "command"?)`},
		{"front-only relay key in a server", api + "[servers.api.relay]\ntool = \"x\"\n",
			`mcpflow.toml:4:1: unknown key "tool" in [servers.api.relay]`},
		{"server value", api + "[servers.api.relay]\nqueue_size = 0\n",
			`mcpflow.toml:4:14: servers.api.relay.queue_size: must be at least 1, got 0`},
		{"server watch glob", api + "[servers.api.watch]\ninclude = [\"/x\"]\n",
			`mcpflow.toml:4:12: servers.api.watch.include: pattern "/x" is absolute`},
		{"server duration", api + "[servers.api.relay]\nstartup_grace = 5\n",
			`mcpflow.toml:4:17: servers.api.relay.startup_grace: expected a duration like "2s", got integer 5`},
		{"server env", api + "env = { \"A=B\" = \"x\" }\n",
			`mcpflow.toml:3:17: servers.api.run.env."A=B": a variable name cannot contain '=' or NUL`},
		{"quoted server name value", "[servers.\"a.b\".run]\ncommand = \"x\"\nstop_timeout = \"-1s\"\n",
			`mcpflow.toml:1:1: servers."a.b": server name`},

		// [mux].
		{"separator empty", "[mux]\nseparator = \"\"\n",
			`mcpflow.toml:2:13: mux.separator: must not be empty`},
		{"separator chars", "[mux]\nseparator = \"::\"\n",
			`mcpflow.toml:2:13: mux.separator: "::" can only hold characters allowed in tool names`},
		{"add_server type", "[mux]\nadd_server = \"yes\"\n",
			`mcpflow.toml:2:14: mux.add_server: expected true or false, got string "yes"`},
		{"allowed_commands type", "[mux]\nallowed_commands = \"npx\"\n",
			`mcpflow.toml:2:20: mux.allowed_commands: expected an array of strings, like ["a", "b"], got string "npx"; write an array: ["npx"]`},
		{"allowed_commands empty item", "[mux]\nallowed_commands = [\"npx\", \"\"]\n",
			`mcpflow.toml:2:28: mux.allowed_commands: item 2 is empty`},
		{"mux drain", "[mux]\ndrain = \"-1s\"\n",
			`mcpflow.toml:2:9: mux.drain: must not be negative, got "-1s"`},
		{"mux drain empty", "[mux]\ndrain = \"\"\n",
			`mcpflow.toml:2:9: mux.drain: expected a duration like "2s", got an empty string`},

		// [cli].
		{"cli without schema", "[cli]\ncommand = [\"t\"]\n",
			`mcpflow.toml:1:1: cli.schema is required: the command that prints your tool definitions as JSON`},
		{"cli schema as string", "[cli]\nschema = \"t schema\"\n",
			`mcpflow.toml:2:10: cli.schema: expected an array of strings, like ["a", "b"], got string "t schema"; write an array: ["t schema"]`},
		{"cli empty program", "[cli]\nschema = [\"\", \"x\"]\n",
			`mcpflow.toml:2:11: cli.schema: the program name (the first item) is empty`},
		{"cli empty command", "[cli]\nschema = [\"t\"]\ncommand = []\n",
			`mcpflow.toml:3:11: cli.command is required`},
		{"cli timeout", "[cli]\nschema = [\"t\"]\ntimeout = \"0s\"\n",
			`mcpflow.toml:3:11: cli.timeout: must be more than 0, got "0s"`},
		{"cli max_parallel", "[cli]\nschema = [\"t\"]\nmax_parallel = 0\n",
			`mcpflow.toml:3:16: cli.max_parallel: must be at least 1, got 0`},
		{"cli max_output", "[cli]\nschema = [\"t\"]\nmax_output = \"4M\"\n",
			`mcpflow.toml:3:14: cli.max_output: expected a size like "64MiB", got string "4M"; "M" is ambiguous`},
		{"cli unknown key", "[cli]\nschema = [\"t\"]\nparallel = 2\n",
			`mcpflow.toml:3:1: unknown key "parallel" in [cli] (did you mean "max_parallel"?)`},
		{"cli env", "[cli]\nschema = [\"t\"]\nenv = { A = 1 }\n",
			`mcpflow.toml:3:13: cli.env.A: expected a string, got integer 1; quote it: "1"`},

		// [log] and [relay] additions.
		{"log format", minimal + "[log]\nformat = \"JSON\"\n",
			`mcpflow.toml:4:10: log.format: "JSON" is not one of "text", "json" (did you mean "json"?)`},
		{"traffic is log file", minimal + "[log]\nfile = \"m.log\"\ntraffic = \"m.log\"\n",
			`mcpflow.toml:5:11: log.traffic: must differ from log.file`},
		{"traffic_max_message", minimal + "[log]\ntraffic_max_message = 10\n",
			`mcpflow.toml:4:23: log.traffic_max_message: must be at least 1KiB, got 10`},
		{"traffic_max_size", minimal + "[log]\ntraffic_max_size = \"lots\"\n",
			`mcpflow.toml:4:20: log.traffic_max_size: expected a size like "64MiB"`},
		{"log max_size small", minimal + "[log]\nfile = \"m.log\"\nmax_size = 100\n",
			`mcpflow.toml:5:12: log.max_size: must be at least 1KiB, got 100`},
		{"log max_size word", minimal + "[log]\nmax_size = \"big\"\n",
			`mcpflow.toml:4:12: log.max_size: expected a size like "64MiB"`},
		{"startup_grace", minimal + "[relay]\nstartup_grace = \"-1s\"\n",
			`mcpflow.toml:4:17: relay.startup_grace: must not be negative, got "-1s"`},
		{"relay drain", minimal + "[relay]\ndrain = 5\n",
			`mcpflow.toml:4:9: relay.drain: expected a duration like "2s", got integer 5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("mcpflow.toml", []byte(tt.doc), "/proj")
			if err == nil {
				t.Fatalf("no error for:\n%s", tt.doc)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error:\n got: %s\nwant: %s", err, tt.want)
			}
			for _, l := range strings.Split(err.Error(), "\n") {
				if !located.MatchString(l) {
					t.Errorf("no file:line:col in %q", l)
				}
			}
		})
	}
}

func TestNewKeys(t *testing.T) {
	testkit.UnixOnly(t, "compares Unix absolute paths (/proj)")
	c := mustParse(t, minimal+"[relay]\nstartup_grace = \"10s\"\ndrain = \"0s\"\n[log]\nformat = \"json\"\ntraffic = \"logs/traffic.jsonl\"\ntraffic_max_message = \"1MiB\"\ntraffic_max_size = \"1GiB\"\n")
	if c.Relay.StartupGrace != 10*time.Second || c.Relay.Drain != 0 || c.Log.Format != "json" ||
		c.Log.Traffic != "/proj/logs/traffic.jsonl" || c.Log.TrafficMaxMessage != 1<<20 || c.Log.TrafficMaxSize != 1<<30 {
		t.Errorf("%+v %+v", c.Relay, c.Log)
	}
	if c.Log.MaxSize != 16<<20 {
		t.Errorf("log.max_size default: %d", c.Log.MaxSize)
	}
	if c := mustParse(t, minimal+"[log]\nfile = \"m.log\"\nmax_size = \"1MiB\"\n"); c.Log.MaxSize != 1<<20 || c.Log.File != "/proj/m.log" {
		t.Errorf("log.max_size: %+v", c.Log)
	}
	d := Default("/proj")
	if d.Log.Traffic != "" || d.Log.Format != "text" || d.Relay.StartupGrace != 0 || d.Mux.Separator != "__" {
		t.Errorf("defaults: %+v %+v", d.Log, d.Mux)
	}
}
