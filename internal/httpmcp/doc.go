// Package httpmcp is mcpflow's Streamable HTTP: both halves of it, each
// built on the Go SDK's transport (github.com/modelcontextprotocol/go-sdk),
// so that no HTTP framing is written here by hand.
//
// The child half (child.go) is a relay.Link for a server that serves
// Streamable HTTP ([run] url): the relay starts the command as it starts
// any child, and the link, rather than the child's stdin and stdout,
// carries its messages. The link reads the relay's newline-delimited
// messages with the one framer (wire.Reader), sends each with the SDK's
// StreamableClientTransport connection, and writes each message the
// server sends as one line back. It waits until the URL answers before
// the first message goes out (bounded); a call's POST does not hold up
// the messages behind it; the server's session id stays inside the link,
// so each new child gets a session of its own while the client keeps its
// one. With "{port}" in the URL each start gets a free port (PORT in its
// environment), so the relay may start the next child while the calls of
// the old one drain (relay.Overlapper); with a fixed port the old child
// is gone before the next starts. The child's stdout and stderr both go
// to the log: an HTTP server's stdout is not protocol.
//
// The SDK's client connection opens the legacy era's standalone GET
// stream only for an mcp.ClientSession, never for a raw Connection. The
// link therefore opens that stream itself after a legacy handshake: a GET
// with the session id and the negotiated version, read as server-sent
// events, so that what the server sends outside any request (its own
// list_changed, logs, requests to the client) reaches the relay. In the
// 2026-07-28 era there is no such stream: the server speaks on the
// subscriptions/listen request's response, which the SDK carries.
//
// The front half (front*.go) serves Streamable HTTP to clients in front
// of whatever mcpflow runs.
package httpmcp
