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

// subscriptionKey is the _meta key by which a notification names the
// listen it belongs to.
const subscriptionKey = mcp.MetaKeySubscriptionID

// subscriptionID returns the raw listen id a notification is tagged with.
func subscriptionID(params []byte) []byte {
	return jsonscan.Member(jsonscan.Member(params, "_meta"), subscriptionKey)
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

// selfAck is the acknowledgement mcpflow sends for a listen it takes
// while no child runs.
func selfAck(id []byte, tools bool) []byte {
	params := map[string]any{
		"_meta":         map[string]json.RawMessage{mcp.MetaKeySubscriptionID: id},
		"notifications": map[string]bool{"toolsListChanged": tools},
	}
	return wire.Request(nil, "notifications/subscriptions/acknowledged", mustJSON(params))
}

// withResultType marks a result complete for a 2026-07-28 client.
func withResultType(result []byte, modern bool) []byte {
	if !modern || len(result) < 2 {
		return result
	}
	if len(result) == 2 {
		return []byte(`{"resultType":"complete"}`)
	}
	return append([]byte(`{"resultType":"complete",`), result[1:]...)
}
