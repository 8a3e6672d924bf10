package relay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
)

// lineReader splits a stdio stream into newline-delimited messages of any
// length up to max bytes. A longer line is not buffered whole: its first
// headSize bytes are kept (so the id can still be peeked) and the rest is
// skipped up to the next newline, where reading goes on.
//
// It has its own buffer rather than a bufio.Reader so that a line longer
// than the buffer is read straight into its chunks (pooled, see pool.go):
// one copy, kernel to chunk, instead of kernel to buffer to chunk; the
// bytes read past the line's end go back to the buffer.
type lineReader struct {
	r          io.Reader
	max        int
	buf        []byte
	start, end int   // unread bytes: buf[start:end]
	rerr       error // the reader's error, returned once the buffer is drained

	// keepChunks makes readLine leave a line longer than the buffer in
	// chunks (see nextChunks) instead of joining it.
	keepChunks bool
	chunks     [][]byte
	// scan, if set, is fed a long line's bytes as they are read, so the
	// scan is done when the line is (see chunkScanner).
	scan *chunkScanner
	// newChunk returns an empty chunk; tests use small ones.
	newChunk func() ([]byte, bool)
}

// readBufSize is the read buffer: lines up to its size are copied once
// out of it; longer ones are read in chunks.
const readBufSize = 256 << 10

const headSize = 4096

// gcHintSize is the line size past which reading a line into new memory
// first collects the garbage of earlier ones.
const gcHintSize = 8 << 20

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
	return newLineReaderSize(r, max, readBufSize, linePool.get)
}

// newLineReaderSize is newLineReader with a buffer of bufSize bytes and
// chunks from newChunk (tests use tiny ones to reach every path).
func newLineReaderSize(r io.Reader, max, bufSize int, newChunk func() ([]byte, bool)) *lineReader {
	return &lineReader{r: r, max: max, buf: make([]byte, bufSize), newChunk: newChunk}
}

