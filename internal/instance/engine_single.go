package instance

import (
	"cmp"
	"context"
	"log/slog"

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
	rc.First = relay.First{Grace: cfg.Relay.StartupGrace, Record: project.RecordFile(cfg), Key: project.RecordKey(cfg), Sources: project.Sources(cfg), OneShot: oneShotWait(cfg)}
	rc.Logger, rc.ServerLogger = logger, slog.New(charm.WithPrefix("server"))
	if cfg.File == "" {
		rc.Child.Setting = "the command after --"
	}
	rl := relay.New(rc)
	srv, err := assemble(cfg, logger, rl, rl.NoteBuild)
	if err != nil {
		rl.Close()
		return nil, err
	}
	rl.SetRecompiler(srv)
	name := serverName(cfg)
	target := oneTarget{name, func() control.Status {
		st := rl.Stats()
		c := st.Client
		client := control.ClientInfo{Name: c.Name, Version: c.Version, Protocol: c.Protocol, Era: c.Era.String()}
		return control.Status{Client: client, Servers: []control.ServerStatus{serverStatusOf(name, st, srv.builds.lastBuild())}}
	}, srv.rebuild}
	stop := srv.start(ctx, func() {}, rl.Close)
	logger.Info("mcpflow started", "version", Version, "config", cmp.Or(cfg.File, "(command line)"), "run", cfg.Run.Command.String())
	return &engine{opener: rl, mode: control.ModeSingle, target: target, inputEnded: rl.InputEnded, tell: rl.ConfigProblem, stop: stop}, nil
}
