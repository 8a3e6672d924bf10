package builder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// runCycle runs c on Run's goroutine: the build, then, if it succeeded and
// no newer change arrived meanwhile, the restart. It reports the result to
// OnResult and to c's waiters.
func (b *Builder) runCycle(ctx context.Context, c *cycle) {
	res := result.Build{Seq: c.seq, Trigger: c.trigger, Changed: c.paths}
	lg := b.log.With("build", c.seq, "trigger", c.trigger)
	// The build's time window opens before Prepare: what another
	// instance's build writes while this one waits for it counts as a
	// build's writes too.
	b.guard.begin(len(b.cfg.Command) > 0)

	var out buildOutcome
	if len(b.cfg.Command) == 0 {
		res.Skipped = true
		b.say(c, "no build command; skipping the build")
	} else {
		var done func(bool)
		if b.cfg.Prepare != nil {
			out.skip, done, out.err = b.cfg.Prepare(c.ctx, c.trigger, func(msg string) { b.say(c, msg) })
			out.prepare = out.err != nil
		}
		switch {
		case out.err != nil: // Prepare failed
		case out.skip != "":
			b.say(c, out.skip)
			b.log.Debug("build skipped", "build", c.seq, "why", out.skip)
			res.Skipped, res.Cached, res.Output = true, true, out.skip
		default:
			b.say(c, "building: "+b.cmdline)
			lg.Debug("building", "command", b.cmdline, "changed", len(c.paths))
			out = b.build(c.ctx)
			res.Output, res.Duration = out.output, out.duration
		}
		good := out.err == nil && out.skip == "" && c.ctx.Err() == nil
		b.guard.end(good)
		if done != nil {
			done(good)
		}
	}

	b.mu.Lock()
	canceled := c.canceled || ctx.Err() != nil
	if !canceled {
		c.restarting = true
	}
	b.mu.Unlock()
	c.unhook()
	c.cancel() // release the build's context

	switch {
	case canceled:
		res.Canceled = true
		if c.canceled {
			res.Err = errors.New("build canceled: newer changes arrived")
		} else {
			res.Err = fmt.Errorf("build canceled: shutting down: %w", ctx.Err())
		}
		lg.Debug("build canceled", "after", result.Dur(res.Duration), "err", res.Err)
	case out.err != nil:
		res.Err = b.explain(out)
		res.Errors = summarize(res.Output, maxErrors)
		lg.Debug("build failed", "after", result.Dur(res.Duration), "err", res.Err)
		b.say(c, fmt.Sprintf("build failed after %s: %v", result.Dur(res.Duration), res.Err))
	default:
		res.OK = true
		if !res.Skipped {
			lg.Debug("build ok", "in", result.Dur(res.Duration))
			b.say(c, "build ok in "+result.Dur(res.Duration))
		}
		b.restart(ctx, c, &res)
	}

	b.mu.Lock()
	b.cur = nil
	ws := c.waiters
	c.waiters = nil
	b.mu.Unlock()

	if !res.Canceled && b.cfg.OnResult != nil {
		b.cfg.OnResult(res)
	}
	for _, w := range ws {
		w.finish(res)
	}
}

func (b *Builder) restart(ctx context.Context, c *cycle, res *result.Build) {
	if b.r == nil {
		return
	}
	b.say(c, "restarting")
	start := time.Now()
	ended := b.guard.restarting()
	rs, err := b.r.Restart(ctx)
	ended()
	rs = cmp.Or(rs, &result.Restart{})
	rs.Duration = cmp.Or(rs.Duration, time.Since(start))
	rs.Err = cmp.Or(rs.Err, err)
	res.Restart = rs
	lg := b.log.With("build", c.seq)
	switch {
	case rs.Err != nil && ctx.Err() != nil:
		// Shutting down: the restart was cut short, nothing failed.
		res.Canceled, res.Err = true, fmt.Errorf("restart canceled: shutting down: %w", ctx.Err())
	case rs.Err != nil:
		lg.Debug("restart failed", "after", result.Dur(rs.Duration), "err", rs.Err)
		b.say(c, fmt.Sprintf("restart failed after %s: %v", result.Dur(rs.Duration), rs.Err))
	default:
		lg.Debug("restarted", "in", result.Dur(rs.Duration))
		b.say(c, "restarted in "+result.Dur(rs.Duration))
	}
}

// explain turns a failed build into an error that says what to do.
func (b *Builder) explain(out buildOutcome) error {
	switch {
	case out.prepare:
		return out.err
	case out.timedOut:
		return fmt.Errorf("build timed out after %s and was killed; raise build.timeout in mcpflow.toml (0 turns the limit off)", b.cfg.Timeout)
	case out.started:
		return fmt.Errorf("build command %s failed: %w", b.cmdline, out.err)
	default:
		return fmt.Errorf("start build command %s: %w; check build.command in mcpflow.toml", b.cmdline, out.err)
	}
}

func (b *Builder) say(c *cycle, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range c.waiters {
		w.say(msg)
	}
}
