package mux

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// addServerArgs are add_server's arguments.
type addServerArgs struct {
	Name    string            `json:"name" jsonschema:"the server's name: letters, digits, '-' and '_'; its tools appear as NAME__tool"`
	Command string            `json:"command,omitempty" jsonschema:"the program to run (found on PATH or relative to cwd); with cli_schema: the prefix of every call (default: cli_schema's program)"`
	Args    []string          `json:"args,omitempty" jsonschema:"its arguments"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"environment variables added to mcpflow's"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"working directory; default mcpflow's"`
	Build   string            `json:"build,omitempty" jsonschema:"a shell command that builds the server; run before each start and reload"`
	Watch   []string          `json:"watch,omitempty" jsonschema:"paths whose changes rebuild and restart the server"`
	// CLISchema serves a command-line program instead of an MCP server.
	CLISchema []string `json:"cli_schema,omitempty" jsonschema:"instead of an MCP server: serve a command-line program, whose tool list this command prints as JSON ({\"tools\": [{name, description, parameters, cli_command}]}); each call runs the program once"`
}

// nameArgs are remove_server's arguments.
type nameArgs struct {
	Name string `json:"name" jsonschema:"the server's name, as list_servers shows it"`
}

// reloadArgs are reload_server's arguments; env is offered when a
// configured server has run.env_overridable.
type reloadArgs struct {
	Name string            `json:"name" jsonschema:"the server's name, as list_servers shows it"`
	Env  map[string]string `json:"env,omitempty"`
}

// listArgs are list_servers' arguments.
type listArgs struct {
	Verbose bool `json:"verbose,omitempty" jsonschema:"also show every tool with its input schema"`
}

// callArgs are the call tool's arguments.
type callArgs struct {
	Name      string         `json:"name" jsonschema:"the tool's full name, SERVER__tool"`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema:"the tool's arguments"`
}

// ServerInfo is one server as list_servers reports it.
type ServerInfo struct {
	Name      string     `json:"name"`
	Command   string     `json:"command"`
	Args      []string   `json:"args"`
	Cwd       string     `json:"cwd,omitempty"`
	Source    string     `json:"source"`
	Status    string     `json:"status"`
	Pid       int        `json:"pid,omitempty"`
	Uptime    string     `json:"uptime,omitempty"`
	Tools     []string   `json:"tools"`
	Prompts   []string   `json:"prompts,omitempty"`
	Restarts  int        `json:"restarts"`
	LastBuild *BuildInfo `json:"lastBuild,omitempty"`
	Report    string     `json:"report,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
	Schemas   []ToolInfo `json:"toolSchemas,omitempty"`
}

// BuildInfo is the last build of a server.
type BuildInfo struct {
	OK       bool   `json:"ok"`
	Skipped  bool   `json:"skipped,omitempty"`
	Duration string `json:"duration,omitempty"`
	Errors   string `json:"errors,omitempty"`
}

// ToolInfo is a tool with its schema, for clients that ignore list_changed.
type ToolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema"`
}

// Outcome is the structured result of add_server and reload_server.
type Outcome struct {
	Server  ServerInfo `json:"server"`
	Added   []string   `json:"added,omitempty"`
	Removed []string   `json:"removed,omitempty"`
	Changed []string   `json:"changed,omitempty"`
	Build   *BuildInfo `json:"build,omitempty"`
}

// toolbox is the mux's own tools (see the package doc), defined once;
// their results are built as bytes, like every answer the mux makes.
type toolbox struct {
	m    *Mux
	defs []ownTool
}

// ownTool is one of the mux's tools: its definition and what runs it for
// the caller's session.
type ownTool struct {
	name, desc string
	schema     *jsonschema.Schema
	run        func(t *toolbox, ctx context.Context, caller *session, args []byte) (text string, structured any, isErr bool)
}

