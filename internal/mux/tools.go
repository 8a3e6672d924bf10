package mux

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
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

// reloadArgs are reload_server's arguments.
type reloadArgs struct {
	Name string            `json:"name" jsonschema:"the server's name, as list_servers shows it"`
	Env  map[string]string `json:"env,omitempty" jsonschema:"environment overrides for the restarted server, kept for later restarts; only the keys its configuration allows (run.env_overridable)"`
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

// The mux's own tools: add_server (unless Config.DisableAddServer;
// AllowedCommands restricts it), remove_server, reload_server,
// list_servers, and Config.CallTool when set. Their definitions are made
// once from their argument types; their results are built here, as
// bytes, like every answer the mux makes.

// ownTool is one of the mux's tools: its definition and what runs it.
type ownTool struct {
	name, desc string
	schema     any
	run        func(m *Mux, ctx context.Context, s *session, args []byte) (text string, structured any, isErr bool)
}

// ownToolList makes the definitions; New keeps them in m.own.
func (m *Mux) ownToolList() []ownTool {
	var out []ownTool
	if !m.cfg.DisableAddServer {
		out = append(out, ownTool{"add_server", texts.AddServerDescription(m.sep, m.cfg.AllowedCommands), schemaOf[addServerArgs](), (*Mux).addServerTool})
	}
	out = append(out,
		ownTool{"remove_server", texts.RemoveServerDescription, schemaOf[nameArgs](), (*Mux).removeServerTool},
		ownTool{"reload_server", texts.ReloadServerDescription, schemaOf[reloadArgs](), (*Mux).reloadServerTool},
		ownTool{"list_servers", texts.ListServersDescription, schemaOf[listArgs](), (*Mux).listServersTool},
	)
	if m.cfg.CallTool != "" {
		out = append(out, ownTool{m.cfg.CallTool, texts.MuxCallToolDescription, schemaOf[callArgs](), nil})
	}
	return out
}

// schemaOf is the input schema of a tool whose arguments are a T.
func schemaOf[T any]() any {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // the argument types are the package's own
	}
	return s
}

// ownTools are the mux's tools as tools/list lists them.
func (m *Mux) ownTools() [][]byte {
	var out [][]byte
	for _, t := range m.own {
		b, _ := json.Marshal(map[string]any{"name": t.name, "description": t.desc, "inputSchema": t.schema})
		out = append(out, b)
	}
	return out
}

// ownNames are the names of the mux's tools.
func (m *Mux) ownNames() []string {
	var out []string
	for _, t := range m.own {
		out = append(out, t.name)
	}
	return out
}

// isOwnTool reports whether name is one of the mux's tools.
func (m *Mux) isOwnTool(name string) bool {
	for _, t := range m.own {
		if t.name == name {
			return true
		}
	}
	return false
}

// runOwnTool runs one of the mux's tools for session s and returns its
// result.
func (m *Mux) runOwnTool(ctx context.Context, s *session, name string, args []byte, modern bool) []byte {
	for _, t := range m.own {
		if t.name == name && t.run != nil {
			text, structured, isErr := t.run(m, ctx, s, args)
			return toolResult(text, structured, isErr, modern)
		}
	}
	return errToolResult(s.unknownTool(name), modern)
}

// toolResult is a CallToolResult with one text item and, when structured
// is not nil, its structuredContent.
func toolResult(text string, structured any, isErr bool, modern bool) []byte {
	res := map[string]any{"content": []map[string]string{{"type": "text", "text": text}}, "isError": isErr}
	if structured != nil {
		res["structuredContent"] = structured
	}
	if modern {
		res["resultType"] = "complete"
	}
	b, _ := json.Marshal(res)
	return b
}

