package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/project"
)

const initUsage = `  mcpflow init [--force] [--cli SCHEMA-CMD] [DIR]

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
`

func cmdInit(e env, args []string) int {
	fs := newFlagSet(e, "init", initUsage)
	force := fs.Bool("force", false, "overwrite an existing mcpflow.toml")
	cliSchema := fs.String("cli", "", "serve a CLI as tools: its schema command line, e.g. \"./bin/tool schema --json\"")
	return fs.parse(args, func(pos []string) int {
		if len(pos) > 1 {
			return e.fail(exitUsage, "mcpflow init: at most one DIR")
		}
		dir := mustGetwd(e)
		if len(pos) == 1 {
			dir = config.AbsFrom(dir, pos[0])
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return e.fail(exitUsage, "mcpflow init: %s is not a folder", dir)
		}
		path := filepath.Join(dir, "mcpflow.toml")
		if _, err := os.Stat(path); err == nil && !*force {
			return e.fail(exitUsage, "mcpflow init: %s already exists; run \"mcpflow check\" to validate it, or pass --force to overwrite it", path)
		}
		report, err := project.Init(dir, *cliSchema, project.LauncherFor(executable(), clone()))
		switch {
		case errors.Is(err, project.ErrUsage):
			return e.fail(exitUsage, "mcpflow init: %v", err)
		case err != nil:
			return e.fail(exitFailure, "mcpflow init: %v", err)
		}
		fmt.Fprint(e.stdout, report)
		return exitOK
	})
}

// executable is the running binary's path, links resolved; "" when unknown.
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

// clone is the mcpflow clone go run built this binary from, or "".
func clone() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // …/cmd/mcpflow/init.go
	if _, err := os.Stat(filepath.Join(root, "cmd", "mcpflow", "init.go")); err != nil {
		return ""
	}
	return root
}
