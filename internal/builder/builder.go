package builder

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// Restarter restarts the child after a good build. The relay satisfies it.
// It returns what the restart did; on error the returned Restart, if not
// nil, says how far it got.
type Restarter interface {
	Restart(ctx context.Context) (*result.Restart, error)
}

// Config says what to build and how.
type Config struct {
	Command []string      // argv; empty = no build step (a build then "succeeds" at once, Skipped=true)
	Shell   bool          // true: Command[0] is a script run by `sh -c` (Windows: `cmd /C`)
	Dir     string        // working directory; "" = the current one
	Timeout time.Duration // 0 = none; a build that runs longer is killed and fails
	Logger  *slog.Logger  // nil = discard
	// OnResult, when not nil, is called on Run's goroutine after every
	// cycle that was not canceled; the next cycle waits for it.
	OnResult func(result.Build)
	// Outputs are paths (relative to Dir) already known as written by
	// builds, e.g. learned by an earlier run. OnOutputs, when not nil,
	// receives every path known as a build output, sorted, each time the
	// set changes.
	Outputs   []string
	OnOutputs func([]string)
	// Prepare, when not nil, is called on Run's goroutine before each run
	// of the build command, with the build's ctx and the cycle's trigger;
	// say posts a progress message to the callers waiting for the cycle.
	// It may block, e.g. on a lock shared with other instances. A
	// non-empty skip says why the build is not needed (the sources are
	// those of the last good build): the cycle reports Skipped and Cached,
	// with skip as its Output, and goes straight to Restart. An error fails
	// the cycle (or cancels it when ctx ended). done, when not nil, is
	// called with whether the build succeeded once it has ended (or was
	// skipped), before Restart.
	Prepare func(ctx context.Context, trigger string, say func(string)) (skip string, done func(ok bool), err error)
	// Awaited, when not nil, reports whether other mcpflow instances wait
	// for the build this one runs: see "Shared builds" in the package
	// documentation.
	Awaited func() bool
}

const (
	maxOutput = 1 << 20 // bytes of combined output kept (head and tail)
	maxErrors = 8 << 10 // bytes of result.Build.Errors
	// killGrace is how long a canceled build has, after SIGTERM, to exit
	// and close its output before its process group gets SIGKILL.
	killGrace = 2 * time.Second
	// awaitedPoll is how often a build finished for other instances asks
	// Config.Awaited whether someone still waits for it.
	awaitedPoll = 100 * time.Millisecond
)

// Triggers, as found in result.Build.Trigger; callers compare with
// TriggerRecompile (a cycle the agent asked for).
const (
	triggerStartup   = "startup"
	triggerWatch     = "watch"
	TriggerRecompile = "recompile"
)

// Builder runs build cycles one at a time. Create it with New and run its
// loop with Run; see the package documentation for the contract.
type Builder struct {
	cfg     Config
	r       Restarter
	log     *slog.Logger
	cmdline string        // the command as shown to people
	wake    chan struct{} // pokes Run; capacity 1
	guard   *guard
	running atomic.Bool // Run has been called

	mu      sync.Mutex
	seq     uint64
	cur     *cycle   // the running cycle, nil when idle
	next    *request // the cycle asked for but not started, nil if none
	stopped bool     // Run has returned
}

// request is a cycle that has been asked for but has not started yet.
type request struct {
	trigger string
	paths   []string
	seen    map[string]bool
	waiters []*waiter
}

func (q *request) add(paths []string) {
	for _, p := range paths {
		if !q.seen[p] {
			q.seen[p] = true
			q.paths = append(q.paths, p)
		}
	}
}

// cycle is the running cycle. Its fields are guarded by Builder.mu, except
// seq, trigger, paths and ctx, which are set before it is published.
type cycle struct {
	request
	seq        uint64
	ctx        context.Context // the build's; canceled by a newer change or by Run's ctx (see finishFor)
	cancel     context.CancelFunc
	unhook     func() bool // stops finishFor's hook on Run's ctx
	canceled   bool        // superseded by a newer change
	restarting bool        // past the build: no longer cancelable
}

// New returns a Builder that restarts through r after each good build. A
// nil r means there is nothing to restart: cycles end after the build.
func New(cfg Config, r Restarter) *Builder {
	cfg.Command = slices.Clone(cfg.Command)
	lg := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	return &Builder{
		cfg:     cfg,
		r:       r,
		log:     lg,
		cmdline: commandLine(cfg.Command, cfg.Shell),
		wake:    make(chan struct{}, 1),
		guard:   newGuard(cfg, lg),
	}
}

// Run is the builder's loop: it runs the cycles asked for, one at a time,
// until ctx is done. Before returning it kills any running build's process
// group and waits for it, lets a running Restart (which sees ctx done)
// return, and releases every waiting Recompile and Startup. Call it once.
func (b *Builder) Run(ctx context.Context) {
	if !b.running.CompareAndSwap(false, true) {
		b.log.Error("builder: Run called twice; the second call does nothing")
		return
	}
	defer b.stop()

	for ctx.Err() == nil {
		if c := b.startNext(ctx); c != nil {
			b.runCycle(ctx, c)
			continue
		}
		select {
		case <-ctx.Done():
		case <-b.wake:
		}
	}
}

