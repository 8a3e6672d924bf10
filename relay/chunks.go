package relay

import (
	"bytes"
	"errors"
)

// Long lines from the child (over the read buffer, 256 KiB) arrive as a
// list of chunks. A response that the relay forwards unchanged is written
// from those chunks as they are, so a 95 MB result costs its own size in
// memory once, not twice; everything else is joined into one slice first.

// chunkEnvelope is what scanChunks learns about a message in chunks.
type chunkEnvelope struct {
	id        []byte // raw id, copied
	method    string
	hasResult bool
	hasError  bool
}

func (e *chunkEnvelope) isResponse() bool { return e.method == "" && (e.hasResult || e.hasError) }

// scanChunks walks a JSON object split across chunks. It checks the same
// structure as peekEnvelope (terminated strings, matched brackets, one
// object and nothing after it) and collects the top-level id and method and
// whether result or error is present. Inside strings it jumps from quote to
// quote with bytes.IndexByte, as skipString does.
func scanChunks(chunks [][]byte) (chunkEnvelope, error) {
	var (
		e        chunkEnvelope
		stack    []byte // open brackets
		inStr    bool
		slashes  int  // backslashes right before the current position, in a string
		started  bool // the top-level object was opened
		finished bool // ... and closed
		keyNext  bool // at depth 1, the next string is a key
		key      []byte
		capture  string // top-level key whose value is being captured
		val      []byte
		strBuf   []byte // the current string's bytes, when it is a key or a captured value
		wantStr  bool
	)
	endValue := func() {
		if capture == "" {
			return
		}
		v := bytes.TrimSpace(val)
		switch capture {
		case "id":
			e.id = clone(v)
		case "method":
			if s, err := unquote(v); err == nil {
				e.method = s
			}
		}
		capture, val = "", nil
	}
	for _, c := range chunks {
		i := 0
		for i < len(c) {
			if inStr {
				k := bytes.IndexByte(c[i:], '"')
				seg := c[i:]
				if k >= 0 {
					seg = c[i : i+k]
				}
				// Backslashes before the quote: those in seg, or carried
				// over from the previous chunk when seg is empty.
				n := 0
				for p := len(seg) - 1; p >= 0 && seg[p] == '\\'; p-- {
					n++
				}
				if n == len(seg) {
					n += slashes
				}
				if wantStr {
					strBuf = append(strBuf, seg...)
				}
				if capture != "" {
					val = append(val, seg...)
				}
				if k < 0 {
					slashes = n
					break
				}
				if wantStr {
					strBuf = append(strBuf, '"')
				}
				if capture != "" {
					val = append(val, '"')
				}
				i += k + 1
				slashes = 0
				if n%2 == 1 {
					continue // an escaped quote
				}
				inStr = false
				if wantStr && keyNext && len(stack) == 1 {
					key, _ = unquoteBytes(strBuf)
					keyNext = false
				}
				wantStr = false
				continue
			}
			b := c[i]
			i++
			if finished {
				if b == ' ' || b == '\t' || b == '\r' || b == '\n' {
					continue
				}
				return e, errors.New("trailing data after JSON value")
			}
			if capture != "" && len(stack) >= 1 && !(len(stack) == 1 && (b == ',' || b == '}')) {
				val = append(val, b)
			}
			switch b {
			case '"':
				inStr = true
				wantStr = keyNext && len(stack) == 1
				if wantStr {
					strBuf = append(strBuf[:0], '"')
				}
			case '{', '[':
				if !started {
					if b != '{' {
						return e, errNotObject
					}
					started, keyNext = true, true
				}
				stack = append(stack, b)
			case '}', ']':
				if len(stack) == 0 {
					return e, errors.New("unbalanced brackets")
				}
				open := stack[len(stack)-1]
				if open == '{' && b != '}' || open == '[' && b != ']' {
					return e, errors.New("mismatched brackets")
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					endValue()
					finished = true
				}
			case ':':
				if len(stack) == 1 {
					switch string(key) {
					case "id", "method":
						capture, val = string(key), nil
					case "result":
						e.hasResult = true
					case "error":
						e.hasError = true
					}
				}
			case ',':
				if len(stack) == 1 {
					endValue()
					keyNext = true
				}
			case ' ', '\t', '\r', '\n':
			default:
				if !started {
					return e, errNotObject
				}
			}
		}
	}
	if inStr || !finished {
		return e, errors.New("unterminated JSON value")
	}
	return e, nil
}

func unquoteBytes(b []byte) ([]byte, error) {
	s, err := unquote(b)
	return []byte(s), err
}

// joinChunks returns the chunks as one slice.
func joinChunks(chunks [][]byte) []byte {
	if len(chunks) == 1 {
		return chunks[0]
	}
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	out := make([]byte, 0, n)
	for i, c := range chunks {
		out = append(out, c...)
		chunks[i] = nil
	}
	return out
}

// fromChildChunks handles a line longer than the read buffer. A response
// the relay forwards unchanged is written from its chunks; anything else is
// joined and takes the usual path.
func (r *Relay) fromChildChunks(c *child, chunks [][]byte) {
	env, err := scanChunks(chunks)
	if err == nil && env.isResponse() && r.openBatches.Load() == 0 && r.forwardChunks(c, env, chunks) {
		return
	}
	r.fromChild(c, joinChunks(chunks))
}

func (r *Relay) forwardChunks(c *child, env chunkEnvelope, chunks [][]byte) bool {
	r.out.beginInline()
	defer r.out.endInline()
	r.mu.Lock()
	defer r.mu.Unlock()
	key := string(env.id)
	p, ok := r.pending[key]
	if !ok || p.gen != c.gen || !(p.kind == kindPlain || p.kind == kindToolsCall && len(r.notices) == 0) {
		return false
	}
	delete(r.pending, key)
	r.out.sendParts(chunks)
	return true
}
