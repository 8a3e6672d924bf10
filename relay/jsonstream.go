package relay

import (
	"unicode/utf8"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

// jsonStream checks, piece by piece, that a line read in chunks is exactly
// one JSON value in valid UTF-8: what jsonscan.Valid checks of a whole line,
// for the long lines the relay never joins. Feed every piece in order,
// then ask valid. String contents, the bulk of a long message, are scanned
// by a tight loop; only escapes, multi-byte characters and tokens cut by a
// piece boundary are carried over.
type jsonStream struct {
	stack []byte // open containers: '{' or '['
	st    streamState
	// strNext is the state after the current string: streamAfter for a
	// value, streamColon for a key.
	strNext streamState
	carry   []byte // a token, escape or character cut by a piece boundary
	bad     bool
}

type streamState uint8

const (
	streamValue    streamState = iota // a value is expected
	streamArrFirst                    // after '[': a value or ']'
	streamObjFirst                    // after '{': a key or '}'
	streamKey                         // after ',' in an object: a key
	streamColon                       // after a key
	streamAfter                       // after a value: ',', a closing bracket, or the end
	streamString                      // in a string
	streamEscape                      // in a string, after '\' (carry holds the escape so far)
	streamRune                        // in a string, in a multi-byte character (carry holds it)
	streamToken                       // in a number or literal (carry holds it)
)

// feed checks the next piece.
func (s *jsonStream) feed(b []byte) {
	n := len(b)
	i := 0
	for i < n && !s.bad {
		switch s.st {
		case streamString:
			// The fast path: plain ASCII up to a quote, a backslash, a
			// control character or a multi-byte character.
			for i < n {
				c := b[i]
				if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
					break
				}
				i++
			}
			if i >= n {
				return
			}
			switch c := b[i]; {
			case c == '"':
				s.st = s.strNext
				i++
			case c == '\\':
				s.st = streamEscape
				s.carry = append(s.carry[:0], c)
				i++
			case c < 0x20:
				s.bad = true
			default:
				if utf8.FullRune(b[i:]) {
					r, size := utf8.DecodeRune(b[i:])
					if r == utf8.RuneError && size == 1 {
						s.bad = true
						return
					}
					i += size
					continue
				}
				s.st = streamRune
				s.carry = append(s.carry[:0], b[i:]...)
				return
			}
		case streamEscape:
			s.carry = append(s.carry, b[i])
			i++
			switch {
			case len(s.carry) == 2 && s.carry[1] != 'u':
				switch s.carry[1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					s.st = streamString
				default:
					s.bad = true
				}
			case len(s.carry) > 2:
				if !jsonscan.IsHex(s.carry[len(s.carry)-1]) {
					s.bad = true
				} else if len(s.carry) == 6 {
					s.st = streamString
				}
			}
		case streamRune:
			s.carry = append(s.carry, b[i])
			i++
			if utf8.FullRune(s.carry) {
				if r, size := utf8.DecodeRune(s.carry); r == utf8.RuneError && size == 1 || size != len(s.carry) {
					s.bad = true
				}
				s.st = streamString
			}
		case streamToken:
			for i < n && !isDelim(b[i]) {
				s.carry = append(s.carry, b[i])
				i++
			}
			if i < n {
				s.endToken()
			}
		default:
			i = s.structural(b, i)
		}
	}
}

// structural handles b[i] outside strings and tokens; it returns the next
// index.
func (s *jsonStream) structural(b []byte, i int) int {
	c := b[i]
	if c == ' ' || c == '\n' || c == '\r' || c == '\t' {
		return i + 1
	}
	switch s.st {
	case streamObjFirst:
		switch c {
		case '}':
			s.stack = s.stack[:len(s.stack)-1]
			s.st = streamAfter
		case '"':
			s.st, s.strNext = streamString, streamColon
		default:
			s.bad = true
		}
		return i + 1
	case streamKey:
		if c != '"' {
			s.bad = true
		}
		s.st, s.strNext = streamString, streamColon
		return i + 1
	case streamColon:
		if c != ':' {
			s.bad = true
		}
		s.st = streamValue
		return i + 1
	case streamAfter:
		if len(s.stack) == 0 {
			s.bad = true // something after the value
			return i + 1
		}
		top := s.stack[len(s.stack)-1]
		switch {
		case c == ',' && top == '{':
			s.st = streamKey
		case c == ',':
			s.st = streamValue
		case c == top+2: // '}' is '{'+2, ']' is '['+2
			s.stack = s.stack[:len(s.stack)-1]
		default:
			s.bad = true
		}
		return i + 1
	case streamArrFirst:
		if c == ']' {
			s.stack = s.stack[:len(s.stack)-1]
			s.st = streamAfter
			return i + 1
		}
	}
	// A value.
	switch c {
	case '{', '[':
		if len(s.stack)+1 > jsonscan.MaxDepth {
			s.bad = true
		}
		s.stack = append(s.stack, c)
		if c == '{' {
			s.st = streamObjFirst
		} else {
			s.st = streamArrFirst
		}
	case '"':
		s.st, s.strNext = streamString, streamAfter
	default:
		s.st = streamToken
		s.carry = append(s.carry[:0], c)
	}
	return i + 1
}

// endToken checks the number or literal in carry.
func (s *jsonStream) endToken() {
	t := s.carry
	var end int
	ok := false
	switch t[0] {
	case 't':
		end, ok = jsonscan.ValidLiteral(t, 0, "true")
	case 'f':
		end, ok = jsonscan.ValidLiteral(t, 0, "false")
	case 'n':
		end, ok = jsonscan.ValidLiteral(t, 0, "null")
	default:
		end, ok = jsonscan.ValidNumber(t, 0)
	}
	if !ok || end != len(t) {
		s.bad = true
	}
	s.st = streamAfter
}

func isDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ':' || c == '"' || c == '[' || c == '{'
}

// valid reports whether the pieces fed were exactly one JSON value.
func (s *jsonStream) valid() bool {
	if s.bad {
		return false
	}
	if s.st == streamToken {
		s.endToken()
		if s.bad {
			return false
		}
	}
	return s.st == streamAfter && len(s.stack) == 0
}

// validChunks reports whether the chunks, joined, are one JSON value in
// valid UTF-8.
func validChunks(chunks [][]byte) bool {
	var s jsonStream
	for _, c := range chunks {
		s.feed(c)
	}
	return s.valid()
}
