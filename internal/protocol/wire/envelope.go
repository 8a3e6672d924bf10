package wire

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Envelope is what routing a JSON-RPC message needs: its id, its method,
// and whether it is a response. Peek reads it by scanning the top level of
// the object and skipping every value it does not need, so a 20 MiB tool
// result is walked once and never decoded. The slices are parts of the
// message.
type Envelope struct {
	ID       []byte // raw JSON of "id"; nil when absent
	IDStart  int    // byte offsets of the id value in the message
	IDEnd    int
	Method   string
	Params   []byte // raw JSON of "params"; nil when absent
	ParStart int    // offset of params in the message
	Result   []byte // raw JSON of "result"; nil when absent
	ResStart int    // offset of result in the message
	Error    []byte // raw JSON of "error"; nil when absent
	HasError bool   // Error != nil
	Version  []byte // raw JSON of "jsonrpc" (`"2.0"`); nil when absent
	IsArray  bool   // a batch: the other fields are unset
	// Ambiguous: a member mcpflow acts on (the envelope's, params' or
	// params._meta's, see Peek) is named twice or in another case, so
	// that peers may read the message differently: it is refused
	// (-32600), never acted on. An id named so is no id (ID nil): the
	// refusal goes under null.
	Ambiguous bool
}

// The members whose reading mcpflow acts on: the envelope's, those of
// params and those of params._meta. A message that names one of them
// twice, or in another case, is Ambiguous.
var (
	envelopeKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}
	paramsKeys   = []string{"_meta", "requestId", "name", "uri", "cursor", "ref", "arguments", "protocolVersion", "clientInfo", "capabilities", "level", "notifications", "progressToken"}
	metaKeys     = []string{"progressToken", mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeySubscriptionID, mcp.MetaKeyLogLevel}
)

// IsRequest reports whether the message is a request (method and id).
func (e *Envelope) IsRequest() bool { return e.Method != "" && e.ID != nil }

// IsNotification reports whether the message is a notification.
func (e *Envelope) IsNotification() bool { return e.Method != "" && e.ID == nil }

// OneShotClient is the clientInfo.name of mcpflow tools and call: they
// wait for the first build and read why no server runs (DownMeta).
const OneShotClient = "mcpflow-cli"

// DownMeta is the _meta member of a tools/list result mcpflow gives while
// no server runs: why none runs, the text the agent reads.
const DownMeta = "mcpflow/down"

// ClientName is the name a client gives itself in a request: initialize's
// clientInfo, or a 2026-07-28 request's _meta; "" when it gives none.
func (e *Envelope) ClientName() string {
	var p struct {
		ClientInfo struct{ Name string }
		Meta       map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(e.Params, &p)
	if p.ClientInfo.Name != "" {
		return p.ClientInfo.Name
	}
	var ci struct{ Name string }
	_ = json.Unmarshal(p.Meta[mcp.MetaKeyClientInfo], &ci)
	return ci.Name
}

// IsResponse reports whether the message is a response (result or error,
// no method).
func (e *Envelope) IsResponse() bool { return e.Method == "" && (e.Result != nil || e.HasError) }

// IDProblem says what is wrong with a request's id, or "" when it is a
// string or a number, the ids JSON-RPC allows a request (null is
// discouraged, and MCP forbids it).
func IDProblem(id []byte) string {
	switch {
	case len(id) == 0:
		return ""
	case id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9':
		return ""
	case string(id) == "null":
		return "Invalid Request: a request id must not be null (MCP requires a string or a number)"
	}
	return "Invalid Request: a request id must be a string or a number"
}

var errNotObject = errors.New("not a JSON object")

// Peek scans msg, which must be valid JSON (Reader.Next checks it), and
// returns its envelope. A batch (a JSON array) comes back with IsArray set;
// any other value that is not an object is an error.
func Peek(msg []byte) (Envelope, error) {
	var e Envelope
	i := jsonscan.SkipSpace(msg, 0)
	if i >= len(msg) {
		return e, errors.New("empty message")
	}
	if msg[i] == '[' {
		e.IsArray = true
		return e, nil
	}
	if msg[i] != '{' {
		return e, errNotObject
	}
	var seen [len(envelopeKeys)]bool
	idAmbiguous := false
	err := jsonscan.Members(msg, i, func(key []byte, vs, ve int) error {
		for n, k := range envelopeKeys {
			if bytes.EqualFold(key, []byte(k)) {
				e.Ambiguous = e.Ambiguous || seen[n] || string(key) != k
				idAmbiguous = idAmbiguous || k == "id" && (seen[n] || string(key) != k)
				seen[n] = true
			}
		}
		switch string(key) {
		case "id":
			e.ID = msg[vs:ve]
			e.IDStart, e.IDEnd = vs, ve
		case "method":
			if msg[vs] != '"' {
				return errors.New(`"method" is not a string`)
			}
			m, err := jsonscan.Unquote(msg[vs:ve])
			if err != nil {
				return err
			}
			e.Method = m
		case "params":
			e.Params = msg[vs:ve]
			e.ParStart = vs
		case "result":
			e.Result = msg[vs:ve]
			e.ResStart = vs
		case "error":
			e.Error, e.HasError = msg[vs:ve], true
		case "jsonrpc":
			e.Version = msg[vs:ve]
		}
		return nil
	})
	if idAmbiguous {
		e.ID, e.IDStart, e.IDEnd = nil, 0, 0 // no id to answer under
	}
	if err == nil {
		e.Ambiguous = e.Ambiguous || jsonscan.Ambiguous(e.Params, paramsKeys...) ||
			jsonscan.Ambiguous(jsonscan.Member(e.Params, "_meta"), metaKeys...)
	}
	return e, err
}

// MetaSpan returns the offsets in the message of the value of key in
// params._meta.
func (e *Envelope) MetaSpan(key string) (vs, ve int, ok bool) {
	ms, me, _ := jsonscan.MemberSpan(e.Params, "_meta")
	vs, ve, ok = jsonscan.MemberSpan(e.Params[ms:me], key)
	at := e.ParStart + ms
	return at + vs, at + ve, ok
}

// PartialID returns the id of a message of which only the head is at hand
// (an over-long line), if the id comes before the cut.
func PartialID(head []byte) []byte {
	if vs, ve, ok := jsonscan.MemberSpan(head, "id"); ok {
		return bytes.Clone(head[vs:ve])
	}
	return nil
}

// IsResponse reports whether msg, a JSON-RPC message, is a response: the
// first of "method", "result" and "error" among its members is one of the
// latter two. It walks the members only until one of them, so a large
// result is not walked.
func IsResponse(msg []byte) bool {
	k := jsonscan.FirstKey(msg, "method", "result", "error")
	return k == "result" || k == "error"
}
