package cache

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/builder"
)

// Options say which build of which project a cache is for.
type Options struct {
	Root     string   // the project folder (the cache is Root/.mcpflow/cache)
	Identity []string // what makes two builds of Root the same build (the command)
	// Output is the file the server runs that the build writes, absolute;
	// "" when unknown (the build is then never skipped).
	Output string
	// Sources lists the source files now (slash paths relative to Root):
	// the watched files.
	Sources func() ([]string, error)
	Log     *slog.Logger
}

// buildCache connects a builder to the project's build cache: before each
// build it takes the build lock, and at startup (or after waiting for
// another instance's build) it skips the build when the sources and the
// build command are unchanged since the last good build and that build's
// output is still in place. It also keeps the files the builder learned as
// build output across runs.
type buildCache struct {
	o       Options
	file    string // this configuration's state file
	log     *slog.Logger
	timeout time.Duration // the longest wait for another instance's build: build.timeout

	mu      sync.Mutex
	outputs []string // the builder's learned outputs
	held    *Lock    // the build lock while this instance builds
}

// Attach returns bc with the build cache of o attached: its Outputs,
// OnOutputs and Prepare. Call it only for a build that has a command.
func Attach(o Options, bc builder.Config) builder.Config {
	c := &buildCache{o: o, file: StateFile(Dir(o.Root), o.Identity...), log: cmp.Or(o.Log, slog.New(slog.DiscardHandler)), timeout: bc.Timeout}
	st, err := Load(c.file)
	if err != nil {
		c.log.Warn("build cache unreadable; the first build runs", "err", err)
	}
	c.outputs = st.Outputs
	bc.Outputs = st.Outputs
	bc.OnOutputs = c.learned
	bc.Prepare = c.prepare
	bc.Awaited = c.awaited
	return bc
}

// prepare is the builder's Config.Prepare. It waits for another
// instance's build at most the build's own timeout (a holder stopped or
// stuck holds no one longer), then builds without the lock.
func (c *buildCache) prepare(ctx context.Context, trigger string, say func(string)) (string, func(bool), error) {
	wait, cancel := ctx, context.CancelFunc(func() {})
	if c.timeout > 0 {
		wait, cancel = context.WithTimeout(ctx, c.timeout)
	}
	defer cancel()
	other := "another mcpflow"
	lock, err := Acquire(wait, LockFile(c.file), func(holder int) {
		if holder != 0 {
			other = fmt.Sprintf("mcpflow pid %d", holder)
		}
		say("waiting for the build of " + other)
		c.log.Info("waiting for the build of "+other+": it builds the same sources with the same command; its result serves this one too", "lock", LockFile(c.file))
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", nil, ctx.Err()
	case wait.Err() != nil:
		msg := fmt.Sprintf("the build of %s has not finished in %s (build.timeout): building without waiting longer", other, c.timeout)
		say(msg)
		c.log.Warn(msg, "lock", LockFile(c.file))
	case err != nil:
		c.log.Warn("cannot take the build lock; building without it", "err", err)
	}
	key, keyed := c.key()
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := Load(c.file)
	if err != nil {
		c.log.Warn("build cache unreadable; building", "err", err)
	}
	if keyed && trigger != builder.TriggerRecompile && st.Fresh(key) {
		lock.Release()
		msg := fmt.Sprintf("sources unchanged since the last good build at %s: starting %s without building",
			st.Time.Local().Format("2006-01-02 15:04:05"), show(c.o.Root, st.Output))
		c.log.Info(msg)
		return msg, nil, nil
	}
	// Until this build ends well, the output on disk may be half
	// written or a failed build's: never reuse it.
	st.Key = ""
	c.save(st)
	c.held = lock
	restore := setAside(c.o.Output, filepath.Dir(c.file))
	return "", func(ok bool) {
		defer lock.Release()
		restore()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.held = nil
		if !ok || !keyed {
			return
		}
		st.Key, st.Time = key, time.Now()
		st.SetOutput(c.o.Output)
		st.Outputs = c.outputs
		c.save(st)
	}, nil
}

// awaited is the builder's Config.Awaited.
func (c *buildCache) awaited() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held.Awaited()
}

// learned is the builder's Config.OnOutputs.
func (c *buildCache) learned(outputs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outputs = outputs
	st, _ := Load(c.file)
	st.Outputs = outputs
	c.save(st)
}

func (c *buildCache) save(st State) {
	if err := Save(c.file, st); err != nil {
		c.log.Warn("cannot write the build cache", "err", err)
	}
}

// key is the Key of the sources now (Fingerprint); false when the output
// the server runs is unknown or the files cannot be listed.
func (c *buildCache) key() (string, bool) {
	if c.o.Output == "" {
		return "", false
	}
	c.mu.Lock()
	learned := c.outputs
	c.mu.Unlock()
	return Fingerprint(c.o, learned)
}

// Fingerprint is the Key of o's sources now: the watched files, without
// the ones builds write (learned, those the state file names, those in
// the usual output folders, the run output), and the lock files of the
// package managers. It reports false when the files cannot be listed.
func Fingerprint(o Options, learned []string) (string, bool) {
	if o.Sources == nil {
		return "", false
	}
	files, err := o.Sources()
	if err != nil {
		return "", false
	}
	skip := map[string]bool{}
	if o.Output != "" {
		skip[show(o.Root, o.Output)] = true
	}
	for _, f := range slices.Concat(learned, Outputs(o.Root, o.Identity...)) {
		skip[f] = true
	}
	keep := slices.DeleteFunc(files, func(f string) bool {
		return skip[f] || slices.ContainsFunc(builder.OutputDirs(), func(d string) bool { return strings.HasPrefix(f, d+"/") })
	})
	keep = append(keep, "go.mod", "go.sum", "package.json", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "Cargo.lock", "uv.lock", "tsconfig.json")
	return Key(append(slices.Clone(o.Identity), "run:"+o.Output), o.Root, keep), true
}

// show renders a path relative to the project folder when inside it.
func show(root, p string) string {
	if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// Outputs are the files (relative to root, slash separated) that builds
// of identity were seen writing, as the cache keeps them.
func Outputs(root string, identity ...string) []string {
	st, _ := Load(StateFile(Dir(root), identity...))
	return st.Outputs
}
