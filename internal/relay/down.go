package relay

import (
	"bytes"
	"encoding/json"

	"github.com/mcpflow/mcpflow/internal/report/texts"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerDown answers port p's request while no child runs (the first
// build failed, or the child crashed): the relay stands in for the server
// so the client's session survives, and tells the agent what to do.
// sw.mu is held.
func (r *switchboard) answerDown(p *Port, msg []byte, env wire.Envelope) {
	id := env.ID
	if env.Method == "tools/call" {
		r.stats.callServed()
	}
	modern := p.era == eraModern
	ok := func(result any) { p.reply(id, wire.ResultResponse(id, withResultType(mustJSON(result), modern))) }
	switch env.Method {
	case "initialize":
		r.sess.initReq = msg
		r.sess.selfInit = true
		var pv struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(env.Params, &pv)
		if pv.ProtocolVersion == "" {
			pv.ProtocolVersion = "2025-06-18"
		}
		result := map[string]any{
			"protocolVersion": pv.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]bool{"listChanged": true}},
			"serverInfo":      map[string]string{"name": "mcpflow", "version": r.cfg.Version},
			"instructions":    texts.Instructions(r.health.describe()),
		}
		r.sess.initResult = mustJSON(result)
		p.view.beginEmpty()
		ok(result)
	case "server/discover":
		// Answered, not declined, so that a 2026-07-28 client stays in its
		// era: mcpflow can serve it whatever the server turns out to speak
		// (a legacy-only server is bridged). The record's answer when there
		// is one.
		r.sess.selfDiscover = true
		if res, found := r.rec.answer(env, nil); found {
			p.reply(id, wire.ResultResponse(id, res))
			return
		}
		ok(map[string]any{
			"resultType":        "complete",
			"_meta":             map[string]any{mcp.MetaKeyServerInfo: map[string]string{"name": "mcpflow", "version": r.cfg.Version}},
			"supportedVersions": mcp.SupportedProtocolVersions(),
			"capabilities":      map[string]any{"tools": map[string]bool{"listChanged": true}},
			"instructions":      texts.Instructions(r.health.describe()),
		})
	case "tools/list":
		p.view.noteToolsDown()
		p.reply(id, wire.ResultResponse(id, withResultType([]byte(`{"tools":[`+string(r.ownTools())+`]}`), modern)))
	case "prompts/list":
		ok(map[string]any{"prompts": []any{}})
	case "resources/list":
		ok(map[string]any{"resources": []any{}})
	case "resources/templates/list":
		ok(map[string]any{"resourceTemplates": []any{}})
	case "tools/call":
		r.tools.clearNotices()
		p.reply(id, wire.ResultResponse(id, toolResult(texts.ErrDown(r.health.describe()), true, nil, modern)))
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
		// Held by the relay: sent to the next child under an id of its own
		// when the client's could be another client's too.
		key := string(id)
		l := newListen(msg, env.Params)
		l.port, l.orig = p, msg
		if !p.opts.KeepIDs || !plainID(id) {
			mine := r.ids.newID("c")
			l.msg = wire.Splice(msg, env.IDStart, env.IDEnd, mine)
			l.clientID = bytes.Clone(id)
			key = string(mine)
		}
		r.sess.listens[key] = l
		r.ids.track(p, key, &pending{kind: kindListen, gen: -1, method: env.Method, port: p, clientID: l.clientID})
		p.deliver(selfAck(id, l), id)
	default:
		p.reply(id, wire.ErrorResponse(id, wire.CodeServerDown, texts.ErrDown(r.health.describe()), nil))
	}
}

// ownTools is the relay's own tools as a tools/list lists them (none when
// Config.NoOwnTools).
func (r *switchboard) ownTools() []byte {
	if r.cfg.NoOwnTools {
		return nil
	}
	return r.tools.defs
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
