package instance

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow/internal/clitools"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/protocol/bridge"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/transport/httpmcp"
)

// The mappings of the config's sections onto the options of the parts
// that consume them, once for every mode; the builder's and the watcher's
// are assemble's (served.go), the mux's own startMux's.

// relayConfig is the relay of a server with run and r ([run] and [relay],
// or a mux server's [servers.NAME.run] and [servers.NAME.relay]): the one
// mapping of the config onto relay.Config. traffic records the server hop;
// the era bridge logs to logger.
func relayConfig(run config.RunConfig, r config.RelayConfig, traffic func(hop string, toServer bool, gen int, msg []byte), logger *slog.Logger) relay.Config {
	return relay.Config{
		Child: relay.Child{
			Command:        run.Command.Argv,
			Shell:          run.Command.Shell,
			Dir:            run.Cwd,
			ExtraEnv:       run.Env,
			StopTimeout:    run.StopTimeout,
			HTTP:           childHTTP(run, r, logger),
			EnvOverridable: run.EnvOverridable,
			RestartMarker:  r.RestartMarker,
		},
		Tools:            relay.Tools{Recompile: r.Tool, Call: r.CallTool},
		MaxMessage:       int(r.MaxMessage),
		Notices:          r.Notices,
		ServerSuffix:     r.ServerSuffix,
		MaxChildren:      r.MaxChildren,
		Queue:            relay.Queue{Size: r.QueueSize, Bytes: int(r.QueueBytes), Timeout: r.QueueTimeout},
		Drain:            r.Drain,
		HandshakeTimeout: r.Handshake,
		OnCrash:          r.OnCrash,
		Version:          Version,
		Traffic:          traffic,
		Bridge:           bridge.Options{Log: logger.With("component", "bridge"), Handshake: r.Handshake}.New,
	}
}

// childHTTP is the relay's Child.HTTP for a server of run: nil (a stdio
// server) unless run.url says it serves Streamable HTTP.
func childHTTP(run config.RunConfig, r config.RelayConfig, logger *slog.Logger) relay.HTTPChild {
	if run.URL == "" {
		return nil
	}
	return httpmcp.Child{URL: run.URL, Placeholder: config.PortPlaceholder, Wait: r.Handshake, MaxMessage: int(r.MaxMessage), Logger: logger.With("component", "http-child")}
}

// cliConfig is the command-line program of c ([cli], or a mux server's
// [servers.NAME.cli]): the one mapping of the config onto clitools.Config.
// The caller sets the logger, the tool and the names.
func cliConfig(c *config.CLIConfig) clitools.Config {
	return clitools.Config{
		Schema:      c.Schema,
		Command:     c.Command,
		Append:      c.Append,
		Timeout:     c.Timeout,
		MaxOutput:   c.MaxOutput,
		MaxParallel: c.MaxParallel,
		Dir:         c.Cwd,
		Env:         withEnv(c.Env),
	}
}

// withEnv is mcpflow's environment with extra added; nil (the caller's)
// when extra is empty.
func withEnv(extra map[string]string) []string {
	if len(extra) == 0 {
		return nil
	}
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// allowedCommands is [mux] allowed_commands with each entry that names a
// path made absolute against the config file's folder: an agent's cwd
// never decides which file a relative entry names.
func allowedCommands(cfg *config.Config) []string {
	out := make([]string, 0, len(cfg.Mux.AllowedCommands))
	for _, c := range cfg.Mux.AllowedCommands {
		if strings.ContainsRune(c, '/') && !filepath.IsAbs(c) {
			c = filepath.Join(cfg.Dir, c)
		}
		out = append(out, c)
	}
	return out
}
