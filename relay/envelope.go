package relay

import (
	"errors"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

// envelope is what the relay needs to know about a JSON-RPC message to route
// it: its id, its method, and whether it is a response. It is read by
// scanning the top level of the object and skipping every value it does not
// need, so a 20 MiB tool result is walked once and never decoded.
type envelope struct {
	id       []byte // raw JSON of "id"; nil when absent
	idStart  int    // byte offsets of the id value in the message
	idEnd    int
	method   string
	params   []byte // raw JSON of "params"; nil when absent
	result   []byte // raw JSON of "result"; nil when absent
	resStart int    // offset of result in the message
	parStart int    // offset of params in the message
	hasError bool
	isArray  bool // a batch: the other fields are unset
}

// isRequest reports whether the message is a request (method and id).
func (e *envelope) isRequest() bool { return e.method != "" && e.id != nil }

// isNotification reports whether the message is a notification.
func (e *envelope) isNotification() bool { return e.method != "" && e.id == nil }

// isResponse reports whether the message is a response (result or error, no method).
func (e *envelope) isResponse() bool {
	return e.method == "" && (e.result != nil || e.hasError)
}

var errNotObject = errors.New("not a JSON object")

// peekEnvelope scans msg, which must be a complete JSON value, and returns
// its envelope. It checks the structure of the whole message (balanced
// brackets, terminated strings, no trailing data) but not the grammar of
// numbers and literals.
func peekEnvelope(msg []byte) (envelope, error) {
	var e envelope
	i := jsonscan.SkipSpace(msg, 0)
	if i >= len(msg) {
		return e, errors.New("empty message")
	}
	if msg[i] == '[' {
		end, err := jsonscan.SkipValue(msg, i)
		if err != nil {
			return e, err
		}
		if jsonscan.SkipSpace(msg, end) != len(msg) {
			return e, errors.New("trailing data after JSON value")
		}
		e.isArray = true
		return e, nil
	}
	if msg[i] != '{' {
		return e, errNotObject
	}
	err := jsonscan.Members(msg, i, func(key []byte, vs, ve int) error {
		switch string(key) {
		case "id":
			e.id = msg[vs:ve]
			e.idStart, e.idEnd = vs, ve
		case "method":
			if msg[vs] != '"' {
				return errors.New(`"method" is not a string`)
			}
			m, err := jsonscan.Unquote(msg[vs:ve])
			if err != nil {
				return err
			}
			e.method = m
		case "params":
			e.params = msg[vs:ve]
			e.parStart = vs
		case "result":
			e.result = msg[vs:ve]
			e.resStart = vs
		case "error":
			e.hasError = true
		}
		return nil
	})
	if err != nil {
		return e, err
	}
	return e, nil
}

// partialID returns the id of a message of which only the head is at hand
// (an over-long line), if the id comes before the cut.
func partialID(head []byte) []byte {
	i := jsonscan.SkipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil
	}
	var id []byte
	_, _ = jsonscan.Object(head, i, func(k []byte, s, e int) error {
		if string(k) == "id" {
			id = clone(head[s:e])
			return jsonscan.ErrFound
		}
		return nil
	})
	return id
}
