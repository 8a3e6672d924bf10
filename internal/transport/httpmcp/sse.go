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
// may be of any length: an event's data is gathered once, in one slice,
// up to the limit; past it the rest of the event is read without being
// kept.
type sseReader struct {
	br     *bufio.Reader
	max    int
	lastID string        // the last event id the server gave
	retry  time.Duration // the server's reconnection time; 0 = none given
	// cutLarge stops reading at the first event whose data passes max:
	// that event is returned (tooLarge, with the size read so far) with
	// errCutLarge, and the stream is not read further.
	cutLarge bool
}

// errCutLarge ends a cutLarge stream at an event over the limit.
var errCutLarge = errors.New("an event over the size limit cut the stream")

// sseEvent is one message event: its data (white space around it
// trimmed), or, when the data was over the limit, tooLarge.
type sseEvent struct {
	data     []byte
	tooLarge *wire.TooLargeError
}

// sseBufSize is the read buffer of a stream; longer lines are read in
// pieces of it.
const sseBufSize = 32 << 10

// sseFieldMax bounds the value of a field other than data (event, id,
// retry): more of it is read and dropped.
const sseFieldMax = 1024

func newSSE(body io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(body, sseBufSize), max: max}
}

// reset reads body next (a resumed stream), keeping the last event id.
func (r *sseReader) reset(body io.Reader) { r.br.Reset(body) }

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

// event is an event being read.
type event struct {
	data    []byte
	hasData bool
	size    int
	head    []byte // the start of the data once it is over the limit
	name    []byte
}

// add appends b to the event's data, up to the limit.
func (e *event) add(b []byte, max int) {
	e.size += len(b)
	if e.head != nil {
		return
	}
	if len(e.data)+len(b) <= max {
		e.data = append(e.data, b...)
		return
	}
	e.head = make([]byte, 0, headSize)
	e.head = append(e.head, e.data[:min(len(e.data), headSize)]...)
	e.head = append(e.head, b[:min(len(b), headSize-len(e.head))]...)
	e.data = nil
}

// next returns the next message event with data.
func (r *sseReader) next() (sseEvent, error) {
	var ev event
	for {
		line, full, err := r.piece()
		if err != nil {
			if errors.Is(err, io.EOF) && (ev.hasData || len(ev.name) > 0) {
				return sseEvent{}, io.ErrUnexpectedEOF
			}
			return sseEvent{}, err
		}
		if full && len(trimEOL(line)) == 0 {
			// The end of an event: dispatch it if it is a message with data.
			if ev.hasData && ev.size > 0 && (len(ev.name) == 0 || string(ev.name) == "message") {
				if ev.head != nil {
					return sseEvent{tooLarge: &wire.TooLargeError{Size: ev.size, Max: r.max, Head: ev.head}}, nil
				}
				return sseEvent{data: bytes.TrimSpace(ev.data)}, nil
			}
			ev = event{}
			continue
		}
		var field, value []byte
		if colon := bytes.IndexByte(line, ':'); colon >= 0 {
			field, value = line[:colon], line[colon+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		} else if full {
			field = trimEOL(line)
		} else {
			field = nil // a field name longer than the buffer: no field of ours
		}
		switch string(field) {
		case "data":
			if ev.hasData {
				ev.add([]byte{'\n'}, r.max)
			}
			ev.hasData = true
			if err := r.rest(value, full, func(b []byte) bool {
				ev.add(b, r.max)
				return ev.head == nil || !r.cutLarge
			}); err != nil {
				if errors.Is(err, errCutLarge) {
					return sseEvent{tooLarge: &wire.TooLargeError{Size: ev.size, Max: r.max, Head: ev.head}}, errCutLarge
				}
				return sseEvent{}, cut(err)
			}
		case "event", "id", "retry":
			var v []byte
			if err := r.rest(value, full, func(b []byte) bool {
				v = append(v, b[:min(len(b), sseFieldMax-len(v))]...)
				return true
			}); err != nil {
				return sseEvent{}, cut(err)
			}
			switch string(field) {
			case "event":
				ev.name = v
			case "id":
				if bytes.IndexByte(v, 0) < 0 {
					r.lastID = string(v)
				}
			case "retry":
				if ms, err := strconv.ParseUint(string(v), 10, 32); err == nil {
					r.retry = time.Duration(ms) * time.Millisecond
				}
			}
		default: // a comment (":..."), or a field of no use here
			if err := r.rest(nil, full, func([]byte) bool { return true }); err != nil {
				return sseEvent{}, cut(err)
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

// rest hands fn first (the start of a line's value) and then the rest of
// the line, piece by piece, without the line end.
func (r *sseReader) rest(first []byte, full bool, fn func([]byte) bool) error {
	cr := false // the last piece ended with '\r', held back
	emit := func(b []byte, last bool) bool {
		if cr {
			cr = false
			if !last || len(b) != 1 || b[0] != '\n' {
				if !fn([]byte{'\r'}) { // a '\r' inside the line
					return false
				}
			}
		}
		if last {
			return fn(trimEOL(b))
		}
		if n := len(b); n > 0 && b[n-1] == '\r' {
			cr = true
			b = b[:n-1]
		}
		return fn(b)
	}
	if !emit(first, full) {
		return errCutLarge
	}
	for !full {
		b, f, err := r.piece()
		if err != nil {
			return err
		}
		full = f
		if !emit(b, full) {
			return errCutLarge
		}
	}
	return nil
}

// cut is err, the error that cut an event short: io.ErrUnexpectedEOF
// rather than io.EOF.
func cut(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// trimEOL trims a line end ("\n" or "\r\n") from b.
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}
