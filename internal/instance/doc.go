// Package instance is a running mcpflow: the wiring of one run, from a
// config to the clients it serves.
//
// Serve (live.go) opens what a run adds for a person — the front (stdio,
// or Streamable HTTP with [http] listen), the control socket, the traffic
// capture — and serves the engine of the config's mode behind the front:
// one server's relay (engine_single.go), a mux (engine_mux.go) or a [cli]
// program (engine_cli.go), each built with one assembly of a served
// server (served.go: builder, watcher, build cache) and one mapping of the
// config onto each part's options (options.go). The config file is
// watched: an edit that loads starts a new engine under the open sessions
// (wire.Swap), and while the file does not load, mcpflow answers the
// session itself with the problem (brokenEngine).
//
// It imports every layer below it and nothing imports it but cmd/mcpflow,
// which owns the command line: flags, subcommands and their output.
package instance

// Version is mcpflow's version, for serverInfo and the log; cmd sets it
// before Serve.
var Version = "devel"
