package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
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
	i := skipSpace(msg, 0)
	if i >= len(msg) {
		return e, errors.New("empty message")
	}
	if msg[i] == '[' {
		end, err := skipValue(msg, i)
		if err != nil {
			return e, err
		}
		if skipSpace(msg, end) != len(msg) {
			return e, errors.New("trailing data after JSON value")
		}
		e.isArray = true
		return e, nil
	}
	if msg[i] != '{' {
		return e, errNotObject
	}
	err := eachMember(msg, i, func(key []byte, vs, ve int) error {
		switch string(key) {
		case "id":
			e.id = msg[vs:ve]
			e.idStart, e.idEnd = vs, ve
		case "method":
			if msg[vs] != '"' {
				return errors.New(`"method" is not a string`)
			}
			m, err := unquote(msg[vs:ve])
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

// eachMember calls fn for every member of the object starting at msg[i],
// with the (unescaped) key and the span of its value. It requires that the
// object is the whole of msg apart from white space.
func eachMember(msg []byte, i int, fn func(key []byte, vs, ve int) error) error {
	end, err := scanObject(msg, i, fn)
	if err != nil {
		return err
	}
	if skipSpace(msg, end) != len(msg) {
		return errors.New("trailing data after JSON value")
	}
	return nil
}

// scanObject walks the object at msg[i] and returns the offset after it.
func scanObject(msg []byte, i int, fn func(key []byte, vs, ve int) error) (int, error) {
	i++ // '{'
	i = skipSpace(msg, i)
	if i < len(msg) && msg[i] == '}' {
		return i + 1, nil
	}
	for {
		i = skipSpace(msg, i)
		if i >= len(msg) || msg[i] != '"' {
			return 0, errors.New("expected object key")
		}
		ke, err := skipString(msg, i)
		if err != nil {
			return 0, err
		}
		key := msg[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			k, err := unquote(msg[i:ke])
			if err != nil {
				return 0, err
			}
			key = []byte(k)
		}
		i = skipSpace(msg, ke)
		if i >= len(msg) || msg[i] != ':' {
			return 0, errors.New("expected ':' after object key")
		}
		vs := skipSpace(msg, i+1)
		ve, err := skipValue(msg, vs)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			if err := fn(key, vs, ve); err != nil {
				return 0, err
			}
		}
		i = skipSpace(msg, ve)
		if i >= len(msg) {
			return 0, errors.New("unterminated object")
		}
		switch msg[i] {
		case ',':
			i++
		case '}':
			return i + 1, nil
		default:
			return 0, errors.New("expected ',' or '}' in object")
		}
	}
}

// member returns the raw value of key in the JSON object obj, or nil.
func member(obj []byte, key string) []byte {
	vs, ve, ok := memberSpan(obj, key)
	if !ok {
		return nil
	}
	return obj[vs:ve]
}

var errFound = errors.New("found")

// memberSpan returns the offsets in obj of the value of key.
func memberSpan(obj []byte, key string) (vs, ve int, ok bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false
	}
	_, _ = scanObject(obj, i, func(k []byte, s, e int) error {
		if string(k) == key {
			vs, ve, ok = s, e, true
			return errFound
		}
		return nil
	})
	return vs, ve, ok
}

// partialID returns the id of a message of which only the head is at hand
// (an over-long line), if the id comes before the cut.
func partialID(head []byte) []byte {
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil
	}
	var id []byte
	_, _ = scanObject(head, i, func(k []byte, s, e int) error {
		if string(k) == "id" {
			id = clone(head[s:e])
			return errFound
		}
		return nil
	})
	return id
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the offset just after the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("unexpected end of message")
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		return scanObject(b, i, nil)
	case c == '[':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			end, err := skipValue(b, skipSpace(b, i))
			if err != nil {
				return 0, err
			}
			i = skipSpace(b, end)
			if i >= len(b) {
				return 0, errors.New("unterminated array")
			}
			switch b[i] {
			case ',':
				i++
			case ']':
				return i + 1, nil
			default:
				return 0, errors.New("expected ',' or ']' in array")
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, nil
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	default:
		return 0, errors.New("invalid character " + strconv.QuoteRune(rune(c)) + " looking for a value")
	}
}

func literal(b []byte, i int, lit string) (int, error) {
	if bytes.HasPrefix(b[i:], []byte(lit)) {
		return i + len(lit), nil
	}
	return 0, errors.New("invalid literal")
}

// skipString returns the offset after the string starting at b[i] (a quote).
// It jumps from quote to quote with bytes.IndexByte, which is what keeps
// large payloads cheap.
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errors.New("unterminated string")
		}
		q := j + k
		// Count the backslashes before the quote: an odd number escapes it.
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

// unquote decodes a JSON string literal.
func unquote(b []byte) (string, error) {
	if bytes.IndexByte(b, '\\') < 0 && len(b) >= 2 {
		return string(b[1 : len(b)-1]), nil
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}
