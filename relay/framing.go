package relay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// lineReader splits a stdio stream into newline-delimited messages of any
// length up to max bytes. A longer line is not buffered whole: its first
// headSize bytes are kept (so the id can still be peeked) and the rest is
// skipped up to the next newline, where reading goes on.
type lineReader struct {
	r   *bufio.Reader
	max int
}

const headSize = 4096

// errTooLarge reports a line over the limit; Head holds its first bytes.
type errTooLarge struct {
	Size int
	Max  int
	Head []byte
}

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("message of %d bytes or more exceeds the limit of %d bytes (relay.max_message)", e.Size, e.Max)
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10), max: max}
}

// next returns the next non-blank line without its line ending. The slice
// is owned by the caller. At the end of the stream it returns io.EOF (a
// last line without a newline is still returned first).
func (l *lineReader) next() ([]byte, error) {
	for {
		line, err := l.readLine()
		if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		return line, nil
	}
}

func (l *lineReader) readLine() ([]byte, error) {
	frag, err := l.r.ReadSlice('\n')
	if err == nil {
		// The common case: the whole line is in the buffer.
		if len(frag)-1 > l.max {
			return nil, &errTooLarge{Size: len(frag) - 1, Max: l.max, Head: clone(frag[:min(len(frag), headSize)])}
		}
		return clone(frag[:len(frag)-1]), nil
	}
	var buf []byte
	for {
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(frag) > 0 || len(buf) > 0 {
				buf = append(buf, frag...)
				if len(buf) > l.max {
					return nil, &errTooLarge{Size: len(buf), Max: l.max, Head: buf[:min(len(buf), headSize)]}
				}
				return buf, err
			}
			return nil, err
		}
		if len(buf)+len(frag) > l.max {
			head := append(buf[:len(buf):len(buf)], frag...)
			size := len(head)
			if len(head) > headSize {
				head = clone(head[:headSize])
			}
			return nil, l.skip(size, head)
		}
		buf = append(buf, frag...)
		frag, err = l.r.ReadSlice('\n')
		if err == nil {
			if len(buf)+len(frag)-1 > l.max {
				head := buf
				if len(head) > headSize {
					head = head[:headSize]
				}
				return nil, &errTooLarge{Size: len(buf) + len(frag) - 1, Max: l.max, Head: clone(head)}
			}
			return append(buf, frag[:len(frag)-1]...), nil
		}
	}
}

// skip discards the rest of an over-long line.
func (l *lineReader) skip(size int, head []byte) error {
	for {
		frag, err := l.r.ReadSlice('\n')
		size += len(frag)
		if err == nil {
			return &errTooLarge{Size: size - 1, Max: l.max, Head: head}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				return &errTooLarge{Size: size, Max: l.max, Head: head}
			}
			return err
		}
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
