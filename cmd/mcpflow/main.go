// Command mcpflow is a hot-reload dev server for MCP servers. It sits
// between an MCP client and the server under development, rebuilds the
// server when its sources change (or when the agent calls the recompile
// tool), and restarts it without the client noticing anything but a
// tools/list_changed notification. "mcpflow help" lists its commands;
// every command takes -h and --version.
//
// Exit status: 0 on success (and after a clean shutdown), 1 on a runtime
// failure, 2 on a usage or configuration error.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/mcpflow/mcpflow/internal/instance"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// env is what a command may touch of the process (tests run commands in-process).
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getwd  func() (string, error)
}

// fail prints a line on stderr and returns code.
func (e env) fail(code int, format string, a ...any) int {
	fmt.Fprintf(e.stderr, format+"\n", a...)
	return code
}

func main() {
	os.Exit(run(env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getwd: os.Getwd}, os.Args[1:]))
}

// command is one subcommand: its name, its lines in mcpflow's usage
// ("SYNOPSIS\tWHAT", after "mcpflow "; none when hidden), and its function.
type command struct {
	name  string
	lines []string
	run   func(e env, args []string) int
}

// commands are mcpflow's subcommands, in the order usage lists them (a
// function, not a variable: help looks itself up in it).
func commands() []command {
	return []command{
		{"watch", []string{
			"watch [-c FILE]\trelay a client to your server, rebuilding and restarting it on change",
			"watch [--build CMD] -- CMD ARGS\tsame, without a config file"}, cmdWatch},
		{"mux", []string{"mux [-c FILE]\tserve several servers as one (NAME__tool); the agent adds more"}, cmdMux},
		{"check", []string{"check [-c FILE]\tvalidate mcpflow.toml and show the resolved settings"}, cmdCheck},
		{"init", []string{"init [--force] [--cli CMD] [DIR]\twrite a commented mcpflow.toml for the project in DIR"}, cmdInit},
		{"status", []string{"status [--json] [-c FILE]\tshow the running instances: servers, builds, calls"}, cmdStatus},
		{"rebuild", []string{"rebuild [NAME]\trebuild and restart a running instance's server"}, cmdRebuild},
		{"logs", []string{"logs [-f]\tprint (and follow) a running instance's log"}, cmdLogs},
		{"tools", []string{"tools [--json]\tlist the server's tools and their arguments"}, cmdTools},
		{"call", []string{"call NAME [JSON]\tcall one tool with JSON arguments and print the result"}, cmdCall},
		{"version", []string{"version\tprint the version"}, cmdVersion},
		{"help", []string{"help [COMMAND]\tshow help, or COMMAND's"}, cmdHelp},
		{guardCommand, nil, cmdGuard},
	}
}

// lookup is the subcommand named name; hidden ones only when hidden.
func lookup(name string, hidden bool) (command, bool) {
	for _, c := range commands() {
		if c.name == name && (hidden || c.lines != nil) {
			return c, true
		}
	}
	return command{}, false
}

// usage is mcpflow's usage: every listed subcommand, then the exit codes.
func usage() string {
	var b strings.Builder
	b.WriteString("mcpflow: hot reload for MCP servers.\n\nUsage:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', 0)
	for _, c := range commands() {
		for _, l := range c.lines {
			fmt.Fprintf(tw, "  mcpflow %s\n", l)
		}
	}
	tw.Flush()
	b.WriteString(`
Every command takes -h (its help and flags) and --version.
Exit status: 0 ok, 1 runtime failure, 2 usage or configuration error.
`)
	return b.String()
}

// run runs the command line args (without the program name).
func run(e env, args []string) int {
	instance.Version = version()
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage())
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-v", "-version", "--version":
		name = "version"
	}
	c, ok := lookup(name, true)
	switch {
	case !ok && strings.HasPrefix(name, "-"):
		return e.fail(exitUsage, "mcpflow: unknown flag %s (run \"mcpflow -h\" for the commands)", name)
	case !ok:
		return e.fail(exitUsage, "mcpflow: unknown command %q (run \"mcpflow -h\" for the commands)", name)
	}
	return c.run(e, rest)
}

const versionUsage = `  mcpflow version

Prints mcpflow's version: the module version of a release, else the
commit it was built from.
`

