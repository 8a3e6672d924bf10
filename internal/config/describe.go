package config

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
)

// Describe returns the settings that apply to the config's mode as TOML, one
// key a line, for `mcpflow check`; the text parses back into the same ones.
func (c *Config) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# config: %s\n# relative paths resolve against %s\n# mode: %s\n", cmp.Or(c.File, "no file (defaults and flags)"), c.Dir, c.Mode())

	c.describe(&b, nil)
	if c.Mode() == Mux && len(c.Servers) == 0 {
		b.WriteString("\n# no [servers.NAME]: the agent adds them\n")
	}
	for i := range c.Servers {
		c.describe(&b, &c.Servers[i])
	}
	return b.String()
}

// describe writes the settings of c (srv nil) or of its server srv, under
// the header of each table.
func (c *Config) describe(b *strings.Builder, srv *ServerConfig) {
	root, prefix := reflect.ValueOf(c).Elem(), []string(nil)
	if srv != nil {
		root, prefix = reflect.ValueOf(srv).Elem(), []string{"servers", srv.Name}
	}
	table := ""
	for i := range settings {
		s := &settings[i]
		f := fieldOf(root, s)
		if !f.IsValid() || !c.applies(s, srv) {
			continue
		}
		if s.table() != table {
			table = s.table()
			fmt.Fprintf(b, "\n[%s]\n", keyString(append(prefix, table)))
		}
		value, note := s.text(f.Interface())
		fmt.Fprintf(b, "%s = %s%s\n", s.name(), value, when(note != "", "  # %s", note))
		if s.also != nil {
			if note := s.also(sectionOf(root, s).Addr().Interface(), c.Dir); note != "" {
				fmt.Fprintf(b, "# %s\n", note)
			}
		}
	}
}

// text writes v, a value of s, as TOML, with a note on what it means.
func (s *setting) text(v any) (value, note string) {
	switch s.kind {
	case kBool, kInt:
		return fmt.Sprint(v), ""
	case kSize:
		return TOMLString(sizeText(v.(int64))), ""
	case kDuration:
		if d := v.(time.Duration); d != 0 || s.empty == "" {
			return TOMLString(DurationText(d)), ""
		}
		return `""`, s.empty
	case kList, kPaths, kGlobs:
		l := v.([]string)
		return TOMLStrings(l), when(len(l) == 0, "%s", s.empty)
	case kCommand:
		cmd := v.(Command)
		switch {
		case cmd.IsZero():
			return `""`, s.empty
		case cmd.Shell:
			return cmd.String(), "run by " + proc.ShellName
		}
		return cmd.String(), "executed directly"
	case kEnv:
		return TOMLTable(v.(map[string]string)), ""
	}
	str := v.(string)
	return TOMLString(str), when(str == "", "%s", s.empty)
}

// DurationText writes a duration as a setting is written: "10m", "2s".
func DurationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sizeText writes n exactly, in the largest binary unit that divides it.
func sizeText(n int64) string {
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB"} {
		if u := int64(1) << (40 - 10*i); n != 0 && n%u == 0 {
			return strconv.FormatInt(n/u, 10) + unit
		}
	}
	return strconv.FormatInt(n, 10)
}

// TOMLString quotes s as a TOML basic string.
func TOMLString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if esc, ok := tomlEscapes[r]; ok {
			b.WriteString(esc)
		} else if r < 0x20 || r == 0x7f {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var tomlEscapes = map[rune]string{'"': `\"`, '\\': `\\`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

// TOMLStrings writes ss as a TOML array of strings.
func TOMLStrings(ss []string) string { return "[" + joinEach(ss, TOMLString, ", ") + "]" }

// TOMLTable writes env as a TOML inline table, its keys sorted.
func TOMLTable(env map[string]string) string {
	if len(env) == 0 {
		return "{}"
	}
	kv := func(k string) string { return tomlKey(k) + " = " + TOMLString(env[k]) }
	return "{ " + joinEach(slices.Sorted(maps.Keys(env)), kv, ", ") + " }"
}

// tomlKey writes a key bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool { return !bareKeyRune(r) }) {
		return TOMLString(k)
	}
	return k
}

// bareKeyRune reports whether r may be written in a bare key (and in the
// name of a mux's server).
func bareKeyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// keyString writes a dotted key path: run.env."A.B".
func keyString(path []string) string { return joinEach(path, tomlKey, ".") }

func joinEach(ss []string, f func(string) string, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return strings.Join(out, sep)
}
