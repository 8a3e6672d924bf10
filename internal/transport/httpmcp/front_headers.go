package httpmcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// The answers of the 2026-07-28 checks (SEP-2575, SEP-2243).
const (
	codeHeaderMismatch = mcp.CodeHeaderMismatch
	codeInvalidParams  = -32602
)

// headerProblem checks a 2026-07-28 message against its headers as the
// SDK's stateless handler does: a request's _meta protocol version
// present and equal to MCP-Protocol-Version; Mcp-Method equal to the
// method; Mcp-Name equal to the name or URI of tools/call, prompts/get
// and resources/read; and, for a tools/call of a tool whose input schema
// marks arguments x-mcp-header (as the tools/list answers the front
// carried said), each Mcp-Param- header present exactly when its argument
// is, and equal to it. It returns the error answer (HTTP 400), or nil.
func (f *Front) headerProblem(h http.Header, pv string, env wire.Envelope) []byte {
	if env.Method == "" {
		return nil // an answer: no headers of its own
	}
	id := env.ID
	m := metaOf(env.Params)
	if env.ID != nil || m.protocol != "" {
		switch {
		case m.protocol == "":
			return wire.ErrorResponse(id, codeInvalidParams, "missing or invalid _meta field \""+mcp.MetaKeyProtocolVersion+"\"", nil)
		case m.protocol != pv:
			return wire.ErrorResponse(id, codeHeaderMismatch, fmt.Sprintf("%s header %q does not match request %s %q", hdrProtocolVersion, pv, mcp.MetaKeyProtocolVersion, m.protocol), nil)
		}
	}
	mismatch := func(format string, args ...any) []byte {
		return wire.ErrorResponse(id, codeHeaderMismatch, fmt.Sprintf(format, args...), nil)
	}
	method := h.Get(hdrMethod)
	switch {
	case method == "":
		return mismatch("missing required Mcp-Method header")
	case method != env.Method:
		return mismatch("header mismatch: Mcp-Method header value '%s' does not match body value '%s'", method, env.Method)
	}
	field := ""
	switch env.Method {
	case "tools/call", "prompts/get":
		field = "name"
	case "resources/read":
		field = "uri"
	default:
		return nil
	}
	name := h.Get(hdrName)
	if name == "" {
		return mismatch("missing required Mcp-Name header for method %q", env.Method)
	}
	var inBody string
	if raw := jsonscan.Member(env.Params, field); raw != nil && json.Unmarshal(raw, &inBody) != nil {
		return mismatch("failed to extract name from parameters for method %q", env.Method)
	}
	if name != inBody {
		return mismatch("header mismatch: Mcp-Name header value '%s' does not match body value '%s'", name, inBody)
	}
	if env.Method != "tools/call" {
		return nil
	}
	f.params.mu.Lock()
	bs := f.params.tools[inBody]
	f.params.mu.Unlock()
	args := jsonscan.Member(env.Params, "arguments")
	for _, b := range bs {
		header := hdrParam + b.header
		inHeader := h.Get(header)
		v := args
		for _, key := range b.path {
			v = jsonscan.Member(v, key)
		}
		arg := strings.Join(b.path, ".")
		if v == nil || string(v) == "null" {
			if inHeader != "" {
				return mismatch("header mismatch: unexpected %s header for absent or null parameter %q", header, arg)
			}
			continue
		}
		if inHeader == "" {
			return mismatch("header mismatch: missing %s header for parameter %q", header, arg)
		}
		decoded, ok := decodeParam(inHeader)
		if !ok {
			return mismatch("header mismatch: %s header contains invalid Base64 encoding", header)
		}
		if !paramEqual(decoded, v) {
			return mismatch("header mismatch: %s header value '%s' does not match body value", header, inHeader)
		}
	}
	return nil
}

// hdrParam prefixes the header of an x-mcp-header argument.
const hdrParam = "Mcp-Param-"

// decodeParam undoes SEP-2243's Base64 wrapping of a header value; a
// value without the whole wrapping is literal. False for a wrapping of
// invalid Base64.
func decodeParam(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, base64Prefix)
	if !ok {
		return v, true
	}
	if inner, ok = strings.CutSuffix(inner, base64Suffix); !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	return string(b), err == nil
}

// paramEqual reports whether a header's (decoded) value is the argument
// v (raw JSON): the same string or boolean, or the same integer (compared
// as numbers, within ±2^53-1).
func paramEqual(header string, v []byte) bool {
	switch v[0] {
	case '"':
		s, err := jsonscan.Unquote(v)
		return err == nil && s == header
	case 't', 'f':
		return string(v) == header
	case '{', '[':
		return false
	}
	body, err := strconv.ParseFloat(string(v), 64)
	if err != nil || body != math.Trunc(body) || math.Abs(body) > maxSafeInt {
		return false
	}
	h, err := strconv.ParseFloat(header, 64)
	return err == nil && h == body
}
