package httpmcp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// sseReader reads the events of a text/event-stream body (the WHATWG
// event stream format): lines of "field: value", an event ending at a
// blank line, the data of an event its data lines joined with "\n". Lines
// may be of any length: an event's data is gathered in a wire.Spool (a
// long one comes as a stub), up to the limit; past it the rest of the event is read without being
// kept, or, with cutLarge, the stream is read no further: that event
// comes (tooLarge, with the size read so far) with errCutLarge.
type sseReader struct {
	br       *bufio.Reader
	max      int
	lastID   string        // the last event id the server gave
	retry    time.Duration // the server's reconnection time; 0 = none given
	cutLarge bool
}

var errCutLarge = errors.New("an event over the size limit cut the stream")

// sseEvent is one message event: its data (white space around it
// trimmed), or, when the data was over the limit, tooLarge.
type sseEvent struct {
	data     []byte
	tooLarge *wire.TooLargeError
}

const (
	sseBufSize  = 32 << 10 // the read buffer: longer lines are read in pieces of it
	sseFieldMax = 1024     // what is kept of an event, id or retry field
)

func newSSE(body io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(body, sseBufSize), max: max}
}

// each calls fn for every message event (named "message", or not named)
// with data, until the stream ends: io.EOF at its end, io.ErrUnexpectedEOF
// when it ended inside an event (that event is dropped), or the read
// error that cut it.
func (r *sseReader) each(fn func(sseEvent)) error {
	for {
		ev, err := r.next()
		if ev.tooLarge != nil || ev.data != nil {
			fn(ev)
		}
		if err != nil {
			return err
		}
	}
}

// next returns the next message event with data.
func (r *sseReader) next() (sseEvent, error) {
	var data wire.Spool   // the event's data: a long one outside the heap
	var head, name []byte // head: the start of the data once it is over the limit
	defer data.Close()
	hasData, size := false, 0
	add := func(b []byte) bool {
		if size += len(b); head == nil && size > r.max {
			_, _ = data.Write(b[:min(len(b), wire.HeadSize)])
			head = data.Head()
			data.Close()
		} else if head == nil {
			_, _ = data.Write(b)
		}
		return head == nil || !r.cutLarge
	}
	tooLarge := func() sseEvent {
		return sseEvent{tooLarge: &wire.TooLargeError{Size: size, Max: r.max, Head: head}}
	}
	for {
		line, full, err := r.piece()
		if err != nil {
			if errors.Is(err, io.EOF) && (hasData || len(name) > 0) {
				err = io.ErrUnexpectedEOF
			}
			return sseEvent{}, err
		}
		if full && len(trimEOL(line)) == 0 { // the end of an event
			switch {
			case !hasData || size == 0 || (len(name) > 0 && string(name) != "message"):
			case head != nil:
				return tooLarge(), nil
			default:
				msg, err := data.Message(false)
				var bad *wire.InvalidError
				if errors.As(err, &bad) {
					msg = bad.Line // no message: the caller says so
				}
				return sseEvent{data: bytes.TrimSpace(msg)}, nil
			}
			data.Close()
			head, name, hasData, size = nil, nil, false, 0
			continue
		}
		field, value, colon := bytes.Cut(line, []byte{':'})
		switch {
		case colon:
			value = bytes.TrimPrefix(value, []byte{' '})
		case full:
			field = trimEOL(line)
		default:
			field = nil // a field name longer than the buffer: no field of ours
		}
		var v []byte
		keep := func(b []byte) bool {
			v = append(v, b[:min(len(b), sseFieldMax-len(v))]...)
			return true
		}
		switch string(field) {
		case "data":
			if hasData {
				add([]byte{'\n'})
			}
			hasData, keep = true, add
		case "event", "id", "retry":
		default: // a comment (":..."), or a field of no use here
			keep = func([]byte) bool { return true }
		}
		if err := r.rest(value, full, keep); errors.Is(err, errCutLarge) {
			return tooLarge(), err
		} else if errors.Is(err, io.EOF) {
			return sseEvent{}, io.ErrUnexpectedEOF
		} else if err != nil {
			return sseEvent{}, err
		}
		switch string(field) {
		case "event":
			name = v
		case "id":
			if bytes.IndexByte(v, 0) < 0 {
				r.lastID = string(v)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(v), 10, 32); err == nil {
				r.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// piece reads up to the next line end or as much of the line as the
// buffer holds; full says the piece ends the line. The slice is valid
// until the next read.
func (r *sseReader) piece() (b []byte, full bool, err error) {
	b, err = r.br.ReadSlice('\n')
	switch {
	case err == nil:
		return b, true, nil
	case errors.Is(err, bufio.ErrBufferFull):
		return b, false, nil
	case errors.Is(err, io.EOF) && len(b) > 0:
		return b, true, nil // a last line without its line end
	}
	return nil, false, err
}

// rest hands fn b, the start of a line's value, then the rest of the
// line piece by piece, without the line end; fn stops it by returning
// false (errCutLarge).
func (r *sseReader) rest(b []byte, full bool, fn func([]byte) bool) (err error) {
	for !full {
		// A '\r' that ends a piece is the line end's when '\n' follows.
		cr := bytes.HasSuffix(b, []byte{'\r'})
		if !fn(bytes.TrimSuffix(b, []byte{'\r'})) {
			return errCutLarge
		}
		if cr {
			if next, err := r.br.Peek(1); err == nil && next[0] != '\n' && !fn([]byte{'\r'}) {
				return errCutLarge
			}
		}
		if b, full, err = r.piece(); err != nil {
			return err
		}
	}
	if !fn(trimEOL(b)) {
		return errCutLarge
	}
	return nil
}

// trimEOL trims a line end ("\n" or "\r\n") from b.
func trimEOL(b []byte) []byte {
	return bytes.TrimSuffix(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\r'})
}
