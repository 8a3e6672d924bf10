package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Validate checks the resolved settings. The error lists every problem,
// one per line; when c was parsed from a file each names the place to fix.
func (c *Config) Validate() error {
	v := validator{c: c}
	root := reflect.ValueOf(c).Elem()
	for i := range settings {
		if s := &settings[i]; c.applies(s, nil) {
			v.setting(root, s, []string{s.table(), s.name()})
		}
	}
	// The checks that join several keys.
	switch c.Mode() {
	case Single:
		if c.Run.Command.IsZero() {
			v.bad([]string{"run", "command"}, `run.command is required: the command that starts your MCP server, e.g. command = ["./bin/server"]`)
		}
	case CLI:
		v.cli([]string{"cli"}, c.CLI)
	case Mux:
		v.servers()
	}
	r := &c.Relay
	if r.CallTool != "" && r.CallTool == r.Tool && toolNameProblem(r.Tool) == "" {
		v.bad([]string{"relay", "call_tool"}, "must differ from relay.tool (both are %q): the two tools need their own names", r.Tool)
	}
	if l := &c.Log; l.Traffic != "" && l.Traffic == l.File {
		v.bad([]string{"log", "traffic"}, "must differ from log.file (both are %s): the capture has a file of its own", TOMLString(l.File))
	}
	return joinErrors(v.errs)
}

type validator struct {
	c    *Config
	errs []error
}

func (v *validator) bad(path []string, format string, args ...any) {
	v.errs = append(v.errs, v.c.errorAt(path, format, args...))
}

// setting checks the value of s in root (a Config or a ServerConfig),
// which the file writes at path.
func (v *validator) setting(root reflect.Value, s *setting, path []string) {
	f := fieldOf(root, s)
	if !f.IsValid() {
		return
	}
	val := f.Interface()
	switch s.kind {
	case kString, kPath:
		str := val.(string)
		if str == "" && s.empty != "" {
			return
		}
		if str == "" && s.kind == kPath {
			v.bad(path, `must not be empty; use "." for the config file's folder`)
		}
		if len(s.values) > 0 && !slices.Contains(s.values, str) {
			hint := Suggest(str, s.values)
			v.bad(path, "%s is not one of %s%s", TOMLString(str), joinEach(s.values, strconv.Quote, ", "), when(hint != "", " (did you mean %q?)", hint))
		}
		if s.check != nil {
			if msg := s.check(str); msg != "" {
				v.bad(path, "%s", msg)
			}
		}
	case kDuration:
		switch d := val.(time.Duration); {
		case s.min > 0 && d <= 0:
			v.bad(path, "must be more than 0, got %q", DurationText(d))
		case d < 0:
			v.bad(path, "must not be negative, got %q", DurationText(d))
		}
	case kSize:
		if n := val.(int64); n < s.min {
			v.bad(path, "must be at least %s, got %s", sizeText(s.min), sizeText(n))
		}
	case kInt:
		if n := val.(int); int64(n) < s.min {
			v.bad(path, "must be at least %d, got %d", s.min, n)
		}
	case kList, kPaths, kGlobs:
		if l := val.([]string); len(l) == 0 && s.nonEmpty != "" {
			v.bad(path, "%s", s.nonEmpty)
		} else if s.item != nil {
			v.items(path, l, s.item)
		}
	case kCommand:
		cmd := val.(Command)
		if len(cmd.Argv) > 0 && cmd.Argv[0] == "" {
			v.bad(path, `the program name (the first item) is empty; write the program to run, e.g. ["./bin/server"]`)
		}
		if slices.ContainsFunc(cmd.Argv, func(a string) bool { return strings.ContainsRune(a, 0) }) {
			v.bad(path, "contains a NUL character")
		}
	case kEnv:
		env := val.(map[string]string)
		for _, k := range slices.Sorted(maps.Keys(env)) {
			if msg := envNameProblem(k); msg != "" {
				v.bad(append(slices.Clip(path), k), "%s", msg)
			}
			if strings.ContainsRune(env[k], 0) {
				v.bad(append(slices.Clip(path), k), "the value contains a NUL character")
			}
		}
	}
}

// items reports the problems check finds with the items of the array at path.
func (v *validator) items(path []string, items []string, check func(int, string) string) {
	for i, item := range items {
		if msg := check(i, item); msg != "" {
			v.errs = append(v.errs, v.c.errorAtItem(path, i, "%s", msg))
		}
	}
}

// cli checks the keys of [cli] that are required, or whose default
// another key gives.
func (v *validator) cli(table []string, cli *CLIConfig) {
	schema, command := append(slices.Clip(table), "schema"), append(slices.Clip(table), "command")
	if len(cli.Schema) == 0 {
		v.bad(schema, `%s is required: the command that prints your tool definitions as JSON, e.g. schema = ["./bin/tool", "schema", "--json"]`, keyString(schema))
	}
	if len(cli.Schema) > 0 && cli.Schema[0] == "" && slices.Equal(cli.Command, cli.Schema[:1]) {
		return // derived from the schema, whose program is reported
	}
	if len(cli.Command) == 0 {
		v.bad(command, `%s is required: the start of every call's command line, e.g. command = ["./bin/tool"]; remove it to use the schema's program`, keyString(command))
	}
	v.items(command, cli.Command, argvItem)
}

func (v *validator) servers() {
	for i := range v.c.Servers {
		s := &v.c.Servers[i]
		path := []string{"servers", s.Name}
		table := keyString(path)
		if err := checkServerName(s.Name, v.c.Mux.Separator); err != nil {
			v.bad(path, "%v", err)
		}
		switch {
		case s.CLI != nil && !s.Run.Command.IsZero():
			v.bad(append(path, "cli"), "a server has [%s.run] or [%s.cli], not both: [cli] takes the place of [run]", table, table)
		case s.CLI == nil && s.Run.Command.IsZero():
			v.bad(append(path, "run", "command"), `%s.run.command is required: the command that starts this MCP server, e.g. command = ["./bin/server"] (or give [%s.cli] for a command-line program)`, table, table)
		}
		root := reflect.ValueOf(s).Elem()
		for j := range settings {
			if st := &settings[j]; v.c.applies(st, s) {
				v.setting(root, st, append(path, st.table(), st.name()))
			}
		}
		if s.CLI != nil {
			v.cli(append(path, "cli"), s.CLI)
		}
	}
}

// checkServerName reports why name cannot name a mux's server whose tools
// are listed as NAME + separator + tool, or nil.
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
		if !bareKeyRune(r) {
			return fmt.Errorf("server name %s: use letters, digits, '-' and '_' only (found %q): clients reject other characters in tool names", TOMLString(name), r)
		}
	}
	return nil
}
