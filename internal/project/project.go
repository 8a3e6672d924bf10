package project

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow/internal/builder/cache"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/statedir"
	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/watcher"
)

// WatchConfig is the watcher of cfg's [watch], ignoring IgnoredOutputs.
func WatchConfig(cfg *config.Config) watcher.Config {
	return watcher.Config{
		Root:      cfg.Dir,
		Paths:     cfg.Watch.Paths,
		Include:   cfg.Watch.Include,
		Exclude:   cfg.Watch.Excludes(cfg.Dir),
		GitIgnore: cfg.Watch.GitIgnore,
		Ignore:    IgnoredOutputs(cfg),
		Debounce:  cfg.Watch.Debounce,
		Poll:      cfg.Watch.Poll,
	}
}

// IgnoredOutputs lists what builds and mcpflow write in the tree, which never trigger a build,
// and the config file, whose edits start a new engine themselves.
func IgnoredOutputs(cfg *config.Config) []string {
	var out []string
	if cfg.File != "" {
		out = append(out, cfg.File)
	}
	for _, f := range []string{cfg.Log.File, cfg.Log.Traffic} {
		if f != "" {
			out = append(out, f, f+".1")
		}
	}
	// A client may send mcpflow's stderr to a file in the tree (Linux only tells which).
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode().IsRegular() {
		if p, err := os.Readlink("/proc/self/fd/2"); err == nil && filepath.IsAbs(p) {
			out = append(out, p)
		}
	}
	if argv := cfg.Run.Command.Argv; len(argv) > 0 && !cfg.Run.Command.Shell && strings.ContainsRune(argv[0], filepath.Separator) {
		out = append(out, config.AbsFrom(cfg.Run.Cwd, argv[0]))
	}
	return append(out, buildOutputs(cfg)...)
}

// buildOutputs are tsconfig.json's outDir and what cfg's build command
// says it writes (buildProducts), absolute.
func buildOutputs(cfg *config.Config) []string {
	out := projectOutputs(cfg.Dir)
	for _, p := range buildProducts(cfg) {
		out = append(out, p.path)
	}
	return out
}

// BuildIdentity is what makes two builds of one folder the same build.
func BuildIdentity(cfg *config.Config) []string {
	return append([]string{cfg.Dir, fmt.Sprint(cfg.Build.Command.Shell)}, cfg.Build.Command.Argv...)
}

// RecordFile is where the relay keeps what the server said at its last good start.
func RecordFile(cfg *config.Config) string {
	return filepath.Join(statedir.Of(cfg.Dir), "last-start.json")
}

// RecordKey names what a record was written for (run, build, config file): a change voids it.
func RecordKey(cfg *config.Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %v %q %q %v %q\n", cfg.Run.Command.Argv, cfg.Run.Command.Shell, cfg.Run.Cwd, cfg.Build.Command.Argv, cfg.Build.Command.Shell, slices.Sorted(maps.Keys(cfg.Run.Env)))
	for _, k := range slices.Sorted(maps.Keys(cfg.Run.Env)) {
		fmt.Fprintf(h, "%q=%q\n", k, cfg.Run.Env[k])
	}
	if cfg.File != "" {
		if b, err := os.ReadFile(config.AbsFrom(cfg.Dir, cfg.File)); err == nil {
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Sources is the fingerprint of what the build reads now (the build
// cache's, cache.Fingerprint): a record of the server's last start is
// current only for the sources it was written for. "" when unknown.
func Sources(cfg *config.Config) func() string {
	return func() string {
		k, _ := cache.Fingerprint(CacheOptions(cfg, nil), nil)
		return k
	}
}

// RunOutput is the run binary given as a path, or node's or python's script; "" for none.
func RunOutput(cfg *config.Config) string {
	argv := cfg.Run.Command.Argv
	if cfg.Run.Command.Shell || len(argv) == 0 {
		return ""
	}
	if prog := proc.Program(argv[0], cfg.Run.Cwd); strings.ContainsRune(prog, '/') || strings.ContainsRune(prog, filepath.Separator) {
		return config.AbsFrom(cfg.Run.Cwd, prog)
	}
	if slices.Contains([]string{"node", "bun", "python", "python3"}, strings.TrimSuffix(filepath.Base(argv[0]), ".exe")) {
		args := argv[1:]
		i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
		if i >= 0 && slices.Contains([]string{".js", ".mjs", ".cjs", ".py"}, filepath.Ext(args[i])) {
			return config.AbsFrom(cfg.Run.Cwd, args[i])
		}
	}
	return ""
}

// CacheOptions is the build cache of cfg's build, keyed by its command and the watched sources.
func CacheOptions(cfg *config.Config, log *slog.Logger) cache.Options {
	return cache.Options{
		Root:     cfg.Dir,
		Identity: BuildIdentity(cfg),
		Output:   RunOutput(cfg),
		Sources:  func() ([]string, error) { return watcher.Scan(WatchConfig(cfg)) },
		Log:      log,
	}
}
