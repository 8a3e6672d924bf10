package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
)

// The person's commands: mcpflow status, rebuild, logs.

const statusUsage = `  mcpflow status [--json] [-c FILE] [--all]

Shows every running mcpflow of yours: its pid, config file and mode, the
client, and for each server its state, pid, uptime, restarts, last build,
tool count and calls. Run in a project folder (or with -c FILE), it shows
that project's instances only; --all shows them all. With --json,
durations are whole milliseconds (fields ending in _ms), as in every
--json output.
`

const rebuildUsage = `  mcpflow rebuild [NAME] [-c FILE] [--pid PID] [--json]

Rebuilds and restarts the server of a running mcpflow, as the agent's
recompile tool does (in a mux, NAME picks the server), and prints the build
result and the tool diff. Exit status 0 when the new server serves, 1 when
the build or restart failed. With --json, durations are whole milliseconds
(fields ending in _ms), as in every --json output.
`

const logsUsage = `  mcpflow logs [-f] [-n LINES] [-c FILE] [--pid PID]

Prints the log of a running mcpflow (the last few thousand lines it keeps
in memory, also when no log file is set); -f follows it until Ctrl-C or
the instance stops.
`

// selectFlags are the flags that pick instances.
type selectFlags struct {
	cfg *string
	all *bool
	pid *int
}

// session runs fn with the picked instance's control connection, until
// fn returns or Ctrl-C.
func (s selectFlags) session(e env, fn func(context.Context, *control.Client) int) int {
	ctx, cancel := signal.NotifyContext(context.Background(), stopSignals...) // Ctrl-C
	defer cancel()
	insts, err := s.instances(e)
	var inst control.Instance
	if err == nil {
		inst, err = control.Pick(insts, *s.pid)
	}
	if err != nil {
		return e.fail(exitFailure, "mcpflow: %v", err)
	}
	c := control.Dial(inst)
	defer c.Close()
	return fn(ctx, c)
}

func addSelectFlags(fs *flagSet, withPid bool) selectFlags {
	s := selectFlags{cfg: fs.String("c", "", "only the instances of this config file"), all: new(bool)}
	if withPid { // the commands that pick one instance
		s.pid = fs.Int("pid", 0, "the instance with this process id (mcpflow status lists them)")
	} else {
		s.all = fs.Bool("all", false, "every instance, wherever it runs")
	}
	return s
}

// instances lists the instances of -c FILE; else, unless --all, those of
// the working folder's project when there are any; else all.
func (s selectFlags) instances(e env) ([]control.Instance, error) {
	var f control.Filter
	if *s.cfg != "" {
		f.Config = config.AbsFrom(mustGetwd(e), *s.cfg)
		if _, err := os.Stat(f.Config); err != nil {
			return nil, fmt.Errorf("-c %s: %w", *s.cfg, err)
		}
	}
	insts, err := control.Instances(f)
	if err != nil || *s.all || *s.cfg != "" {
		return insts, err
	}
	here := control.Filter{Project: mustGetwd(e)}
	mine := slices.DeleteFunc(slices.Clone(insts), func(in control.Instance) bool { return !here.Match(in) })
	if len(mine) > 0 {
		return mine, nil
	}
	return insts, nil
}

func cmdStatus(e env, args []string) int {
	fs := newFlagSet(e, "status", statusUsage)
	asJSON := fs.Bool("json", false, "print JSON (an array of instances) for scripts")
	sel := addSelectFlags(fs, false)
	return fs.parse(args, func(rest []string) int {
		if len(rest) > 0 {
			return e.fail(exitUsage, "mcpflow status: unexpected argument %q", rest[0])
		}
		insts, err := sel.instances(e)
		if err != nil {
			return e.fail(exitFailure, "mcpflow: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		write := control.WriteStatus
		if *asJSON {
			write = control.WriteStatusJSON
		}
		if err := write(e.stdout, control.Statuses(ctx, insts)); err != nil {
			return e.fail(exitFailure, "mcpflow: %v", err)
		}
		return exitOK
	})
}

func cmdRebuild(e env, args []string) int {
	fs := newFlagSet(e, "rebuild", rebuildUsage)
	asJSON := fs.Bool("json", false, "print the result as JSON (the recompile tool's structuredContent keys)")
	sel := addSelectFlags(fs, true)
	return fs.parse(args, func(rest []string) int {
		if len(rest) > 1 {
			return e.fail(exitUsage, "mcpflow rebuild: one server name at most, got %q", rest)
		}
		name := ""
		if len(rest) == 1 {
			name = rest[0]
		}
		return sel.session(e, func(ctx context.Context, c *control.Client) int {
			b, err := c.Rebuild(ctx, name)
			if err != nil {
				return e.fail(exitFailure, "mcpflow: %v", err)
			}
			if *asJSON {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				err = enc.Encode(control.BuildToJSON(b))
			} else {
				err = control.WriteBuild(e.stdout, name, b)
			}
			if err != nil {
				return e.fail(exitFailure, "mcpflow: %v", err)
			}
			return control.ExitCode(b)
		})
	})
}

func cmdLogs(e env, args []string) int {
	fs := newFlagSet(e, "logs", logsUsage)
	follow := fs.Bool("f", false, "follow: print new lines as they come, until Ctrl-C or the instance stops")
	tail := fs.Int("n", 0, "only the last LINES lines (0 = all kept)")
	sel := addSelectFlags(fs, true)
	return fs.parse(args, func(rest []string) int {
		if len(rest) > 0 || *tail < 0 {
			return e.fail(exitUsage, "mcpflow logs: takes no arguments; -n wants a count of lines")
		}
		return sel.session(e, func(ctx context.Context, c *control.Client) int {
			if err := c.Logs(ctx, e.stdout, *follow, *tail); err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
				return e.fail(exitFailure, "mcpflow: %v", err)
			}
			return exitOK
		})
	})
}
