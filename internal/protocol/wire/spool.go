package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
)

// A long message is never held whole in mcpflow's memory. Whoever reads
// one (Reader, the HTTP child link) gathers it in a Spool: up to bufSize
// in memory, past that in an unlinked temporary file (the kernel's pages,
// not mcpflow's heap). Message then hands on a stub: the message with
// every string longer than LongString left in the file and a placeholder
// in its place (plain base64 characters: it survives being decoded and
// encoded again, as a string or as bytes). What routes, rewrites or
// records a message works on the stub; the writers toward a peer copy
// each long string from its file (WriteMsg) and let it go; Expand puts
// them back in memory for what mcpflow keeps (the handshake, the lists)
// or reads (an SDK peer). A long string no writer took (an answer to a
// cancelled request) is let go after SpoolTTL.

// LongString is the length from which a string stays in its file.
const LongString = bufSize

// SpoolTTL bounds how long a long string not written stays in its file.
var SpoolTTL = 10 * time.Minute

// Spool gathers one message: in memory up to bufSize, then in a
// temporary file (in memory still when none can be made or written).
type Spool struct {
	f   *os.File
	n   int64 // bytes in f
	buf bytes.Buffer
}

// Write adds b to the message.
func (s *Spool) Write(b []byte) (int, error) {
	n := len(b)
	if s.f == nil && s.buf.Len()+len(b) > bufSize {
		if s.f, _ = os.CreateTemp("", "mcpflow-line-*"); s.f != nil {
			_ = os.Remove(s.f.Name()) // unlinked while open: gone with mcpflow (Windows: once closed)
			b = append(s.buf.Bytes(), b...)
			s.buf = bytes.Buffer{}
		}
	}
	if s.f != nil {
		if _, err := s.f.Write(b); err == nil {
			s.n += int64(len(b))
			return n, nil
		}
		_, _ = s.buf.ReadFrom(io.NewSectionReader(s.f, 0, s.n)) // the disk is full: on in memory
		s.closeFile()
	}
	s.buf.Write(b)
	return n, nil
}

// Head is the message's first HeadSize bytes.
func (s *Spool) Head() []byte {
	if s.f == nil {
		return head(s.buf.Bytes())
	}
	b := make([]byte, min(HeadSize, s.n))
	n, _ := s.f.ReadAt(b, 0)
	return b[:n]
}

// Close empties the Spool; its file is let go, unless Message left
// strings in it.
func (s *Spool) Close() {
	s.closeFile()
	s.buf = bytes.Buffer{}
}

func (s *Spool) closeFile() {
	if s.f != nil {
		s.f.Close()
		_ = os.Remove(s.f.Name())
		s.f = nil
	}
	s.n = 0
}

// Message returns the message gathered: its bytes, or, when it went to
// the file and whole is not set, its stub. A stub that is not one valid
// JSON value in UTF-8 is an *InvalidError. The Spool is empty afterwards.
func (s *Spool) Message(whole bool) ([]byte, error) {
	if s.f == nil {
		b := bytes.Clone(s.buf.Bytes()) // in a slice of its size
		s.buf = bytes.Buffer{}
		return b, nil
	}
	defer s.Close()
	if whole {
		b := make([]byte, s.n)
		_, err := s.f.ReadAt(b, 0)
		return b, err
	}
	stub, pieces, err := s.stub()
	if err == nil && !jsonscan.Valid(stub) {
		err = &InvalidError{Line: stub, BadUTF8: !utf8.Valid(stub)}
	}
	if err != nil || len(pieces) == 0 {
		return stub, err
	}
	spools.keep(s.f, pieces)
	s.f = nil // the pieces own it now
	return stub, nil
}

// stub walks the file: the message with each long string replaced by a
// placeholder, and the pieces the placeholders stand for. A block ends
// where its last string's walk stopped (a character or an escape that
// the block cut), so the next one starts there.
func (s *Spool) stub() (stub []byte, pieces []*held, err error) {
	block := make([]byte, bufSize)
	var str []byte // the string being read, while it is short
	in, long, start := false, false, int64(0)
	for off := int64(0); off < s.n; {
		k, rerr := s.f.ReadAt(block[:min(int64(bufSize), s.n-off)], off)
		if k == 0 {
			return nil, nil, rerr
		}
		b, eof := block[:k], off+int64(k) == s.n
		i := 0
		for i < len(b) {
			if !in {
				j := bytes.IndexByte(b[i:], '"')
				if j < 0 {
					stub, i = append(stub, b[i:]...), len(b)
					break
				}
				stub = append(stub, b[i:i+j]...)
				in, long, start, str = true, false, off+int64(i+j), append(str[:0], '"')
				i += j + 1
				continue
			}
			next, ok := jsonscan.StringBody(b[i:])
			end := -1
			switch {
			case ok:
				end = next
			case next < len(b)-i-6 || eof && next < len(b)-i: // not valid (short of the end: cut by the block)
				return stub, nil, &InvalidError{Line: stub, BadUTF8: b[i+next] >= utf8.RuneSelf}
			}
			if !long {
				if str = append(str, b[i:i+next]...); len(str) > LongString {
					long = true
				}
			}
			if i += next; end < 0 {
				break
			}
			if in = false; !long {
				stub = append(stub, str...)
				continue
			}
			h := &held{seq: spools.seq.Add(1), off: start, n: off + int64(i) - start}
			pieces = append(pieces, h)
			stub = fmt.Appendf(stub, "%s%012d\"", marker, h.seq)
		}
		if i == 0 {
			return stub, nil, &InvalidError{Line: stub}
		}
		off += int64(i)
	}
	if in {
		return stub, nil, &InvalidError{Line: stub}
	}
	return stub, pieces, nil
}

