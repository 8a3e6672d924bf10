package relay

import (
	"encoding/json"
)

// answerDown answers a client request while no child runs (the first build
// failed, or the child crashed): the relay stands in for the server so the
// client's session survives, and tells the agent what to do. sw.mu is held.
func (r *switchboard) answerDown(msg []byte, env envelope) {
	id := env.id
	if env.method == "tools/call" {
		r.stats.callServed()
	}
	ok := func(result any) { r.reply(resultResponse(id, r.sess.withResultType(mustJSON(result)))) }
	switch env.method {
	case "initialize":
		r.sess.initReq = msg
		r.sess.selfInit = true
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(env.params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-06-18"
		}
		result := map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]bool{"listChanged": true}},
			"serverInfo":      map[string]string{"name": "mcpflow", "version": r.cfg.Version},
			"instructions": "The MCP server behind mcpflow is not running yet (" + firstLine(r.describeDown()) +
				"). Its tools appear once it is fixed: call " + r.cfg.Tool + " after editing the code.",
		}
		r.sess.initResult = mustJSON(result)
		ok(result)
	case "server/discover":
		// Clients fall back to initialize, which the relay can answer alone.
		r.reply(errorResponse(id, codeMethodNotFound, "mcpflow: no MCP server is running yet, so server/discover is not available; use initialize", nil))
	case "tools/list":
		r.reply(resultResponse(id, r.sess.withResultType([]byte(`{"tools":[`+string(r.tools.defs)+`]}`))))
	case "tools/call":
		r.tools.notices = nil
		r.reply(resultResponse(id, toolResult("mcpflow: "+r.describeDown()+"\n\nWhat to do: fix the code, then call "+r.cfg.Tool+" to rebuild and restart the server.", true, nil, r.sess.era == eraModern)))
	case "ping":
		ok(map[string]any{})
	case "logging/setLevel":
		r.sess.logLevel = clone(env.params)
		ok(map[string]any{})
	case "resources/subscribe":
		r.sess.subs[uriOf(env.params)] = clone(env.params)
		ok(map[string]any{})
	case "resources/unsubscribe":
		delete(r.sess.subs, uriOf(env.params))
		ok(map[string]any{})
	case "subscriptions/listen":
		l := newListen(msg, env.params)
		r.sess.listens[string(id)] = l
		r.ids.track(string(id), &pending{kind: kindListen, gen: -1, method: env.method})
		r.out.send(selfAck(id, l))
	default:
		r.reply(errorResponse(id, codeServerDown, "mcpflow: "+r.describeDown(), nil))
	}
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
