// Package wire is mcpflow's message seam: how JSON-RPC is framed, read,
// queued and handed between the fronts, the serving sides and the
// children, in every mode.
//
//   - Framing: Reader is the only framer of newline-delimited messages
//     (MCP's stdio transport), with one size limit and one check (one JSON
//     value in valid UTF-8, jsonscan.Valid) and one way of reporting a bad
//     line (TooLargeError, InvalidError, answered as Refusal says) after
//     which reading goes on. A long message from a server is handed on as
//     a stub, its long strings left in a Spool file; WriteMsg, the one way
//     a message goes to a peer, copies them from there (spool.go). Serve
//     is the front on a byte stream: it splits
//     a batch and answers it with one array, and answers what is left
//     unanswered when the client goes.
//   - Peek reads a message's envelope without decoding the rest, and
//     refuses to read an ambiguous one (a member named twice or in another
//     case: -32600); ErrorResponse, ResultResponse, Request and Splice
//     build and rewrite messages as bytes; the error codes and texts are
//     here.
//   - The seams (session.go): Opener, Session and Client between a front
//     and what serves a client; Link and LinkReceiver to a child.
//   - State is the one model of a client's session, given to a new serving
//     side by its Replay; Outbox is the one bounded queue toward a peer.
//   - FanIn shares one session among session-less 2026-07-28 clients under
//     ids of its own ("mcpflow:" ones, ReservedPrefix); Swap moves sessions
//     to another serving side on a live config edit.
//   - SDKServer and SessionTransport put a Go SDK peer on these seams,
//     keeping every request id exactly as the other side wrote it.
//   - IsModern tells the protocol eras apart; the _meta keys are the SDK's
//     (mcp.MetaKey*).
package wire