// decodeArgs reads a tool's arguments into a; an error says what is
// wrong with them.
func decodeArgs(args []byte, a any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	if err := json.Unmarshal(args, a); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

func (m *Mux) addServerTool(ctx context.Context, caller *session, args []byte) (string, any, bool) {
	var a addServerArgs
	if err := decodeArgs(args, &a); err != nil {
		return "add_server: " + err.Error(), nil, true
	}
	program := a.Command
	if len(a.CLISchema) > 0 {
		program = a.CLISchema[0]
	}
	if refusal := m.refusal(a, program); refusal != "" {
		return "add_server: " + refusal, nil, true
	}
	if a.Command == "" && len(a.CLISchema) == 0 {
		return "add_server: command is empty: give the program that runs the MCP server (or cli_schema for a command-line program)", nil, true
	}
	spec := ServerSpec{Name: a.Name, Dir: a.Cwd, Env: a.Env, Build: a.Build, Watch: a.Watch, Source: "agent"}
	if len(a.CLISchema) > 0 {
		spec.CLI = &CLISpec{Schema: a.CLISchema}
		if a.Command != "" {
			spec.CLI.Command = append([]string{a.Command}, a.Args...)
		}
		spec.Command = spec.CLI.Schema
	} else {
		spec.Command = append([]string{a.Command}, a.Args...)
	}
	s, res, err := m.addFor(ctx, spec)
	if err == nil {
		err = caller.opened(ctx, s)
	}
	if err != nil {
		return "add_server: " + err.Error(), nil, true
	}
	info := m.info(s, false, caller)
	out := Outcome{Server: info, Build: buildInfo(&res)}
	tools := "no tools"
	if len(info.Tools) > 0 {
		tools = "tools: " + strings.Join(info.Tools, ", ")
	}
	text := fmt.Sprintf("server %q is running (pid %d); %s", a.Name, info.Pid, tools)
	if info.Pid == 0 { // a CLI: one process per call
		text = fmt.Sprintf("server %q is ready; %s", a.Name, tools)
	}
	if len(info.Warnings) > 0 {
		text += "\nwarnings:\n- " + strings.Join(info.Warnings, "\n- ")
	}
	return text, out, false
}

// refusal says why add_server may not start what a asks for under
// [mux] allowed_commands, or "": every program it would run must be
// listed (the server's, and a CLI's call prefix), it may not give a
// build (a shell command, which no list of programs can check), and it
// may set only the env keys of allowed_env.
func (m *Mux) refusal(a addServerArgs, program string) string {
	if len(m.cfg.AllowedCommands) == 0 {
		return ""
	}
	allowed := strings.Join(m.cfg.AllowedCommands, ", ")
	for _, p := range []string{program, a.Command} {
		if p != "" && !m.allowed(p, a.Cwd) {
			return fmt.Sprintf("%q is not an allowed command; the allowed commands are: %s", p, allowed)
		}
	}
	if a.Build != "" {
		return "build is not accepted here: a build is a shell command, and only the programs " + allowed + " may be started. Build the server before add_server, or ask the user to configure it with its build in mcpflow.toml"
	}
	var refused []string
	for k := range a.Env {
		if !slices.Contains(m.cfg.AllowedEnv, k) {
			refused = append(refused, k)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		ok := "none"
		if len(m.cfg.AllowedEnv) > 0 {
			ok = strings.Join(m.cfg.AllowedEnv, ", ")
		}
		return fmt.Sprintf("env keys not allowed: %s; the keys add_server may set are: %s", strings.Join(refused, ", "), ok)
	}
	return ""
}

// allowed reports whether cmd, run from cwd (the agent's; "" = mcpflow's
// working directory), is a program of AllowedCommands: a bare name only
// as that bare name (found on PATH), a path only as the file an absolute
// entry names, never a relative entry read against an agent's cwd.
func (m *Mux) allowed(cmd, cwd string) bool {
	bare := !strings.ContainsRune(cmd, '/') && !strings.ContainsRune(cmd, filepath.Separator)
	if !bare && !filepath.IsAbs(cmd) {
		base, err := filepath.Abs(cwd)
		if err != nil {
			return false
		}
		cmd = filepath.Join(base, cmd)
	}
	for _, c := range m.cfg.AllowedCommands {
		switch {
		case bare && cmd == c:
			return true
		case !bare && filepath.IsAbs(c) && filepath.Clean(cmd) == filepath.Clean(c):
			return true
		}
	}
	return false
}

func (m *Mux) removeServerTool(_ context.Context, _ *session, args []byte) (string, any, bool) {
	var a nameArgs
	if err := decodeArgs(args, &a); err != nil {
		return "remove_server: " + err.Error(), nil, true
	}
	if err := m.remove(a.Name); err != nil {
		return "remove_server: " + err.Error(), nil, true
	}
	return fmt.Sprintf("server %q removed and stopped; %s", a.Name, m.existing()), map[string]any{"removed": a.Name}, false
}

// addFor adds a server for a call whose context is ctx: the start ends
// with the mux, or with the call while it runs (the client canceled it,
// or left).
func (m *Mux) addFor(ctx context.Context, spec ServerSpec) (*server, result.Build, error) {
	addCtx, cancel := context.WithCancel(m.ctx)
	defer context.AfterFunc(ctx, cancel)()
	return m.add(addCtx, spec)
}

// setEnv gives server name environment overrides for its next starts.
func (m *Mux) setEnv(name string, env map[string]string) error {
	if len(env) == 0 {
		return nil
	}
	m.mu.Lock()
	s, ok := m.servers[name]
	var b Backend
	if ok {
		b = s.b
	}
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("no server named %q: %s", name, m.existing())
	}
	es, ok := b.(interface{ SetEnv(map[string]string) error })
	if !ok {
		return fmt.Errorf("server %q takes no environment overrides", name)
	}
	return es.SetEnv(env)
}

// Reload rebuilds (when a build is configured) and restarts the server
// name, and reports what it did: the outcome, and the build and restart
// with the tool diff under the names the most recently active client
// sees (nil when nothing ran).
func (m *Mux) Reload(ctx context.Context, name string) (Outcome, *result.Build, error) {
	return m.reload(ctx, name, m.latest())
}

// reload is Reload for session s (nil: none), whose catalog the tool diff
// is of: before, and read again after.
func (m *Mux) reload(ctx context.Context, name string, s *session) (Outcome, *result.Build, error) {
	m.mu.Lock()
	srv, ok := m.servers[name]
	m.mu.Unlock()
	if !ok {
		return Outcome{}, nil, fmt.Errorf("no server named %q: %s", name, m.existing())
	}
	srv.opMu.Lock()
	defer srv.opMu.Unlock()
	m.mu.Lock()
	starting := srv.starting
	m.mu.Unlock()
	if starting {
		return Outcome{}, nil, fmt.Errorf("server %q is still starting (its first build or start is running): call list_servers to see when it runs", name)
	}
	before := s.toolItems(name)
	res := srv.b.Reload(ctx)
	lifecycle{m}.applyResult(srv, res)
	m.mu.Lock()
	srv.lastBuild = &res
	m.mu.Unlock()
	var after map[string][]byte
	if s != nil {
		s.stale(name)
		s.refresh(ctx, []string{name}, nil)
		after = s.toolItems(name)
	}
	diff := result.ToolDiff{Known: s != nil, Details: map[string]result.ToolDetail{}}
	for full, item := range after {
		diff.Current = append(diff.Current, full)
		detail := result.ToolDetail{Description: stringMember(item, "description"), InputSchema: compact(jsonscan.Member(item, "inputSchema"))}
		switch old, was := before[full]; {
		case !was:
			diff.Added = append(diff.Added, full)
			diff.Details[full] = detail
		case toolKey(old) != toolKey(item):
			diff.Changed = append(diff.Changed, full)
			detail.SchemaChanged = true
			diff.Details[full] = detail
		}
	}
	for full := range before {
		if _, ok := after[full]; !ok {
			diff.Removed = append(diff.Removed, full)
		}
	}
	for _, l := range [][]string{diff.Added, diff.Changed, diff.Removed, diff.Current} {
		sort.Strings(l)
	}
	out := Outcome{Server: m.info(srv, false, s), Added: diff.Added, Removed: diff.Removed, Changed: diff.Changed, Build: buildInfo(&res)}
	if rs := res.Restart; rs != nil {
		shown := *rs
		shown.Tools = diff
		res.Restart = &shown
	}
	return out, &res, nil
}

// toolItems is what session s lists of server name's tools, by the names
// its client sees; nil for no session.
func (s *session) toolItems(name string) map[string][]byte {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	if p := s.cat.pub[name]; p != nil {
		for i, item := range p.tools {
			out[p.names[i]] = item
		}
	}
	return out
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

func (m *Mux) reloadServerTool(ctx context.Context, caller *session, args []byte) (string, any, bool) {
	var a reloadArgs
	if err := decodeArgs(args, &a); err != nil {
		return "reload_server: " + err.Error(), nil, true
	}
	if err := m.setEnv(a.Name, a.Env); err != nil {
		return fmt.Sprintf("reload_server %s: %v", a.Name, err), nil, true
	}
	out, res, err := m.reload(ctx, a.Name, caller)
	if err != nil && res == nil {
		return fmt.Sprintf("reload_server %s: %v", a.Name, err), out, true
	}
	text, isErr := texts.Outcome(*res, texts.ReloadHint(a.Name), out.Server.Status == StatusRunning || !res.OK && out.Server.Pid != 0)
	return text, out, isErr
}

func (m *Mux) listServersTool(_ context.Context, caller *session, args []byte) (string, any, bool) {
	var a listArgs
	if err := decodeArgs(args, &a); err != nil {
		return "list_servers: " + err.Error(), nil, true
	}
	list := m.list(a.Verbose, caller)
	if len(list) == 0 {
		return "no servers (add one with add_server)", map[string]any{"servers": list}, false
	}
	var b strings.Builder
	for _, s := range list {
		fmt.Fprintf(&b, "%s [%s, %s] %s", s.Name, s.Status, s.Source, strings.Join(append([]string{s.Command}, s.Args...), " "))
		if s.Pid != 0 {
			fmt.Fprintf(&b, " pid %d up %s", s.Pid, s.Uptime)
		}
		fmt.Fprintf(&b, ", restarts %d\n  tools: %s\n", s.Restarts, orNone(s.Tools))
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

func orNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// List reports every server, sorted by name, with the tools the most
// recently active client is listed.
func (m *Mux) List(verbose bool) []ServerInfo { return m.list(verbose, m.latest()) }

// list reports every server with what session from lists of it (nil: no
// tools).
func (m *Mux) list(verbose bool, from *session) []ServerInfo {
	m.mu.Lock()
	var all []*server
	for _, n := range m.namesLocked() {
		all = append(all, m.servers[n])
	}
	m.mu.Unlock()
	list := make([]ServerInfo, 0, len(all))
	for _, s := range all {
		list = append(list, m.info(s, verbose, from))
	}
	return list
}

// info is server s as list_servers shows it to session from's client.
func (m *Mux) info(s *server, verbose bool, from *session) ServerInfo {
	var pub published
	if from != nil {
		from.mu.Lock()
		if p := from.cat.pub[s.spec.Name]; p != nil {
			pub = *p
		}
		from.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sp := s.spec
	info := ServerInfo{
		Name:     sp.Name,
		Args:     []string{},
		Cwd:      sp.Dir,
		Source:   sp.Source,
		Status:   s.status,
		Pid:      s.pid,
		Tools:    []string{},
		Restarts: s.restarts,
		Report:   s.report,
		Warnings: pub.warnings,
	}
	if len(sp.Command) > 0 {
		info.Command, info.Args = sp.Command[0], append(info.Args, sp.Command[1:]...)
	}
	if s.status == StatusRunning && !s.started.IsZero() {
		info.Uptime = result.Dur(time.Since(s.started))
	}
	info.Tools = append(info.Tools, pub.names...)
	if verbose {
		for _, item := range pub.tools {
			var t ToolInfo
			_ = json.Unmarshal(item, &t)
			info.Schemas = append(info.Schemas, t)
		}
	}
	info.Prompts = append(info.Prompts, pub.pnames...)
	info.LastBuild = buildInfo(s.lastBuild)
	return info
}

func buildInfo(b *result.Build) *BuildInfo {
	if b == nil || b.Seq == 0 && b.Skipped && b.Duration == 0 {
		if b != nil && b.Skipped {
			return &BuildInfo{OK: true, Skipped: true}
		}
		return nil
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
