// Package wire is how mcpflow reads and writes JSON-RPC on a byte stream,
// MCP's stdio transport: newline-delimited messages, one per line.
//
// It is the one core that every mode shares:
//   - Reader is the only framer: every stream, from a client or from a
//     child, in every mode, is read by one, with one size limit and one
//     check (one JSON value in valid UTF-8, jsonscan.Valid), and one way
//     of reporting a bad line (TooLargeError, InvalidError) after which
//     reading goes on.
//   - Peek reads a message's envelope (id, method, params, result) without
//     decoding the rest; ErrorResponse, ResultResponse, Request and Splice
//     build and rewrite messages as bytes; the error codes and the texts of
//     a bad line's answer are here.
//   - Serve answers a client's JSON-RPC batch with one array.
//   - Transport puts a Go SDK peer on a Reader and a writer, answering what
//     the SDK's own stdio connection would end the session on and keeping
//     every request id exactly as the peer wrote it.
//   - modernVersion and IsModern tell the protocol eras apart; the _meta
//     keys are the SDK's (mcp.MetaKey*).
package wire
