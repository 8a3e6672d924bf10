package relay

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// forceResult rewrites an initialize (isInit) or server/discover result so
// that clients re-fetch tools after a restart: capabilities.tools.listChanged
// is forced to true (the tools capability is added when missing, since
// mcpflow adds a tool), and listChanged is forced on prompts and
// resources where the child declares them. Everything else is kept as
// the child sent it, unknown fields included. An error answer is passed
// on as it is: a legacy server refuses server/discover, and the client
// then falls back to initialize. The session's lock is held.
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
	s.hs.caps = declaredCaps(env.Result)
	s.hs.initResult = res
	if isInit {
		c.speaks = wire.EraLegacy
	} else if speaksModern(env.Result) {
		c.speaks = wire.EraModern
	}
	return wire.Splice(msg, env.ResStart, env.ResStart+len(env.Result), res)
}

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
		} else if meta := res["_meta"]; meta != nil {
			// server/discover carries serverInfo in its _meta.
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

// declaredCaps reads which list capabilities the child itself declared.
func declaredCaps(result []byte) caps {
	c := jsonscan.Member(result, "capabilities")
	present := func(k string) bool {
		v := jsonscan.Member(c, k)
		return v != nil && string(v) != "null"
	}
	return caps{prompts: present("prompts"), resources: present("resources")}
}

// injectTools appends the relay's tools to the last page of a tools/list
// result (the page without nextCursor), splicing bytes so a long list is
// never decoded.
func (t ownTools) inject(msg []byte, env wire.Envelope) []byte {
	res := env.Result
	if t.defs == nil {
		return msg
	}
	if nc := jsonscan.Member(res, "nextCursor"); nc != nil && string(nc) != "null" && string(nc) != `""` {
		return msg
	}
	vs, ve, ok := jsonscan.MemberSpan(res, "tools")
	if !ok || res[vs] != '[' {
		return msg
	}
	ins := slices.Clone(t.defs)
	if len(bytes.TrimSpace(res[vs+1:ve-1])) > 0 {
		ins = append([]byte{','}, ins...)
	}
	at := env.ResStart + ve - 1
	return wire.Splice(msg, at, at, ins)
}

// attach appends the pending notices (failed automatic builds, crashes
// between calls) to a tools/call result as text items.
func (n *notices) attach(msg []byte, env wire.Envelope) []byte {
	if *n == (notices{}) || env.Result == nil {
		return msg
	}
	vs, ve, ok := jsonscan.MemberSpan(env.Result, "content")
	if !ok || env.Result[vs] != '[' {
		return msg
	}
	var ins []byte
	for _, text := range n {
		if text == "" {
			continue
		}
		if len(ins) > 0 || len(bytes.TrimSpace(env.Result[vs+1:ve-1])) > 0 {
			ins = append(ins, ',')
		}
		ins = append(ins, textContent(text)...)
	}
	n.clear()
	at := env.ResStart + ve - 1
	return wire.Splice(msg, at, at, ins)
}

func textContent(s string) []byte {
	return mustJSON(map[string]string{"type": "text", "text": s})
}

// rewriteCallTool turns a call of the call-forwarding tool,
// {name, arguments}, into a tools/call of the named tool.
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
