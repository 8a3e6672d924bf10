// Package mux serves several MCP servers to its clients as one MCP server,
// on the same engine as mcpflow watch: each server behind the mux is a
// relay (package relay) that owns its child, and each client session of
// the mux holds a session with each server (a port of its relay), in
// memory, message by message.
//
//	client(s) <-stdio or HTTP-> session (wire.Session) --port--> relay A --stdio or HTTP--> child A
//	                                                   '--port--> relay B --stdio or HTTP--> child B
//
// No SDK, no pipe and no second framer stand between a client and a
// server: the front (wire.Serve for stdio, internal/transport/httpmcp for HTTP)
// frames the client's bytes once, the mux routes each message by its
// envelope (wire.Peek), and the relay's link frames the child's.
//
// # What the mux answers, and what it passes
//
// A session answers for itself what only the mux can know: the
// handshake (initialize, or server/discover for a 2026-07-28 client),
// ping, the merged lists (tools, prompts, resources, templates) and its
// own tools (add_server, unless Config.DisableAddServer, restricted by
// AllowedCommands; remove_server; reload_server; list_servers;
// Config.CallTool when set). Its serverInfo is mcpflow's, followed by
// Config.ServerSuffix; its instructions combine the servers' under each
// server's name.
//
// Everything else passes as the server or the client wrote it, with the
// only rewrites the mux must make:
//   - Tool and prompt names: server NAME's tool t is listed and called as
//     NAME + separator + t ("__" by default, split on the first
//     separator); the item is the server's own JSON with "name" replaced.
//     A name over MaxToolName characters, or a tool whose input schema is
//     no object, is left out, with a warning in list_servers.
//   - Ids of the requests a server sends the client (sampling,
//     elicitation, roots/list) are the mux's own ("mcpflow:…") toward the
//     client, so that two servers' ids never meet; the client's answer
//     goes back to the server that asked, under the server's id.
//   - The client's own ids and progress tokens reach the servers as they
//     are: each client session has a session of its own with each server.
//
// Results, errors, progress, log messages and the servers' own requests
// are never decoded and encoded again, and never filtered: a log message
// sent during a call goes to the session that made the call, on that
// call's stream (rel), whatever level the client set.
//
// Routing: tools/call and prompts/get go to the server the name names;
// resources/read, subscribe and unsubscribe to the server that listed the
// URI (templates: the one whose template matches); completion/complete to
// the prompt's or resource's owner; logging/setLevel to every server,
// answered once every server took it (a server that refuses it keeps
// serving); notifications (initialized, roots/list_changed, cancellations
// of the call they name) to the servers concerned. A server's
// list_changed re-reads that server's lists for that session (a burst
// costs one more read) and its client hears one coalesced list_changed,
// once it was given a list (or listens).
//
// # Eras
//
// A legacy client's handshake is answered by the mux, then given to each
// server (and to each added later) as the client sent it: each server
// session is the client's own, under its capabilities; a 2026-07-28
// client's session holds a listen of the mux's own on each server. A
// 2026-07-28 client is served in its era only while there are servers and
// every one of them speaks it; otherwise server/discover is refused and
// the client falls back to the legacy handshake. A server that speaks
// only the other era than its client is served through the era bridge
// (relay.Config.Bridge, internal/protocol/bridge).
//
// # Servers
//
// Each server is a Backend: NewRelayBackends makes a relay per server
// (cmd attaches a builder and a watcher through RelayOptions.NewHooks and
// serves [cli] programs with a backend of its own; this package imports
// neither builder, watcher nor clitools). A backend reports its state as
// Events (starting, up, crashed with its report, build failed), which the
// server's worker applies for list_servers: a crashed server's tools leave the lists, its
// calls in flight are answered once with the crash report, and calls to
// it, to a removed or unknown server get a tool error naming the servers
// that exist. reload_server rebuilds and restarts one server (its env
// argument, offered when a configured server has run.env_overridable,
// takes that server's keys) and answers with the same outcome text as
// watch's recompile.
//
// # Guarantees and locks
//
// Every request of a client gets exactly one response carrying its id.
// Close stops every backend and waits for it: no child and no process
// group survives the mux. Mux.mu guards the registry of servers and
// sessions; each server and each session has a lock of its own (a
// session's guards its ports and its catalog). No two of them are held
// together, and no backend call or delivery to a client runs under any.
//
// # Parts
//
//   - mux.go: the Mux and its registry of servers;
//   - server.go: a server's state, kept from its backend's events;
//   - session.go: a client's session and its routing;
//   - port.go: a session's part on one server;
//   - answers.go: what a session answers itself (handshake, lists);
//   - catalog.go: what a session lists and who owns it;
//   - tools.go: the mux's own tools;
//   - backend.go, relaybackend.go: the servers behind it.
package mux
