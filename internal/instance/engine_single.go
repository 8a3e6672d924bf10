package instance

import (
	"context"
	"log/slog"
	"sync"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logging"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/relay"
)

// startSingle starts the engine of one [run] server: its relay, with
// the build, the watch and the record of its last start.
func startSingle(ctx context.Context, cfg *config.Config, logger *slog.Logger, run *instanceRun) (*engine, error) {
	charm := logging.Charm(logger)
	rc := relayConfig(cfg.Run, cfg.Relay, run.trafficHook(""), logger)
	rc.First = relay.First{Grace: cfg.Relay.StartupGrace, Record: project.RecordFile(cfg), Key: project.RecordKey(cfg)}
	rc.Logger, rc.ServerLogger = logger, slog.New(charm.WithPrefix("server"))
	rl := relay.New(rc)
	srv, err := assemble(cfg, logger, rl, rl.NoteBuild)
	if err != nil {
		rl.Close()
		return nil, err
	}
	rl.SetRecompiler(srv)
	name := serverName(cfg)
	target := oneServer(name, func() control.Status {
		st := rl.Stats()
		return control.Status{Client: clientInfoOf(st.Client), Servers: []control.ServerStatus{serverStatusOf(name, st, srv.builds.lastBuild())}}
	}, srv.rebuild)

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { srv.run(ctx) })
	wg.Go(func() { srv.Startup(ctx) })
	logger.Info("mcpflow started", "version", Version, "config", orFlags(cfg.File), "run", cfg.Run.Command.String())
	return &engine{
		opener: rl, mode: control.ModeSingle, target: target, inputEnded: rl.InputEnded,
		stop: func() {
			rl.Close()
			cancel()
			wg.Wait()
		},
	}, nil
}

func orFlags(file string) string {
	if file == "" {
		return "(command line)"
	}
	return file
}
