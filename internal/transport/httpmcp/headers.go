package httpmcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// The headers of Streamable HTTP, and SEP-2243's marking and encoding of
// the tool arguments that travel in headers (2026-07-28): the link sets
// them as the Go SDK's client does, the front checks them as its
// stateless handler does.
const (
	hdrSessionID       = "Mcp-Session-Id"
	hdrProtocolVersion = "Mcp-Protocol-Version"
	hdrMethod          = "Mcp-Method"
	hdrName            = "Mcp-Name"   // the tool, prompt or resource
	hdrParam           = "Mcp-Param-" // a tool argument marked x-mcp-header

	xMCPHeader   = `"x-mcp-header"` // the input-schema keyword, as it appears in JSON
	base64Prefix = "=?base64?"      // the wrapping of a value that is not plain ASCII
	base64Suffix = "?="
	maxSafeInt   = 1<<53 - 1 // the largest integer a header may carry
)

// setHeaders sets the headers of the message env's era (none of the
// session for an initialize); a GET's env is empty.
func (l *Link) setHeaders(h http.Header, env *wire.Envelope) {
	session, version := l.session.legacy()
	if env.Method == "initialize" {
		session, version = "", ""
	}
	if session != "" {
		h.Set(hdrSessionID, session)
	}
	if v := metaOf(env.Params).protocol; v != "" {
		version = v
	}
	if version == "" {
		return
	}
	h.Set(hdrProtocolVersion, version)
	if !wire.IsModern(version) || env.Method == "" {
		return
	}
	h.Set(hdrMethod, env.Method)
	if field := nameField(env.Method); field != "" {
		if v := jsonscan.Member(env.Params, field); len(v) > 0 && v[0] == '"' {
			if name, err := jsonscan.Unquote(v); err == nil {
				h.Set(hdrName, name)
			}
		}
	}
	if env.Method != "tools/call" {
		return
	}
	args := jsonscan.Member(env.Params, "arguments")
	for _, b := range l.params.of(env.Params) {
		if s, ok := headerValue(b.value(args)); ok {
			h.Set(hdrParam+b.header, s)
		}
	}
}

