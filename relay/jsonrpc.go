package relay

import (
	"encoding/json"
)

// JSON-RPC error codes the relay answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInternalError  = -32603

	// codeServerRestarted: the child was replaced before it answered.
	codeServerRestarted = -32001
	// codeServerDown: no child is running (build failure or crash).
	codeServerDown = -32002
	// codeQueueFull: the message could not be held during a restart.
	codeQueueFull = -32003
)

// reservedPrefix starts every id the relay invents, in both directions.
// Client requests whose string id starts with it are refused, so relay ids
// can never collide with the client's.
const reservedPrefix = `"mcpflow:`

var nullID = []byte("null")

// errorResponse builds a JSON-RPC error response. data may be nil.
func errorResponse(id []byte, code int, message string, data any) []byte {
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

// resultResponse builds a JSON-RPC result response from raw JSON.
func resultResponse(id []byte, result []byte) []byte {
	return response(id, "result", result)
}

func response(id []byte, field string, body []byte) []byte {
	b := make([]byte, 0, len(body)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = append(b, body...)
	b = append(b, '}')
	return b
}

// request builds a JSON-RPC request or, with a nil id, a notification.
func request(id []byte, method string, params []byte) []byte {
	b := make([]byte, 0, len(params)+len(method)+64)
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id != nil {
		b = append(b, `"id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = append(b, mustJSON(method)...)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	b = append(b, '}')
	return b
}

// splice returns msg with msg[start:end] replaced by repl, in a new slice.
func splice(msg []byte, start, end int, repl []byte) []byte {
	out := make([]byte, 0, len(msg)-(end-start)+len(repl))
	out = append(out, msg[:start]...)
	out = append(out, repl...)
	return append(out, msg[end:]...)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with values that always marshal
	}
	return b
}
