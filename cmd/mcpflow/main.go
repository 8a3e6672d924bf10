// Command mcpflow is a hot-reload dev server for MCP servers. It sits
// between an MCP client and the server under development, rebuilds the
// server when its sources change (or when the agent calls the recompile
// tool), and restarts it without the client noticing anything but a
// tools/list_changed notification.
//
// Usage:
//
//	mcpflow watch [-c mcpflow.toml]          run with a config file
//	mcpflow watch [--build CMD] -- CMD ARGS  run without one
//	mcpflow check [-c mcpflow.toml]          validate a config and show what it resolves to
//	mcpflow mux [-c FILE]                    serve several servers as one (NAME__tool)
//	mcpflow init [--force] [--cli CMD] [DIR] write a commented mcpflow.toml for a project
//	mcpflow status [--json] [-c FILE]        show the running instances
//	mcpflow rebuild [NAME]                   rebuild and restart a running instance's server
//	mcpflow logs [-f]                        print (and follow) a running instance's log
//	mcpflow version                          print the version
//
// Exit status: 0 on success (and after a clean shutdown), 1 on a runtime
// failure, 2 on a usage or configuration error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// env is what a command may touch of the process: no globals, so tests run
// commands in-process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getwd  func() (string, error)
}

func main() {
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getwd: os.Getwd}
	// MCPFLOW_CPUPROFILE=FILE writes a CPU profile of the whole run, for
	// `go tool pprof` (how BENCHMARKS.md's profiles were taken); %p in FILE
	// is the process id, for runs with more than one mcpflow.
	if path := os.Getenv("MCPFLOW_CPUPROFILE"); path != "" {
		path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			code := run(e, os.Args[1:])
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(e, os.Args[1:]))
}

const usage = `mcpflow: hot reload for MCP servers.

Usage:
  mcpflow watch [-c FILE]                 relay a client to your server, rebuilding and restarting it on change
  mcpflow watch [--build CMD] -- CMD ARGS same, without a config file
  mcpflow mux [-c FILE]                   serve several servers as one (NAME__tool); the agent adds more
  mcpflow check [-c FILE]                 validate mcpflow.toml and show the resolved settings
  mcpflow init [--force] [--cli CMD] [DIR] write a commented mcpflow.toml for the project in DIR
  mcpflow status [--json] [-c FILE]       show the running instances: servers, builds, calls
  mcpflow rebuild [NAME]                  rebuild and restart a running instance's server
  mcpflow logs [-f]                       print (and follow) a running instance's log
  mcpflow tools [--json]                  list the server's tools and their arguments
  mcpflow call NAME [JSON]                call one tool with JSON arguments and print the result
  mcpflow version                         print the version
  mcpflow help [COMMAND]                  show help

Run "mcpflow COMMAND -h" for a command's flags.
Exit status: 0 ok, 1 runtime failure, 2 usage or configuration error.
`

func run(e env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "watch":
		return cmdWatch(e, rest)
	case "check":
		return cmdCheck(e, rest)
	case "mux":
		return cmdMux(e, rest)
	case "init":
		return cmdInit(e, rest)
	case "status":
		return cmdStatus(e, rest)
	case "rebuild":
		return cmdRebuild(e, rest)
	case "logs":
		return cmdLogs(e, rest)
	case "tools":
		return cmdTools(e, rest)
	case "call":
		return cmdCall(e, rest)
	case guardCommand:
		return cmdGuard(e, rest)
	case "version", "--version", "-v":
		fmt.Fprintf(e.stdout, "mcpflow %s\n", version())
		return exitOK
	case "help", "-h", "--help":
		if len(rest) > 0 {
			return run(e, []string{rest[0], "-h"})
		}
		fmt.Fprint(e.stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(e.stderr, "mcpflow: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
}

// buildVersion is set by the Makefile's -ldflags when the build has no
// VCS stamp (a checkout built with -buildvcs=false, say).
var buildVersion string

// version is mcpflow's version: the module version when installed with go
// install, else the VCS revision and commit date the build stamped, else
// what the Makefile passed, else "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return orDevel(buildVersion)
	}
	return versionOf(bi, buildVersion)
}

func versionOf(bi *debug.BuildInfo, fallback string) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return orDevel(fallback)
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel+" + rev
	if dirty {
		v += "-dirty"
	}
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		v += " (" + t.UTC().Format("2006-01-02") + ")"
	}
	return v
}

func orDevel(v string) string {
	if v == "" {
		return "devel"
	}
	return v
}

// parseFlags parses args with fs, accepting flags before, between and after
// the positional arguments ("mcpflow init DIR --force"), and returns the
// positional arguments in order. "--" ends the flags: everything after it is
// positional, as given. Errors, including flag.ErrHelp, are fs.Parse's.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// isTerminal reports whether r is a terminal (a console on Windows, a
// Cygwin or MSYS pty included); a pipe, a file or /dev/null is not.
func isTerminal(r any) bool {
	f, ok := r.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// newFlagSet is a subcommand's flag set: errors and usage (the command's
// usage text, then its flags) go to stderr.
func newFlagSet(e env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { fmt.Fprint(e.stderr, usage); fs.PrintDefaults() }
	return fs
}

// parseArgs parses a subcommand's args with fs (flags anywhere, see
// parseFlags) and returns the positional arguments. When ok is false the
// command ends with code: exitOK after -h, exitUsage for a bad flag (fs
// has said why).
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	pos, err := parseFlags(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, exitOK, false
	case err != nil:
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}