// tool defines a tool whose arguments are a T: its input schema is made
// from T, and its arguments are decoded into one for run (nil: the call
// tool, whose calls the session unwraps).
func tool[T any](name, desc string, run func(t *toolbox, ctx context.Context, caller *session, a T) (string, any, bool)) ownTool {
	schema, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // the argument types are the package's own
	}
	if run == nil {
		return ownTool{name: name, desc: desc, schema: schema}
	}
	return ownTool{name, desc, schema, func(t *toolbox, ctx context.Context, caller *session, args []byte) (string, any, bool) {
		var a T
		if len(args) > 0 && string(args) != "null" {
			if err := json.Unmarshal(args, &a); err != nil {
				return fmt.Sprintf("%s: invalid arguments: %v", name, err), nil, true
			}
		}
		return run(t, ctx, caller, a)
	}}
}

func newToolbox(m *Mux) *toolbox {
	t := &toolbox{m: m}
	if !m.cfg.DisableAddServer {
		t.defs = append(t.defs, tool("add_server", texts.AddServerDescription(m.sep, m.cfg.AllowedCommands), (*toolbox).addServer))
	}
	reload := tool("reload_server", texts.ReloadServerDescription, (*toolbox).reloadServer)
	allowed := map[string][]string{}
	for _, spec := range m.cfg.Servers {
		if len(spec.EnvOverridable) > 0 {
			allowed[spec.Name] = spec.EnvOverridable
		}
	}
	if len(allowed) > 0 {
		reload.schema.Properties["env"].Description = texts.ReloadEnvDescription(allowed)
	} else {
		delete(reload.schema.Properties, "env")
	}
	t.defs = append(t.defs,
		tool("remove_server", texts.RemoveServerDescription, (*toolbox).removeServer),
		reload,
		tool("list_servers", texts.ListServersDescription, (*toolbox).listServers),
	)
	if m.cfg.CallTool != "" {
		t.defs = append(t.defs, tool[callArgs](m.cfg.CallTool, texts.MuxCallToolDescription, nil))
	}
	return t
}

// list is the tools as tools/list lists them.
func (t *toolbox) list() [][]byte {
	var out [][]byte
	for _, d := range t.defs {
		b, _ := json.Marshal(map[string]any{"name": d.name, "description": d.desc, "inputSchema": d.schema})
		out = append(out, b)
	}
	return out
}

// names are the tools' names: no server's tool may take them.
func (t *toolbox) names() []string {
	var out []string
	for _, d := range t.defs {
		out = append(out, d.name)
	}
	return out
}

// has reports whether name is one of the mux's tools (on every call: no
// list is made).
func (t *toolbox) has(name string) bool {
	return slices.ContainsFunc(t.defs, func(d ownTool) bool { return d.name == name })
}

// run runs tool name (not the call tool) for the caller's session and
// returns its result.
func (t *toolbox) run(ctx context.Context, caller *session, name string, args []byte) []byte {
	i := slices.IndexFunc(t.defs, func(d ownTool) bool { return d.name == name })
	text, structured, isErr := t.defs[i].run(t, ctx, caller, args)
	return toolResult(text, structured, isErr)
}

// unwrap makes a call of the call tool ({name, arguments}) the
// tools/call of the tool it names; refusal says why it cannot.
func (t *toolbox) unwrap(env wire.Envelope) (msg []byte, out wire.Envelope, refusal string) {
	args := jsonscan.Member(env.Params, "arguments")
	p := map[string]json.RawMessage{"name": jsonscan.Member(args, "name")}
	if p["name"] == nil {
		return nil, env, t.m.cfg.CallTool + ": give the tool's full name, SERVER" + t.m.sep + "tool"
	}
	if a := jsonscan.Member(args, "arguments"); a != nil {
		p["arguments"] = a
	}
	if m := jsonscan.Member(env.Params, "_meta"); m != nil {
		p["_meta"] = m
	}
	b, _ := json.Marshal(p)
	if t.has(stringMember(b, "name")) {
		return nil, env, t.m.cfg.CallTool + " calls the servers' tools, not mcpflow's"
	}
	msg = wire.Request(env.ID, "tools/call", b)
	out, err := wire.Peek(msg)
	if err != nil {
		return nil, env, err.Error()
	}
	return msg, out, ""
}

