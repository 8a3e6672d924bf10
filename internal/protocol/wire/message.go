package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC error codes mcpflow answers with: the standard ones are the
// SDK's; the others are mcpflow's own, in the range JSON-RPC leaves to
// servers.
const (
	CodeParseError     = jsonrpc.CodeParseError
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound = jsonrpc.CodeMethodNotFound
	CodeInternalError  = jsonrpc.CodeInternalError
	CodeInvalidParams  = jsonrpc.CodeInvalidParams

	// CodeServerRestarted: the child was replaced before it answered.
	CodeServerRestarted = -32001
	// CodeServerDown: no child is running (a failed build, a crash).
	CodeServerDown = -32002
	// CodeQueueFull: the message could not be held during a restart.
	CodeQueueFull = -32003
)

// The texts of the errors a bad line gets, in every mode.
const (
	TextBadJSON    = "Parse error: message is not valid JSON"
	TextBadUTF8    = "Parse error: message is not valid UTF-8"
	TextNotAnRPC   = "Invalid Request: a message must be a JSON-RPC object (request, notification or response)"
	TextEmptyBatch = "Invalid Request: an empty batch"
)

// TextTooLarge is the error a message over the limit gets.
func TextTooLarge(size, max int) string {
	return fmt.Sprintf("mcpflow: message of %d bytes exceeds the %d-byte limit (relay.max_message in mcpflow.toml); it was not forwarded", size, max)
}

var nullID = []byte("null")

// ErrorResponse builds a JSON-RPC error response to id (raw JSON; nil
// means null). data may be nil.
func ErrorResponse(id []byte, code int, message string, data any) []byte {
	if id == nil {
		id = nullID
	}
	e := map[string]any{"code": code, "message": message}
	if data != nil {
		e["data"] = data
	}
	eb, _ := json.Marshal(e)
	return response(id, "error", eb)
}

// ResultResponse builds a JSON-RPC result response from raw JSON.
func ResultResponse(id []byte, result []byte) []byte {
	return response(id, "result", result)
}

// Complete marks result, a JSON object mcpflow answers with, complete for
// a 2026-07-28 client, unless it names its resultType.
func Complete(result []byte, modern bool) []byte {
	if !modern || len(result) < 2 || result[0] != '{' || jsonscan.Member(result, "resultType") != nil {
		return result
	}
	if len(bytes.TrimSpace(result[1:])) == 1 {
		return []byte(`{"resultType":"complete"}`)
	}
	return append([]byte(`{"resultType":"complete",`), result[1:]...)
}

func response(id []byte, field string, body []byte) []byte {
	return slices.Concat([]byte(`{"jsonrpc":"2.0","id":`), id, []byte(`,"`+field+`":`), body, []byte{'}'})
}

// Request builds a JSON-RPC request or, with a nil id, a notification.
func Request(id []byte, method string, params []byte) []byte {
	b := make([]byte, 0, len(params)+len(method)+64)
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id != nil {
		b = append(b, `"id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	m, _ := json.Marshal(method)
	b = append(b, m...)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	b = append(b, '}')
	return b
}

// Splice returns msg with msg[start:end] replaced by repl, in a new slice.
func Splice(msg []byte, start, end int, repl []byte) []byte {
	return slices.Concat(msg[:start], repl, msg[end:])
}

// modernVersion is the first protocol revision of the modern era
// (2026-07-28): no initialize, and every request carries its session in
// _meta. The _meta keys themselves are the SDK's (mcp.MetaKey*).
const modernVersion = "2026-07-28"

// IsModern reports whether a protocol version belongs to the modern era.
func IsModern(version string) bool { return version >= modernVersion }
