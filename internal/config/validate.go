package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Validate checks the resolved settings. The error lists every problem,
// one per line; when c was parsed from a file each names the place to fix.
func (c *Config) Validate() error {
	v := validator{c: c}
	switch c.Mode() {
	case Single:
		v.build("build", &c.Build)
		v.run("run", &c.Run, true)
	case CLI:
		v.build("build", &c.Build)
		v.cli("cli", c.CLI)
	}
	v.relay(&c.Relay)
	if c.Mode() != Mux {
		v.watch("watch", &c.Watch)
	}
	v.log()
	if c.HTTP.Listen != "" {
		if msg := ListenProblem(c.HTTP.Listen); msg != "" {
			v.bad("http.listen", "%s", msg)
		}
	}
	if c.Mode() == Mux {
		v.mux()
	}
	return joinErrors(v.errs)
}

// validator collects the problems of a Config.
type validator struct {
	c    *Config
	errs []error
}

func (v *validator) bad(key, format string, args ...any) {
	v.errs = append(v.errs, v.c.errorAt(key, format, args...))
}

func (v *validator) badPath(path []string, format string, args ...any) {
	v.errs = append(v.errs, v.c.errorAtPath(path, format, args...))
}

func (v *validator) badItem(key string, i int, format string, args ...any) {
	v.errs = append(v.errs, v.c.errorAtItem(key, i, format, args...))
}

func (v *validator) positive(key string, d time.Duration) {
	if d <= 0 {
		v.bad(key, "must be more than 0, got %q", DurationText(d))
	}
}

func (v *validator) notNegative(key string, d time.Duration) {
	if d < 0 {
		v.bad(key, "must not be negative, got %q", DurationText(d))
	}
}

func (v *validator) atLeast(key string, n, least int64, text func(int64) string) {
	if n < least {
		v.bad(key, "must be at least %s, got %s", text(least), text(n))
	}
}

func (v *validator) command(key string, cmd Command) {
	if len(cmd.Argv) > 0 && cmd.Argv[0] == "" {
		v.bad(key, `the program name (the first item) is empty; write the program to run, e.g. ["./bin/server"]`)
	}
	for _, a := range cmd.Argv {
		if strings.ContainsRune(a, 0) {
			v.bad(key, "contains a NUL character")
			break
		}
	}
}

// key joins a table's dotted key and one of its keys.
func key(table, name string) string { return table + "." + name }

// splitKey is the path of a dotted key whose parts hold no dots, or the
// path of a server's key (servers."a.b".run) whose name does.
func splitKey(k string) []string {
	if rest, ok := strings.CutPrefix(k, "servers."); ok && strings.HasPrefix(rest, `"`) {
		if name, tail, ok := strings.Cut(rest[1:], `"`); ok {
			if tail == "" {
				return []string{"servers", name}
			}
			return append([]string{"servers", name}, strings.Split(strings.TrimPrefix(tail, "."), ".")...)
		}
	}
	return strings.Split(k, ".")
}

func (v *validator) env(table string, env map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		path := append(splitKey(table), "env", k)
		if msg := envNameProblem(k); msg != "" {
			v.badPath(path, "%s", msg)
		}
		if strings.ContainsRune(env[k], 0) {
			v.badPath(path, "the value contains a NUL character")
		}
	}
}

func (v *validator) build(table string, b *BuildConfig) {
	v.command(key(table, "command"), b.Command)
	v.positive(key(table, "timeout"), b.Timeout)
}

func (v *validator) run(table string, r *RunConfig, required bool) {
	if required && r.Command.IsZero() {
		v.bad(key(table, "command"), `%s is required: the command that starts your MCP server, e.g. command = ["./bin/server"]`, key(table, "command"))
	}
	v.command(key(table, "command"), r.Command)
	if r.Cwd == "" {
		v.bad(key(table, "cwd"), `must not be empty; use "." for the config file's folder`)
	}
	v.env(table, r.Env)
	for i, k := range r.EnvOverridable {
		if msg := envNameProblem(k); msg != "" {
			v.badItem(key(table, "env_overridable"), i, "%s: %s", TOMLString(k), msg)
		}
	}
	v.notNegative(key(table, "stop_timeout"), r.StopTimeout)
	if r.URL != "" {
		if msg := URLProblem(r.URL); msg != "" {
			v.bad(key(table, "url"), "%s", msg)
		}
	}
}

func (v *validator) argv(k string, argv []string, required bool, what string) {
	switch {
	case len(argv) == 0 && required:
		v.bad(k, "%s is required: %s", k, what)
	case len(argv) > 0 && argv[0] == "":
		v.badItem(k, 0, "the program name (the first item) is empty")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			v.badItem(k, i, "item %d contains a NUL character", i+1)
		}
	}
}