// toolResult is a CallToolResult with one text item and, when structured
// is not nil, its structuredContent.
func toolResult(text string, structured any, isErr bool) []byte {
	res := map[string]any{"content": []map[string]string{{"type": "text", "text": text}}, "isError": isErr}
	if structured != nil {
		res["structuredContent"] = structured
	}
	b, _ := json.Marshal(res)
	return b
}

// toolError is a tool result that reports an error to the agent.
func toolError(text string) []byte { return toolResult(text, nil, true) }

func (t *toolbox) addServer(ctx context.Context, caller *session, a addServerArgs) (string, any, bool) {
	if refusal := t.refusal(a); refusal != "" {
		return "add_server: " + refusal, nil, true
	}
	if a.Command == "" && len(a.CLISchema) == 0 {
		return "add_server: command is empty: give the program that runs the MCP server (or cli_schema for a command-line program)", nil, true
	}
	spec := ServerSpec{Name: a.Name, Command: append([]string{a.Command}, a.Args...), Dir: a.Cwd, Env: a.Env, Build: a.Build, Watch: a.Watch, Source: "agent"}
	if len(a.CLISchema) > 0 {
		spec.CLI = &CLISpec{Schema: a.CLISchema}
		if a.Command != "" {
			spec.CLI.Command = spec.Command
		}
		spec.Command = a.CLISchema
	}
	s, err := t.m.register(spec)
	var res result.Build
	if err == nil {
		// The start ends with the mux, or with the call while it runs (the
		// client canceled it, or left).
		startCtx, cancel := context.WithCancel(t.m.ctx)
		defer context.AfterFunc(ctx, cancel)()
		res, err = t.m.start(startCtx, s)
	}
	failed := func() bool {
		h := s.state()
		if h.status == StatusCrashed || h.status == StatusBuildFailed {
			t.m.drop(s)
			err = fmt.Errorf("server %q: %s", a.Name, h.report)
		}
		return err != nil
	}
	// The caller's answer holds the new server's tools; a server that
	// failed to start has none to read.
	if err == nil && !failed() {
		if p := caller.port(a.Name); p != nil {
			p.relist(ctx)
		}
		failed()
	}
	if err != nil {
		return "add_server: " + err.Error(), nil, true
	}
	info := s.info(false, caller.published(a.Name))
	text := texts.ServerAdded(a.Name, info.Pid, info.Tools, info.Warnings)
	return text, Outcome{Server: info, Build: buildInfo(&res)}, false
}

// refusal says why add_server may not start what a asks for under
// [mux] allowed_commands, or "": every program it would run must be
// listed (the server's, and a CLI's call prefix), it may give no build,
// and it may set only the env keys of allowed_env.
func (t *toolbox) refusal(a addServerArgs) string {
	cfg := t.m.cfg
	if len(cfg.AllowedCommands) == 0 {
		return ""
	}
	for _, p := range slices.Concat(a.CLISchema[:min(1, len(a.CLISchema))], []string{a.Command}) {
		if p != "" && !t.allowed(p, a.Cwd) {
			return texts.NotAllowedCommand(p, cfg.AllowedCommands)
		}
	}
	if a.Build != "" {
		return texts.BuildNotAllowed(cfg.AllowedCommands)
	}
	if refused := slices.DeleteFunc(slices.Collect(maps.Keys(a.Env)), func(k string) bool { return slices.Contains(cfg.AllowedEnv, k) }); len(refused) > 0 {
		return texts.EnvNotAllowed(refused, cfg.AllowedEnv)
	}
	return ""
}