// headerProblem checks a 2026-07-28 message against its headers as the
// SDK's stateless handler does: the _meta version, Mcp-Method, Mcp-Name,
// and each Mcp-Param- header present exactly when its argument is, and
// equal to it. It returns the error answer (HTTP 400), or nil.
func (f *Front) headerProblem(h http.Header, pv string, env wire.Envelope) []byte {
	if env.Method == "" {
		return nil // an answer: no headers of its own
	}
	mismatch := func(format string, args ...any) []byte {
		return wire.ErrorResponse(env.ID, mcp.CodeHeaderMismatch, fmt.Sprintf(format, args...), nil)
	}
	m := metaOf(env.Params)
	if env.ID != nil || m.protocol != "" {
		switch {
		case m.protocol == "":
			return wire.ErrorResponse(env.ID, wire.CodeInvalidParams, "missing or invalid _meta field \""+mcp.MetaKeyProtocolVersion+"\"", nil)
		case m.protocol != pv:
			return mismatch("%s header %q does not match request %s %q", hdrProtocolVersion, pv, mcp.MetaKeyProtocolVersion, m.protocol)
		}
	}
	method := h.Get(hdrMethod)
	switch {
	case method == "":
		return mismatch("missing required Mcp-Method header")
	case method != env.Method:
		return mismatch("header mismatch: Mcp-Method header value '%s' does not match body value '%s'", method, env.Method)
	}
	field := nameField(env.Method)
	if field == "" {
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
	args := jsonscan.Member(env.Params, "arguments")
	for _, b := range f.params.of(env.Params) {
		header := hdrParam + b.header
		inHeader := h.Get(header)
		v := b.value(args)
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

// nameField is the member of a method's params that Mcp-Name carries:
// a tool's or a prompt's name, a resource's URI; "" for other methods.
func nameField(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

// requestMeta is what a request says of its client: a 2026-07-28
// request's _meta, or an initialize's params.
type requestMeta struct {
	protocol string
	client   struct{ Name, Version string }
}

func metaOf(params []byte) (m requestMeta) {
	meta := jsonscan.Member(params, "_meta")
	_ = json.Unmarshal(jsonscan.Member(meta, mcp.MetaKeyProtocolVersion), &m.protocol)
	if ci := m.client; json.Unmarshal(jsonscan.Member(meta, mcp.MetaKeyClientInfo), &ci) == nil {
		m.client = ci
	}
	return m
}

// paramHeaders are the tools' arguments that travel in a header of their
// own (SEP-2243: a property of the input schema marked "x-mcp-header"),
// learned from the tools/list answers carried. Only an answer that holds
// the keyword is decoded.
type paramHeaders struct {
	mu    sync.Mutex
	tools map[string][]paramBinding // tool name -> its bound arguments
}

// paramBinding is one argument (a path of property names) and the
// header that carries it (without the Mcp-Param- prefix).
type paramBinding struct {
	path   []string
	header string
}

// value is the argument in a tools/call's arguments; nil when absent.
func (b paramBinding) value(args []byte) []byte {
	for _, key := range b.path {
		args = jsonscan.Member(args, key)
	}
	return args
}

// schemaProp is what an input schema's property says of headers.
type schemaProp struct {
	XMCPHeader json.RawMessage       `json:"x-mcp-header"`
	Properties map[string]schemaProp `json:"properties"`
}

// learn notes the bindings of the tools of a tools/list result.
func (p *paramHeaders) learn(result []byte) {
	if !bytes.Contains(result, []byte(xMCPHeader)) {
		return
	}
	var r struct {
		Tools []struct {
			Name        string     `json:"name"`
			InputSchema schemaProp `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tools == nil {
		p.tools = map[string][]paramBinding{}
	}
	for _, t := range r.Tools {
		if b := bindings(t.InputSchema.Properties, nil, nil); b != nil {
			p.tools[t.Name] = b
		} else {
			delete(p.tools, t.Name)
		}
	}
}

// bindings collects the x-mcp-header bindings of props, at any depth.
func bindings(props map[string]schemaProp, prefix []string, out []paramBinding) []paramBinding {
	for name, prop := range props {
		path := append(append([]string(nil), prefix...), name)
		var header string
		if json.Unmarshal(prop.XMCPHeader, &header) == nil && header != "" {
			out = append(out, paramBinding{path: path, header: header})
		}
		out = bindings(prop.Properties, path, out)
	}
	return out
}

// of is the bindings of the tool a tools/call's params name.
func (p *paramHeaders) of(params []byte) []paramBinding {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tools) == 0 {
		return nil
	}
	var name string
	_ = json.Unmarshal(jsonscan.Member(params, "name"), &name)
	return p.tools[name]
}

// headerValue is an argument's value as SEP-2243 puts it in a header: a
// string as it is (Base64-wrapped when it is not plain printable ASCII,
// has white space at an end, or looks wrapped), a boolean, an integer of
// at most 2^53-1; false for anything else (absent, null, other numbers,
// arrays, objects).
func headerValue(v []byte) (string, bool) {
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		s, err := jsonscan.Unquote(v)
		if err != nil {
			return "", false
		}
		if needsBase64(s) {
			return base64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + base64Suffix, true
		}
		return s, true
	case 't', 'f':
		return string(v), true
	case 'n', '{', '[':
		return "", false
	}
	f, ok := safeInt(string(v))
	return strconv.FormatInt(int64(f), 10), ok
}

// safeInt reads a number that is an integer of at most 2^53-1 either way.
func safeInt(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && f == math.Trunc(f) && math.Abs(f) <= maxSafeInt
}

func needsBase64(s string) bool {
	return s != strings.Trim(s, " \t") || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) ||
		strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix)
}

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
	body, ok := safeInt(string(v))
	h, err := strconv.ParseFloat(header, 64)
	return ok && err == nil && h == body
}
