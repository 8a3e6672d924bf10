package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Describe returns the resolved settings as TOML, one key a line, for
// `mcpflow check`. The text parses back into the same settings.
func (c *Config) Describe() string {
	d := describer{dir: c.Dir}
	b := &d.b
	if c.File != "" {
		fmt.Fprintf(b, "# config: %s\n", c.File)
	} else {
		b.WriteString("# config: no file (defaults and flags)\n")
	}
	fmt.Fprintf(b, "# relative paths resolve against %s\n", c.Dir)
	fmt.Fprintf(b, "# mode: %s\n", c.Mode())

	switch c.Mode() {
	case Single:
		d.build("build", &c.Build)
		d.run("run", &c.Run)
	case CLI:
		d.build("build", &c.Build)
		d.cli("cli", c.CLI)
	}

	r := &c.Relay
	d.table("relay")
	d.kv("tool", TOMLString(r.Tool), "")
	d.kv("max_message", TOMLString(sizeText(r.MaxMessage)), "")
	d.kv("notices", strconv.FormatBool(r.Notices), "")
	d.kv("on_crash", TOMLString(r.OnCrash), "")
	d.kv("restart_marker", TOMLString(r.RestartMarker), off(r.RestartMarker, "off"))
	d.kv("server_suffix", TOMLString(r.ServerSuffix), "")
	d.kv("call_tool", TOMLString(r.CallTool), off(r.CallTool, "off"))
	d.kv("queue_size", strconv.Itoa(r.QueueSize), "")
	d.kv("queue_bytes", TOMLString(sizeText(r.QueueBytes)), "")
	d.kv("queue_timeout", TOMLString(DurationText(r.QueueTimeout)), "")
	grace, note := graceText(r.StartupGrace)
	d.kv("startup_grace", grace, note)
	d.kv("handshake_timeout", TOMLString(DurationText(r.Handshake)), "")
	if c.Mode() != Mux {
		d.kv("drain", TOMLString(DurationText(r.Drain)), "")
	}

	if c.Mode() != Mux {
		d.watch("watch", &c.Watch)
	}

	l := &c.Log
	d.table("log")
	d.kv("level", TOMLString(l.Level), "")
	d.kv("format", TOMLString(l.Format), "")
	d.kv("file", TOMLString(l.File), off(l.File, "stderr only"))
	d.kv("max_size", TOMLString(sizeText(l.MaxSize)), "")
	d.kv("traffic", TOMLString(l.Traffic), off(l.Traffic, "off"))
	d.kv("traffic_max_message", TOMLString(sizeText(l.TrafficMaxMessage)), "")
	d.kv("traffic_max_size", TOMLString(sizeText(l.TrafficMaxSize)), "")

	d.table("http")
	d.kv("listen", TOMLString(c.HTTP.Listen), off(c.HTTP.Listen, "off: the client is on stdin and stdout"))

	if c.Mode() == Mux {
		m := &c.Mux
		d.table("mux")
		d.kv("separator", TOMLString(m.Separator), "")
		d.kv("add_server", strconv.FormatBool(m.AddServer), "")
		d.kv("allowed_commands", TOMLStrings(m.AllowedCommands), off(strings.Join(m.AllowedCommands, ""), "any command"))
		d.kv("allowed_env", TOMLStrings(m.AllowedEnv), off(strings.Join(m.AllowedEnv, ""), "none, when allowed_commands is set"))
		d.kv("drain", TOMLString(DurationText(m.Drain)), "")
		if len(c.Servers) == 0 {
			b.WriteString("\n# no [servers.NAME]: the agent adds them\n")
		}
		for i := range c.Servers {
			s := &c.Servers[i]
			t := keyString([]string{"servers", s.Name})
			d.build(t+".build", &s.Build)
			if s.CLI != nil {
				d.cli(t+".cli", s.CLI)
			} else {
				d.run(t+".run", &s.Run)
			}
			sr := &s.Relay
			d.table(t + ".relay")
			d.kv("max_message", TOMLString(sizeText(sr.MaxMessage)), "")
			d.kv("on_crash", TOMLString(sr.OnCrash), "")
			d.kv("restart_marker", TOMLString(sr.RestartMarker), off(sr.RestartMarker, "off"))
			d.kv("queue_size", strconv.Itoa(sr.QueueSize), "")
			d.kv("queue_bytes", TOMLString(sizeText(sr.QueueBytes)), "")
			d.kv("queue_timeout", TOMLString(DurationText(sr.QueueTimeout)), "")
			grace, note := graceText(sr.StartupGrace)
			d.kv("startup_grace", grace, note)
			d.kv("handshake_timeout", TOMLString(DurationText(sr.Handshake)), "")
			d.watch(t+".watch", &s.Watch)
		}
	}
	return b.String()
}

