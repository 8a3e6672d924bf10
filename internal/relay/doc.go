// Package relay is the engine of one MCP server: it carries JSON-RPC
// between its clients and a succession of child MCP servers, so that the
// child can be rebuilt and restarted while every client's session goes
// on.
//
// Each client is a Port (a wire.Session): the one client of a stdio front
// (Serve), each session of an HTTP front (Open), a mux session's part on
// this server. The ports share the one session the relay holds with the
// child: the first client's initialize opens it and is replayed into each
// new child; a later client's initialize is answered from it; every
// client's logging level, subscriptions and listen streams go into it.
//
// # Contract
//
//   - Every client request gets exactly one response: the child's, or one
//     the relay makes (restart, crash, queue overflow, the relay's own
//     tools), carrying the client's id exactly. A response is never
//     delivered twice, nor to another client.
//   - What the child sends a client reaches the client whose request it
//     belongs to: the request whose exchange carried it (an HTTP child),
//     the one its progress token or listen id names, else the request
//     most recently sent to the child; what belongs to no request (a
//     list_changed, a log outside any call) reaches every client.
//   - Messages are forwarded as the original bytes. The relay reads only
//     the envelope (id, method, result/error) with a scanner that skips
//     values it does not need, and rewrites only: initialize and
//     server/discover results (listChanged forced, Config.ServerSuffix
//     appended to serverInfo), the last page of
//     tools/list (its own tools appended), ids, progress tokens and listen
//     ids of clients that share the child (renamed toward it, restored on
//     the way back), subscription acknowledgements, and tools/call results
//     that carry a notice.
//   - Lines up to Config.MaxMessage are accepted in both directions; a
//     longer one is dropped without being buffered whole, and the request
//     it belongs to is answered with an error under its own id.
//   - Nothing that is not JSON-RPC reaches the client's stdout: every line
//     the child writes is checked to be valid JSON in valid UTF-8 (and a
//     JSON-RPC message) before it is forwarded; a line that is not is
//     logged and dropped, and a request it seems to answer gets an error.
//     Nothing a peer sends stops the relay.
//   - The client is sent list_changed (tools, prompts, resources) whenever
//     the list it would get changes, compared by content: a new child
//     with different lists, the child gone (only the relay's tools left),
//     the child back; never after a restart that changed nothing.
//   - The child runs in its own process group; stopping it (close stdin,
//     StopTimeout, SIGTERM to the group, StopTimeout, SIGKILL) and any exit
//     of it leave no process of the group alive. On Linux the child also
//     gets SIGKILL should mcpflow die without cleaning up.
//
// # Ids
//
// Every id the relay invents is a string starting with "mcpflow:"; a
// client whose ids reach the child as they are (PortOptions.KeepIDs: the
// one client of a stdio front) may not use them, but for "mcpflow:m…",
// the namespace of an embedder's own requests (the mux's), so they can
// never collide. Other clients' ids are always renamed toward the child. Requests
// the child sends to the client are renumbered ("mcpflow:s<gen>-<n>") and
// mapped back on the answer only if the child that asked is still the
// current one: a late answer meant for a replaced child is dropped, never
// handed to its successor, even when the child-side ids coincide.
//
// The client's answer carries its id exactly as the client wrote it. A
// client id that not every peer echoes back byte for byte (a fraction, an
// integer a float64 does not hold, a string with escapes or with
// characters an encoder escapes) reaches the child as one of the relay's
// ("mcpflow:c<n>"); the answer gets the client's back, and a cancel naming
// it is mapped the same way. A request whose id is not a string or a
// number gets -32600 and is never forwarded.
//
// # Eras
//
// The era is decided by the first client message that decides it:
// initialize means legacy; a request (other than server/discover) whose
// _meta carries protocolVersion >= 2026-07-28 means modern. In the legacy
// era a new child is given the cached initialize (under a relay id, result
// consumed), notifications/initialized, the last logging/setLevel and the
// live resources/subscribe requests. In the modern era, the open
// subscriptions/listen requests are sent again with their own ids and the
// new child's acknowledgements are consumed; list_changed goes to each
// listen that opted in, tagged with its subscription id. When initialize
// follows a server/discover that a child answered, the relay starts a fresh
// child for it, since Go SDK servers refuse that sequence.
//
// # Starts, crashes and builds
//
// A restart first lets the calls in flight on the old child finish, for
// up to Config.Drain, while new messages are held for the new child;
// what still runs then gets the restart error. A restart is done when the new child answered a request: the replayed
// handshake, the client's own held handshake, or a ping of the relay's.
// A child that exits before that, or before its restart completed, is a
// failed start: reported once (the agent reads the exit status and the
// end of its stderr), never restarted automatically; the relay waits for
// the next build or recompile. A child that crashes later is restarted
// after a backoff (relay.on_crash = "restart"), until it crashes soon
// after starting three times in a row (a crash loop). After a failed
// build the relay never starts the files on disk by itself: a crash then
// leaves it down, saying that the last build failed. Each state (first
// build running, build failed, failed start, crashed, crash loop) has one
// wording, in package texts, which holds every text the agent can receive.
// Notices on tool results are kept one per kind, withdrawn when no longer
// true, and say what mcpflow already did.
//
// The recompile result's tool diff is against the tools the client last
// fetched with tools/list (or, if it never did, the previous child's), so
// a client that ignores list_changed still learns of new tools; it always
// names the current tools.
//
// At debug level the log has one line per message read from either peer:
// where from, its method or id, its size and, for a response, the
// latency.
//
// # Embedding
//
// A program that embeds the relay (mcpflow watch, the mux) uses:
//   - New(Config); Serve(ctx, in, out) for one client on a byte stream
//     (wire.Serve, then Close); Open (a wire.Opener: a port per client,
//     through the era bridge when Config.Bridge is set) or Connect with
//     PortOptions for any other front; Close to stop.
//   - Restart(ctx): start or replace the child; it returns a
//     *result.Restart (timings, tool diff, handshake differences, error).
//   - Config.Recompiler (or SetRecompiler): what the recompile tool runs;
//     *builder.Builder satisfies it. NoteBuild(result.Build) must receive
//     every build's result (the builder's OnResult): the relay needs to
//     know that the last build failed.
//   - Config.OnEvent: Starting, Up, RestartFailed, Crashed, BuildFailed and
//     Stopped, delivered in order from one goroutine of the relay that
//     holds no relay lock.
//   - Config.Traffic: every message as read from either peer, called on
//     the hot path with no lock held; the callee must not keep msg (nor
//     write to it) after it returns. Nil costs nothing.
//   - Config.Bridge: the era bridge (internal/protocol/bridge). A client whose era
//     the child does not speak (it refuses the client's first initialize;
//     it does not speak 2026-07-28 when the relay answered the client's
//     server/discover, or asked it before a 2026-07-28 client's first
//     request) is handed over, with what the relay held, to a session of
//     the bridge, itself a client of the relay in the child's era.
//   - Lists(ctx, meta): what the child lists, for the mux's catalog.
//   - Config.Logger: a *slog.Logger (nil discards).
//
// # Parts
//
// Relay is the shell: it owns the pipes, the children and the goroutines,
// and runs restarts (serialized by restarts.mu, which also guards the tool
// baseline; restartRun holds a restart's phases). The switchboard routes messages: it holds the routing lock
// and everything that lock guards, as parts with no lock of their own:
//   - router (router.go): client ids in flight, renumbered server→client
//     ids, the relay's own requests, and the drain of a child being
//     replaced; cancellations go through it;
//   - holdQueue (hold.go): messages held while no child can take them;
//   - session (session.go): the era, the legacy handshake state and the
//     modern listen streams, with the era-specific behaviour in the
//     legacyEra and modernEra strategies;
//   - toolset (tools.go): the relay's own tools spliced into tools/list,
//     the notices, the recompile tool's env overrides; diffTools makes the
//     tool diff;
//   - clientView (lists.go): what the client is served (a digest per
//     list kind) and the tools it last fetched; it decides which lists
//     changed for the client;
//   - health (health.go): why no child serves, the first build still
//     running, the last build failed, and the crashPolicy (crash.go):
//     restart with backoff, or stop on a crash loop.
//
// Other parts: Port (port.go: a client's session and its outbox), child
// (child.go: one process, started and stopped through internal/proc, its
// messages through a wire.Link: link.go's stdio link by default, its
// stderr's tail in an internal/proc/tail buffer), outbox (outbox.go: ordered,
// bounded writes to one peer), eventQueue (events.go). The framing, the
// envelope, the message builders, the error codes and the client's
// batches are package wire's, shared with every mode; every text the agent
// reads is package texts'. Lock order: restarts, then switchboard.mu, then
// the outboxes' and eventQueue's own. No client's Deliver runs under
// switchboard.mu.
//
// # Writing
//
// Writes to each peer go through an outbox, so no relay lock is held
// across a write that could block on a peer (a child blocked writing a
// large result while the relay waits to write its stdin would otherwise
// deadlock). On the hot path the goroutine that read a message writes it
// itself once the lock is released; the outbox's own goroutine writes what
// other goroutines send.
//
// Messages are stored and forwarded whole, not streamed: the relay must see
// a whole line to enforce MaxMessage, to know it is JSON-RPC, and to answer
// a request with an error instead of handing the client a truncated line
// when the child dies mid-message. Both peers' streams are read by
// wire.Reader (one JSON and UTF-8 check per line, jsonscan.Valid); a large
// message costs about twice its size while it is read, then its size until
// it is written. On Linux the pipes are grown to 1 MiB.
//
// The relay defines Recompiler, which the builder satisfies; the builder
// calls back Restart through its Restarter interface. Neither package
// imports the other: they share only internal/report/result.
package relay
