package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/builder"
	"github.com/mcpflow/mcpflow/internal/buildcache"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/watcher"
)

// buildCache connects a builder to the project's build cache
// (internal/buildcache): before each build it takes the project's build
// lock, so that two mcpflow instances never build one project at once,
// and at startup (or after waiting for another instance's build) it skips
// the build when the sources and the build command are unchanged since
// the last good build and that build's output is still in place. It also
// keeps the files the builder learned as build output across runs.
type buildCache struct {
	cfg    *config.Config
	dir    string // the cache folder
	file   string // this configuration's state file
	output string // the file the server runs that the build writes; "" if unknown
	log    *slog.Logger

	mu      sync.Mutex
	outputs []string // the builder's learned outputs
}

// withBuildCache returns bc with the build cache attached, or bc as it is
// when there is no build command.
func withBuildCache(cfg *config.Config, logger *slog.Logger, bc builder.Config) builder.Config {
	if cfg.Build.Command.IsZero() {
		return bc
	}
	c := newBuildCache(cfg, logger)
	st, err := buildcache.Load(c.file)
	if err != nil {
		logger.Warn("build cache unreadable; the first build runs", "err", err)
	}
	c.outputs = st.Outputs
	bc.Outputs = st.Outputs
	bc.OnOutputs = c.learned
	bc.Prepare = c.prepare
	return bc
}

func newBuildCache(cfg *config.Config, logger *slog.Logger) *buildCache {
	dir := buildcache.Dir(cfg.Dir)
	return &buildCache{
		cfg:    cfg,
		dir:    dir,
		file:   buildcache.StateFile(dir, buildIdentity(cfg)...),
		output: runOutput(cfg),
		log:    logger,
	}
}

// buildIdentity is what makes two builds of one folder the same build.
func buildIdentity(cfg *config.Config) []string {
	id := []string{cfg.Dir, fmt.Sprint(cfg.Build.Command.Shell)}
	return append(id, cfg.Build.Command.Argv...)
}

// prepare is the builder's Config.Prepare.
func (c *buildCache) prepare(ctx context.Context, trigger string, say func(string)) (string, func(bool), error) {
	lock, err := buildcache.Acquire(ctx, c.dir, func() {
		say("waiting for another mcpflow that is building this project")
		c.log.Info("another mcpflow is building this project; waiting for its build", "lock", filepath.Join(c.dir, "build.lock"))
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		c.log.Warn("cannot take the build lock; building without it", "err", err)
	}
	key, keyed := c.key()
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := buildcache.Load(c.file)
	if err != nil {
		c.log.Warn("build cache unreadable; building", "err", err)
	}
	if keyed && trigger != builder.TriggerRecompile && st.Fresh(key) {
		lock.Release()
		msg := fmt.Sprintf("sources unchanged since the last good build at %s: starting %s without building",
			st.Time.Local().Format("2006-01-02 15:04:05"), c.show(st.Output))
		c.log.Info(msg)
		return msg, nil, nil
	}
	// Until this build ends well, the output on disk may be half
	// written or a failed build's: never reuse it.
	st.Key = ""
	c.save(st)
	return "", func(ok bool) {
		defer lock.Release()
		if !ok || !keyed {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		st.Key, st.Time = key, time.Now()
		st.SetOutput(c.output)
		st.Outputs = c.outputs
		c.save(st)
	}, nil
}

// learned is the builder's Config.OnOutputs.
func (c *buildCache) learned(outputs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outputs = outputs
	st, _ := buildcache.Load(c.file)
	st.Outputs = outputs
	c.save(st)
}

func (c *buildCache) save(st buildcache.State) {
	if err := buildcache.Save(c.file, st); err != nil {
		c.log.Warn("cannot write the build cache", "err", err)
	}
}

// key is the buildcache.Key of the sources now: the watched files,
// without the ones builds write, and the lock files of the package
// managers. It reports false when the files cannot be listed.
func (c *buildCache) key() (string, bool) {
	if c.output == "" {
		return "", false
	}
	files, err := watcher.Scan(watchConfigOf(c.cfg))
	if err != nil {
		c.log.Debug("cannot list the sources for the build cache", "err", err)
		return "", false
	}
	// What builds write is no source: the files learned as outputs (by
	// this instance or, as the state file says, another one), those in
	// the usual output folders, and the run output.
	st, _ := buildcache.Load(c.file)
	c.mu.Lock()
	skip := make(map[string]bool, len(c.outputs)+len(st.Outputs)+1)
	for _, o := range append(slices.Clone(c.outputs), st.Outputs...) {
		skip[o] = true
	}
	c.mu.Unlock()
	skip[c.show(c.output)] = true
	keep := files[:0]
	for _, f := range files {
		if !skip[f] && !underAny(builder.OutputDirs(), f) {
			keep = append(keep, f)
		}
	}
	keep = append(keep, "go.mod", "go.sum", "package.json", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "Cargo.lock", "uv.lock", "tsconfig.json")
	return buildcache.Key(append(buildIdentity(c.cfg), "run:"+c.output), c.cfg.Dir, keep), true
}

// show renders a path relative to the project folder when inside it.
func (c *buildCache) show(p string) string {
	if rel, err := filepath.Rel(c.cfg.Dir, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// runOutput is the file the server runs, when the build writes it: the run
// binary given as a path, or the script given to node or python. "" when
// run.command names no such file (a shell script, a program on PATH).
func runOutput(cfg *config.Config) string {
	argv := cfg.Run.Command.Argv
	if cfg.Run.Command.Shell || len(argv) == 0 {
		return ""
	}
	if strings.ContainsRune(argv[0], '/') || strings.ContainsRune(argv[0], filepath.Separator) {
		return absFrom(cfg.Run.Cwd, argv[0])
	}
	switch strings.TrimSuffix(filepath.Base(argv[0]), ".exe") {
	case "node", "bun", "python", "python3":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			switch filepath.Ext(a) {
			case ".js", ".mjs", ".cjs", ".py":
				return absFrom(cfg.Run.Cwd, a)
			}
			return ""
		}
	}
	return ""
}

// underAny reports whether the slash path f lies under one of dirs.
func underAny(dirs []string, f string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(f, d+"/") {
			return true
		}
	}
	return false
}
