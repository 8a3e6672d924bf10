package fastlane

import (
	"errors"
	"strconv"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lane reads only the top level of what it looks at (jsonscan), never
// the arguments of a call: values it keeps are spans of the message.

// request reads a request or notification from msg, one valid JSON object:
// its id, method and raw params. It reports false for anything else (a
// response, a bad id or version), which the server then answers.
func request(msg []byte) (*jsonrpc.Request, bool) {
	var req jsonrpc.Request
	var id []byte
	version := false
	err := jsonscan.Members(msg, 0, func(key []byte, vs, ve int) error {
		v := msg[vs:ve]
		switch string(key) {
		case "jsonrpc":
			version = string(v) == `"2.0"`
		case "id":
			id = v
		case "method":
			if v[0] != '"' {
				return errNotRequest
			}
			switch string(v) { // the methods the lane looks for, without a copy
			case `"tools/call"`:
				req.Method = "tools/call"
			case `"tools/list"`:
				req.Method = "tools/list"
			case `"notifications/cancelled"`:
				req.Method = "notifications/cancelled"
			default:
				m, err := jsonscan.Unquote(v)
				req.Method = m
				return err
			}
		case "params":
			req.Params = v
		}
		return nil
	})
	if err != nil || !version || req.Method == "" {
		return nil, false
	}
	if id != nil {
		var ok bool
		if req.ID, ok = parseID(id); !ok {
			return nil, false
		}
	}
	return &req, true
}

var errNotRequest = errors.New("not a request the lane takes")

// parseID reads a JSON-RPC id as the SDK does: a string, or a number that
// is an integer. null and anything else report false.
func parseID(raw []byte) (jsonrpc.ID, bool) {
	if len(raw) == 0 {
		return jsonrpc.ID{}, false
	}
	var v any
	if raw[0] == '"' {
		s, err := jsonscan.Unquote(raw)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		v = s
	} else {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		v = float64(n) // MakeID takes what encoding/json gives: float64
		if int64(v.(float64)) != n {
			return jsonrpc.ID{}, false
		}
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}

// callParams is the top level of a tools/call's params, as far as the lane
// looks, with the _meta members it needs (raw spans; nil when absent).
type callParams struct {
	Name  string
	Retry bool // inputResponses or requestState: a multi-round-trip retry
	metaSpans
}

type metaSpans struct {
	version, caps, progressToken []byte
}

// parseCall reads params as json.Unmarshal would into a struct of these
// fields, and reports false where it would fail.
func parseCall(params []byte) (callParams, bool) {
	var p callParams
	if len(params) == 0 || params[0] != '{' {
		return p, false
	}
	err := jsonscan.Members(params, 0, func(key []byte, vs, ve int) error {
		v := params[vs:ve]
		switch string(key) {
		case "name":
			if v[0] != '"' {
				return errNotRequest
			}
			n, err := jsonscan.Unquote(v)
			p.Name = n
			return err
		case "_meta":
			if !p.metaSpans.read(v) {
				return errNotRequest
			}
		case "inputResponses", "requestState":
			p.Retry = true
		}
		return nil
	})
	return p, err == nil
}

// read takes the members the lane needs from a _meta object; null is an
// empty _meta, anything else not an object reports false.
func (m *metaSpans) read(v []byte) bool {
	if string(v) == "null" {
		return true
	}
	if v[0] != '{' {
		return false
	}
	err := jsonscan.Members(v, 0, func(key []byte, vs, ve int) error {
		switch string(key) {
		case mcp.MetaKeyProtocolVersion:
			m.version = v[vs:ve]
		case mcp.MetaKeyClientCapabilities:
			m.caps = v[vs:ve]
		case "progressToken":
			m.progressToken = v[vs:ve]
		}
		return nil
	})
	return err == nil
}

// parseMeta reads the _meta members the lane needs from a request's
// params; false when params are not an object or _meta is malformed.
func parseMeta(params []byte) (metaSpans, bool) {
	var m metaSpans
	if len(params) == 0 || string(params) == "null" {
		return m, true
	}
	if params[0] != '{' {
		return m, false
	}
	vs, ve, ok := jsonscan.MemberSpan(params, "_meta")
	if !ok {
		return m, true
	}
	return m, m.read(params[vs:ve])
}