func cmdVersion(e env, args []string) int {
	fs := newFlagSet(e, "version", versionUsage)
	return fs.parse(args, func(pos []string) int {
		if len(pos) > 0 {
			return fs.misuse("takes no arguments, got %q", pos[0])
		}
		fmt.Fprintf(e.stdout, "mcpflow %s\n", version())
		return exitOK
	})
}

const helpUsage = `  mcpflow help [COMMAND]

Prints mcpflow's usage and its commands, or COMMAND's help (what
"mcpflow COMMAND -h" prints).
`

func cmdHelp(e env, args []string) int {
	fs := newFlagSet(e, "help", helpUsage)
	return fs.parse(args, func(pos []string) int {
		switch {
		case len(pos) == 0 || len(pos) == 1 && pos[0] == "help":
			fmt.Fprint(e.stdout, usage())
			return exitOK
		case len(pos) > 1:
			return fs.misuse("one COMMAND at most, got %q", pos)
		}
		c, ok := lookup(pos[0], false)
		if !ok {
			return e.fail(exitUsage, "mcpflow help: unknown command %q (run \"mcpflow -h\" for the commands)", pos[0])
		}
		return c.run(e, []string{"-h"})
	})
}

// buildVersion is set by the Makefile's -ldflags, for builds without a VCS stamp.
var buildVersion string

// version is mcpflow's version: the module version (go install), else the
// VCS revision and date the build stamped, else buildVersion, else "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(buildVersion, "devel")
	}
	return versionOf(bi, buildVersion)
}

func versionOf(bi *debug.BuildInfo, fallback string) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	rev := vcs["vcs.revision"]
	if rev == "" {
		return cmp.Or(fallback, "devel")
	}
	v := "devel+" + rev[:min(len(rev), 12)]
	if vcs["vcs.modified"] == "true" {
		v += "-dirty"
	}
	if t, err := time.Parse(time.RFC3339, vcs["vcs.time"]); err == nil {
		v += " (" + t.UTC().Format("2006-01-02") + ")"
	}
	return v
}

// parseFlags parses args with fs, flags anywhere ("mcpflow init DIR --force"),
// and returns the positional arguments; all after "--" are positional.
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

// isTerminal reports whether r is a terminal (a Windows console, a Cygwin or MSYS pty).
func isTerminal(r any) bool {
	f, ok := r.(interface{ Fd() uintptr })
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// flagSet is a subcommand's flags: its own, plus --version.
type flagSet struct {
	*flag.FlagSet
	e       env
	usage   string
	version *bool
}

// newFlagSet is the flag set of the subcommand name, whose help (-h) is
// "Usage:", usage (its synopsis, a blank line, what it does), then its flags.
func newFlagSet(e env, name, usage string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), e: e, usage: usage}
	// parse prints what went wrong, and the help on stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.version = fs.Bool("version", false, "print mcpflow's version")
	return fs
}

// misuse reports a usage error of fs's command and returns exitUsage.
func (fs *flagSet) misuse(format string, a ...any) int {
	return fs.e.fail(exitUsage, "mcpflow %s: %s (run \"mcpflow %s -h\" for its help)", fs.Name(), fmt.Sprintf(format, a...), fs.Name())
}

// parse parses args (see parseFlags) and runs body with the positional ones,
// unless -h, --help, --version (exitOK) or a bad flag (exitUsage) end here.
func (fs *flagSet) parse(args []string, body func(pos []string) int) int {
	pos, err := parseFlags(fs.FlagSet, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(fs.e.stdout)
		fmt.Fprint(fs.e.stdout, "Usage:\n"+fs.usage+"\nFlags:\n")
		fs.PrintDefaults()
		return exitOK
	case err != nil:
		return fs.misuse("%s", flagError(err, args))
	case *fs.version:
		fmt.Fprintf(fs.e.stdout, "mcpflow %s\n", version())
		return exitOK
	}
	return body(pos)
}

// flagError is err with an undefined flag as typed ("unknown flag --nope").
func flagError(err error, args []string) string {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, undefined)
	if !ok {
		return msg
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		typed, _, _ := strings.Cut(a, "=")
		if strings.HasPrefix(typed, "-") && strings.TrimLeft(typed, "-") == name {
			return "unknown flag " + typed
		}
	}
	return "unknown flag -" + name
}
