package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// nameArgs are remove_server's and reload_server's arguments.
type nameArgs struct {
	Name string `json:"name" jsonschema:"the server's name, as list_servers shows it"`
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

// admin serves the management tools: add_server, remove_server,
// reload_server, list_servers and the call tool.
type admin struct{ *Mux }

func (m admin) addManagementTools(srv *mcp.Server) {
	if !m.cfg.DisableAddServer {
		desc := "Start an MCP server behind mcpflow; its tools appear as NAME" + m.sep + "tool. Give build (and watch) to have it rebuilt on reload_server (and on save)."
		if len(m.cfg.AllowedCommands) > 0 {
			desc += " Allowed commands: " + strings.Join(m.cfg.AllowedCommands, ", ") + " (no build command here)."
		}
		mcp.AddTool(srv, &mcp.Tool{Name: "add_server", Description: desc}, m.addServerTool)
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "remove_server", Description: "Stop an MCP server and remove its tools."}, m.removeServerTool)
	mcp.AddTool(srv, &mcp.Tool{Name: "reload_server", Description: "Rebuild (when it has a build) and restart an MCP server; on a failed build the running one keeps serving. Reports the compiler output or the tool changes."}, m.reloadServerTool)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_servers", Description: "List the MCP servers behind mcpflow: status, pid, uptime, tools, restarts, last build. verbose: every tool with its input schema."}, m.listServersTool)
	if m.cfg.CallTool != "" {
		mcp.AddTool(srv, &mcp.Tool{Name: m.cfg.CallTool, Description: "Call the tool NAME of a server behind mcpflow (for clients that do not refresh their tool list)."}, m.callTool)
	}
}

