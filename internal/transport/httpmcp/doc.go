// Package httpmcp is mcpflow's Streamable HTTP, both halves of it, on
// mcpflow's own framing: messages pass as the bytes they are, checked by
// the one validator (jsonscan.Valid) and read by their envelope
// (wire.Peek), never decoded and encoded again.
//
// Why not the Go SDK's transports, which serve and speak Streamable HTTP
// well: they decode every message into a jsonrpc.Message and encode it
// again (an id written 1.5 comes back as 1, 2^53+1 as 2^53, what the
// SDK's types do not hold is lost); the server side refuses a method not
// in the SDK's table, and puts a message on the stream of the request it
// belongs to only from inside the SDK's own ServerSession, while
// mcpflow's serving side is a wire.Session that names the request (rel);
// the client side hands every message, from whichever stream, to one
// channel, and fails the whole connection for good on an error status
// without a JSON-RPC error (a TypeScript server's 400 to logging/setLevel
// once made mcpflow restart a healthy server). The SDK's streamable.go
// stays the reference for status codes, headers and edge cases, and its
// client is what the tests speak to the front with.
//
// # The front
//
// Front (front.go, front_post.go, front_session.go) serves clients at
// /mcp (any other path: 404): Listen binds at once, Serve serves the
// sessions of a wire.Opener, one wire.Session per client session, until
// its context ends, then closes every session and stream and returns
// within ShutdownTimeout. Only the user that runs mcpflow is served (on
// Linux each connection's peer socket must be that user's:
// front_owner.go), unless a Token is set, which every request must then
// carry (401). Origin and Host are checked next (403: a web page's
// origin, or DNS rebinding; no Origin passes). Two eras share /mcp:
//
//   - Legacy (no MCP-Protocol-Version, or one before 2026-07-28, or a
//     session id): initialize opens a session and its answer carries the
//     id (Mcp-Session-Id); the client's other requests name it (none:
//     400; unknown, expired or deleted: 404). A POST of notifications and
//     answers gets 202; a POST with requests is answered as server-sent
//     events (or one JSON body when the client takes no events), ending
//     once each of its requests is answered, and the messages the session
//     delivers for one of them (rel) go on it before the answer. What
//     belongs to no open POST goes on the session's GET stream (one at a
//     time: 409), and waits for one, bounded, while none is open. DELETE
//     closes the session; one without requests or open streams expires
//     after IdleTimeout. Batches are split, and answered with one array,
//     before protocol 2025-06-18.
//   - 2026-07-28 (MCP-Protocol-Version 2026-07-28 or later, no session
//     id): every POST is a session of its own, and they all reach the
//     serving side through one session (wire.FanIn: ids, progress tokens
//     and listen ids renamed, nothing of one POST's reaching another):
//     the related messages and the answer go on the POST's response; a
//     subscriptions/listen holds its POST open until the client leaves.
//     The headers are checked as the SDK checks them (headers.go: the
//     version against _meta, Mcp-Method, Mcp-Name, and the Mcp-Param-
//     headers of the arguments a tool's input schema marks x-mcp-header,
//     as the tools/list answers the front carried declared them: 400 with
//     -32020 or -32602); an error answer -32601 goes out as HTTP 404 and
//     -32602, -32021, -32022 as 400 (SEP-2575). GET and DELETE are 405.
//
// Every request of a client is answered exactly once, with its id as the
// client wrote it: by the session, or by the front when the message is no
// message (-32700 for a body that is not JSON in UTF-8, -32600 for one
// that is no JSON-RPC message, has no method or an id that is no string
// or number, reuses the id of a request in flight, or takes an id of
// mcpflow's own, wire.ReservedPrefix), or when mcpflow stops first
// (wire.TextShuttingDown). Delivering never waits for a client: a session
// whose client stays behind its bounded queue for StallTimeout is closed,
// with a warning that names it. FrontConfig bounds the rest (header and
// body read times, connections, sessions, message size), and its Traffic
// sees every message both ways with its session id ("" session-less).
//
// # The child
//
// Link (child.go, child_exchange.go) is the relay's wire.Link to a child
// that serves Streamable HTTP. Child.Prepare sends the process's stdout
// and stderr to logs (an HTTP server's stdout is not protocol) and, for a
// URL with the placeholder, picks a free port (PORT in its environment);
// Child.Ready waits, bounded by Child.Wait, until the URL answers at all;
// Child.Link makes the link of one client session.
//
// Each request is POSTed as the bytes it is, on a goroutine of its own;
// the next message goes out once it was written, except after an
// initialize, whose answer comes first (the session id, the version).
// Notifications and answers are POSTed in order, their 202 awaited
// (bounded); any other answer to one is logged. Each POST carries its
// era's headers (headers.go): legacy, the session id and the version
// initialize negotiated; 2026-07-28, the request's _meta version,
// Mcp-Method, Mcp-Name and the Mcp-Param- headers its tool declares.
//
// Each message that comes back, in a JSON body (an array is split) or on
// the request's event stream (sse.go), is checked as the one framer
// checks a line: over Child.MaxMessage it is dropped unread (TooLarge; a
// request's stream is not read past such an event), not JSON in UTF-8 or
// no JSON-RPC object it is Junk. It is handed on, one receiver call at a
// time, with the id of the request whose stream carried it (rel; a
// response with rel nil), so that the relay gives a log, progress or a
// sampling request to the client whose call it belongs to. A stream that
// ends before the answer is resumed (GET with Last-Event-ID, bounded)
// when its events had ids. After a legacy initialize the link opens and
// keeps up the session's GET stream (rel nil); 2026-07-28 has none, and a
// subscriptions/listen's stream stays open (rel: the listen's id).
//
// A child's HTTP answer is not a crash. An error status answers the
// request that got it: the server's JSON-RPC answer as written when the
// body is one for the request's id, the server's error under the
// request's id when it wrote it under another (null), else a -32603 error
// naming the status and the body's start; the link goes on. Until the
// server first answered a request, the link answers a ping itself (the
// TypeScript SDK's 1.x servers refuse anything before their handshake); a
// server/discover refused at the HTTP level gets -32601 (the server
// speaks the legacy handshake). Only a lost session ends the link: a 404
// to a message that carried the session id (unless its body is the
// request's own answer), or to the GET stream, is checked with a ping of
// the link's own, and when that gets a 404 too the link ends (Lost) and
// the relay answers with the report of the lost session. An exchange cut
// without its answer waits failGrace for the process to be seen dead (the
// relay's crash report is the better answer) before the link answers it
// with the cut. Close sends what is queued (bounded), then cancels every
// exchange in flight (no DELETE: the process is being stopped).
package httpmcp
