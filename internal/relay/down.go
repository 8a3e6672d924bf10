package relay

import (
	"cmp"
	"encoding/json"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerDown answers the client's request while no child serves its
// session (the first build failed or runs late, the child crashed, no
// slot is free): mcpflow stands in for the server so the session
// survives, and tells the agent what to do. What sets the session up
// (its handshake, level, subscriptions, listens) is in its State and is
// replayed to the next child. s.mu is held.
func (s *Session) answerDown(msg []byte, env wire.Envelope) {
	r := s.r
	id := env.ID
	report := cmp.Or(s.report, r.now().describe())
	if env.Method == "tools/call" {
		r.stats.callServed()
	}
	modern := s.modern()
	ok := func(result any) { s.reply(id, wire.ResultResponse(id, withResultType(mustJSON(result), modern))) }
	switch env.Method {
	case "initialize":
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
			"instructions":    texts.Instructions(report),
		}
		s.hs.selfInit, s.hs.initResult, s.hs.initDecided = true, mustJSON(result), true
		s.view.beginEmpty()
		ok(result)
	case "server/discover":
		// Answered, not declined, so that a 2026-07-28 client stays in its
		// era: mcpflow can serve it whatever the server turns out to speak
		// (a legacy-only server is bridged). The record's answer when there
		// is one.
		s.hs.selfDiscover = true
		if res, found := r.rec.current().answer(env, nil); found {
			s.reply(id, wire.ResultResponse(id, res))
			return
		}
		ok(map[string]any{
			"resultType":        "complete",
			"_meta":             map[string]any{mcp.MetaKeyServerInfo: map[string]string{"name": "mcpflow", "version": r.cfg.Version}},
			"supportedVersions": mcp.SupportedProtocolVersions(),
			"capabilities":      map[string]any{"tools": map[string]bool{"listChanged": true}},
			"instructions":      texts.Instructions(report),
		})
	case "tools/list":
		s.view.beginEmpty()
		s.reply(id, wire.ResultResponse(id, withResultType([]byte(`{"tools":[`+string(r.ownTools.defs)+`]}`), modern)))
	case "prompts/list":
		ok(map[string]any{"prompts": []any{}})
	case "resources/list":
		ok(map[string]any{"resources": []any{}})
	case "resources/templates/list":
		ok(map[string]any{"resourceTemplates": []any{}})
	case "tools/call":
		s.notices.clear()
		s.reply(id, wire.ResultResponse(id, toolResult(texts.ErrDown(report), true, nil, modern)))
	case "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		ok(map[string]any{}) // in its State: replayed to the next child
	case "subscriptions/listen":
		// Taken: replayed to the next child, whose acknowledgement is
		// dropped; the listen stays open.
		l := s.st.Listens()[string(id)]
		s.deliver(selfAck(id, l.Tools), id)
	default:
		s.reply(id, wire.ErrorResponse(id, wire.CodeServerDown, texts.ErrDown(report), nil))
	}
}
