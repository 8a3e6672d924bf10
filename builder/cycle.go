package builder

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// runCycle runs c on Run's goroutine: the build, then, if it succeeded and
// no newer change arrived meanwhile, the restart. It reports the result to
// OnResult and to c's waiters.
func (b *Builder) runCycle(ctx context.Context, c *cycle) {
	res := Result{Seq: c.seq, Trigger: c.trigger, Changed: c.paths}
	lg := b.log.With("build", c.seq, "trigger", c.trigger)

	var out buildOutcome
	if len(b.cfg.Command) == 0 {
		res.Skipped = true
		b.say(c, "no build command; skipping the build")
	} else {
		b.say(c, "building: "+b.cmdline)
		lg.Debug("building", "command", b.cmdline, "changed", len(c.paths))
		out = b.build(c.ctx)
		res.Output, res.Duration = out.output, out.duration
	}

	b.mu.Lock()
	canceled := c.canceled || ctx.Err() != nil
	if !canceled {
		c.restarting = true
	}
	b.mu.Unlock()
	c.cancel() // release the build's context

	switch {
	case canceled:
		res.Canceled = true
		if c.canceled {
			res.Err = errors.New("build canceled: newer changes arrived")
		} else {
			res.Err = fmt.Errorf("build canceled: shutting down: %w", ctx.Err())
		}
		lg.Debug("build canceled", "after", round(res.Duration), "err", res.Err)
	case out.err != nil:
		res.Err = b.explain(out)
		res.Errors = Summarize(res.Output, b.cfg.MaxErrors)
		lg.Debug("build failed", "after", round(res.Duration), "err", res.Err)
		b.say(c, fmt.Sprintf("build failed after %s: %v", round(res.Duration), res.Err))
	default:
		res.OK = true
		if !res.Skipped {
			lg.Debug("build ok", "in", round(res.Duration))
			b.say(c, "build ok in "+round(res.Duration).String())
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

// restart calls the Restarter and records the outcome in res.
func (b *Builder) restart(ctx context.Context, c *cycle, res *Result) {
	if b.r == nil {
		return
	}
	b.say(c, "restarting")
	start := time.Now()
	summary, err := b.r.Restart(ctx)
	res.Restarted = true
	res.RestartDuration = time.Since(start)
	res.RestartSummary = summary
	res.RestartErr = err
	lg := b.log.With("build", c.seq)
	if err != nil {
		lg.Debug("restart failed", "after", round(res.RestartDuration), "err", err)
		b.say(c, fmt.Sprintf("restart failed after %s: %v", round(res.RestartDuration), err))
		return
	}
	lg.Debug("restarted", "in", round(res.RestartDuration))
	b.say(c, "restarted in "+round(res.RestartDuration).String())
}

// explain turns a failed build into an error that says what to do.
func (b *Builder) explain(out buildOutcome) error {
	switch {
	case out.timedOut:
		return fmt.Errorf("build timed out after %s and was killed; raise build.timeout in mcpflow.toml (0 turns the limit off)", b.cfg.Timeout)
	case out.started:
		return fmt.Errorf("build command %s failed: %w", b.cmdline, out.err)
	default:
		return fmt.Errorf("start build command %s: %w; check build.command in mcpflow.toml", b.cmdline, out.err)
	}
}

// say posts a progress message to the callers waiting for c.
func (b *Builder) say(c *cycle, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range c.waiters {
		w.say(msg)
	}
}

// round shortens d for people: 40ms, 1.2s.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	default:
		return d.Round(time.Microsecond)
	}
}
