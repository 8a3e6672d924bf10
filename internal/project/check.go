package project

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/mcpflow/mcpflow/internal/builder"
	"github.com/mcpflow/mcpflow/internal/builder/cache"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/watcher"
)

// Scan is what check says of one server: its watched files, and where the programs it runs are.
type Scan struct {
	Server   string // "" or "servers.NAME: "
	Watched  bool
	Files    int
	Took     time.Duration
	Programs []string // "run.command .mcpflow/server: not built yet; the build writes it (go build -o .mcpflow/server .)"
}

// Check finds the setups of cfg that parse but will misbehave, each
// warning at the server or the key to fix; a watch that cannot be listed is an error.
func Check(cfg *config.Config) ([]Scan, []string, error) {
	var scans []Scan
	var warnings []string
	for _, v := range checkViews(cfg) {
		var files []string
		notes, _ := commandChecks(v)
		s := Scan{Server: v.prefix, Programs: notes}
		if v.cfg.Watch.Enabled {
			start := time.Now()
			var err error
			if files, err = watcher.Scan(WatchConfig(v.cfg)); err != nil {
				return scans, warnings, fmt.Errorf("%swatch: %w", v.prefix, err)
			}
			s.Watched, s.Files, s.Took = true, len(files), time.Since(start)
		}
		scans = append(scans, s)
		for _, w := range checkWarnings(v, files) {
			if !slices.Contains(warnings, w) { // a mux's servers share [log]
				warnings = append(warnings, w)
			}
		}
	}
	return scans, slices.Concat(warnings, muxNameWarnings(cfg), listenWarnings(cfg, checkViews(cfg)), allowedWarnings(cfg)), nil
}

// allowedWarnings says which file a relative mux.allowed_commands entry allows.
func allowedWarnings(cfg *config.Config) []string {
	var out []string
	for _, c := range cfg.Mux.AllowedCommands {
		if !strings.ContainsRune(c, '/') || filepath.IsAbs(c) {
			continue
		}
		abs := filepath.Join(cfg.Dir, c)
		w := fmt.Sprintf("mux.allowed_commands: %q is relative: it allows %s only (read against the config's folder, never against the cwd add_server is given); write the absolute path to make that plain", c, abs)
		if _, err := os.Stat(abs); err != nil {
			w += "; that file does not exist yet"
		}
		out = append(out, w)
	}
	return out
}

// checkView is one server's config: cfg itself, or in a mux a copy with that server's tables.
type checkView struct {
	prefix string // "" or "servers.NAME: "
	table  string // "" or "servers.NAME.": where the server's keys are
	cfg    *config.Config
}

// at words a warning at the server's key, located as config errors are.
func (v checkView) at(key, format string, args ...any) string {
	return v.cfg.At(v.table+key, format, args...)
}

func checkViews(cfg *config.Config) []checkView {
	if cfg.Mode() != config.Mux {
		return []checkView{{cfg: cfg}}
	}
	var views []checkView
	for _, s := range cfg.Servers {
		views = append(views, checkView{prefix: "servers." + s.Name + ": ", table: "servers." + s.Name + ".", cfg: cfg.Server(&s)})
	}
	return views
}

