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

// HeadSize is how much of an over-long line a TooLargeError keeps: enough
// for the id of any message that puts it first, as SDKs do.
const HeadSize = 4096

// bufSize is the read buffer. A longer line is gathered in a Spool: its
// long strings are never in the heap.
const bufSize = 64 << 10

// Stream is a source of messages: a Reader, or what hands its messages on.
type Stream interface {
	Next() ([]byte, error)
}

// Reader reads newline-delimited JSON-RPC messages from a byte stream.
// It is the only framer in mcpflow: every stream, from a client or from a
// child, in every mode, is read by one.
type Reader struct {
	// Stub: a line longer than the buffer comes as a stub, its long
	// strings left in a Spool (a child's output); else whole (a client's:
	// mcpflow may write it to a child again, after a restart).
	Stub bool

	br  *bufio.Reader
	max int
	err error // the read error that ended the last line, returned next
	cut bool  // the last line ended with the input, not with a newline
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
	Head []byte // the line's first HeadSize bytes
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
			var bad *InvalidError
			if errors.As(err, &bad) {
				r.cut = r.err != nil
			}
			if errors.As(err, &tl) || bad != nil {
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
	sp, hd, size := &Spool{}, head(b), 0
	defer sp.Close()
	for {
		chunk := b
		if err == nil {
			chunk = b[:len(b)-1] // the newline
		}
		if size += len(chunk); size <= r.max { // past the limit, the line is skipped
			_, _ = sp.Write(chunk)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		b, err = r.br.ReadSlice('\n')
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err // a read error cut the line: it is no message
	}
	if size > r.max {
		r.err = err
		return nil, &TooLargeError{Size: size, Max: r.max, Head: hd}
	}
	line, merr := sp.Message(!r.Stub)
	if merr != nil {
		r.err = err
		return nil, merr
	}
	return line, err
}

func head(b []byte) []byte { return bytes.Clone(b[:min(len(b), HeadSize)]) }
