package main

import (
	"fmt"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

const checkUsage = `  mcpflow check [-c FILE]

Validates the config strictly (unknown keys, wrong types, bad durations and
sizes are errors, with file:line:column), then prints the resolved
settings, how many files the watch globs match, and warnings about setups
that will misbehave. Exit status 2 when the config has errors.
`

func cmdCheck(e env, args []string) int {
	fs := newFlagSet(e, "check", checkUsage)
	cfgPath := fs.String("c", "mcpflow.toml", "config file")
	return fs.parse(args, func([]string) int {
		cfg, err := config.Load(*cfgPath)
		if err != nil {
			return e.fail(exitUsage, "%v", err)
		}
		fmt.Fprintf(e.stdout, "# %s is valid. Resolved settings:\n\n%s\n", *cfgPath, cfg.Describe())
		scans, warnings, err := project.Check(cfg)
		for _, s := range scans {
			for _, p := range s.Programs {
				fmt.Fprintf(e.stdout, "# %s%s\n", s.Server, p)
			}
			if s.Watched {
				fmt.Fprintf(e.stdout, "# %swatch: %d files match (scanned in %s)\n", s.Server, s.Files, result.Dur(s.Took))
			}
		}
		if err != nil {
			return e.fail(exitUsage, "%v", err)
		}
		for _, w := range warnings {
			fmt.Fprintf(e.stdout, "warning: %s\n", w)
		}
		if len(warnings) == 0 {
			fmt.Fprintln(e.stdout, "# no warnings")
		}
		return exitOK
	})
}