// checkWarnings finds one server's setups that parse but will misbehave.
func checkWarnings(v checkView, files []string) []string {
	cfg := v.cfg
	var out []string
	add := func(prefix string, ws ...string) { // prefix: v.prefix for a warning that names no key
		for _, w := range ws {
			if w != "" {
				out = append(out, prefix+w)
			}
		}
	}
	// A build output or the run binary matched by the globs would loop, were it not ignored: say so.
	// tsc's outDir is projectWarnings', the log and traffic files logFileWarnings'.
	if cfg.Watch.Enabled {
		others := append(projectOutputs(cfg.Dir), cfg.File, cfg.Log.File, cfg.Log.File+".1", cfg.Log.Traffic, cfg.Log.Traffic+".1") // the config file: its edits start a new engine
		for _, p := range IgnoredOutputs(cfg) {
			if slices.Contains(others, p) {
				continue
			}
			rel, err := filepath.Rel(cfg.Dir, p)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			rel = filepath.ToSlash(rel)
			if matchesAny(cfg.Watch.Include, rel) && !matchesAny(cfg.Watch.Exclude, rel) {
				add(v.prefix, fmt.Sprintf("%s (a build output or the run binary) matches watch.include: mcpflow ignores it so a build cannot trigger the next one, but add it to watch.exclude to make that explicit", rel))
			}
		}
		if len(files) == 0 {
			add(v.prefix, fmt.Sprintf("the watch globs match no file under %s: include = %s", cfg.Dir, strings.Join(cfg.Watch.Include, ", ")))
		}
		// A file init watches may come later (go.sum, Cargo.lock): only the others are likely typos.
		expected := detectManifest(cfg.Dir).Include
		for _, g := range cfg.Watch.Include {
			matches := func(f string) bool { return matchesAny([]string{g}, f) }
			if len(files) > 0 && !strings.ContainsAny(g, "*?[{") && !slices.Contains(expected, g) && !slices.ContainsFunc(files, matches) {
				add(v.prefix, fmt.Sprintf("watch.include %q matches no file", g))
			}
		}
	}
	_, warnings := commandChecks(v)
	add("", warnings...)
	add("", servingWarnings(v)...)
	add(v.prefix, projectWarnings(cfg)...)
	if cfg.Watch.Enabled && !cfg.Build.Command.IsZero() {
		add(v.prefix, watchedBuildOutputs(cfg, files)...)
	}
	add(v.prefix, noEmitOnErrorWarning(cfg))
	add("", watchModeWarning(v), runRestarterWarning(v))
	if cfg.Watch.Enabled {
		add("", dataFileWarnings(v, files)...)
		add("", logFileWarnings(v, files)...)
	}
	return out
}

// watchedBuildOutputs warns about watched files a build writes: mcpflow
// ignores them, the warning makes the config say so.
func watchedBuildOutputs(cfg *config.Config, files []string) []string {
	var out []string
	for _, d := range builder.OutputDirs() {
		if i := slices.IndexFunc(files, func(f string) bool { return strings.HasPrefix(f, d+"/") }); i >= 0 {
			out = append(out, fmt.Sprintf("the watch globs cover %s/ (%s), where builds usually write: mcpflow takes what a build writes there for its output, never a reason to build again, but if %s/ holds build output add \"%s/**\" to watch.exclude", d, files[i], d, d))
		}
	}
	for _, o := range cache.Outputs(cfg.Dir, BuildIdentity(cfg)...) {
		if slices.Contains(files, o) && !slices.ContainsFunc(builder.OutputDirs(), func(d string) bool { return strings.HasPrefix(o, d+"/") }) {
			out = append(out, fmt.Sprintf("%s is written by the build (mcpflow saw it) and matches the watch globs: mcpflow ignores the build's own writes to it, but add it to watch.exclude to make that explicit", o))
		}
	}
	return out
}

// noEmitOnErrorWarning warns about tsc without noEmitOnError: a restart could run broken code.
func noEmitOnErrorWarning(cfg *config.Config) string {
	ts := readTSConfig(cfg.Dir)
	line := strings.Join(cfg.Build.Command.Argv, " ")
	if cfg.Build.Command.IsZero() || !ts.Found || ts.NoEmitOnError || strings.Contains(line, "noEmitOnError") {
		return ""
	}
	if !hasWord(line, "tsc") {
		scripts := tscScripts(cfg.Dir, line) // npm run NAME, pnpm NAME, yarn NAME
		if len(scripts) == 0 || slices.ContainsFunc(scripts, func(s string) bool { return strings.Contains(s, "noEmitOnError") }) {
			return ""
		}
	}
	return `the build runs tsc without noEmitOnError: tsc writes its JavaScript even when type-checking fails, so the server could restart into code that did not compile; add --noEmitOnError to the build command (for "npm run build": "npm run build -- --noEmitOnError") or set "noEmitOnError": true in tsconfig.json`
}

// hasWord reports whether s holds w between spaces, shell punctuation or the ends.
func hasWord(s, w string) bool {
	return regexp.MustCompile(`(?:^|[ \t;&|("'/])` + regexp.QuoteMeta(w) + `(?:$|[ \t;&|)"'])`).MatchString(s)
}

func matchesAny(globs []string, rel string) bool {
	return slices.ContainsFunc(globs, func(g string) bool {
		ok, _ := doublestar.Match(g, rel)
		return ok
	})
}
