package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpflow/mcpflow/internal/config"
)

const initUsage = `Usage:
  mcpflow init [--force] [--cli SCHEMA-CMD] [DIR]

Detects the project in DIR (default: the current folder) from its go.mod,
Cargo.toml, package.json (with tsconfig.json) or pyproject.toml, writes a
commented DIR/mcpflow.toml and DIR/.mcpflow/.gitignore, and prints the
snippet to paste into your MCP client. Flags may come before or after DIR.
It never overwrites an existing mcpflow.toml unless --force is given.
A server whose source serves Streamable HTTP (the TypeScript SDK's
StreamableHTTPServerTransport, FastMCP run with transport="http", the Go
SDK's NewStreamableHTTPHandler) gets run.url: {port} when it reads $PORT,
else the port it listens on.
With --cli, the config serves a command-line program as MCP tools: its
schema command (e.g. --cli "./bin/tool schema --json") lists the tools.

Flags:
`

func cmdInit(e env, args []string) int {
	fs := newFlagSet(e, "init", initUsage)
	force := fs.Bool("force", false, "overwrite an existing mcpflow.toml")
	cliSchema := fs.String("cli", "", "serve a CLI as tools: its schema command line, e.g. \"./bin/tool schema --json\"")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		fmt.Fprintln(e.stderr, "mcpflow init: at most one DIR")
		return exitUsage
	}
	dir := mustGetwd(e)
	if len(pos) == 1 {
		dir = absFrom(dir, pos[0])
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(e.stderr, "mcpflow init: %s is not a folder\n", dir)
		return exitUsage
	}
	path := filepath.Join(dir, "mcpflow.toml")
	if _, err := os.Stat(path); err == nil && !*force {
		fmt.Fprintf(e.stderr, "mcpflow init: %s already exists; run \"mcpflow check\" to validate it, or pass --force to overwrite it\n", path)
		return exitUsage
	}
	p := detect(dir)
	text := renderConfig(p)
	if *cliSchema != "" {
		var err error
		if text, p.Run, err = renderCLIConfig(p, *cliSchema); err != nil {
			fmt.Fprintln(e.stderr, "mcpflow init:", err)
			return exitUsage
		}
		p.RunWhy = "the CLI's schema command (--cli); each tool call runs the CLI once"
		p.Build, p.Notes = "", nil // the build is only suggested, in a comment
		p.URL, p.URLWhy = "", ""
	}
	// What init writes must pass check.
	if _, err := config.Parse("mcpflow.toml", []byte(text), dir); err != nil {
		fmt.Fprintf(e.stderr, "mcpflow init: internal error: the generated config does not parse: %v\n", err)
		return exitFailure
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fmt.Fprintf(e.stderr, "mcpflow init: %v\n", err)
		return exitFailure
	}
	if err := writeLogIgnore(dir); err != nil {
		fmt.Fprintf(e.stderr, "mcpflow init: %v\n", err)
		return exitFailure
	}
	kind := p.Kind
	if kind == "" {
		kind = "unknown"
	}
	fmt.Fprintf(e.stdout, "Wrote %s (project: %s).\n", path, kind)
	if p.Build != "" {
		fmt.Fprintf(e.stdout, "  build: %s\n", p.Build)
	}
	fmt.Fprintf(e.stdout, "  run:   %s\n", strings.Join(p.Run, " "))
	if p.RunWhy != "" {
		fmt.Fprintf(e.stdout, "  why:   %s\n", p.RunWhy)
	}
	if p.URL != "" {
		fmt.Fprintf(e.stdout, "  url:   %s (the server serves Streamable HTTP)\n", p.URL)
		fmt.Fprintf(e.stdout, "  why:   %s. Change run.url in mcpflow.toml if that is wrong; remove it if the server speaks stdio.\n", p.URLWhy)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(e.stdout, "Check: %s\n", n)
	}
	for _, n := range p.Advice {
		fmt.Fprintf(e.stdout, "Note: %s\n", n)
	}
	fmt.Fprintf(e.stdout, "\n%s", clientSnippet(p.Name, path, launcherFor(p.Kind, executable())))
	return exitOK
}

