package project

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/statedir"
)

// ErrUsage marks an Init error in the command line (a --cli schema command that does not split).
var ErrUsage = errors.New("usage")

// The lines that open and end every config init writes.
const (
	configHead = "# Commit it. Paths are relative to this file. Every key: mcpflow.toml.example\n" +
		"# in the mcpflow repository, or `mcpflow check` for the resolved settings.\n\n"
	configTail = `gitignore = true
debounce = "100ms"

[relay]
tool = "recompile"   # the tool mcpflow adds for the agent

[log]
level = "info"
# Clients hide a server's stderr: this file is where you see what mcpflow did.
file = ".mcpflow/mcpflow.log"
`
)

// Init writes dir/mcpflow.toml for the project in dir (or, with cliSchema,
// for that CLI) and returns what to tell the user, with how to start a client as l says.
func Init(dir, cliSchema string, l Launcher) (string, error) {
	path := filepath.Join(dir, "mcpflow.toml")
	p := Detect(dir)
	if ents, _ := os.ReadDir(dir); p.Kind == "" && cliSchema == "" && !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return !strings.HasPrefix(e.Name(), ".") }) {
		return "", fmt.Errorf("%s is empty: run mcpflow init in your server's folder, or write mcpflow.toml yourself (mcpflow.toml.example shows every setting)", dir)
	}
	text := RenderConfig(p)
	if cliSchema != "" {
		var err error
		if text, p.Run, err = RenderCLIConfig(p, cliSchema); err != nil {
			return "", fmt.Errorf("%w: %w", ErrUsage, err)
		}
		p.RunWhy = "the CLI's schema command (--cli); each tool call runs the CLI once"
		p.Build, p.Notes = "", nil // the build is only suggested, in a comment
		p.URL, p.URLWhy = "", ""
	}
	// What init writes must pass check.
	if _, err := config.Parse("mcpflow.toml", []byte(text), dir); err != nil {
		return "", fmt.Errorf("internal error: the generated config does not parse: %w", err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return "", err
	}
	if err := statedir.Ignore(statedir.Of(dir), "mcpflow's logs and build outputs: never committed."); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Wrote %s (project: %s).\n", path, cmp.Or(p.Kind, "unknown"))
	if p.Build != "" {
		fmt.Fprintf(&b, "  build: %s\n", p.Build)
	}
	fmt.Fprintf(&b, "  run:   %s\n", strings.Join(p.Run, " "))
	if p.RunWhy != "" {
		fmt.Fprintf(&b, "  why:   %s\n", p.RunWhy)
	}
	if p.URL != "" {
		fmt.Fprintf(&b, "  url:   %s (the server serves Streamable HTTP)\n", p.URL)
		fmt.Fprintf(&b, "  why:   %s. Change run.url in mcpflow.toml if that is wrong; remove it if the server speaks stdio.\n", p.URLWhy)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "Check: %s\n", n)
	}
	for _, n := range p.Advice {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	fmt.Fprintf(&b, "\n%s", ClientSnippet(p.Name, path, l))
	return b.String(), nil
}

// RenderConfig writes a commented mcpflow.toml for p.
func RenderConfig(p Project) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# mcpflow.toml: hot reload for the %s MCP server in this folder (%s project).\n", p.Name, cmp.Or(p.Kind, "unknown kind of"))
	b.WriteString(configHead)
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "# CHECK: %s\n", n)
	}
	if len(p.Notes) > 0 {
		b.WriteString("\n")
	}
	if p.Build != "" {
		b.WriteString("[build]\n")
		b.WriteString("# Run by sh -c before each (re)start; the old server keeps serving while it runs.\n")
		for _, n := range p.BuildNotes {
			fmt.Fprintf(&b, "# %s\n", n)
		}
		fmt.Fprintf(&b, "command = %s\n", config.TOMLString(p.Build))
		b.WriteString("timeout = \"10m\"\n\n")
	}
	server, stop := "speaking stdio. An array is exec'd directly; a string runs by sh -c.", "after closing its stdin, before SIGTERM (then SIGKILL)"
	if p.URL != "" {
		server, stop = "serving Streamable HTTP at url. An array is exec'd directly;\n# a string runs by sh -c.", "after SIGTERM, before SIGKILL"
	}
	fmt.Fprintf(&b, "[run]\n# The MCP server, %s\n", server)
	if p.RunWhy != "" {
		fmt.Fprintf(&b, "# Why this command: %s.\n", p.RunWhy)
	}
	fmt.Fprintf(&b, "command = %s\n", config.TOMLStrings(p.Run))
	if p.URL != "" {
		b.WriteString(wrap("#", strings.Fields("Why this url: "+p.URLWhy+". With {port}, mcpflow picks a free port for each start and passes it as $PORT; with a fixed port it stops the old server before it starts the new one. Remove url if the server speaks stdio."), 80))
		fmt.Fprintf(&b, "url = %s\n", config.TOMLString(p.URL))
	} else {
		b.WriteString("# For a server that serves Streamable HTTP instead ({port}: a free port for each\n")
		b.WriteString("# start, passed as $PORT):\n")
		b.WriteString("# url = \"http://127.0.0.1:{port}/mcp\"\n")
	}
	if len(p.Env) > 0 {
		fmt.Fprintf(&b, "env = %s   # added to the inherited environment\n", config.TOMLTable(p.Env))
	} else {
		b.WriteString("# env = { LOG_LEVEL = \"debug\" }   # added to the inherited environment\n")
	}
	fmt.Fprintf(&b, "stop_timeout = \"2s\"   # %s\n\n", stop)
	b.WriteString("[watch]\n")
	b.WriteString("# Saving a matching file rebuilds and restarts the server.\n")
	b.WriteString("paths = [\".\"]\n")
	fmt.Fprintf(&b, "include = %s\n", config.TOMLStrings(p.Include))
	b.WriteString(excludeLines(p.Exclude))
	b.WriteString(configTail)
	return b.String()
}

