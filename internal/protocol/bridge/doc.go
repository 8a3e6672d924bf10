// Package bridge is the era bridge: it serves one client whose protocol
// era the child server does not speak (a legacy client in front of a
// child that refuses initialize; a 2026-07-28 client in front of a child
// that speaks only the legacy revisions). It is relay.Config.Bridge:
// Options.New takes the relay as upstream, a wire.Opener whose sessions
// are clients of the relay in the child's era, and the client's
// wire.Client, and returns the client's wire.Session.
//
// It is one of the two places where the Go SDK terminates the protocol
// (mcpflow's own answers are the other): an mcp.Server faces the client,
// in the client's era (the SDK server negotiates it), and an mcp.Client
// faces the relay through wire.SessionTransport, in the child's era (the
// SDK client tries server/discover, then falls back to initialize).
//
// # Contract
//
// Opening:
//   - Send never waits on the upstream. The client's first messages (its
//     initialize, or its first requests and listen streams) are held, in
//     order, while the bridge's client opens its session with the upstream
//     (its handshake, then the first listing of the child's tools, prompts,
//     resources and templates), bounded by Options.Handshake (30 s by
//     default, relay.DefaultHandshake). Then the SDK server is made and
//     connected to the client (wire.SDKServer) and the held messages go to
//     it in order. Should the handshake fail or time out, every request
//     held and every later one is answered with an error (CodeServerDown)
//     that names the reason; notifications and answers are dropped.
//   - The bridge's client presents itself as the client: its clientInfo is
//     the client's (initialize's clientInfo, or the first request's _meta),
//     and it declares the client's sampling, elicitation and roots
//     capabilities, as the client declared them in initialize. For a
//     2026-07-28 client it declares none of them: that client cannot be
//     sent requests (see below), so the child is not told it can.
//
// What the client sees of the child:
//   - The server presents the child as itself: serverInfo and instructions
//     are the child's (from the bridge client's handshake result, as the
//     relay passed it on). Capabilities: tools, prompts and resources with
//     listChanged, resources/subscribe when the child has it, logging,
//     completions.
//   - Tools, prompts, resources and resource templates are the child's,
//     every page of them, listed again whenever the child says a list
//     changed; what is gone is removed, and the client hears list_changed
//     only when something did change. A tool whose definition the SDK
//     refuses (an input schema that is not an object) is left out and
//     logged. A call to a tool the bridge does not list yet (the child
//     added it a moment ago) lists the tools again before it is answered.
//   - tools/call, prompts/get, resources/read, completion/complete and
//     resources/subscribe/unsubscribe (when the child has subscriptions)
//     are forwarded by name, arguments raw. Results come back as the
//     child's (content, structuredContent, isError, _meta), with the
//     resultType of the client's era (the SDK server sets it for a
//     2026-07-28 client; a legacy client never gets it). A protocol error
//     of the child's (or the relay's) is passed on with its code; a call the
//     bridge cannot carry any more gets a tool error (tools/call) or a
//     CodeServerDown error.
//   - The log level: logging/setLevel of a legacy client is forwarded to a
//     legacy child, and becomes the _meta log level of every forwarded
//     request to a 2026-07-28 child; the _meta log level of a 2026-07-28
//     client's request becomes a logging/setLevel to a legacy child
//     whenever it changes.
//   - The _meta keys by which a 2026-07-28 peer describes its session
//     (protocol version, client info and capabilities, log level) are not
//     forwarded: the bridge's client sets its own, for the child's era.
//
// What the child sends its client (whatever its era):
//   - Progress notifications and log messages go to the client as the
//     child wrote them, before the answer they precede (they are taken off
//     the upstream before the SDK client sees them: its handlers run
//     asynchronously and could let an answer overtake them, and an SDK
//     server session drops log messages when the client set no level).
//     The client's own progress token comes back, since the bridge
//     forwards it. rel is the client's request the token belongs to; for a
//     log message, the client's newest request in flight.
//   - A 2026-07-28 child's input_required results (sampling, elicitation,
//     roots) pass through the bridge's client untouched (its multi-round-
//     trip handling is disabled): to a 2026-07-28 client as they are, and
//     for a legacy client the SDK server fulfils them with real requests
//     to the client and calls the child again with the answers.
//   - A legacy child's sampling and elicitation requests are forwarded to
//     a legacy client through the server session; its roots/list is
//     answered from the client's roots, which the bridge asks the client
//     for once it is initialized and again on its roots list_changed (the
//     child hears roots list_changed when they change). A 2026-07-28
//     client cannot be sent requests (the SDK server refuses, and that era
//     has no such requests): such a request of the child's is answered with
//     an error, and the bridge's client never declared the capability.
//   - resources/updated notifications reach the client's subscriptions
//     through the SDK server; elicitation-complete notifications are
//     passed on.
//
// Closing:
//   - Close cancels what the bridge has in flight, closes the server's
//     session with the client and the bridge client's session with the
//     upstream, and waits for every goroutine of the bridge; each step is
//     bounded. Nothing is delivered to the client once Close returns, but
//     for a delivery already under way that the client does not take
//     within two seconds (Close does not wait longer, as relay.Port.Close).
//   - What goes to the client is queued and delivered in order by a
//     goroutine of the bridge's: neither the bridge nor the SDK's peers
//     wait on a slow client (so there is no back-pressure toward the
//     child), and the client's Deliver is never called with a lock of the
//     bridge's held.
//   - The messages held while the upstream session opens are bounded
//     (1024): a request past the bound is answered with CodeQueueFull.
package bridge
