package main

import (
	"fmt"

	"github.com/mcpflow/mcpflow/internal/config"
)

const muxUsage = `  mcpflow mux [-c FILE] [--log-file FILE] [--log-level LEVEL] [--traffic FILE]

Serves several MCP servers to one client as one MCP server: their tools
appear as NAME__tool, and the agent adds, reloads and removes servers with
add_server, reload_server, remove_server and list_servers. Without -c the
mux starts with no servers, for the agent to fill; with -c, FILE's
[servers.NAME] tables are started (as "mcpflow watch -c FILE" does), each
built, watched and hot-reloaded on its own.

Security: add_server runs any program the agent names. Turn it off with
[mux] add_server = false, or restrict it with allowed_commands.
`

func cmdMux(e env, args []string) int {
	x := newExitWatch(e)
	defer x.stop()
	fs := newFlagSet(e, "mux", muxUsage)
	cfgPath := fs.String("c", "", "config file with [servers.NAME] tables and [mux] (default: none, no servers)")
	rf := addRunFlags(fs)
	return fs.parse(args, func(rest []string) int {
		if len(rest) > 0 {
			return e.fail(exitUsage, "mcpflow mux: unexpected argument %q: servers come from -c FILE or from the agent's add_server", rest[0])
		}
		if *cfgPath == "" {
			return runSession(e, x, config.DefaultMux(mustGetwd(e)), nil, rf)
		}
		cfg, err := loadOrBroken(*cfgPath)
		if err == nil && cfg.Mode() != config.Mux {
			err = fmt.Errorf("%s serves one server (mode %s), not a mux: add [servers.NAME] tables or [mux], or run \"mcpflow watch -c %s\"", *cfgPath, cfg.Mode(), *cfgPath)
		}
		return runSession(e, x, cfg, err, rf)
	})
}