func (v *validator) cli(table string, cli *CLIConfig) {
	v.argv(key(table, "schema"), cli.Schema, true, `the command that prints your tool definitions as JSON, e.g. schema = ["./bin/tool", "schema", "--json"]`)
	if derived := len(cli.Schema) > 0 && cli.Schema[0] == "" && slices.Equal(cli.Command, cli.Schema[:1]); !derived {
		v.argv(key(table, "command"), cli.Command, true, `the start of every call's command line, e.g. command = ["./bin/tool"]; remove it to use the schema's program`)
	}
	v.argv(key(table, "append"), cli.Append, false, "")
	v.positive(key(table, "timeout"), cli.Timeout)
	if cli.MaxOutput < 1 {
		v.bad(key(table, "max_output"), "must be at least 1, got %s", sizeText(cli.MaxOutput))
	}
	if cli.MaxParallel < 1 {
		v.bad(key(table, "max_parallel"), "must be at least 1, got %d", cli.MaxParallel)
	}
	if cli.Cwd == "" {
		v.bad(key(table, "cwd"), `must not be empty; use "." for the config file's folder`)
	}
	v.env(table, cli.Env)
}

func (v *validator) relay(r *RelayConfig) {
	if msg := toolNameProblem(r.Tool); msg != "" {
		v.bad("relay.tool", "%s", msg)
	} else if v.c.Mode() == Mux && r.Tool != defaultTool {
		v.bad("relay.tool", "names the rebuild tool of mcpflow watch; behind the mux every server is rebuilt with reload_server {\"name\": ...}: remove relay.tool")
	}
	if r.CallTool != "" {
		if msg := toolNameProblem(r.CallTool); msg != "" {
			v.bad("relay.call_tool", "%s", msg)
		} else if r.CallTool == r.Tool {
			v.bad("relay.call_tool", "must differ from relay.tool (both are %q): the two tools need their own names", r.Tool)
		}
	}
	if strings.ContainsAny(r.ServerSuffix, "\r\n") {
		v.bad("relay.server_suffix", "must be a single line")
	}
	v.childRelay("relay", r)
	if v.c.Mode() != Mux { // a mux's drain is mux.drain's
		v.notNegative("relay.drain", r.Drain)
	}
}

// childRelay checks the relay keys a mux's server may set for itself.
func (v *validator) childRelay(table string, r *RelayConfig) {
	v.atLeast(key(table, "max_message"), r.MaxMessage, minMaxMessage, sizeText)
	if !slices.Contains(onCrashValues, r.OnCrash) {
		v.bad(key(table, "on_crash"), "%s", enumProblem(r.OnCrash, onCrashValues))
	}
	if strings.ContainsAny(r.RestartMarker, "\r\n") {
		v.bad(key(table, "restart_marker"), "must be a single line: it is compared with each line of the server's stderr")
	}
	if r.QueueSize < 1 {
		v.bad(key(table, "queue_size"), "must be at least 1, got %d", r.QueueSize)
	}
	v.atLeast(key(table, "queue_bytes"), r.QueueBytes, minMaxMessage, sizeText)
	v.positive(key(table, "queue_timeout"), r.QueueTimeout)
	v.notNegative(key(table, "startup_grace"), r.StartupGrace)
	v.positive(key(table, "handshake_timeout"), r.Handshake)
}

func (v *validator) watch(table string, w *WatchConfig) {
	if len(w.Paths) == 0 {
		v.bad(key(table, "paths"), `is empty: list at least one folder to watch, e.g. ["."], or set enabled = false`)
	}
	for i, p := range w.Paths {
		if p == "" {
			v.badItem(key(table, "paths"), i, `item %d is empty; use "." for the config file's folder`, i+1)
		}
	}
	if len(w.Include) == 0 {
		v.bad(key(table, "include"), `is empty; remove it to include every file (the default, ["**/*"]), or list globs such as ["**/*.go", "go.mod"]`)
	}
	for _, k := range []string{key(table, "include"), key(table, "exclude")} {
		globs := w.Include
		if strings.HasSuffix(k, ".exclude") {
			globs = w.Exclude
		}
		for i, g := range globs {
			switch {
			case g == "":
				v.badItem(k, i, "item %d is an empty pattern", i+1)
			case strings.HasPrefix(g, "/"):
				v.badItem(k, i, "pattern %s is absolute; patterns match paths relative to the config file's folder, e.g. %s", TOMLString(g), TOMLString(strings.TrimLeft(g, "/")))
			case !doublestar.ValidatePattern(g):
				v.badItem(k, i, `pattern %s is not a valid glob (check its [ ] and { } pairs); e.g. "**/*.go", "internal/**", "*.{json,yaml}"`, TOMLString(g))
			}
		}
	}
	v.notNegative(key(table, "debounce"), w.Debounce)
	v.notNegative(key(table, "poll"), w.Poll)
}