// describer writes TOML, one key a line with an optional note.
type describer struct {
	b   strings.Builder
	dir string // the folder watch globs are relative to
}

func (d *describer) table(name string) { fmt.Fprintf(&d.b, "\n[%s]\n", name) }

func (d *describer) kv(key, value, note string) {
	fmt.Fprintf(&d.b, "%s = %s", key, value)
	if note != "" {
		fmt.Fprintf(&d.b, "  # %s", note)
	}
	d.b.WriteString("\n")
}

func (d *describer) env(env map[string]string) {
	kvs := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		kvs = append(kvs, tomlKey(k)+" = "+TOMLString(env[k]))
	}
	if len(kvs) == 0 {
		d.kv("env", "{}", "")
	} else {
		d.kv("env", "{ "+strings.Join(kvs, ", ")+" }", "")
	}
}

func (d *describer) build(table string, b *BuildConfig) {
	d.table(table)
	d.kv("command", tomlCommand(b.Command), cmdNote(b.Command, "no build step"))
	d.kv("timeout", TOMLString(DurationText(b.Timeout)), "")
}

func (d *describer) run(table string, r *RunConfig) {
	d.table(table)
	d.kv("command", tomlCommand(r.Command), cmdNote(r.Command, "not set: required"))
	d.kv("cwd", TOMLString(r.Cwd), "")
	d.env(r.Env)
	d.kv("env_overridable", TOMLStrings(r.EnvOverridable), "")
	d.kv("stop_timeout", TOMLString(DurationText(r.StopTimeout)), "")
	d.kv("url", TOMLString(r.URL), off(r.URL, "stdio: the server speaks on its stdin and stdout"))
}

func (d *describer) cli(table string, c *CLIConfig) {
	d.table(table)
	d.kv("schema", TOMLStrings(c.Schema), "")
	d.kv("command", TOMLStrings(c.Command), "")
	d.kv("append", TOMLStrings(c.Append), "")
	d.kv("timeout", TOMLString(DurationText(c.Timeout)), "")
	d.kv("max_output", TOMLString(sizeText(c.MaxOutput)), "")
	d.kv("max_parallel", strconv.Itoa(c.MaxParallel), "")
	d.kv("cwd", TOMLString(c.Cwd), "")
	d.env(c.Env)
}

func (d *describer) watch(table string, w *WatchConfig) {
	d.table(table)
	d.kv("enabled", strconv.FormatBool(w.Enabled), "")
	d.kv("paths", TOMLStrings(w.Paths), "")
	d.kv("include", TOMLStrings(w.Include), "")
	d.kv("exclude", TOMLStrings(w.Exclude), "")
	if ig := w.Excludes(d.dir)[len(w.Exclude):]; len(ig) > 0 {
		fmt.Fprintf(&d.b, "# never watched either (clients' and editors' files): %s\n", strings.Join(ig, ", "))
	}
	d.kv("gitignore", strconv.FormatBool(w.GitIgnore), "")
	d.kv("debounce", TOMLString(DurationText(w.Debounce)), "")
	poll, pollNote := "", "off: fsnotify"
	if w.Poll > 0 {
		poll, pollNote = DurationText(w.Poll), ""
	}
	d.kv("poll", TOMLString(poll), pollNote)
}

func off(s, note string) string {
	if s == "" {
		return note
	}
	return ""
}

func cmdNote(cmd Command, none string) string {
	switch {
	case cmd.IsZero():
		return none
	case cmd.Shell:
		return "run by sh -c"
	default:
		return "executed directly"
	}
}

// durationText writes d exactly, as a TOML duration value the way people
// write it: "10m", "1h30m", "100ms". (Durations shown as measurements use
// result.Dur, which rounds; a setting is shown as written.)
// graceText is relay.startup_grace as the file says it, and a note: ""
// (0) waits as long as the client does.
func graceText(d time.Duration) (string, string) {
	if d == 0 {
		return `""`, "as long as the client waits: Claude Code 25s, Codex 8s, others 4s"
	}
	return TOMLString(DurationText(d)), ""
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
	for _, u := range []struct {
		name string
		n    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// TOMLString quotes s as a TOML basic string.
func TOMLString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TOMLStrings writes ss as a TOML array of strings.
func TOMLStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = TOMLString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlKey writes a key bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return TOMLString(k)
		}
	}
	return k
}

// keyString writes a dotted key path: run.env."A.B".
func keyString(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = tomlKey(p)
	}
	return strings.Join(parts, ".")
}

func tomlCommand(c Command) string {
	if c.IsZero() {
		return `""`
	}
	return c.String()
}
