package relay

import (
	"bytes"
	"encoding/json"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// forceResult rewrites the child's answer to initialize (isInit) or
// server/discover and notes what it says; an error is passed on. s.mu is
// held.
func (c *conn) forceResult(msg []byte, env wire.Envelope, isInit bool) []byte {
	s := c.s
	if env.HasError {
		s.r.log.Debug("the server refused the handshake request; passed its error on", "initialize", isInit)
		if !isInit {
			s.hs.childDiscover = false
		}
		return msg
	}
	res, err := forcedResult(env.Result, isInit, s.r.cfg.ServerSuffix)
	if err != nil {
		s.r.log.Warn("could not read the server's capabilities; passed its answer on unchanged", "err", err)
		return msg
	}
	s.hs.caps, s.hs.initResult = bytes.Clone(jsonscan.Member(env.Result, "capabilities")), res
	if isInit {
		c.speaks = wire.EraLegacy
	} else if speaksModern(env.Result) {
		c.speaks = wire.EraModern
	}
	return wire.Splice(msg, env.ResStart, env.ResStart+len(env.Result), res)
}

// forcedResult is a handshake result with listChanged forced on tools
// (added if missing), prompts and resources (if declared), and suffix
// added to serverInfo; all else kept.
func forcedResult(result []byte, isInit bool, suffix string) ([]byte, error) {
	var res map[string]json.RawMessage
	if err := json.Unmarshal(result, &res); err != nil {
		return nil, err
	}
	var caps map[string]json.RawMessage
	if raw := res["capabilities"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &caps); err != nil {
			return nil, err
		}
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	forceListChanged(caps, "tools", true)
	forceListChanged(caps, "prompts", false)
	forceListChanged(caps, "resources", false)
	res["capabilities"] = mustJSON(caps)
	if suffix != "" {
		if isInit {
			res["serverInfo"] = suffixed(res["serverInfo"], suffix)
		} else if meta := res["_meta"]; meta != nil { // server/discover's serverInfo
			var m map[string]json.RawMessage
			if json.Unmarshal(meta, &m) == nil && m[mcp.MetaKeyServerInfo] != nil {
				m[mcp.MetaKeyServerInfo] = suffixed(m[mcp.MetaKeyServerInfo], suffix)
				res["_meta"] = mustJSON(m)
			}
		}
	}
	return mustJSON(res), nil
}

// suffixed appends suffix to the name and version of an Implementation.
func suffixed(raw json.RawMessage, suffix string) json.RawMessage {
	var info map[string]json.RawMessage
	if json.Unmarshal(raw, &info) != nil || info == nil {
		return raw
	}
	for _, k := range []string{"name", "version"} {
		var s string
		if json.Unmarshal(info[k], &s) == nil {
			info[k] = mustJSON(s + suffix)
		}
	}
	return mustJSON(info)
}

func forceListChanged(caps map[string]json.RawMessage, key string, create bool) {
	var obj map[string]json.RawMessage
	if raw, ok := caps[key]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &obj) != nil {
			return
		}
	} else if !create {
		return
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	obj["listChanged"] = json.RawMessage("true")
	caps[key] = mustJSON(obj)
}

// inject appends mcpflow's tools to the last page of a tools/list result.
func (t ownTools) inject(msg []byte, env wire.Envelope) []byte {
	if t == nil {
		return msg
	}
	if nc := jsonscan.Member(env.Result, "nextCursor"); nc != nil && string(nc) != "null" && string(nc) != `""` {
		return msg
	}
	out, _ := appendTo(msg, env, "tools", t)
	return out
}

// attach appends the pending notices to a tools/call result.
func (n *notices) attach(msg []byte, env wire.Envelope) []byte {
	if *n == (notices{}) {
		return msg
	}
	var items [][]byte
	for _, text := range n {
		if text != "" {
			items = append(items, textContent(text))
		}
	}
	out, ok := appendTo(msg, env, "content", bytes.Join(items, []byte{','}))
	if ok {
		n.clear()
	}
	return out
}

// appendTo appends items to env's result's array key, if there is one.
func appendTo(msg []byte, env wire.Envelope, key string, items []byte) ([]byte, bool) {
	vs, ve, ok := jsonscan.MemberSpan(env.Result, key)
	if !ok || env.Result[vs] != '[' || len(items) == 0 {
		return msg, false
	}
	return wire.Splice(msg, env.ResStart+vs, env.ResStart+ve, appendItems(env.Result[vs:ve], items)), true
}

// appendItems appends comma-separated JSON values to a JSON array.
func appendItems(arr, items []byte) []byte {
	arr = bytes.TrimSpace(arr)
	out := append([]byte(nil), arr[:len(arr)-1]...)
	if len(bytes.TrimSpace(arr[1:len(arr)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, items...)
	return append(out, ']')
}

func textContent(s string) []byte {
	return mustJSON(map[string]string{"type": "text", "text": s})
}

// rewriteCallTool turns a call-forwarding call into a call of the tool.
func rewriteCallTool(msg []byte, env wire.Envelope) ([]byte, wire.Envelope) {
	args := jsonscan.Member(env.Params, "arguments")
	name := jsonscan.Member(args, "name")
	if len(name) == 0 || name[0] != '"' {
		return msg, env
	}
	p := map[string]json.RawMessage{"name": name}
	if a := jsonscan.Member(args, "arguments"); a != nil {
		p["arguments"] = a
	}
	if m := jsonscan.Member(env.Params, "_meta"); m != nil {
		p["_meta"] = m
	}
	out := wire.Request(env.ID, "tools/call", mustJSON(p))
	ne, err := wire.Peek(out)
	if err != nil {
		return msg, env
	}
	return out, ne
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with values that always marshal
	}
	return b
}

// metaTriple keeps the _meta keys mcpflow copies onto its own requests.
func metaTriple(meta []byte) []byte {
	out := map[string]json.RawMessage{}
	for _, k := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities} {
		if v := jsonscan.Member(meta, k); v != nil {
			out[k] = bytes.Clone(v)
		}
	}
	return mustJSON(out)
}

// subscriptionID is the raw listen id a notification is tagged with.
func subscriptionID(params []byte) []byte {
	return jsonscan.Member(jsonscan.Member(params, "_meta"), mcp.MetaKeySubscriptionID)
}

// forceAck makes an acknowledgement include toolsListChanged.
func forceAck(msg []byte, env wire.Envelope) []byte {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(env.Params, &params); err != nil {
		return msg
	}
	var n map[string]json.RawMessage
	_ = json.Unmarshal(params["notifications"], &n)
	if n == nil {
		n = map[string]json.RawMessage{}
	}
	if string(n["toolsListChanged"]) == "true" {
		return msg
	}
	n["toolsListChanged"] = json.RawMessage("true")
	params["notifications"] = mustJSON(n)
	return wire.Request(nil, env.Method, mustJSON(params))
}

// selfAck acknowledges a listen mcpflow takes while no child runs.
func selfAck(id []byte, tools bool) []byte {
	params := map[string]any{
		"_meta":         map[string]json.RawMessage{mcp.MetaKeySubscriptionID: id},
		"notifications": map[string]bool{"toolsListChanged": tools},
	}
	return wire.Request(nil, "notifications/subscriptions/acknowledged", mustJSON(params))
}
