package config

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// apply copies the values fc sets over c's defaults, resolving paths, and
// decides the mode. The errors are those the schema types cannot see: an
// empty duration where one is required, sections that do not go together.
func (c *Config) apply(fc *fileConfig) []error {
	r := resolver{c: c}
	muxed := len(fc.Servers) > 0 || c.written("mux") || c.written("servers")
	switch {
	case muxed:
		c.mode = Mux
		for _, table := range []string{"run", "cli", "build", "watch"} {
			if c.written(table) {
				r.errs = append(r.errs, c.errorAt(table, "[%s] cannot go with [servers.NAME] tables (a mux): move it under [servers.NAME.%s], or remove the [servers] and [mux] tables to serve one server", table, table))
			}
		}
		if c.written("relay", "drain") {
			r.errs = append(r.errs, c.errorAt("relay.drain", "in a mux the drain time is mux.drain: move it there"))
		}
	case c.written("cli"):
		c.mode = CLI
		if c.written("run") {
			r.errs = append(r.errs, c.errorAt("run", "[run] cannot go with [cli]: [cli] takes the place of [run]; keep one of them"))
		}
	}

	r.build("build", &fc.Build, &c.Build)
	r.run("run", &fc.Run, &c.Run)
	if c.mode == CLI {
		c.CLI = defaultCLI(c.Dir)
		r.cli("cli", &fc.CLI, c.CLI)
	}
	r.relay(&fc.Relay, &c.Relay)
	r.watch("watch", &fc.Watch, &c.Watch)

	l := &fc.Log
	r.set(&c.Log.Level, l.Level)
	r.set(&c.Log.Format, l.Format)
	if l.File != nil && *l.File != "" {
		c.Log.File = c.abs(*l.File)
	}
	r.size(&c.Log.MaxSize, l.MaxSize)
	if l.Traffic != nil && *l.Traffic != "" {
		c.Log.Traffic = c.abs(*l.Traffic)
	}
	r.size(&c.Log.TrafficMaxMessage, l.TrafficMaxMessage)
	r.size(&c.Log.TrafficMaxSize, l.TrafficMaxSize)

	r.set(&c.HTTP.Listen, fc.HTTP.Listen)

	m := &fc.Mux
	r.set(&c.Mux.Separator, m.Separator)
	r.flag(&c.Mux.AddServer, m.AddServer)
	r.list(&c.Mux.AllowedCommands, m.AllowedCommands)
	r.list(&c.Mux.AllowedEnv, m.AllowedEnv)
	r.dur("mux.drain", m.Drain, &c.Mux.Drain, false)

	for _, name := range c.serverNames(fc.Servers) {
		fs := fc.Servers[name]
		if fs == nil {
			fs = &fileServer{}
		}
		s := ServerConfig{
			Name:  name,
			Build: defaultBuild(),
			Run:   defaultRun(c.Dir),
			Relay: c.Relay,
			Watch: defaultWatch(c.Dir),
		}
		prefix := keyString([]string{"servers", name}) + "."
		r.build(prefix+"build", &fs.Build, &s.Build)
		r.run(prefix+"run", &fs.Run, &s.Run)
		if c.written("servers", name, "cli") {
			s.CLI = defaultCLI(c.Dir)
			r.cli(prefix+"cli", &fs.CLI, s.CLI)
			if !c.written("servers", name, "run") {
				s.Run = RunConfig{}
			}
		}
		sr := &fs.Relay
		r.size(&s.Relay.MaxMessage, sr.MaxMessage)
		r.set(&s.Relay.OnCrash, sr.OnCrash)
		r.set(&s.Relay.RestartMarker, sr.RestartMarker)
		r.int(&s.Relay.QueueSize, sr.QueueSize)
		r.size(&s.Relay.QueueBytes, sr.QueueBytes)
		r.dur(prefix+"relay.queue_timeout", sr.QueueTimeout, &s.Relay.QueueTimeout, false)
		r.dur(prefix+"relay.startup_grace", sr.StartupGrace, &s.Relay.StartupGrace, true)
		r.dur(prefix+"relay.handshake_timeout", sr.Handshake, &s.Relay.Handshake, false)
		s.Relay.Drain = c.Mux.Drain
		r.watch(prefix+"watch", &fs.Watch, &s.Watch)
		c.Servers = append(c.Servers, s)
	}

	// The sections a mode does not use are left zero.
	switch c.mode {
	case CLI:
		c.Run = RunConfig{}
	case Mux:
		c.Build, c.Run, c.Watch = BuildConfig{}, RunConfig{}, WatchConfig{}
		c.Relay.Drain = c.Mux.Drain
	}
	return r.errs
}

// resolver copies the values a file sets over the defaults.
type resolver struct {
	c    *Config
	errs []error
}

func (r *resolver) dur(key string, d *duration, dst *time.Duration, emptyOK bool) {
	switch {
	case d == nil:
	case d.empty && !emptyOK:
		r.errs = append(r.errs, r.c.errorAt(key, `expected a duration like "2s", got an empty string; %s`, durationForms))
	default:
		*dst = d.d
	}
}