// wrap joins words, each after a space, into lines that start with prefix
// and stay within width columns (a longer word keeps its own line).
func wrap(prefix string, words []string, width int) string {
	var b strings.Builder
	line := prefix
	for _, w := range words {
		if len(line)+1+len(w) > width && line != prefix {
			b.WriteString(line + "\n")
			line = prefix
		}
		line += " " + w
	}
	return b.String() + line + "\n"
}

// excludeLines writes watch.exclude: the project's globs, then config.ClientFiles.
func excludeLines(project []string) string {
	var lines [2]string
	for i, globs := range [][]string{project, config.ClientFiles()} {
		var items []string
		for _, g := range globs {
			items = append(items, config.TOMLString(g)+",")
		}
		if len(items) > 0 {
			lines[i] = wrap(" ", items, 78)
		}
	}
	return "exclude = [\n" + lines[0] +
		"  # Your MCP clients' and editors' files: editing them never restarts the server\n" +
		"  # (mcpflow leaves them out even when this list does not name them).\n" +
		lines[1] + "]\n"
}

// Launcher is how a client starts mcpflow: a command, the arguments before "watch", and a note.
type Launcher struct {
	command string
	args    []string
	note    string
}

// LauncherFor is how a client starts the mcpflow at exe ("" when unknown):
// exe, but npx's or uvx's form for a binary in their cache, and go run (from
// clone, else mcpflow from PATH) for a binary go run built.
func LauncherFor(exe, clone string) Launcher {
	slashed := strings.ReplaceAll(exe, `\`, "/") // a Windows path too, on any host
	switch {
	case strings.Contains(slashed, "/node_modules/"):
		return Launcher{"npx", []string{"-y", "mcpflow"}, "npx fetches mcpflow from npm and runs it."}
	case strings.Contains(slashed, "/site-packages/"):
		return Launcher{"uvx", []string{"mcpflow"}, "uvx fetches mcpflow from PyPI and runs it."}
	case goRunBinary(slashed) && clone != "":
		return Launcher{"go", []string{"run", "-C", clone, "./cmd/mcpflow"},
			"go run builds mcpflow from the clone at " + clone + " when the client starts it; `make install` there puts a binary on PATH instead."}
	case goRunBinary(slashed), exe == "":
		return Launcher{"mcpflow", nil, "mcpflow must be on the client's PATH (`make install` in a clone puts it there), or give its absolute path as the command."}
	}
	return Launcher{exe, nil, "The command is this mcpflow binary, " + exe + "."}
}

// goRunBinary reports a binary go run built, removed when it ends: $GOTMPDIR/go-buildN/bN/exe/NAME.
func goRunBinary(exe string) bool {
	return strings.Contains(exe, "/go-build") && path.Base(path.Dir(exe)) == "exe"
}

// ClientSnippet tells the user how to point their client at mcpflow, started as l says.
func ClientSnippet(name, configPath string, l Launcher) string {
	name = regexp.MustCompile(`[^a-zA-Z0-9_-]`).ReplaceAllString(cmp.Or(name, "server"), "-")
	args := append(append([]string{}, l.args...), "watch", "-c", configPath)
	shell := []string{shellQuote(l.command)}
	for _, a := range args {
		shell = append(shell, shellQuote(a))
	}
	note := l.note
	if l.command != "mcpflow" {
		note += ` mcpflow on PATH? Use "command": "mcpflow", "args": ` + jsonList([]string{"watch", "-c", configPath}) + "."
	}
	return fmt.Sprintf(`Next, start your MCP client through mcpflow:

  Claude Code:
    claude mcp add %[1]s -- %[2]s

  .mcp.json (Claude Code), .cursor/mcp.json (Cursor), .gemini/settings.json (Gemini CLI):
    { "mcpServers": { %[3]s: { "command": %[4]s, "args": %[5]s } } }

  .vscode/mcp.json (VS Code):
    { "servers": { %[3]s: { "type": "stdio", "command": %[4]s, "args": %[5]s } } }

  ~/.codex/config.toml (Codex CLI):
    [mcp_servers.%[1]s]
    command = %[4]s
    args = %[5]s

  (%[6]s)

  Over HTTP instead: run mcpflow yourself,
    %[7]s
  then: claude mcp add --transport http %[1]s %[8]s
  or in .mcp.json's "mcpServers" or .vscode/mcp.json's "servers":
    %[3]s: { "type": "http", "url": %[9]s }

Then edit your server's code: mcpflow rebuilds and restarts it, and the agent
sees the new tools (or calls the "recompile" tool itself).
`, name, strings.Join(shell, " "), jsonString(name), jsonString(l.command), jsonList(args), note,
		strings.Join(slices.Insert(slices.Clone(shell), len(shell)-2, "--http", snippetListen), " "), snippetURL, jsonString(snippetURL))
}

// The address the HTTP snippet has mcpflow listen on, and its URL.
const (
	snippetListen = "127.0.0.1:8931"
	snippetURL    = "http://" + snippetListen + "/mcp"
)

// jsonString is s as a JSON string, without HTML escapes (a path stays readable).
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonList is list as a one-line JSON array, items separated by ", ".
func jsonList(list []string) string {
	quoted := make([]string, len(list))
	for i, s := range list {
		quoted[i] = jsonString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, " '\"$`\\") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// RenderCLIConfig writes a mcpflow.toml serving the CLI whose schema command
// is schemaCmd; p's build is only suggested (it may not write that CLI).
func RenderCLIConfig(p Project, schemaCmd string) (string, []string, error) {
	// The words as a POSIX shell splits them ('...', "...", backslashes), without any expansion.
	cmds, err := shellSplit(schemaCmd, "")
	switch {
	case err != nil:
		return "", nil, err
	case len(cmds) == 0:
		return "", nil, fmt.Errorf("--cli wants the CLI's schema command, e.g. --cli \"./bin/tool schema --json\"")
	}
	schema := cmds[0]
	var b strings.Builder
	fmt.Fprintf(&b, "# mcpflow.toml: serves the command-line program %s as MCP tools, one process per call.\n", schema[0])
	b.WriteString(configHead)
	b.WriteString("[build]\n")
	b.WriteString("# Run by sh -c at start and on every change, before the schema is re-read.\n")
	if p.Build != "" {
		b.WriteString("# Detected; uncomment it once it writes the program the schema command runs:\n")
		fmt.Fprintf(&b, "# command = %s\n", config.TOMLString(p.Build))
	} else {
		b.WriteString("# command = \"go build -o bin/tool ./cmd/tool\"\n")
	}
	b.WriteString("timeout = \"10m\"\n\n")
	b.WriteString("[cli]\n")
	b.WriteString("# Prints {\"tools\": [...]}: each tool's name, parameters and cli_command.\n")
	fmt.Fprintf(&b, "schema = %s\n", config.TOMLStrings(schema))
	fmt.Fprintf(&b, "# command = %s   # prefix of every call; default: the schema's program\n", config.TOMLStrings(schema[:1]))
	b.WriteString("# append = [\"--json\"]   # added to every call\n")
	b.WriteString("timeout = \"60s\"        # per call; the call's process group is killed after it\n")
	b.WriteString("max_output = \"4MiB\"    # stdout kept per call; more kills the call\n")
	b.WriteString("max_parallel = 4       # calls running at once; the others wait\n")
	b.WriteString("# env = { LOG_LEVEL = \"debug\" }   # added to the inherited environment\n\n")
	b.WriteString("[watch]\n")
	b.WriteString("# Saving a matching file rebuilds and re-reads the schema.\n")
	b.WriteString("paths = [\".\"]\n")
	if len(p.Include) > 0 {
		fmt.Fprintf(&b, "include = %s\n", config.TOMLStrings(p.Include))
	}
	if len(p.Exclude) > 0 {
		fmt.Fprintf(&b, "exclude = %s\n", config.TOMLStrings(p.Exclude))
	}
	b.WriteString(configTail)
	return b.String(), schema, nil
}
