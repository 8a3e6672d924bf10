package httpmcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// The headers of Streamable HTTP the link sets.
const (
	headerSession = "Mcp-Session-Id"
	headerVersion = "Mcp-Protocol-Version"
	headerMethod  = "Mcp-Method" // 2026-07-28 (SEP-2243)
	headerName    = "Mcp-Name"   // 2026-07-28: the tool, prompt or resource
	headerParam   = "Mcp-Param-" // 2026-07-28: a tool argument marked x-mcp-header
)

// SEP-2243's marking and encoding of the arguments that travel in
// headers.
const (
	xMCPHeader   = `"x-mcp-header"` // the input-schema keyword, as it appears in JSON
	base64Prefix = "=?base64?"      // the wrapping of a value that is not plain ASCII
	base64Suffix = "?="
	maxSafeInt   = 1<<53 - 1 // the largest integer a header may carry
)

// setHeaders sets the headers of a POST of the message env: the media
// types, the legacy session and version (none for an initialize, which
// opens a session), or a 2026-07-28 request's version (its _meta) with
// the SEP-2243 headers, as the Go SDK's client sets them.
func (l *Link) setHeaders(h http.Header, env *wire.Envelope) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	session, version := l.legacy()
	if env.Method == "initialize" {
		session, version = "", ""
	}
	if session != "" {
		h.Set(headerSession, session)
	}
	if v := metaVersion(env.Params); v != "" {
		version = v
	}
	if version == "" {
		return
	}
	h.Set(headerVersion, version)
	if !wire.IsModern(version) || env.Method == "" {
		return
	}
	h.Set(headerMethod, env.Method)
	if name, ok := nameOf(env.Method, env.Params); ok {
		h.Set(headerName, name)
	}
	if env.Method == "tools/call" {
		l.params.set(h, env.Params)
	}
}

// metaVersion is the protocol version in a request's
// params._meta["io.modelcontextprotocol/protocolVersion"], or "".
func metaVersion(params []byte) string {
	meta := jsonscan.Member(params, "_meta")
	v := jsonscan.Member(meta, mcp.MetaKeyProtocolVersion)
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, _ := jsonscan.Unquote(v)
	return s
}

// nameOf is what Mcp-Name carries for a method: a tool's or a prompt's
// name, a resource's URI.
func nameOf(method string, params []byte) (string, bool) {
	key := ""
	switch method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	default:
		return "", false
	}
	v := jsonscan.Member(params, key)
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, err := jsonscan.Unquote(v)
	return s, err == nil
}

// paramHeaders are the tools' arguments that travel in a header of their
// own (SEP-2243: a property of the input schema marked "x-mcp-header"),
// learned from the tools/list answers the link carries. Only an answer
// that holds the keyword is decoded.
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

// set sets the Mcp-Param- headers of a tools/call.
func (p *paramHeaders) set(h http.Header, params []byte) {
	p.mu.Lock()
	if len(p.tools) == 0 {
		p.mu.Unlock()
		return
	}
	name, _ := nameOf("tools/call", params)
	bs := p.tools[name]
	p.mu.Unlock()
	if len(bs) == 0 {
		return
	}
	args := jsonscan.Member(params, "arguments")
	for _, b := range bs {
		v := args
		for _, key := range b.path {
			v = jsonscan.Member(v, key)
		}
		if s, ok := headerValue(v); ok {
			h.Set(headerParam+b.header, s)
		}
	}
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
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInt {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix)
}