func (r *resolver) set(dst, src *string) {
	if src != nil {
		*dst = *src
	}
}

func (r *resolver) flag(dst, src *bool) {
	if src != nil {
		*dst = *src
	}
}

func (r *resolver) int(dst, src *int) {
	if src != nil {
		*dst = *src
	}
}

func (r *resolver) size(dst *int64, src *size) {
	if src != nil {
		*dst = src.n
	}
}

func (r *resolver) list(dst, src *[]string) {
	if src != nil {
		*dst = append([]string{}, *src...)
	}
}

func (r *resolver) env(dst map[string]string, src map[string]string) {
	for k, v := range src {
		dst[k] = v
	}
}

func (r *resolver) build(key string, f *fileBuild, b *BuildConfig) {
	if f.Command != nil {
		b.Command = f.Command.Command
	}
	r.dur(key+".timeout", f.Timeout, &b.Timeout, false)
}

func (r *resolver) run(key string, f *fileRun, run *RunConfig) {
	if f.Command != nil {
		run.Command = f.Command.Command
	}
	if f.Cwd != nil {
		run.Cwd = r.c.abs(*f.Cwd)
	}
	r.env(run.Env, f.Env)
	r.list(&run.EnvOverridable, f.EnvOverridable)
	r.dur(key+".stop_timeout", f.StopTimeout, &run.StopTimeout, false)
	r.set(&run.URL, f.URL)
}

func (r *resolver) cli(key string, f *fileCLI, cli *CLIConfig) {
	r.list(&cli.Schema, f.Schema)
	r.list(&cli.Command, f.Command)
	if f.Command == nil && len(cli.Schema) > 0 {
		cli.Command = cli.Schema[:1:1]
	}
	r.list(&cli.Append, f.Append)
	r.dur(key+".timeout", f.Timeout, &cli.Timeout, false)
	r.size(&cli.MaxOutput, f.MaxOutput)
	r.int(&cli.MaxParallel, f.MaxParallel)
	if f.Cwd != nil {
		cli.Cwd = r.c.abs(*f.Cwd)
	}
	r.env(cli.Env, f.Env)
}

func (r *resolver) relay(f *fileRelay, rl *RelayConfig) {
	r.set(&rl.Tool, f.Tool)
	r.size(&rl.MaxMessage, f.MaxMessage)
	r.flag(&rl.Notices, f.Notices)
	r.set(&rl.OnCrash, f.OnCrash)
	r.set(&rl.RestartMarker, f.RestartMarker)
	r.set(&rl.ServerSuffix, f.ServerSuffix)
	r.set(&rl.CallTool, f.CallTool)
	r.int(&rl.QueueSize, f.QueueSize)
	r.size(&rl.QueueBytes, f.QueueBytes)
	r.dur("relay.queue_timeout", f.QueueTimeout, &rl.QueueTimeout, false)
	r.dur("relay.startup_grace", f.StartupGrace, &rl.StartupGrace, true)
	r.dur("relay.handshake_timeout", f.Handshake, &rl.Handshake, false)
	r.dur("relay.drain", f.Drain, &rl.Drain, false)
}

func (r *resolver) watch(key string, f *fileWatch, w *WatchConfig) {
	r.flag(&w.Enabled, f.Enabled)
	if f.Paths != nil {
		w.Paths = make([]string, len(*f.Paths))
		for i, p := range *f.Paths {
			w.Paths[i] = r.c.abs(p)
			if p == "" {
				w.Paths[i] = ""
			}
		}
	}
	r.list(&w.Include, f.Include)
	r.list(&w.Exclude, f.Exclude)
	for _, globs := range []*[]string{&w.Include, &w.Exclude} {
		for i, g := range *globs {
			for strings.HasPrefix(g, "./") {
				g = strings.TrimLeft(g[2:], "/")
			}
			(*globs)[i] = g
		}
	}
	r.flag(&w.GitIgnore, f.GitIgnore)
	r.dur(key+".debounce", f.Debounce, &w.Debounce, false)
	r.dur(key+".poll", f.Poll, &w.Poll, true)
}

// written reports whether the document writes anything under the key path.
func (c *Config) written(path ...string) bool {
	return c.src != nil && c.src.firstUnder(path) != nil
}

// serverNames returns the names of servers in the order the document
// first writes them.
func (c *Config) serverNames(servers map[string]*fileServer) []string {
	var names []string
	seen := map[string]bool{}
	if c.src != nil {
		for _, n := range c.src.nodes {
			if len(n.path) >= 2 && n.path[0] == "servers" && !seen[n.path[1]] {
				if _, ok := servers[n.path[1]]; ok {
					seen[n.path[1]] = true
					names = append(names, n.path[1])
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if !seen[name] {
			names = append(names, name)
		}
	}
	return names
}

// abs resolves p against c.Dir.
func (c *Config) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.Dir, p)
}