// next returns the next non-blank line without its line ending. The slice
// is owned by the caller. At the end of the stream it returns io.EOF (a
// last line without a newline is still returned first).
func (l *lineReader) next() ([]byte, error) {
	for {
		line, err := l.readLine()
		if l.chunks != nil {
			if blank(l.chunks) {
				linePool.put(l.chunks)
				l.chunks = nil
				continue
			}
			return nil, nil // nextChunks takes it
		}
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

// nextChunks is next for a reader that can take a long line in chunks: it
// returns the line, or (for a line longer than the read buffer) its
// chunks, which the caller owns and may give back to the pool after their
// last use.
func (l *lineReader) nextChunks() ([]byte, [][]byte, error) {
	l.keepChunks = true
	line, err := l.next()
	if chunks := l.chunks; chunks != nil {
		l.chunks = nil
		// The line's trailing \r, which may span chunks.
		for k := len(chunks) - 1; k >= 0; k-- {
			chunks[k] = bytes.TrimRight(chunks[k], "\r")
			if len(chunks[k]) > 0 {
				break
			}
		}
		return nil, chunks, nil
	}
	return line, nil, err
}

// blank reports whether a line in chunks is only white space.
func blank(chunks [][]byte) bool {
	for _, c := range chunks {
		if len(bytes.TrimSpace(c)) > 0 {
			return false
		}
	}
	return true
}

// fill reads more into the buffer, first moving the unread bytes to its
// front. A read error is kept in l.rerr.
func (l *lineReader) fill() {
	if l.start > 0 {
		copy(l.buf, l.buf[l.start:l.end])
		l.end -= l.start
		l.start = 0
	}
	n, err := l.read(l.buf[l.end:])
	l.end += n
	l.rerr = err
}

func (l *lineReader) readLine() ([]byte, error) {
	scanned := 0 // bytes after l.start known to hold no newline
	for {
		if i := bytes.IndexByte(l.buf[l.start+scanned:l.end], '\n'); i >= 0 {
			// The common case: the whole line is in the buffer.
			n := scanned + i
			line := l.buf[l.start : l.start+n]
			l.start += n + 1
			if n > l.max {
				return nil, &errTooLarge{Size: n, Max: l.max, Head: clone(line[:min(n, headSize)])}
			}
			return clone(line), nil
		}
		scanned = l.end - l.start
		if scanned > l.max {
			head := clone(l.buf[l.start : l.start+min(scanned, headSize)])
			l.start = l.end
			return nil, l.skip(scanned, head)
		}
		if l.rerr != nil { // EOF or a read error: what was read is the last line
			if scanned == 0 {
				return nil, l.rerr
			}
			line := clone(l.buf[l.start:l.end])
			l.start = l.end
			return line, l.rerr
		}
		if scanned == len(l.buf) {
			return l.readLong()
		}
		l.fill()
	}
}

// readLong reads a line longer than the buffer: the buffered bytes, then
// straight from the reader into chunks: each byte is copied once and no
// slice grows. The chunks go to nextChunks' caller, or are joined for
// next's.
func (l *lineReader) readLong() ([]byte, error) {
	if l.scan != nil {
		l.scan.reset()
	}
	var (
		chunks [][]byte
		size   int
		hinted bool
	)
	cur, fresh := l.newChunk()
	grow := func() {
		chunks = append(chunks, cur)
		if fresh && size >= gcHintSize && !hinted {
			// New memory for a large line: reclaim the garbage of earlier
			// ones first (byte slices hold no pointers, so the collection
			// is cheap), keeping peak memory near twice the largest line.
			hinted = true
			runtime.GC()
		}
		cur, fresh = l.newChunk()
	}
	// The buffered bytes first.
	for b := l.buf[l.start:l.end]; len(b) > 0; {
		if len(cur) == cap(cur) {
			grow()
		}
		n := min(len(b), cap(cur)-len(cur))
		cur = append(cur, b[:n]...)
		if l.scan != nil {
			l.scan.feed(b[:n])
		}
		size += n
		b = b[n:]
	}
	l.start, l.end = 0, 0
	newline := false
	for !newline && l.rerr == nil {
		if len(cur) == cap(cur) {
			grow()
		}
		n, err := l.read(cur[len(cur):cap(cur)])
		data := cur[len(cur) : len(cur)+n]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			// The line ends here; what follows goes back to the buffer.
			rest := data[i+1:]
			if len(rest) > len(l.buf) {
				l.buf = make([]byte, len(rest))
			}
			l.end = copy(l.buf, rest)
			data = data[:i]
			newline = true
		}
		l.rerr = err
		cur = cur[:len(cur)+len(data)]
		size += len(data)
		if size > l.max {
			chunks = append(chunks, cur)
			var h []byte
			for _, c := range chunks {
				h = append(h, c[:min(len(c), headSize-len(h))]...)
			}
			linePool.put(chunks)
			if newline || l.rerr != nil {
				return nil, &errTooLarge{Size: size, Max: l.max, Head: h}
			}
			return nil, l.skip(size, h)
		}
		if l.scan != nil {
			l.scan.feed(data)
		}
	}
	chunks = append(chunks, cur)
	if !newline && !errors.Is(l.rerr, io.EOF) {
		// A read error cut the line: it is not a message.
		linePool.put(chunks)
		return nil, l.rerr
	}
	// At EOF, a last line without a newline is still a line; the error
	// comes with the next call.
	if l.keepChunks {
		l.chunks = chunks
		return nil, nil
	}
	return linePool.join(chunks), nil
}

// read reads into p, retrying reads that return nothing.
func (l *lineReader) read(p []byte) (int, error) {
	for range 100 {
		n, err := l.r.Read(p)
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// skip discards the rest of an over-long line.
func (l *lineReader) skip(size int, head []byte) error {
	for {
		if i := bytes.IndexByte(l.buf[l.start:l.end], '\n'); i >= 0 {
			l.start += i + 1
			return &errTooLarge{Size: size + i, Max: l.max, Head: head}
		}
		size += l.end - l.start
		l.start, l.end = 0, 0
		if l.rerr != nil {
			if errors.Is(l.rerr, io.EOF) {
				return &errTooLarge{Size: size, Max: l.max, Head: head}
			}
			return l.rerr
		}
		l.fill()
	}
}

// clone copies b. (make+copy compiles to one allocation that is not
// zeroed first; append([]byte(nil), b...) zeroes the size class's tail,
// which showed in profiles of the per-message path.)
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	c := make([]byte, len(b))
	copy(c, b)
	return c
}