// startNext turns the pending request, if any, into the running cycle.
func (b *Builder) startNext(ctx context.Context) *cycle {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.next
	if q == nil {
		return nil
	}
	b.next = nil
	b.seq++
	c := &cycle{request: *q, seq: b.seq}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.unhook = context.AfterFunc(ctx, func() { b.finishFor(c) })
	b.cur = c
	return c
}

// finishFor ends c's build when Run's ctx ends, unless other instances
// wait for it (Config.Awaited): then it lets the build run until it ends
// or nobody waits any more.
func (b *Builder) finishFor(c *cycle) {
	if b.cfg.Awaited == nil || !b.cfg.Awaited() {
		c.cancel()
		return
	}
	b.log.Info("mcpflow is stopping during a build that other mcpflow instances wait for: finishing it for them before exiting (at most build.timeout; it stops at once if they all leave)", "build", c.seq)
	t := time.NewTicker(awaitedPoll)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			if !b.cfg.Awaited() {
				b.log.Info("no other mcpflow waits for the build any more: stopping it", "build", c.seq)
				c.cancel()
				return
			}
		}
	}
}

// stop marks the builder stopped and releases the callers still waiting.
func (b *Builder) stop() {
	b.mu.Lock()
	b.stopped = true
	q := b.pending("") // the request still pending, or an empty one
	b.next = nil
	b.mu.Unlock()
	for _, w := range q.waiters {
		w.finish(result.Build{Trigger: q.trigger, Canceled: true, Err: errStopped})
	}
}

var errStopped = errors.New("builder stopped: mcpflow is shutting down")

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Changed reports a debounced batch of changed paths, relative to
// Config.Dir. If a build is running it is canceled (its process group
// killed) and a new cycle covering its paths and these starts as soon as
// it is gone; a restart under way finishes first. Changed does not wait
// for any of this. It drops the build's own output (see the package
// documentation); when every path is dropped, it does nothing.
func (b *Builder) Changed(paths []string) {
	if paths = b.guard.dropCovered(paths); len(paths) > 0 && len(b.cfg.Command) > 0 {
		paths = b.guard.dropOutputs(paths)
	}
	if len(paths) == 0 {
		return
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	if c := b.cur; c != nil && !c.restarting && !c.canceled {
		// A running build implies nothing is pending: a request only
		// waits behind a canceled or restarting cycle.
		c.canceled = true
		c.cancel()
		q := b.pending(c.trigger)
		q.add(c.paths)
		for _, w := range c.waiters {
			w.say("build canceled by newer changes; starting again")
		}
		q.waiters = append(q.waiters, c.waiters...)
		c.waiters = nil
		b.log.Debug("canceling build for newer changes", "build", c.seq)
	}
	b.pending(triggerWatch).add(paths)
	b.mu.Unlock()
	poke(b.wake)
}

// pending returns the pending request, created with trigger if none; b.mu
// must be held.
func (b *Builder) pending(trigger string) *request {
	if b.next == nil {
		b.next = &request{trigger: trigger, seen: map[string]bool{}}
	}
	return b.next
}

// Recompile runs a cycle for the agent's recompile tool, or joins the
// running or pending one, and returns its result; see the package
// documentation for progress and for a ctx that ends first.
func (b *Builder) Recompile(ctx context.Context, progress func(msg string)) result.Build {
	return b.request(ctx, TriggerRecompile, progress)
}

// Startup runs the first cycle at launch, or joins one, as Recompile does.
func (b *Builder) Startup(ctx context.Context) result.Build {
	return b.request(ctx, triggerStartup, nil)
}

func (b *Builder) request(ctx context.Context, trigger string, progress func(string)) result.Build {
	w := &waiter{wake: make(chan struct{}, 1)}
	b.mu.Lock()
	switch {
	case b.stopped:
		b.mu.Unlock()
		return result.Build{Trigger: trigger, Canceled: true, Err: errStopped}
	case b.next != nil:
		b.next.waiters = append(b.next.waiters, w)
		if c := b.cur; c != nil && c.restarting {
			w.say("waiting for the current restart to finish")
		} else if c != nil {
			w.say("waiting for the canceled build to stop")
		}
	case b.cur != nil:
		b.cur.waiters = append(b.cur.waiters, w)
		if b.cur.restarting {
			w.say("restarting")
		} else {
			w.say("building: " + b.cmdline + " (already running)")
		}
	default:
		b.pending(trigger).waiters = []*waiter{w}
	}
	b.mu.Unlock()
	poke(b.wake)

	for {
		select {
		case <-w.wake:
			msgs, res := w.take()
			if progress != nil {
				for _, m := range msgs {
					progress(m)
				}
			}
			if res != nil {
				return *res
			}
		case <-ctx.Done():
			if res := w.abandon(); res != nil {
				return *res
			}
			b.forget(w)
			return result.Build{Trigger: trigger, Err: ctx.Err()}
		}
	}
}

// forget removes an abandoned waiter from the cycle it was waiting for.
func (b *Builder) forget(w *waiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	drop := func(ws []*waiter) []*waiter {
		return slices.DeleteFunc(ws, func(x *waiter) bool { return x == w })
	}
	if b.cur != nil {
		b.cur.waiters = drop(b.cur.waiters)
	}
	if b.next != nil {
		b.next.waiters = drop(b.next.waiters)
	}
}
