package jsonscan

import (
	"encoding/binary"
	"unicode/utf8"
)

// maxDepth is encoding/json's limit on nested arrays and objects.
const maxDepth = 10000

// Valid reports whether b is exactly one JSON value (RFC 8259), with
// optional white space around it, in valid UTF-8: json.Valid(b) &&
// utf8.Valid(b), in one pass. Every message mcpflow relays goes through it, so it
// is written for speed: a loop over bytes with no call per byte
// (BENCHMARKS.md has the comparison with encoding/json).
func Valid(b []byte) bool {
	var stackBuf [32]byte
	stack := stackBuf[:0] // open containers: '{' or '['
	n := len(b)
	i := 0
	var ok bool
value:
	i = SkipSpace(b, i)
	if i >= n {
		return false
	}
	switch c := b[i]; c {
	case '{', '[':
		if len(stack)+1 > maxDepth {
			return false
		}
		i = SkipSpace(b, i+1)
		if i < n && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
			i++
			goto end
		}
		stack = append(stack, c)
		if c == '{' {
			goto key
		}
		goto value
	case '"':
		if i, ok = validString(b, i); !ok {
			return false
		}
	case 't', 'f', 'n':
		if i, ok = validLiteral(b, i, literals[c]); !ok {
			return false
		}
	default:
		if i, ok = validNumber(b, i); !ok {
			return false
		}
	}
end: // after a value
	i = SkipSpace(b, i)
	if len(stack) == 0 {
		return i == n
	}
	if i >= n {
		return false
	}
	switch top := stack[len(stack)-1]; b[i] {
	case ',':
		i++
		if top == '{' {
			goto key
		}
		goto value
	case '}', ']':
		if b[i] != top+2 {
			return false
		}
		stack = stack[:len(stack)-1]
		i++
		goto end
	default:
		return false
	}
key:
	i = SkipSpace(b, i)
	if i >= n || b[i] != '"' {
		return false
	}
	if i, ok = validString(b, i); !ok {
		return false
	}
	i = SkipSpace(b, i)
	if i >= n || b[i] != ':' {
		return false
	}
	i++
	goto value
}

// literals are the JSON literals by their first byte.
var literals = [256]string{'t': "true", 'f': "false", 'n': "null"}

// validLiteral checks that b[i:] starts with lit and returns the index
// after it.
func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// StringBody checks a string's body, b after its opening quote: the
// offset after its closing quote, or, when it is not valid or b holds no
// closing quote, the offset where the walk stopped.
func StringBody(b []byte) (int, bool) { return validString(b, -1) }

// validString checks the string starting at b[i] (a quote) and returns
// the index after its closing quote.
func validString(b []byte, i int) (int, bool) {
	n := len(b)
	i++
	for i < n {
		if i = skipPlain(b, i); i == n {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= n {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		}
	}
	return i, false
}

// validNumber checks the number starting at b[i]:
// -? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	n := len(b)
	if i < n && b[i] == '-' {
		i++
	}
	switch {
	case i < n && b[i] == '0':
		i++
	case i < n && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < n && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// skipPlain returns the offset of the first byte at or after b[i] that
// needs a look in a string (a quote, a backslash, a control character,
// non-ASCII), eight bytes at a time.
func skipPlain(b []byte, i int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(lo*'"'), x^(lo*'\\')
		if ((x-lo*0x20)&^x|(q-lo)&^q|(bs-lo)&^bs|x)&hi != 0 {
			break
		}
	}
	for i < len(b) && b[i] >= 0x20 && b[i] < utf8.RuneSelf && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}