// renderConfig writes a commented mcpflow.toml for p.
func renderConfig(p project) string {
	var b strings.Builder
	kind := p.Kind
	if kind == "" {
		kind = "unknown kind of"
	}
	fmt.Fprintf(&b, "# mcpflow.toml: hot reload for the %s MCP server in this folder (%s project).\n", p.Name, kind)
	b.WriteString("# Commit it. Paths are relative to this file. Every key: mcpflow.toml.example\n")
	b.WriteString("# in the mcpflow repository, or `mcpflow check` for the resolved settings.\n\n")
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
	b.WriteString("[run]\n")
	if p.URL != "" {
		b.WriteString("# The MCP server, serving Streamable HTTP at url. An array is exec'd directly;\n# a string runs by sh -c.\n")
	} else {
		b.WriteString("# The MCP server, speaking stdio. An array is exec'd directly; a string runs by sh -c.\n")
	}
	if p.RunWhy != "" {
		fmt.Fprintf(&b, "# Why this command: %s.\n", p.RunWhy)
	}
	fmt.Fprintf(&b, "command = %s\n", config.TOMLStrings(p.Run))
	if p.URL != "" {
		b.WriteString(comment("Why this url: " + p.URLWhy + ". With {port}, mcpflow picks a free port for each start and passes it as $PORT; with a fixed port it stops the old server before it starts the new one. Remove url if the server speaks stdio."))
		fmt.Fprintf(&b, "url = %s\n", config.TOMLString(p.URL))
	} else {
		b.WriteString("# For a server that serves Streamable HTTP instead ({port}: a free port for each\n")
		b.WriteString("# start, passed as $PORT):\n")
		b.WriteString("# url = \"http://127.0.0.1:{port}/mcp\"\n")
	}
	if len(p.Env) > 0 {
		keys := make([]string, 0, len(p.Env))
		for k := range p.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + " = " + config.TOMLString(p.Env[k])
		}
		fmt.Fprintf(&b, "env = { %s }   # added to the inherited environment\n", strings.Join(pairs, ", "))
	} else {
		b.WriteString("# env = { LOG_LEVEL = \"debug\" }   # added to the inherited environment\n")
	}
	if p.URL != "" {
		b.WriteString("stop_timeout = \"2s\"   # after SIGTERM, before SIGKILL\n\n")
	} else {
		b.WriteString("stop_timeout = \"2s\"   # after closing its stdin, before SIGTERM (then SIGKILL)\n\n")
	}
	b.WriteString("[watch]\n")
	b.WriteString("# Saving a matching file rebuilds and restarts the server.\n")
	b.WriteString("paths = [\".\"]\n")
	fmt.Fprintf(&b, "include = %s\n", config.TOMLStrings(p.Include))
	b.WriteString(excludeLines(p.Exclude))
	b.WriteString("gitignore = true\n")
	b.WriteString("debounce = \"100ms\"\n\n")
	b.WriteString("[relay]\n")
	b.WriteString("tool = \"recompile\"   # the tool mcpflow adds for the agent\n\n")
	b.WriteString("[log]\n")
	b.WriteString("level = \"info\"\n")
	b.WriteString("# Clients hide a server's stderr: this file is where you see what mcpflow did.\n")
	b.WriteString("file = \".mcpflow/mcpflow.log\"\n")
	return b.String()
}

// comment is text as "# " lines of at most 80 columns (a longer word
// keeps its own line).
func comment(text string) string {
	var b strings.Builder
	line := "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 80 && line != "#" {
			b.WriteString(line + "\n")
			line = "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
	return b.String()
}

// excludeLines writes watch.exclude: the project's globs, then the files
// of the MCP clients and editors (config.ClientFiles), one array over
// several lines.
func excludeLines(project []string) string {
	var b strings.Builder
	b.WriteString("exclude = [\n")
	line := func(globs []string) {
		cur := " "
		for _, g := range globs {
			q := " " + config.TOMLString(g) + ","
			if len(cur)+len(q) > 78 && cur != " " {
				b.WriteString(cur + "\n")
				cur = " "
			}
			cur += q
		}
		if cur != " " {
			b.WriteString(cur + "\n")
		}
	}
	line(project)
	b.WriteString("  # Your MCP clients' and editors' files: editing them never restarts the server\n")
	b.WriteString("  # (mcpflow leaves them out even when this list does not name them).\n")
	line(config.ClientFiles())
	b.WriteString("]\n")
	return b.String()
}

// writeLogIgnore writes dir/.mcpflow/.gitignore, which keeps the log
// folder out of git; an existing one is left as it is.
func writeLogIgnore(dir string) error {
	folder := filepath.Join(dir, ".mcpflow")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(folder, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString("# mcpflow's logs and build outputs: never committed.\n*\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// launcher is how a client starts mcpflow: a command, the arguments
// before "watch", and what it is.
type launcher struct {
	command string
	args    []string
	note    string
}

// launcherFor picks the form that fits a project of kind: npx (the npm
// package) for TypeScript and JavaScript, uvx (the PyPI package) for
// Python, else exe, the absolute path of the running binary. An exe that
// npx or uvx unpacked into their cache gets their form too: a cache is no
// place to point a client at.
func launcherFor(kind, exe string) launcher {
	npx := launcher{"npx", []string{"-y", "mcpflow"}, "npx fetches mcpflow from npm and runs it."}
	uvx := launcher{"uvx", []string{"mcpflow"}, "uvx fetches mcpflow from PyPI and runs it."}
	slashed := strings.ReplaceAll(exe, `\`, "/") // a Windows path too, on any host
	switch {
	case kind == "typescript" || kind == "node":
		return npx
	case kind == "python":
		return uvx
	case strings.Contains(slashed, "/node_modules/"):
		return npx
	case strings.Contains(slashed, "/site-packages/"):
		return uvx
	case exe == "":
		return launcher{"mcpflow", nil, "mcpflow must be on the client's PATH (or give its absolute path as the command)."}
	}
	return launcher{exe, nil, "The command is this mcpflow binary."}
}

// executable is the running binary's absolute path, links resolved; ""
// when unknown.
func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return exe
}

// clientSnippet tells the user how to point their client at mcpflow,
// started as l says.
func clientSnippet(name, configPath string, l launcher) string {
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name)
	if name == "" {
		name = "server"
	}
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

// The address the HTTP snippet has mcpflow listen on, and the URL a
// client connects to there.
const (
	snippetListen = "127.0.0.1:8931"
	snippetURL    = "http://" + snippetListen + "/mcp"
)

// jsonString is s as a JSON string (no HTML escapes: a path stays
// readable).
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // a string always encodes
	}
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
