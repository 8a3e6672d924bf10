package relay

import (
	"bufio"
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
type lineReader struct {
	r   *bufio.Reader
	max int

	// keepChunks makes readLine leave a line longer than the buffer in
	// chunks (see nextChunks) instead of joining it.
	keepChunks bool
	chunks     [][]byte
}

const headSize = 4096

// gcHintSize is the line size past which reading a line first collects
// the garbage of earlier ones.
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
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10), max: max}
}

// next returns the next non-blank line without its line ending. The slice
// is owned by the caller. At the end of the stream it returns io.EOF (a
// last line without a newline is still returned first).
func (l *lineReader) next() ([]byte, error) {
	for {
		line, err := l.readLine()
		if l.chunks != nil {
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
// returns the line, or (for a line longer than the read buffer) its chunks.
func (l *lineReader) nextChunks() ([]byte, [][]byte, error) {
	l.keepChunks = true
	line, err := l.next()
	if chunks := l.chunks; chunks != nil {
		l.chunks = nil
		last := chunks[len(chunks)-1]
		chunks[len(chunks)-1] = bytes.TrimRight(last, "\r")
		return nil, chunks, nil
	}
	return line, nil, err
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
	// A long line. Growing one slice as it arrives copies it again at each
	// growth and leaves a trail of garbage (measured: half the CPU of a
	// 64 MiB result went to growslice, a third to GC). Instead, collect it
	// in chunks (doubling up to 8 MiB) and copy it once into a slice of the exact
	// size: two copies in all, and at most twice the line in memory.
	var (
		chunks [][]byte
		cur    []byte
		size   int
		next   = 1 << 20
	)
	hinted := false
	add := func(b []byte) {
		for len(b) > 0 {
			if len(cur) == cap(cur) {
				if cur != nil {
					chunks = append(chunks, cur)
				}
				if size >= gcHintSize && !hinted {
					// Reclaim the previous large message before this one
					// doubles the heap: byte slices hold no pointers, so
					// the collection is cheap, and peak memory stays near
					// twice the largest message.
					hinted = true
					runtime.GC()
				}
				cur = make([]byte, 0, next)
				next = min(next*2, 8<<20) // bounds the slack to 8 MiB
			}
			n := min(len(b), cap(cur)-len(cur))
			cur = append(cur, b[:n]...)
			b = b[n:]
		}
	}
	head := func() []byte {
		h := cur
		if len(chunks) > 0 {
			h = chunks[0]
		}
		return clone(h[:min(len(h), headSize)])
	}
	for {
		switch {
		case err == nil:
			frag = frag[:len(frag)-1] // the newline
		case errors.Is(err, bufio.ErrBufferFull):
		default: // EOF or a read error: what was read is the last line
			if size+len(frag) == 0 {
				return nil, err
			}
		}
		if size+len(frag) > l.max {
			add(frag[:min(len(frag), headSize)])
			h := head()
			if err == nil {
				return nil, &errTooLarge{Size: size + len(frag), Max: l.max, Head: h}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, l.skip(size+len(frag), h)
			}
			return nil, &errTooLarge{Size: size + len(frag), Max: l.max, Head: h}
		}
		add(frag)
		size += len(frag)
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		frag, err = l.r.ReadSlice('\n')
	}
	if cur != nil {
		chunks = append(chunks, cur)
	}
	if len(chunks) == 1 {
		return chunks[0], err
	}
	if l.keepChunks {
		l.chunks = chunks
		return nil, err
	}
	line := make([]byte, 0, size)
	for i, c := range chunks {
		line = append(line, c...)
		chunks[i] = nil
	}
	return line, err
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
