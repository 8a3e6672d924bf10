package relay

import (
	"bytes"
	"encoding/json"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaTriple keeps the per-request keys the relay copies onto its own
// requests.
func metaTriple(meta []byte) []byte {
	out := map[string]json.RawMessage{}
	for _, k := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities} {
		if v := jsonscan.Member(meta, k); v != nil {
			out[k] = bytes.Clone(v)
		}
	}
	return mustJSON(out)
}

// newListen remembers a subscriptions/listen request.
func newListen(msg, params []byte) *listen {
	var p struct {
		Notifications struct {
			Tools     bool `json:"toolsListChanged"`
			Prompts   bool `json:"promptsListChanged"`
			Resources bool `json:"resourcesListChanged"`
		} `json:"notifications"`
	}
	_ = json.Unmarshal(params, &p)
	return &listen{msg: bytes.Clone(msg), tools: p.Notifications.Tools, prompts: p.Notifications.Prompts, resources: p.Notifications.Resources}
}

// subscriptionID returns the raw listen id a notification is tagged with.
func subscriptionID(params []byte) []byte {
	return jsonscan.Member(jsonscan.Member(params, "_meta"), mcp.MetaKeySubscriptionID)
}

// forceAck makes an acknowledgement include toolsListChanged: the relay
// itself sends that notification after each restart.
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

// selfAck is the acknowledgement the relay sends for a listen it takes
// while no child runs.
func selfAck(id []byte, l *listen) []byte {
	params := map[string]any{
		"_meta":         map[string]json.RawMessage{mcp.MetaKeySubscriptionID: id},
		"notifications": map[string]bool{"toolsListChanged": l.tools},
	}
	return wire.Request(nil, "notifications/subscriptions/acknowledged", mustJSON(params))
}