func textResult(isErr bool, structured any, format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isErr, StructuredContent: structured, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func (m admin) addServerTool(ctx context.Context, _ *mcp.CallToolRequest, a addServerArgs) (*mcp.CallToolResult, any, error) {
	program := a.Command
	if len(a.CLISchema) > 0 {
		program = a.CLISchema[0]
	}
	if refusal := m.refusal(a, program); refusal != "" {
		return textResult(true, nil, "add_server: %s", refusal), nil, nil
	}
	if a.Command == "" && len(a.CLISchema) == 0 {
		return textResult(true, nil, "add_server: command is empty: give the program that runs the MCP server (or cli_schema for a command-line program)"), nil, nil
	}
	spec := ServerSpec{
		Name:   a.Name,
		Dir:    a.Cwd,
		Env:    a.Env,
		Build:  a.Build,
		Watch:  a.Watch,
		Source: "agent",
	}
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
	if err != nil {
		return textResult(true, nil, "add_server: %v", err), nil, nil
	}
	info := m.info(s, false)
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
	return textResult(false, out, "%s", text), nil, nil
}

// refusal says why add_server may not start what a asks for under
// [mux] allowed_commands, or "": every program it would run must be
// listed (the server's, and a CLI's call prefix), it may not give a
// build (a shell command, which no list of programs can check), and it
// may set only the env keys of allowed_env.
func (m admin) refusal(a addServerArgs, program string) string {
	if len(m.cfg.AllowedCommands) == 0 {
		return ""
	}
	allowed := strings.Join(m.cfg.AllowedCommands, ", ")
	for _, p := range []string{program, a.Command} {
		if p != "" && !m.allowed(p) {
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

func (m admin) allowed(cmd string) bool {
	for _, c := range m.cfg.AllowedCommands {
		if cmd == c || filepath.Base(cmd) == c && !strings.ContainsRune(c, filepath.Separator) && cmd == filepath.Base(cmd) {
			return true
		}
	}
	return false
}

func (m admin) removeServerTool(_ context.Context, _ *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
	if err := m.remove(a.Name); err != nil {
		return textResult(true, nil, "remove_server: %v", err), nil, nil
	}
	return textResult(false, map[string]any{"removed": a.Name}, "server %q removed and stopped; %s", a.Name, m.existing()), nil, nil
}

// addFor adds a server for a call whose context is ctx: the start ends
// with the mux, or with the call while it runs (the client canceled it,
// or left). The server's session lives on the context it was connected
// with, so once added, only the mux ends it.
func (m *Mux) addFor(ctx context.Context, spec ServerSpec) (*server, result.Build, error) {
	addCtx, cancel := context.WithCancel(m.ctx)
	defer context.AfterFunc(ctx, cancel)()
	return m.add(addCtx, spec)
}

// Reload rebuilds (when a build is configured) and restarts the server
// name, and reports the tool diff. It is reload_server's engine.
func (m *Mux) Reload(ctx context.Context, name string) (Outcome, error) {
	m.mu.Lock()
	s, ok := m.servers[name]
	m.mu.Unlock()
	if !ok {
		return Outcome{}, fmt.Errorf("no server named %q: %s", name, m.existing())
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	m.mu.Lock()
	if s.starting {
		m.mu.Unlock()
		return Outcome{}, fmt.Errorf("server %q is still starting (its first build or start is running): call list_servers to see when it runs", name)
	}
	before := toolNames(s.tools)
	old := map[string]string{}
	for _, t := range s.tools {
		old[t.Name] = toolKey(t)
	}
	connected := s.cs != nil
	m.mu.Unlock()
	var res result.Build
	if !connected {
		// The first start failed before the handshake: start afresh.
		m.remove(name)
		ns, r, err := m.addFor(ctx, s.spec)
		if err != nil {
			return Outcome{Build: buildInfo(&r)}, err
		}
		s, res = ns, r
	} else {
		res = s.b.Reload(ctx)
		lifecycle{m}.applyResult(s, res)
		if err := (lifecycle{m}).relist(ctx, s); err != nil {
			m.log.Warn("re-listing after reload failed", "server", name, "err", err)
		}
	}
	m.mu.Lock()
	s.lastBuild = &res
	var diff result.ToolDiff
	diff.Known = true
	for _, t := range s.tools {
		k, was := old[t.Name]
		switch {
		case !was:
			diff.Added = append(diff.Added, t.Name)
		case k != toolKey(t):
			diff.Changed = append(diff.Changed, t.Name)
		}
	}
	now := toolNames(s.tools)
	for _, n := range before {
		if !slices.Contains(now, n) {
			diff.Removed = append(diff.Removed, n)
		}
	}
	diff.Current = now
	m.mu.Unlock()
	out := Outcome{Server: m.info(s, false), Added: diff.Added, Removed: diff.Removed, Changed: diff.Changed, Build: buildInfo(&res)}
	if !res.OK {
		return out, fmt.Errorf("%s\nthe previous server keeps serving", buildReport(res))
	}
	if res.Restart != nil && res.Restart.Err != nil {
		return out, fmt.Errorf("the server did not come back up: %v", res.Restart.Err)
	}
	return out, nil
}

func toolNames(ts []*mcp.Tool) []string {
	var n []string
	for _, t := range ts {
		n = append(n, t.Name)
	}
	sort.Strings(n)
	return n
}

func toolKey(t *mcp.Tool) string {
	b, _ := json.Marshal(struct {
		D string
		S any
		A any
	}{t.Description, t.InputSchema, t.Annotations})
	return string(b)
}

func (m admin) reloadServerTool(ctx context.Context, _ *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
	out, err := m.Reload(ctx, a.Name)
	if err != nil {
		return textResult(true, out, "reload_server %s: %v", a.Name, err), nil, nil
	}
	return textResult(false, out, "%s", m.reloadText(fmt.Sprintf("server %q reloaded", a.Name), a.Name, out)), nil, nil
}

// reloadText is a reload's result for the agent: head, the new pid, the
// build's time and the tool changes under the names the client sees.
func (m *Mux) reloadText(head, server string, out Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (pid %d)", head, out.Server.Pid)
	if out.Build != nil && !out.Build.Skipped {
		fmt.Fprintf(&b, "; built in %s", out.Build.Duration)
	}
	if len(out.Added)+len(out.Removed)+len(out.Changed) == 0 {
		b.WriteString("; tools unchanged")
	}
	for _, x := range []struct {
		label string
		names []string
	}{{"added", out.Added}, {"removed", out.Removed}, {"changed", out.Changed}} {
		if len(x.names) == 0 {
			continue
		}
		shown := make([]string, len(x.names))
		for i, n := range x.names {
			shown[i] = m.join(server, n)
		}
		fmt.Fprintf(&b, "\n%s: %s", x.label, strings.Join(shown, ", "))
	}
	return b.String()
}

func (m admin) listServersTool(_ context.Context, _ *mcp.CallToolRequest, a listArgs) (*mcp.CallToolResult, any, error) {
	list := m.List(a.Verbose)
	if len(list) == 0 {
		return textResult(false, map[string]any{"servers": list}, "no servers (add one with add_server)"), nil, nil
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
	return textResult(false, map[string]any{"servers": list}, "%s", strings.TrimRight(b.String(), "\n")), nil, nil
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

func (m admin) callTool(ctx context.Context, req *mcp.CallToolRequest, a callArgs) (*mcp.CallToolResult, any, error) {
	m.mu.Lock()
	r, ok := m.cat.tools[a.Name]
	m.mu.Unlock()
	if !ok {
		return front(m).unknownTool(a.Name), nil, nil
	}
	args, _ := json.Marshal(a.Arguments)
	if a.Arguments == nil {
		args = []byte("{}")
	}
	res, err := front(m).callChild(ctx, req.Session, r.server, r.name, &mcp.CallToolParamsRaw{Meta: req.Params.Meta, Name: r.name, Arguments: args})
	return res, nil, err
}

// List reports every server, sorted by name.
func (m *Mux) List(verbose bool) []ServerInfo {
	m.mu.Lock()
	var all []*server
	for _, n := range m.namesLocked() {
		all = append(all, m.servers[n])
	}
	m.mu.Unlock()
	list := make([]ServerInfo, 0, len(all))
	for _, s := range all {
		list = append(list, m.info(s, verbose))
	}
	return list
}

func (m *Mux) info(s *server, verbose bool) ServerInfo {
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
		Warnings: s.warnings,
	}
	if len(sp.Command) > 0 {
		info.Command, info.Args = sp.Command[0], append(info.Args, sp.Command[1:]...)
	}
	if s.status == StatusRunning && !s.started.IsZero() {
		info.Uptime = result.Dur(time.Since(s.started))
	}
	for _, t := range s.tools {
		full := m.join(sp.Name, t.Name) // unprefixed in single mode
		if _, ok := m.cat.tools[full]; !ok {
			continue
		}
		info.Tools = append(info.Tools, full)
		if verbose {
			info.Schemas = append(info.Schemas, ToolInfo{Name: full, Description: t.Description, InputSchema: t.InputSchema})
		}
	}
	for _, p := range s.prompts {
		info.Prompts = append(info.Prompts, m.join(sp.Name, p.Name))
	}
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
