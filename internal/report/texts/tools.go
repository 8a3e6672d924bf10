package texts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The descriptions of mcpflow's own tools: the rebuild tool of one server
// (recompile, relay.tool), the call tool (relay.call_tool), and the mux's.

// RecompileDescription is the rebuild tool's description.
const RecompileDescription = "Rebuild and restart this MCP server (mcpflow hot reload). Call it after you edit the server's source code so that your changes take effect; " +
	"your conversation continues and the tool list refreshes. If the build fails, the previous server keeps running and the result shows the compiler errors with file:line. " +
	"Also call it when a tool reports that the server is not running."

// EnvDescription describes the rebuild tool's env argument, allowed the
// keys given.
func EnvDescription(allowed []string) string {
	return "Optional environment overrides for the restarted server; they persist for later restarts. Allowed keys: " + strings.Join(allowed, ", ") + "."
}

// ReloadEnvDescription describes reload_server's env argument: allowed
// are the keys each server lets the agent set (its run.env_overridable).
func ReloadEnvDescription(allowed map[string][]string) string {
	var by []string
	for _, name := range slices.Sorted(maps.Keys(allowed)) {
		by = append(by, name+": "+strings.Join(allowed[name], ", "))
	}
	return "Optional environment overrides for the restarted server; they persist for later restarts. Allowed keys, by server: " + strings.Join(by, "; ") + "."
}

// CallToolDescription is the call tool's description for one server,
// whose rebuild tool is tool.
func CallToolDescription(tool string) string {
	return "Call a tool of this MCP server by name. Use it for tools added after the session began, when your client does not refresh its tool list: " +
		"the " + tool + " result lists new tools and their input schemas."
}

// The mux's tools.
const (
	RemoveServerDescription = "Stop an MCP server and remove its tools."
	ReloadServerDescription = "Rebuild (when it has a build) and restart an MCP server; on a failed build the running one keeps serving. Reports the compiler output or the tool changes."
	ListServersDescription  = "List the MCP servers behind mcpflow: status, pid, uptime, tools, restarts, last build. verbose: every tool with its input schema."
	MuxCallToolDescription  = "Call the tool NAME of a server behind mcpflow (for clients that do not refresh their tool list)."
)

// AddServerDescription is add_server's description: sep joins a server's
// name and its tools'; allowed, when set, are the only programs it runs.
func AddServerDescription(sep string, allowed []string) string {
	desc := "Start an MCP server behind mcpflow; its tools appear as NAME" + sep + "tool. Give build (and watch) to have it rebuilt on reload_server (and on save)."
	if len(allowed) > 0 {
		desc += " Allowed commands: " + strings.Join(allowed, ", ") + " (no build command here)."
	}
	return desc
}

// ServerAdded is add_server's answer: server name runs as pid (0: a
// command-line program, one process per call) with tools, and what the
// mux left out of them (warnings).
func ServerAdded(name string, pid int, tools, warnings []string) string {
	list := "no tools"
	if len(tools) > 0 {
		list = "tools: " + strings.Join(tools, ", ")
	}
	text := fmt.Sprintf("server %q is running (pid %d); %s", name, pid, list)
	if pid == 0 {
		text = fmt.Sprintf("server %q is ready; %s", name, list)
	}
	if len(warnings) > 0 {
		text += "\nwarnings:\n- " + strings.Join(warnings, "\n- ")
	}
	return text
}

// The refusals of add_server under [mux] allowed_commands (allowed) and
// allowed_env.

// NotAllowedCommand: program is not one of the allowed commands.
func NotAllowedCommand(program string, allowed []string) string {
	return fmt.Sprintf("%q is not an allowed command; the allowed commands are: %s", program, strings.Join(allowed, ", "))
}

// BuildNotAllowed: a build is a shell command, which no list of programs
// can check.
func BuildNotAllowed(allowed []string) string {
	return "build is not accepted here: a build is a shell command, and only the programs " + strings.Join(allowed, ", ") +
		" may be started. Build the server before add_server, or ask the user to configure it with its build in mcpflow.toml"
}

// EnvNotAllowed: the env keys refused are not of allowed_env (allowed).
func EnvNotAllowed(refused, allowed []string) string {
	ok := "none"
	if len(allowed) > 0 {
		ok = strings.Join(allowed, ", ")
	}
	return fmt.Sprintf("env keys not allowed: %s; the keys add_server may set are: %s", strings.Join(slices.Sorted(slices.Values(refused)), ", "), ok)
}

// The mux's states of one server and its answers about them.

// ReloadHint is what rebuilds server name behind the mux, as a text names
// it.
func ReloadHint(name string) string { return `reload_server {"name": "` + name + `"}` }

// MuxInstructions heads the mux's instructions; sep joins names.
func MuxInstructions(sep string) string {
	return "mcpflow serves several MCP servers here. Their tools and prompts are named SERVER" + sep + "NAME. list_servers shows them; reload_server rebuilds and restarts one."
}

// Existing names the servers behind the mux (sorted).
func Existing(names []string) string {
	if len(names) == 0 {
		return "no servers are running (add one with add_server)"
	}
	return "the servers are: " + strings.Join(names, ", ")
}

// Server states, as list_servers shows them.
const (
	StatusStarting    = "starting"
	StatusRunning     = "running"
	StatusCrashed     = "crashed"
	StatusBuildFailed = "build-failed"
)

// ServerState says why server name (status, report: its last report)
// takes no call now, and what to do; existing names the servers.
func ServerState(name, status, report, existing string, exists bool) string {
	switch {
	case !exists:
		return fmt.Sprintf("no server named %q (it was removed, or never added): %s", name, existing)
	case status == StatusBuildFailed:
		return fmt.Sprintf("server %q is down (%s): %s\n\nWhat to do: fix it, then call %s.", name, status, report, ReloadHint(name))
	case status == StatusCrashed:
		return fmt.Sprintf("server %q is down (%s): %s", name, status, report)
	case status == StatusStarting:
		return fmt.Sprintf("server %q is still starting; call list_servers to see when it runs, then call again", name)
	}
	return fmt.Sprintf("server %q is not running (%s): call %s", name, status, ReloadHint(name))
}

// UnknownTool explains a call of tool name, which the mux does not list:
// sep joins names, existing names the servers.
func UnknownTool(name, sep, existing string) string {
	if name == "add_server" {
		return "add_server is turned off here ([mux] add_server = false in mcpflow.toml); " + existing
	}
	return fmt.Sprintf("unknown tool %q: tools of the servers behind mcpflow are named SERVER%sTOOL; %s", name, sep, existing)
}

// NoSuchTool: server has no tool named tool; its tools are listed.
func NoSuchTool(server, tool string, tools []string) string {
	return fmt.Sprintf("server %q has no tool %q; its tools are: %s", server, tool, strings.Join(tools, ", "))
}

// UnknownPrompt: no server lists prompt name.
func UnknownPrompt(name, sep, existing string) string {
	return fmt.Sprintf("unknown prompt %q: prompts are named SERVER%sPROMPT; %s", name, sep, existing)
}

// NoResource: no server lists resource uri.
func NoResource(uri string) string {
	return fmt.Sprintf("Resource not found: no server lists %q", uri)
}

// RemovedBeforeAnswer answers a call to a server removed while it ran.
func RemovedBeforeAnswer(name, existing string) string {
	return fmt.Sprintf("server %q was removed before it answered: %s", name, existing)
}
