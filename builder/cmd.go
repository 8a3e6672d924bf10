package builder

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// buildOutcome is what one run of the build command produced.
type buildOutcome struct {
	output   string
	duration time.Duration
	err      error // nil: exit status 0
	started  bool  // the process started (err is then about how it ended)
	timedOut bool  // killed by Config.Timeout
}

// build runs the build command once and waits for it. When ctx is done, or
// Config.Timeout passes, the build's process group gets SIGTERM, then up to
// killGrace to exit and close its output, then SIGKILL.
func (b *Builder) build(parent context.Context) buildOutcome {
	ctx := parent
	if b.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, b.cfg.Timeout)
		defer cancel()
	}
	out := newOutputBuffer(b.cfg.MaxOutput)
	cmd := b.command(ctx)
	cmd.Dir = b.cfg.Dir
	cmd.Env = b.cfg.Env
	cmd.Stdin = nil // the null device
	cmd.Stdout = out
	cmd.Stderr = out
	setProcessGroup(cmd)
	cmd.Cancel = func() error { return terminateGroup(cmd.Process.Pid) }
	// WaitDelay bounds both how long a canceled build may take to die and
	// how long Wait waits for output pipes held open by processes the
	// build left running.
	cmd.WaitDelay = killGrace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return buildOutcome{err: err, duration: time.Since(start)}
	}
	err := cmd.Wait()
	res := buildOutcome{started: true, err: err, duration: time.Since(start)}
	if ctx.Err() != nil {
		// Canceled: whatever of the group survived SIGTERM (or closed its
		// output and kept running) goes now.
		killGroup(cmd.Process.Pid)
	}
	res.output = out.String()
	switch {
	case err == nil:
	case errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil:
		// Exit status 0, but something the build started kept its output
		// open. The build itself succeeded.
		b.log.Warn("the build left processes running that kept its output open; ignoring them", "command", b.cmdline)
		res.err = nil
	case parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.timedOut = true
	}
	return res
}

// command returns the build's exec.Cmd, bound to ctx.
func (b *Builder) command(ctx context.Context) *exec.Cmd {
	argv := b.cfg.Command
	if b.cfg.Shell {
		return shellCommand(ctx, argv[0], argv[1:])
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// commandLine renders the build command for messages.
func commandLine(argv []string, shell bool) string {
	if len(argv) == 0 {
		return ""
	}
	if shell && len(argv) == 1 {
		return argv[0]
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			a = strconv.Quote(a)
		}
		quoted[i] = a
	}
	return strings.Join(quoted, " ")
}
