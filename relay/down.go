package relay

import (
	"bytes"
	"encoding/json"

	"github.com/mcpflow/mcpflow/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerDown answers a client request while no child runs (the first build
// failed, or the child crashed): the relay stands in for the server so the
// client's session survives, and tells the agent what to do. sw.mu is held.
func (r *switchboard) answerDown(msg []byte, env wire.Envelope) {
	id := env.ID
	if env.Method == "tools/call" {
		r.stats.callServed()
	}
	ok := func(result any) { r.reply(wire.ResultResponse(id, r.sess.withResultType(mustJSON(result)))) }
	switch env.Method {
	case "initialize":
		r.sess.initReq = msg
		r.sess.selfInit = true
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(env.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-06-18"
		}
		result := map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]bool{"listChanged": true}},
			"serverInfo":      map[string]string{"name": "mcpflow", "version": r.cfg.Version},
			"instructions":    msgInstructions(r.health.describe()),
		}
		r.sess.initResult = mustJSON(result)
		r.view.beginEmpty()
		ok(result)
	case "server/discover":
		// Answered, not declined, so that a 2026-07-28 client stays in its
		// era: mcpflow can serve it whatever the server turns out to speak
		// (a legacy-only server is bridged). The record's answer when there
		// is one.
		r.sess.selfDiscover = true
		if res, ok := r.rec.answer(env, nil); ok {
			r.reply(wire.ResultResponse(id, res))
			return
		}
		ok(map[string]any{
			"resultType":        "complete",
			"_meta":             map[string]any{mcp.MetaKeyServerInfo: map[string]string{"name": "mcpflow", "version": r.cfg.Version}},
			"supportedVersions": mcp.SupportedProtocolVersions(),
			"capabilities":      map[string]any{"tools": map[string]bool{"listChanged": true}},
			"instructions":      msgInstructions(r.health.describe()),
		})
	case "tools/list":
		r.view.noteToolsDown()
		r.reply(wire.ResultResponse(id, r.sess.withResultType([]byte(`{"tools":[`+string(r.tools.defs)+`]}`))))
	case "prompts/list":
		ok(map[string]any{"prompts": []any{}})
	case "resources/list":
		ok(map[string]any{"resources": []any{}})
	case "resources/templates/list":
		ok(map[string]any{"resourceTemplates": []any{}})
	case "tools/call":
		r.tools.clearNotices()
		r.reply(wire.ResultResponse(id, toolResult(errTextDown(r.health.describe()), true, nil, r.sess.era == eraModern)))
	case "ping":
		ok(map[string]any{})
	case "logging/setLevel":
		r.sess.logLevel = bytes.Clone(env.Params)
		ok(map[string]any{})
	case "resources/subscribe":
		r.sess.subs[uriOf(env.Params)] = bytes.Clone(env.Params)
		ok(map[string]any{})
	case "resources/unsubscribe":
		delete(r.sess.subs, uriOf(env.Params))
		ok(map[string]any{})
	case "subscriptions/listen":
		l := newListen(msg, env.Params)
		r.sess.listens[string(id)] = l
		r.ids.track(string(id), &pending{kind: kindListen, gen: -1, method: env.Method})
		r.out.send(selfAck(id, l))
	default:
		r.reply(wire.ErrorResponse(id, wire.CodeServerDown, errTextDown(r.health.describe()), nil))
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