// allowed reports whether cmd, run from cwd (the agent's; "" = mcpflow's
// working directory), is a program of AllowedCommands: a bare name only
// as that bare name (found on PATH), a path only as the file an absolute
// entry names, never a relative entry read against an agent's cwd.
func (t *toolbox) allowed(cmd, cwd string) bool {
	bare := !strings.ContainsRune(cmd, '/') && !strings.ContainsRune(cmd, filepath.Separator)
	if !bare && !filepath.IsAbs(cmd) {
		base, err := filepath.Abs(cwd)
		if err != nil {
			return false
		}
		cmd = filepath.Join(base, cmd)
	}
	for _, c := range t.m.cfg.AllowedCommands {
		switch {
		case bare && cmd == c:
			return true
		case !bare && filepath.IsAbs(c) && filepath.Clean(cmd) == filepath.Clean(c):
			return true
		}
	}
	return false
}

func (t *toolbox) removeServer(_ context.Context, _ *session, a nameArgs) (string, any, bool) {
	s := t.m.server(a.Name)
	if s == nil {
		return fmt.Sprintf("remove_server: no server named %q: %s", a.Name, t.m.existing()), nil, true
	}
	t.m.drop(s)
	return fmt.Sprintf("server %q removed and stopped; %s", a.Name, t.m.existing()), map[string]any{"removed": a.Name}, false
}

func (t *toolbox) reloadServer(ctx context.Context, caller *session, a reloadArgs) (string, any, bool) {
	out, res, err := t.m.reload(ctx, a.Name, a.Env, caller)
	if err != nil {
		return fmt.Sprintf("reload_server %s: %v", a.Name, err), out, true
	}
	text, isErr := texts.Outcome(*res, texts.ReloadHint(a.Name), out.Server.Status == StatusRunning || !res.OK && out.Server.Pid != 0)
	return text, out, isErr
}