func (v *validator) log() {
	l := &v.c.Log
	if !slices.Contains(logLevelValues, l.Level) {
		v.bad("log.level", "%s", enumProblem(l.Level, logLevelValues))
	}
	if !slices.Contains(logFormatValues, l.Format) {
		v.bad("log.format", "%s", enumProblem(l.Format, logFormatValues))
	}
	v.atLeast("log.max_size", l.MaxSize, minMaxMessage, sizeText)
	if l.Traffic != "" && l.Traffic == l.File {
		v.bad("log.traffic", "must differ from log.file (both are %s): the capture has a file of its own", TOMLString(l.File))
	}
	v.atLeast("log.traffic_max_message", l.TrafficMaxMessage, minMaxMessage, sizeText)
	v.atLeast("log.traffic_max_size", l.TrafficMaxSize, minMaxMessage, sizeText)
}

func (v *validator) mux() {
	m := &v.c.Mux
	if msg := separatorProblem(m.Separator); msg != "" {
		v.bad("mux.separator", "%s", msg)
	}
	for i, cmd := range m.AllowedCommands {
		if cmd == "" {
			v.badItem("mux.allowed_commands", i, "item %d is empty", i+1)
		}
	}
	for i, k := range m.AllowedEnv {
		if k == "" || strings.ContainsAny(k, "= ") {
			v.badItem("mux.allowed_env", i, "item %d is not an environment variable's name", i+1)
		}
	}
	v.notNegative("mux.drain", m.Drain)
	for _, s := range v.c.Servers {
		table := keyString([]string{"servers", s.Name})
		if err := checkServerName(s.Name, m.Separator); err != nil {
			v.badPath([]string{"servers", s.Name}, "%v", err)
		}
		switch {
		case s.CLI != nil && !s.Run.Command.IsZero():
			v.bad(key(table, "cli"), "a server has [%s.run] or [%s.cli], not both: [cli] takes the place of [run]", table, table)
		case s.CLI == nil && s.Run.Command.IsZero():
			v.bad(key(table, "run.command"), `%s.run.command is required: the command that starts this MCP server, e.g. command = ["./bin/server"] (or give [%s.cli] for a command-line program)`, table, table)
		}
		v.build(key(table, "build"), &s.Build)
		if s.CLI != nil {
			v.cli(key(table, "cli"), s.CLI)
		} else {
			v.run(key(table, "run"), &s.Run, false)
		}
		v.childRelay(key(table, "relay"), &s.Relay)
		v.watch(key(table, "watch"), &s.Watch)
	}
}

// checkServerName reports why name cannot name a mux's server whose tools
// are listed as NAME + separator + tool, or nil. The mux checks the names
// an agent gives to add_server with it too.
func checkServerName(name, separator string) error {
	switch {
	case name == "":
		return fmt.Errorf("a server name must not be empty")
	case separator != "" && strings.Contains(name, separator):
		return fmt.Errorf("server name %s contains the separator %q: its tools could not be told apart; rename it or change mux.separator", TOMLString(name), separator)
	case strings.HasSuffix(name, "_"):
		return fmt.Errorf("server name %s ends in '_': %s would split wrong; remove the trailing '_'", TOMLString(name), TOMLString(name+separator+"tool"))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("server name %s: use letters, digits, '-' and '_' only (found %q): clients reject other characters in tool names", TOMLString(name), r)
		}
	}
	return nil
}

// separatorProblem checks mux.separator: a non-empty string of characters
// allowed in tool names.
func separatorProblem(sep string) string {
	if sep == "" {
		return `must not be empty: it joins a server's name and its tools', e.g. "__"`
	}
	for _, r := range sep {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return fmt.Sprintf("%s can only hold characters allowed in tool names: letters, digits, '_', '.' and '-' (found %q)", TOMLString(sep), r)
		}
	}
	return ""
}

func envNameProblem(k string) string {
	switch {
	case k == "":
		return "the name is empty"
	case strings.ContainsAny(k, "=\x00"):
		return "a variable name cannot contain '=' or NUL"
	}
	return ""
}

// toolNameProblem checks an MCP tool name: ^[A-Za-z0-9_.-]{1,128}$.
func toolNameProblem(name string) string {
	if name == "" {
		return "must not be empty: it is the name of a tool"
	}
	if len(name) > maxToolNameLen {
		return fmt.Sprintf("is %d characters long; tool names have at most %d", len(name), maxToolNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return fmt.Sprintf("%s is not a valid tool name: use letters, digits, '_', '.' and '-' only (found %q)", TOMLString(name), r)
		}
	}
	return ""
}

func enumProblem(got string, valid []string) string {
	msg := fmt.Sprintf("%s is not one of %s", TOMLString(got), strings.Join(quoteAll(valid), ", "))
	if s := suggest(got, valid); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
