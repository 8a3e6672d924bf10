package relay

import (
	"bytes"
	"errors"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
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

// chunkScanner walks a JSON object fed to it in pieces, as a long line
// is read. It checks the same structure as peekEnvelope (terminated
// strings, matched brackets, one object and nothing after it) and collects
// the top-level id and method and whether result or error is present.
// Inside strings it jumps from quote to quote with bytes.IndexByte, as
// SkipString does. Fed while the line is still arriving, its cost hides
// behind the writer's: only the last piece is scanned after the last byte.
type chunkScanner struct {
	e        chunkEnvelope
	err      error
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
	// valid checks, piece by piece too, that the line is valid JSON in
	// valid UTF-8, so that no invalid line is forwarded from its chunks.
	valid jsonStream
}

// reset readies the scanner for a new line.
func (s *chunkScanner) reset() {
	*s = chunkScanner{stack: s.stack[:0], strBuf: s.strBuf[:0], valid: jsonStream{stack: s.valid.stack[:0], carry: s.valid.carry[:0]}}
}

func (s *chunkScanner) endValue() {
	if s.capture == "" {
		return
	}
	v := bytes.TrimSpace(s.val)
	switch s.capture {
	case "id":
		s.e.id = clone(v)
	case "method":
		if m, err := jsonscan.Unquote(v); err == nil {
			s.e.method = m
		}
	}
	s.capture, s.val = "", nil
}

// feed scans the next piece of the line. After an error it does nothing.
func (s *chunkScanner) feed(c []byte) {
	if s.err != nil {
		return
	}
	if s.valid.feed(c); s.valid.bad {
		s.err = errors.New("not valid JSON")
		return
	}
	i := 0
	for i < len(c) {
		if s.inStr {
			k := bytes.IndexByte(c[i:], '"')
			seg := c[i:]
			if k >= 0 {
				seg = c[i : i+k]
			}
			// Backslashes before the quote: those in seg, or carried
			// over from the previous piece when seg is empty.
			n := 0
			for p := len(seg) - 1; p >= 0 && seg[p] == '\\'; p-- {
				n++
			}
			if n == len(seg) {
				n += s.slashes
			}
			if s.wantStr {
				s.strBuf = append(s.strBuf, seg...)
			}
			if s.capture != "" {
				s.val = append(s.val, seg...)
			}
			if k < 0 {
				s.slashes = n
				return
			}
			if s.wantStr {
				s.strBuf = append(s.strBuf, '"')
			}
			if s.capture != "" {
				s.val = append(s.val, '"')
			}
			i += k + 1
			s.slashes = 0
			if n%2 == 1 {
				continue // an escaped quote
			}
			s.inStr = false
			if s.wantStr && s.keyNext && len(s.stack) == 1 {
				s.key, _ = unquoteBytes(s.strBuf)
				s.keyNext = false
			}
			s.wantStr = false
			continue
		}
		b := c[i]
		i++
		if s.finished {
			if b == ' ' || b == '\t' || b == '\r' || b == '\n' {
				continue
			}
			s.err = errors.New("trailing data after JSON value")
			return
		}
		if s.capture != "" && len(s.stack) >= 1 && !(len(s.stack) == 1 && (b == ',' || b == '}')) {
			s.val = append(s.val, b)
		}
		switch b {
		case '"':
			s.inStr = true
			s.wantStr = s.keyNext && len(s.stack) == 1
			if s.wantStr {
				s.strBuf = append(s.strBuf[:0], '"')
			}
		case '{', '[':
			if !s.started {
				if b != '{' {
					s.err = errNotObject
					return
				}
				s.started, s.keyNext = true, true
			}
			s.stack = append(s.stack, b)
		case '}', ']':
			if len(s.stack) == 0 {
				s.err = errors.New("unbalanced brackets")
				return
			}
			open := s.stack[len(s.stack)-1]
			if open == '{' && b != '}' || open == '[' && b != ']' {
				s.err = errors.New("mismatched brackets")
				return
			}
			s.stack = s.stack[:len(s.stack)-1]
			if len(s.stack) == 0 {
				s.endValue()
				s.finished = true
			}
		case ':':
			if len(s.stack) == 1 {
				switch string(s.key) {
				case "id", "method":
					s.capture, s.val = string(s.key), nil
				case "result":
					s.e.hasResult = true
				case "error":
					s.e.hasError = true
				}
			}
		case ',':
			if len(s.stack) == 1 {
				s.endValue()
				s.keyNext = true
			}
		case ' ', '\t', '\r', '\n':
		default:
			if !s.started {
				s.err = errNotObject
				return
			}
		}
	}
}

// result is what the scan found, once the whole line was fed.
func (s *chunkScanner) result() (chunkEnvelope, error) {
	if s.err != nil {
		return s.e, s.err
	}
	if s.inStr || !s.finished {
		return s.e, errors.New("unterminated JSON value")
	}
	if !s.valid.valid() {
		return s.e, errors.New("not valid JSON")
	}
	return s.e, nil
}

// scanChunks scans a line given in chunks (see chunkScanner), and checks
// that it is valid JSON.
func scanChunks(chunks [][]byte) (chunkEnvelope, error) {
	var s chunkScanner
	for _, c := range chunks {
		s.feed(c)
	}
	return s.result()
}

func unquoteBytes(b []byte) ([]byte, error) {
	s, err := jsonscan.Unquote(b)
	return []byte(s), err
}

// fromChildChunks handles a line longer than the read buffer, scanned
// while it was read. A response the relay forwards unchanged is written
// from its chunks (which go back to the pool once written); anything else
// is joined and takes the usual path.
func (r *switchboard) fromChildChunks(c *child, chunks [][]byte, env chunkEnvelope, scanErr error) {
	if scanErr == nil && env.isResponse() && r.batches.open.Load() == 0 && r.cfg.Traffic == nil && r.forwardChunks(c, env, chunks) {
		return
	}
	r.fromChild(c, linePool.join(chunks))
}

func (r *switchboard) forwardChunks(c *child, env chunkEnvelope, chunks [][]byte) bool {
	r.out.beginInline()
	defer r.out.endInline()
	r.mu.Lock()
	defer r.mu.Unlock()
	key := string(env.id)
	p, ok := r.ids.lookup(key, c.gen)
	if !ok || !(p.kind == kindPlain || p.kind == kindToolsCall && !r.tools.hasNotices()) {
		return false
	}
	r.ids.forget(key)
	c.markAnswered()
	if r.trace != nil {
		size := 0
		for _, ch := range chunks {
			size += len(ch)
		}
		r.trace.msg("server", &envelope{id: env.id}, size, p)
	}
	r.out.sendParts(chunks)
	return true
}
