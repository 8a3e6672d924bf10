package builder

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/proc/tail"
)

type buildOutcome struct {
	output   string
	duration time.Duration
	err      error  // nil: exit status 0
	started  bool   // the process started (err is then about how it ended)
	timedOut bool   // killed by Config.Timeout
	skip     string // Config.Prepare found the build not needed, and why
	prepare  bool   // err is Config.Prepare's
}

// build runs the build command once and waits for it; see "Processes" in
// the package documentation for how it is stopped.
func (b *Builder) build(parent context.Context) buildOutcome {
	ctx, cancel := parent, context.CancelFunc(func() {})
	if b.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, b.cfg.Timeout)
	}
	defer cancel()
	// The first half of the budget and the last half.
	out := tail.New(maxOutput/2, maxOutput/2, nil)
	cmd := proc.Command(ctx, proc.Spec{Argv: b.cfg.Command, Shell: b.cfg.Shell, Dir: b.cfg.Dir}, killGrace)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	err := cmd.Run()
	res := buildOutcome{started: cmd.ProcessState != nil, err: err, duration: time.Since(start), output: out.String()}
	switch {
	case err == nil || !res.started:
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

// commandLine renders the build command for messages.
func commandLine(argv []string, shell bool) string {
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
