// Package relay is the engine of one MCP server: each client session has
// a child of its own — a process of a stdio server, an HTTP session on the
// one process of an HTTP server — that can be rebuilt and restarted while
// the client's session goes on.
//
// # Contract
//
//   - A client's session (Open: a Session, a wire.Session) is served by its
//     own child and nothing else: what one client sends never reaches
//     another's child, and what a child sends reaches only its client.
//     Nothing is renamed between clients; a stdio server runs at most
//     Config.MaxChildren processes, one per session.
//   - Every client request gets exactly one response: the child's, or one
//     mcpflow makes (restart, crash, queue overflow, its own tools),
//     carrying the client's id exactly. An id a peer might not echo byte
//     for byte (1.5, 2^53+1, escapes, mcpflow's own namespace) reaches the
//     child as one of the relay's ("mcpflow:r<n>"), and comes back as the
//     client's.
//   - Messages pass as the original bytes; the relay reads only envelopes
//     (wire.Peek) and rewrites only: initialize and server/discover results
//     (listChanged forced, Config.ServerSuffix), the last page of
//     tools/list (its own tools added), tools/call results that carry a
//     notice, the child's requests to the client (renumbered "mcpflow:s<n>"
//     so that a late answer never reaches a successor), and listen ids or
//     subscription ids that it renamed. A message that names a member it
//     acts on twice, or in another case, is refused.
//   - Lines up to Config.MaxMessage pass both ways; a longer one is dropped
//     unread and the request it answers gets an error. Nothing that is not
//     JSON-RPC reaches the client.
//   - A client is told its lists changed (in its era's way,
//     wire.State.ListChanged) whenever what it would list changes, compared
//     by content: a new child with other lists, its child gone, back.
//   - Every child runs in its own process group; stopping it (close stdin,
//     StopTimeout, SIGTERM to the group, StopTimeout, SIGKILL) and any exit
//     leave none of its processes behind.
//
// # Sessions and restarts
//
// A Session keeps its client's wire.State (the era, the handshake, the
// log level, subscriptions, listens, the requests in flight). Restart
// (the builder's, after a good build) holds every session's messages,
// lets the calls in flight on the old children finish (Config.Drain),
// replaces each session's child, replays the session into it (the
// initialize, whose answer is compared with the last one; initialized,
// level, subscriptions; the listens, whose acknowledgements are dropped),
// reads its lists, tells the client what changed and sends on what was
// held. It reports, for the session whose recompile asked (else the most
// recently active one), the timings, the tool diff against what that
// client last listed, and how the handshake changed.
//
// Before the first good build a session's messages wait, answered from the
// record of the server's last good start (First.Record) when it has the
// answer and was written for the sources now (First.Sources), until the
// client's own wait (ClientWait; mcpflow tools and call: First.OneShot)
// passes; then a record of other sources answers what it can, mcpflow
// the rest, saying why, and the first start replays the session. A
// child that exits before it answered, or before its start completed, is a
// failed start: reported, not restarted. A child that crashes later is
// restarted after a backoff (relay.on_crash = "restart") until three quick
// crashes in a row (a crash loop); after a failed build the files on disk
// are not started by the relay itself. Each state has one wording, in
// package texts.
//
// Eras: a session's era is its client's (wire.State). When the child
// refuses the client's first initialize, or does not speak the 2026-07-28
// era of a client mcpflow answered for, the session is handed to the era
// bridge (Config.Bridge), itself a client of the relay in the child's era;
// when initialize follows a server/discover its child answered, the
// session gets a fresh child (Go SDK servers refuse that sequence).
//
// # Embedding
//
// New(Config); Open per client (a wire.Opener: wire.Serve for stdio, the
// HTTP front, the mux's sessions, control's); Restart after each good
// build (the builder's Restarter); NoteBuild with every build's result;
// Config.Recompiler for the recompile tool; Config.OnEvent for what
// happens to the children (Starting, Up, RestartFailed, Crashed: in
// order, from a goroutine holding no relay lock);
// Config.Traffic for every message between a session and its child; Stats
// for mcpflow status; Close to stop everything.
//
// # Locks and queues
//
// Relay.restarts (one restart at a time) > Session.mu > Relay.mu > leaf
// locks (the outboxes', the record's and the like); no
// session's lock is taken under Relay.mu. No callback (a client's Deliver,
// OnEvent, Traffic) and no file write runs under Session.mu or Relay.mu.
// Every queue toward a peer is bounded: a session's hold queue
// (Config.Queue), its outbox to the client and a stdio child's stdin
// (wire.Outbox).
package relay
