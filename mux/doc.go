// Package mux serves several MCP servers to one client as one MCP server.
//
//	client(s) <-stdio or HTTP-> Mux: mcp.Server (front: both eras, paging, coalesced list_changed)
//	                  |-- mcp.Client --in-memory pipes--> Backend (relay.Relay) --stdio--> child A
//	                  '-- mcp.Client --in-memory pipes--> Backend (relay.Relay) --stdio--> child B
//
// Each server behind the mux is a Backend; the default one (NewRelayBackends,
// the only code in this package that uses package relay) is a relay.Relay
// that owns the child process, so each child keeps the relay's guarantees:
// build first, old child kept on a failed build, crash reports, both
// protocol eras, no orphaned process. The relay reports its child's state
// through relay.Config.OnEvent (Starting, Up, RestartFailed, Crashed), which
// the backend turns into Events; build results reach it through the
// noteBuild function its HooksFactory is given. cmd attaches a builder and a
// watcher per server through RelayOptions.NewHooks, and serves CLI tool
// servers (ServerSpec.CLI) with a backend of its own; this package imports
// neither builder, watcher nor clitools. Logging is a *slog.Logger; every
// record about a server carries server=NAME.
//
// Contract toward the client:
//   - Tools and prompts of server NAME are listed as NAME + separator +
//     their own name ("__" by default; split on the first separator), with
//     descriptions, schemas, annotations and _meta kept. A name over MCP's
//     128 characters, or a tool whose input schema is not an object, is
//     left out with a warning in list_servers.
//   - Resources keep their URIs and are read from the server that listed
//     them (templates: the server whose template matches); completion and
//     resources/subscribe go to the owner; logging/setLevel to every child
//     (and, for 2026-07-28 children, into each forwarded call's _meta).
//   - A child's list_changed re-lists that child on its own worker
//     goroutine (a burst costs one re-list; no read loop waits); the front
//     server coalesces the list_changed it sends.
//   - Sampling, elicitation: a child's input_required result is passed
//     through unchanged (the SDK turns it into real requests for a legacy
//     client); a legacy child's own sampling/elicitation request is sent to
//     the client as a request, which a legacy client answers. Progress
//     notifications keep their tokens; a canceled call cancels the child's;
//     log messages keep their level and are named "NAME" or "NAME/logger".
//   - Children's instructions are combined under each server's name, for
//     the servers up when the client connects.
//   - Management tools, always listed: add_server (unless
//     Config.DisableAddServer; AllowedCommands restricts it), remove_server,
//     reload_server, list_servers, and Config.CallTool when set.
//   - A child that exits on its own: status crashed, its tools, prompts and
//     resources removed (list_changed), calls pending on it answered once
//     with the crash report; calls to it, to removed and to unknown servers
//     get a tool error naming the servers that exist.
//   - Config.Single serves one server as if it were that server (no
//     prefix, no management tools, a rebuild tool): cmd's era bridge for
//     a single-server session whose child refuses the legacy handshake.
//   - Every call takes one path: the front server's handler, the mux's
//     MCP client toward the child's relay. A 2026-07-28 child is told the
//     client's own capabilities (its input_required requests reach the
//     client as they are), under the mux's session otherwise.
//   - The client is served through the transport Run is given; mcpflow
//     serves its stdio through wire.Transport (bad lines answered, ids
//     kept exactly, batches). The mux's client reaches each relay over two
//     pipes, framed by wire.Reader on both ends.
//   - Many clients: Serve hands the front server to a Front (mcpflow's
//     Streamable HTTP front, internal/httpmcp), which connects a session
//     per client; this package knows it only through that interface. The
//     front server lives as long as the mux, so sessions outlive every
//     child's restart; list_changed and resources/updated go to every
//     session (the SDK's). What a child sends the client goes to one
//     session: a sampling or elicitation request, a log message, a
//     progress notification reach the session whose call to that server
//     is in flight (the newest, or one answered less than 2 s ago), sent
//     with that call's context so that an HTTP front puts it on the call's
//     stream; else the most recently active session that opened with
//     initialize, else the most recently active one. A client's progress
//     token is replaced by one of the mux's own toward the child (two
//     sessions may use the same token) and restored on the way back.
//     Roots: the children are given the roots of the session that most
//     recently said them (initialized, or roots list_changed); when it
//     ends, those of the most recently active session that has roots.
//     Sessions lists the sessions for status.
//   - Every request gets exactly one response. Close (and the end of Run)
//     stops every backend and waits for it: no child, no process group
//     survives the mux.
//
// # Parts
//
// Mux owns the lifecycle and the registry of servers (add, remove, the
// per-server worker that applies backend events and re-lists after
// list_changed); Mux.mu guards the registry, each server's state and the
// catalog. The rest is split by job:
//   - catalog (catalog.go): what the front server lists and who owns it;
//   - front (route.go): the client's requests, routed to the children;
//   - childSide (route.go): a child's requests and notifications, passed
//     to the client;
//   - admin (tools.go): the management tools;
//   - server: a server's spec and session, with its health, its own lists,
//     what the catalog published of it, and the inbox its backend's events
//     wait in.
package mux