func (t *toolbox) listServers(_ context.Context, caller *session, a listArgs) (string, any, bool) {
	list := t.m.list(a.Verbose, caller)
	if len(list) == 0 {
		return "no servers (add one with add_server)", map[string]any{"servers": list}, false
	}
	var b strings.Builder
	for _, s := range list {
		fmt.Fprintf(&b, "%s [%s, %s] %s", s.Name, s.Status, s.Source, strings.Join(append([]string{s.Command}, s.Args...), " "))
		if s.Pid != 0 {
			fmt.Fprintf(&b, " pid %d up %s", s.Pid, s.Uptime)
		}
		tools := cmp.Or(strings.Join(s.Tools, ", "), "(none)")
		fmt.Fprintf(&b, ", restarts %d\n  tools: %s\n", s.Restarts, tools)
		if s.LastBuild != nil && !s.LastBuild.Skipped {
			if s.LastBuild.OK {
				fmt.Fprintf(&b, "  last build: ok in %s\n", s.LastBuild.Duration)
			} else {
				fmt.Fprintf(&b, "  last build: FAILED\n%s\n", indent(s.LastBuild.Errors))
			}
		}
		if s.Report != "" {
			fmt.Fprintf(&b, "  report: %s\n", indent(s.Report))
		}
		for _, w := range s.Warnings {
			fmt.Fprintf(&b, "  warning: %s\n", w)
		}
		for _, t := range s.Schemas {
			schema, _ := json.Marshal(t.InputSchema)
			fmt.Fprintf(&b, "  - %s: %s\n    input: %s\n", t.Name, t.Description, schema)
		}
	}
	return strings.TrimRight(b.String(), "\n"), map[string]any{"servers": list}, false
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// Reload rebuilds (when it has a build) and restarts server name, and
// reports the outcome, and the build and restart (nil when nothing ran)
// with the tool diff the most recently active client sees.
func (m *Mux) Reload(ctx context.Context, name string) (Outcome, *result.Build, error) {
	return m.reload(ctx, name, nil, m.latest())
}

// reload is Reload with env's overrides, for session s (nil: none), whose
// lists the tool diff is of: before, and read again after.
func (m *Mux) reload(ctx context.Context, name string, env map[string]string, s *session) (Outcome, *result.Build, error) {
	srv := m.server(name)
	if srv == nil {
		return Outcome{}, nil, fmt.Errorf("no server named %q: %s", name, m.existing())
	}
	srv.opMu.Lock()
	defer srv.opMu.Unlock()
	before := s.published(name)
	res, err := srv.reload(ctx, env)
	if err != nil {
		return Outcome{}, nil, err
	}
	if up, _ := srv.finished(res); up {
		m.serverUp(srv)
	}
	if s != nil {
		if p := s.port(name); p != nil {
			p.relist(ctx)
		}
	}
	after := s.published(name)
	diff := toolDiff(before, after, s != nil)
	out := Outcome{Server: srv.info(false, after), Added: diff.Added, Removed: diff.Removed, Changed: diff.Changed, Build: buildInfo(&res)}
	if rs := res.Restart; rs != nil {
		shown := *rs
		shown.Tools = diff
		res.Restart = &shown
	}
	return out, &res, nil
}

// toolDiff compares what a session listed of a server's tools before and
// after a reload (known: there is a session).
func toolDiff(before, after published, known bool) result.ToolDiff {
	old := map[string][]byte{}
	for i, item := range before.tools {
		old[before.names[i]] = item
	}
	diff := result.ToolDiff{Known: known, Details: map[string]result.ToolDetail{}}
	for i, item := range after.tools {
		full := after.names[i]
		diff.Current = append(diff.Current, full)
		detail := result.ToolDetail{Description: stringMember(item, "description"), InputSchema: compact(jsonscan.Member(item, "inputSchema"))}
		switch o, was := old[full]; {
		case !was:
			diff.Added = append(diff.Added, full)
			diff.Details[full] = detail
		case toolKey(o) != toolKey(item):
			diff.Changed = append(diff.Changed, full)
			detail.SchemaChanged = true
			diff.Details[full] = detail
		}
		delete(old, full)
	}
	diff.Removed = slices.Collect(maps.Keys(old))
	for _, l := range [][]string{diff.Added, diff.Changed, diff.Removed, diff.Current} {
		sort.Strings(l)
	}
	return diff
}

// toolKey is what a tool diff compares of a tool item: all but its name.
func toolKey(item []byte) string {
	var t map[string]json.RawMessage
	if json.Unmarshal(item, &t) != nil {
		return string(item)
	}
	delete(t, "name")
	b, _ := json.Marshal(t)
	return string(b)
}

// List reports every server, sorted by name, with the tools the most
// recently active client is listed.
func (m *Mux) List(verbose bool) []ServerInfo { return m.list(verbose, m.latest()) }

// list reports every server with what session from lists of it (nil: no
// tools).
func (m *Mux) list(verbose bool, from *session) []ServerInfo {
	list := []ServerInfo{}
	for _, n := range m.names() {
		if s := m.server(n); s != nil {
			list = append(list, s.info(verbose, from.published(n)))
		}
	}
	return list
}

func buildInfo(b *result.Build) *BuildInfo {
	switch {
	case b == nil:
		return nil
	case b.Seq == 0 && b.Skipped && b.Duration == 0:
		return &BuildInfo{OK: true, Skipped: true}
	}
	bi := &BuildInfo{OK: b.OK, Skipped: b.Skipped, Duration: result.Dur(b.Duration), Errors: b.Errors}
	if !b.OK && bi.Errors == "" {
		bi.Errors = b.Output
		if bi.Errors == "" && b.Err != nil {
			bi.Errors = b.Err.Error()
		}
	}
	return bi
}

// compact is raw JSON without white space, for a text.
func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
