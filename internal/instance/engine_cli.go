package instance

import (
	"cmp"
	"context"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/mcpflow/mcpflow/internal/builder"
	"github.com/mcpflow/mcpflow/internal/clitools"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logging"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// startCLI starts the engine of [cli]: the CLI's tools, one process per
// call (package clitools). The [build] runs at start and on every watched
// change or recompile; after a good build the schema command is re-read
// (tools/list_changed when the tools changed). tools/list and tools/call
// wait for the first cycle (at most relay.startup_grace), so the first
// list holds the CLI's tools.
func startCLI(ctx context.Context, cfg *config.Config, logger *slog.Logger, run *instanceRun) (*engine, error) {
	c := cfg.CLI
	var b *builder.Builder
	cc := cliConfig(c)
	cc.Logger = slog.New(logging.Charm(logger).WithPrefix("cli"))
	cc.Tool, cc.Name, cc.Version = cmp.Or(cfg.Relay.Tool, "-"), "mcpflow", Version
	cc.Recompile = func(ctx context.Context, progress func(string)) result.Build {
		return b.Recompile(ctx, progress)
	}
	srv := clitools.New(cc)
	gate := clitools.NewGate(srv, cfg.Relay.Notices, cfg.Relay.StartupGrace)
	sv, err := assemble(cfg, logger, srv, gate.NoteBuild, cliPrograms(c.Cwd, c.Schema, c.Command)...)
	if err != nil {
		srv.Close()
		return nil, err
	}
	b = sv.Builder
	name := serverName(cfg)
	target := oneTarget{name, func() control.Status { return cliStatus(name, srv.Schema, &sv.builds) }, sv.rebuild}
	stop := sv.start(ctx, gate.Started, srv.Close) // srv.Close kills and reaps every running call's process group
	logger.Info("mcpflow started", "version", Version, "config", cmp.Or(cfg.File, "(command line)"), "cli", strings.Join(c.Schema, " "))
	return &engine{opener: srv, mode: control.ModeCLI, target: target, stop: stop}, nil
}

// cliPrograms are the CLI's program files inside the tree (a build writes
// them), so that a build never triggers the next one.
func cliPrograms(dir string, argvs ...[]string) []string {
	var out []string
	for _, argv := range argvs {
		if len(argv) > 0 && strings.ContainsRune(argv[0], filepath.Separator) {
			out = append(out, config.AbsFrom(dir, argv[0]))
		}
	}
	return out
}
