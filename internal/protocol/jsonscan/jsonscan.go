// Package jsonscan walks JSON without decoding it: the members of an
// object as raw spans, the end of a value. It is how mcpflow reads the
// envelope of a message (its id, method, params) and rewrites parts of it
// while a large result passes untouched: each value is skipped in one pass,
// strings from quote to quote with bytes.IndexByte.
//
// The scanners check structure (balanced brackets, terminated strings, the
// punctuation between members), not the grammar of numbers and literals:
// give them messages that are valid JSON, or that a validator checks too.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
)

// Members calls fn for every member of the object starting at msg[i],
// with the (unescaped) key and the span of its value. It requires that the
// object is the whole of msg apart from white space.
func Members(msg []byte, i int, fn func(key []byte, vs, ve int) error) error {
	end, err := object(msg, i, nil, fn)
	if err != nil {
		return err
	}
	if SkipSpace(msg, end) != len(msg) {
		return errors.New("trailing data after JSON value")
	}
	return nil
}

// object walks the object at msg[i], calling fn (when set) for each
// member, and returns the offset after it; it stops with ErrFound before
// the value of the first key that stop (when set) reports.
func object(msg []byte, i int, stop func(key []byte) bool, fn func(key []byte, vs, ve int) error) (int, error) {
	i++ // '{'
	i = SkipSpace(msg, i)
	if i < len(msg) && msg[i] == '}' {
		return i + 1, nil
	}
	for {
		i = SkipSpace(msg, i)
		if i >= len(msg) || msg[i] != '"' {
			return 0, errors.New("expected object key")
		}
		ke, err := skipString(msg, i)
		if err != nil {
			return 0, err
		}
		key := msg[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			k, err := Unquote(msg[i:ke])
			if err != nil {
				return 0, err
			}
			key = []byte(k)
		}
		if stop != nil && stop(key) {
			return 0, ErrFound
		}
		i = SkipSpace(msg, ke)
		if i >= len(msg) || msg[i] != ':' {
			return 0, errors.New("expected ':' after object key")
		}
		vs := SkipSpace(msg, i+1)
		ve, err := skipValue(msg, vs)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			if err := fn(key, vs, ve); err != nil {
				return 0, err
			}
		}
		i = SkipSpace(msg, ve)
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

// Member returns the raw value of key in the JSON object obj, or nil.
func Member(obj []byte, key string) []byte {
	vs, ve, ok := MemberSpan(obj, key)
	if !ok {
		return nil
	}
	return obj[vs:ve]
}

// ErrFound is what a callback of Members returns to stop the walk early.
var ErrFound = errors.New("found")

// MemberSpan returns the offsets in obj of the value of key.
func MemberSpan(obj []byte, key string) (vs, ve int, ok bool) {
	each(obj, nil, func(k []byte, s, e int) error {
		if string(k) == key {
			vs, ve, ok = s, e, true
			return ErrFound
		}
		return nil
	})
	return vs, ve, ok
}

// each walks the members of obj, when it is an object, until an error.
func each(obj []byte, stop func(key []byte) bool, fn func(key []byte, vs, ve int) error) {
	if i := SkipSpace(obj, 0); i < len(obj) && obj[i] == '{' {
		_, _ = object(obj, i, stop, fn)
	}
}

// SkipSpace returns the offset of the first byte at or after b[i] that is
// not JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
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
		return object(b, i, nil, nil)
	case c == '[':
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			end, err := skipValue(b, SkipSpace(b, i))
			if err != nil {
				return 0, err
			}
			i = SkipSpace(b, end)
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
	case c == 't' || c == 'f' || c == 'n':
		if j, ok := validLiteral(b, i, literals[c]); ok {
			return j, nil
		}
		return 0, errors.New("invalid literal")
	default:
		return 0, errors.New("invalid character " + strconv.QuoteRune(rune(c)) + " looking for a value")
	}
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

// Unquote decodes a JSON string literal.
func Unquote(b []byte) (string, error) {
	if bytes.IndexByte(b, '\\') < 0 && len(b) >= 2 {
		return string(b[1 : len(b)-1]), nil
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// FirstKey returns the first member name of the object obj, at its top
// level, that is one of keys, without walking that member's value (so a
// large value after it costs nothing); "" when none is, or obj is no
// object.
func FirstKey(obj []byte, keys ...string) string {
	first := ""
	each(obj, func(k []byte) bool {
		if n := slices.Index(keys, string(k)); n >= 0 {
			first = keys[n]
		}
		return first != ""
	}, nil)
	return first
}

// Ambiguous reports whether the object obj names one of keys in a way
// that peers read differently: twice (encoding/json keeps the last, a
// scanner the first), or spelled in another case (encoding/json, and so
// the Go SDK, matches member names case-insensitively; JSON.parse does
// not). obj that is no object is not ambiguous.
func Ambiguous(obj []byte, keys ...string) bool {
	var seen uint64 // keys found, by index (at most 64 keys)
	amb := false
	each(obj, nil, func(k []byte, _, _ int) error {
		for n, w := range keys {
			if !bytes.EqualFold(k, []byte(w)) {
				continue
			}
			if string(k) != w || seen&(1<<n) != 0 {
				amb = true
				return ErrFound
			}
			seen |= 1 << n
		}
		return nil
	})
	return amb
}