// The placeholder: a quote, "mcpflowspool", the process's key (16 hex
// digits), the piece's number (12 digits), a quote: 40 characters of
// base64's alphabet between the quotes, a multiple of 4.
var marker = func() []byte {
	key := make([]byte, 8)
	_, _ = rand.Read(key)
	return []byte(`"mcpflowspool` + hex.EncodeToString(key))
}()

const placeholderLen = 1 + 12 + 16 + 12 + 1

// spools holds the long strings of the messages read.
var spools = &spoolSet{m: map[uint64]*held{}}

type spoolSet struct {
	seq atomic.Uint64 // the last piece's number: once any is made, writers look for placeholders
	mu  sync.Mutex
	m   map[uint64]*held
}

// held is one long string: where it is in its file.
type held struct {
	seq    uint64
	off, n int64
	f      *spoolFile
}

type spoolFile struct {
	f    *os.File
	refs int
}

func (ss *spoolSet) keep(f *os.File, pieces []*held) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sf := &spoolFile{f: f, refs: len(pieces)}
	seqs := make([]uint64, len(pieces))
	for i, h := range pieces {
		h.f, seqs[i] = sf, h.seq
		ss.m[h.seq] = h
	}
	time.AfterFunc(SpoolTTL, func() { ss.drop(seqs) })
}

// drop lets go of the pieces still held.
func (ss *spoolSet) drop(seqs []uint64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, seq := range seqs {
		h := ss.m[seq]
		if h == nil {
			continue
		}
		delete(ss.m, seq)
		if h.f.refs--; h.f.refs == 0 {
			h.f.f.Close()
			_ = os.Remove(h.f.f.Name())
		}
	}
}

func (ss *spoolSet) get(seq uint64) *held {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.m[seq]
}

// each calls fn for the text before each placeholder of msg with the
// piece it stands for, then for the rest (h nil). A placeholder whose
// piece is gone (written, or SpoolTTL passed) becomes "": the process's
// key never leaves it.
func each(msg []byte, fn func(text []byte, h *held) error) error {
	for spools.seq.Load() > 0 {
		i := bytes.Index(msg, marker)
		if i < 0 {
			break
		}
		end, h := i+placeholderLen, (*held)(nil)
		seq, err := strconv.ParseUint(string(msg[i+len(marker):min(end-1, len(msg))]), 10, 64)
		if err != nil || end > len(msg) || msg[end-1] != '"' {
			end, i = i+len(marker), i+len(marker) // no placeholder
		} else if h = spools.get(seq); h == nil {
			end, i = end-1, i+1 // gone: its quotes only
		}
		if err := fn(msg[:i], h); err != nil {
			return err
		}
		msg = msg[end:]
	}
	return fn(msg, nil)
}

// WriteMsg writes msg to w, each long string it names copied from its
// file, then let go: the one way a message goes to a peer.
func WriteMsg(w io.Writer, msg []byte) error { return write(w, msg, true) }

func write(w io.Writer, msg []byte, done bool) error {
	var seqs []uint64
	err := each(msg, func(text []byte, h *held) error {
		if _, err := w.Write(text); err != nil || h == nil {
			return err
		}
		seqs = append(seqs, h.seq)
		_, err := io.Copy(w, io.NewSectionReader(h.f.f, h.off, h.n))
		return err
	})
	if err == nil && done {
		spools.drop(seqs)
	}
	return err
}

// Discard lets go of the long strings msg names: a message dropped on
// the way (an answer to a cancelled request, a queue dropped).
func Discard(msg []byte) {
	var seqs []uint64
	_ = each(msg, func(_ []byte, h *held) error {
		if h != nil {
			seqs = append(seqs, h.seq)
		}
		return nil
	})
	spools.drop(seqs)
}

// Size is the length of msg as WriteMsg writes it.
func Size(msg []byte) int {
	n := 0
	_ = each(msg, func(text []byte, h *held) error {
		if n += len(text); h != nil {
			n += int(h.n)
		}
		return nil
	})
	return n
}

// Expand returns msg with its long strings in memory (msg itself when it
// names none).
func Expand(msg []byte) []byte {
	if !bytes.Contains(msg, marker) {
		return msg
	}
	var b bytes.Buffer
	_ = write(&b, msg, false)
	return b.Bytes()
}
