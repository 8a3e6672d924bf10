package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
)

// DefaultMaxMessage is the size limit of a message when none is
// configured (relay.max_message).
const DefaultMaxMessage = 64 << 20

// headSize is how much of an over-long line a TooLargeError keeps: enough
// for the id of any message that puts it first, as SDKs do.
const headSize = 4096

// bufSize is the read buffer. A line that fits is copied out of it once; a
// longer one is gathered in chunks, then copied into one slice of its exact
// size, so its memory peaks at twice its size. The first chunk is as large
// as the last long line (and an eighth): long lines tend to come alike, and
// one that fits in it is returned as it is, without a second copy.
const (
	bufSize   = 64 << 10
	chunkSize = 1 << 20
)

// Stream is a source of messages: a Reader, or whatever hands a Reader's
// messages on (cmd's era bridge).
type Stream interface {
	Next() ([]byte, error)
}

// Reader reads newline-delimited JSON-RPC messages from a byte stream.
// It is the only framer in mcpflow: every stream, from a client or from a
// child, in every mode, is read by one.
type Reader struct {
	br   *bufio.Reader
	max  int
	err  error // the read error that ended the last line, returned next
	last int   // the size of the last long line
	cut  bool  // the last line ended with the input, not with a newline
}

// Cut reports whether the line Next returned last (as a message or in an
// InvalidError) ended with the input instead of a newline: a peer that
// died while writing it, as a rule.
func (r *Reader) Cut() bool { return r.cut }

// NewReader reads messages of at most max bytes from r (max <= 0 means
// DefaultMaxMessage).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	return &Reader{br: bufio.NewReaderSize(r, bufSize), max: max}
}

// TooLargeError reports a line longer than the limit. The line was
// skipped up to its newline, never held whole; reading goes on after it.
type TooLargeError struct {
	Size int    // the line's length (at least; a line cut by the end of input may be longer)
	Max  int    // the limit
	Head []byte // the line's first headSize bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("message of %d bytes or more exceeds the limit of %d bytes (relay.max_message)", e.Size, e.Max)
}

// ID is the message's id if it comes before the cut, else nil.
func (e *TooLargeError) ID() []byte { return PartialID(e.Head) }

// InvalidError reports a line that is not one JSON value in valid UTF-8;
// reading goes on after it.
type InvalidError struct {
	Line    []byte // the line, for the log
	BadUTF8 bool   // invalid UTF-8 (else: not JSON)
}

func (e *InvalidError) Error() string {
	if e.BadUTF8 {
		return "the message is not valid UTF-8"
	}
	return "the message is not valid JSON"
}

// Next returns the next message: one line without its line ending and the
// white space around it, never blank, valid JSON in valid UTF-8, at most
// the limit long. The slice is the caller's. A *TooLargeError or an
// *InvalidError reports a line that was skipped: call Next again. At the
// end of the input Next returns io.EOF (a last line without a newline is
// still returned first); any other error is the reader's, and ends the
// stream.
func (r *Reader) Next() ([]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		line, err := r.line()
		r.cut = err != nil
		if err != nil {
			var tl *TooLargeError
			if errors.As(err, &tl) {
				return nil, err
			}
			r.err = err
			if len(line) == 0 || !errors.Is(err, io.EOF) {
				return nil, err
			}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !jsonscan.Valid(line) {
			return nil, &InvalidError{Line: line, BadUTF8: !utf8.Valid(line)}
		}
		return line, nil
	}
}

// line reads up to the next newline. It returns the line (a copy, without
// the newline) and the read error that ended it, if any; a line over the
// limit is skipped and reported as a *TooLargeError.
func (r *Reader) line() ([]byte, error) {
	b, err := r.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		b = bytes.TrimSuffix(b, []byte{'\n'})
		if len(b) > r.max {
			return nil, &TooLargeError{Size: len(b), Max: r.max, Head: head(b)}
		}
		return bytes.Clone(b), err
	}
	chunks := [][]byte{append(make([]byte, 0, max(chunkSize, r.last+r.last/8)), b...)}
	size := len(b)
	for errors.Is(err, bufio.ErrBufferFull) {
		if size > r.max {
			return nil, r.skip(size, head(chunks[0]))
		}
		b, err = r.br.ReadSlice('\n')
		size += len(b)
		for len(b) > 0 {
			last := &chunks[len(chunks)-1]
			if len(*last) == cap(*last) {
				chunks = append(chunks, make([]byte, 0, chunkSize))
				last = &chunks[len(chunks)-1]
			}
			n := min(len(b), cap(*last)-len(*last))
			*last = append(*last, b[:n]...)
			b = b[n:]
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err // a read error cut the line: it is no message
	}
	r.last = size
	line := chunks[0]
	if len(chunks) > 1 {
		line = make([]byte, 0, size)
		for _, c := range chunks {
			line = append(line, c...)
		}
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if len(line) > r.max {
		return nil, &TooLargeError{Size: len(line), Max: r.max, Head: head(line)}
	}
	return line, err
}

// skip discards the rest of an over-long line, size bytes of which were read.
func (r *Reader) skip(size int, head []byte) error {
	for {
		b, err := r.br.ReadSlice('\n')
		size += len(b)
		switch {
		case err == nil:
			return &TooLargeError{Size: size - 1, Max: r.max, Head: head}
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			r.err = err
			return &TooLargeError{Size: size, Max: r.max, Head: head}
		default:
			return err
		}
	}
}

func head(b []byte) []byte { return bytes.Clone(b[:min(len(b), headSize)]) }
