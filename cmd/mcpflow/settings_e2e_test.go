//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The settings that shape what the agent sees — run.env_overridable,
// relay.tool, relay.server_suffix and relay.notices — do the same in every
// mode: watch over stdio, watch --http, the mux (over stdio and HTTP),
// and the era bridge (a legacy client, a server of 2026-07-28 only). Each case runs the real mcpflow on the
// kit's fixture, whose build fails while a file named "broken" exists.

const settingsBuild = `[build]
command = "test ! -e broken && cp src.txt variant"
`

const settingsWatch = `[watch]
paths = ["."]
include = ["src.txt"]
debounce = "50ms"
`

// settingsCase is one mode: its config, how to start mcpflow, and the
// names the agent sees in it.
type settingsCase struct {
	name    string
	version string   // the client's protocol version
	args    []string // mcpflow's arguments
	http    bool     // serve HTTP ([http] listen)
	prefix  string   // the server's tools are prefix+tool
	rebuild string   // the rebuild tool
	target  map[string]any
	info    string // serverInfo.name the client gets
	env     string // the [run] env table of the fixture (the bridge's versions)
}

func TestSettingsEveryMode(t *testing.T) {
	t.Parallel()
	const suffix = "-dev"
	watchCase := func(name, version string, http bool, env string) settingsCase {
		return settingsCase{name: name, version: version, args: []string{"watch"}, http: http, rebuild: "rebuild_now", info: "fixture" + suffix, env: env}
	}
	muxCase := func(name, version string, http bool) settingsCase {
		return settingsCase{name: name, version: version, args: []string{"mux", "-c", "mcpflow.toml"}, http: http, prefix: "s__", rebuild: "reload_server", target: map[string]any{"name": "s"}, info: "mcpflow" + suffix}
	}
	var cases []settingsCase
	for _, era := range []testkit.Era{testkit.Legacy, testkit.Modern} {
		cases = append(cases,
			watchCase("watch/"+era.Name, era.Version, false, ""),
			watchCase("watch-http/"+era.Name, era.Version, true, ""),
			muxCase("mux/"+era.Name, era.Version, false),
			muxCase("mux-http/"+era.Name, era.Version, true),
		)
	}
	cases = append(cases,
		watchCase("bridge/legacy-client", testkit.Legacy.Version, false, `FIXTURE_VERSIONS = "2026-07-28"
FIXTURE_REFUSE_INITIALIZE = "1"`),
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.check(t)
		})
	}
}

// project writes the case's config: env_overridable = ["FOO"], the
// rebuild tool renamed (watch), the suffix and the notices on.
func (c settingsCase) project(t *testing.T) string {
	dir := t.TempDir()
	var cfg string
	run := fmt.Sprintf("command = [%q, \"-variant-file\", \"variant\"]\nstop_timeout = \"1s\"\nenv_overridable = [\"FOO\"]\n", fixtureBin)
	if c.env != "" {
		run += "env = { " + strings.ReplaceAll(c.env, "\n", ", ") + " }\n"
	}
	if c.prefix == "" {
		cfg = settingsBuild + "[run]\n" + run + settingsWatch +
			"[relay]\ntool = \"rebuild_now\"\nserver_suffix = \"" + "-dev" + "\"\nnotices = true\n"
	} else {
		cfg = "[relay]\nserver_suffix = \"-dev\"\nnotices = true\n" +
			strings.ReplaceAll(settingsBuild, "[build]", "[servers.s.build]") +
			"[servers.s.run]\n" + run +
			strings.ReplaceAll(settingsWatch, "[watch]", "[servers.s.watch]")
	}
	if c.http {
		cfg += "[http]\nlisten = \"127.0.0.1:0\"\n"
	}
	cfg += "[log]\nlevel = \"info\"\n"
	os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644)
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1"), 0o644)
	return dir
}

func (c settingsCase) check(t *testing.T) {
	dir := c.project(t)
	var cs *mcp.ClientSession
	var stderr func() string
	if c.http {
		h := startHTTP(t, dir, c.args...)
		cs, stderr = h.connect("settings", c.version).cs, h.stderr.String
	} else {
		e := startE2E(t, dir, c.version, c.args...)
		cs, stderr = e.cs, e.stderr.String
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v\nstderr:\n%s", name, err, stderr())
		}
		return res
	}
	tools := func() map[string]*mcp.Tool {
		t.Helper()
		m := map[string]*mcp.Tool{}
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			m[tool.Name] = tool
		}
		return m
	}

	// server_suffix: the server the client is told it talks to.
	info := cs.InitializeResult().ServerInfo
	if info == nil || info.Name != c.info || !strings.HasSuffix(info.Version, "-dev") {
		t.Errorf("serverInfo %+v, want name %q and a version ending in -dev", info, c.info)
	}

	// tool: the rebuild tool under its name (and not under the default);
	// env_overridable: it takes env, and the restarted server has it.
	testkit.Eventually(t, time.Minute, "the server's tools", func() bool { return tools()[c.prefix+"env"] != nil })
	all := tools()
	if c.prefix == "" && all["recompile"] != nil {
		t.Errorf("recompile listed although relay.tool renamed it")
	}
	rb := all[c.rebuild]
	if rb == nil {
		t.Fatalf("no %s among %d tools", c.rebuild, len(all))
	}
	schema, _ := json.Marshal(rb.InputSchema)
	if !strings.Contains(string(schema), `"env"`) {
		t.Errorf("%s takes no env: %s", c.rebuild, schema)
	}
	args := map[string]any{"env": map[string]any{"FOO": "bar"}}
	for k, v := range c.target {
		args[k] = v
	}
	if res := call(c.rebuild, args); res.IsError {
		t.Fatalf("%s with env: %s", c.rebuild, testkit.Text(res))
	}
	testkit.Eventually(t, time.Minute, "the restarted server to have FOO=bar", func() bool {
		return testkit.Text(call(c.prefix+"env", map[string]any{"text": "FOO"})) == "bar"
	})
	args["env"] = map[string]any{"PATH": "/nowhere"}
	if res := call(c.rebuild, args); !res.IsError || !strings.Contains(testkit.Text(res), "PATH") {
		t.Errorf("%s with a key not in env_overridable: %s (error %v)", c.rebuild, testkit.Text(res), res.IsError)
	}

	// notices: an automatic rebuild that fails is told on the next
	// call's result, once, naming the mode's rebuild tool.
	os.WriteFile(filepath.Join(dir, "broken"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v2"), 0o644)
	var notice string
	testkit.Eventually(t, time.Minute, "a notice of the failed build on a call's result", func() bool {
		res := call(c.prefix+"echo", map[string]any{"text": "hi"})
		if len(res.Content) > 1 {
			notice = res.Content[len(res.Content)-1].(*mcp.TextContent).Text
			return true
		}
		return false
	})
	if !strings.Contains(notice, "rebuild after your last edit failed") || !strings.Contains(notice, c.rebuild) {
		t.Errorf("notice %q does not say the build failed and name %s", notice, c.rebuild)
	}
	if res := call(c.prefix+"echo", map[string]any{"text": "hi"}); len(res.Content) != 1 {
		t.Errorf("the notice given again: %d items", len(res.Content))
	}
	if bridged := strings.Contains(stderr(), "the era bridge serves the client"); bridged != (c.env != "") {
		t.Errorf("the era bridge served the client: %v, want %v", bridged, c.env != "")
	}
}

// TestMuxRefusesRelayTool: relay.tool names watch's rebuild tool; in a
// mux's config it is a mistake, told with the file, the line and the fix.
func TestMuxRefusesRelayTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := fmt.Sprintf("[relay]\ntool = \"rebuild_now\"\n[servers.s.run]\ncommand = [%q]\n", fixtureBin)
	path := filepath.Join(dir, "mcpflow.toml")
	os.WriteFile(path, []byte(cfg), 0o644)
	out, err := exec.Command(mcpflowBin, "check", "-c", path).CombinedOutput()
	if err == nil {
		t.Fatalf("check passed a mux config with relay.tool:\n%s", out)
	}
	for _, want := range []string{"mcpflow.toml:2", "relay.tool", "reload_server", "remove relay.tool"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check's error lacks %q:\n%s", want, out)
		}
	}
}
