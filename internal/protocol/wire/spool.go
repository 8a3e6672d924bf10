package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
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
// not mcpflow's heap). Spool.Message then hands on the message with every
// string longer than LongString left in that file: in its place stands a
// placeholder, a string of its own (plain base64 characters, so that it
// survives being decoded and re-encoded as a string or as base64 bytes).
// Everything that routes, rewrites or records a message works on that
// stub: its envelope, its structure and its short strings are the
// message's own. The writers toward a peer (the stdio front, the HTTP
// front, a child's input) write it with WriteMsg, which copies each long
// string from its file as it writes; Expand puts them back in memory for
// what mcpflow keeps beyond the message (the record of the last start).
//
// A long string's file is closed once a writer wrote it whole (the
// record of the last start keeps its answers whole, Expand), or SpoolTTL
// after it was read when no writer took it (a message dropped on the
// way: an answer to a cancelled request).

// LongString is the length from which a string of a spooled message
// stays in its file.
const LongString = bufSize

// SpoolTTL bounds how long a long string not written stays in its file.
const SpoolTTL = 10 * time.Minute

// Spool gathers one message: in memory up to bufSize, then in a
// temporary file (in memory still when none can be made or written).
type Spool struct {
	f   *os.File
	n   int64 // bytes in f
	buf bytes.Buffer
}

// Write adds b to the message.
func (s *Spool) Write(b []byte) (int, error) {
	if s.f == nil && s.buf.Len()+len(b) > bufSize {
		s.toFile()
	}
	if s.f != nil {
		if _, err := s.f.Write(b); err == nil {
			s.n += int64(len(b))
			return len(b), nil
		}
		_, _ = s.buf.ReadFrom(io.NewSectionReader(s.f, 0, s.n)) // the disk is full: on in memory
		s.closeFile()
	}
	return s.buf.Write(b)
}

func (s *Spool) toFile() {
	if s.f, _ = os.CreateTemp("", "mcpflow-line-*"); s.f == nil {
		return
	}
	_ = os.Remove(s.f.Name()) // unlinked while open: gone with mcpflow (Windows: once closed)
	if _, err := s.f.Write(s.buf.Bytes()); err != nil {
		s.closeFile()
		return
	}
	s.n = int64(s.buf.Len())
	s.buf = bytes.Buffer{}
}

// Len is the size of the message so far.
func (s *Spool) Len() int { return int(s.n) + s.buf.Len() }

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
// the file and whole is not set, its stub (its long strings left there).
// It checks what it walks: a stub that is not one valid JSON value in
// UTF-8 is an *InvalidError. The Spool is empty afterwards.
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
// placeholder, and the pieces the placeholders stand for.
func (s *Spool) stub() (stub []byte, pieces []piece, err error) {
	block := make([]byte, bufSize)
	var str []byte // the string being read, while it is short
	var sc strScan
	in, long, start := false, false, int64(0)
	for off := int64(0); off < s.n; {
		k, rerr := s.f.ReadAt(block[:min(int64(bufSize), s.n-off)], off)
		if k == 0 {
			return nil, nil, rerr
		}
		b := block[:k]
		for i := 0; i < len(b); {
			if !in {
				j := bytes.IndexByte(b[i:], '"')
				if j < 0 {
					stub = append(stub, b[i:]...)
					break
				}
				stub = append(stub, b[i:i+j]...)
				in, long, start, str, sc = true, false, off+int64(i+j), append(str[:0], '"'), strScan{}
				i += j + 1
				continue
			}
			end, ok := sc.feed(b[i:])
			if !ok {
				return stub, nil, &InvalidError{Line: stub, BadUTF8: sc.badUTF8}
			}
			seg := b[i:]
			if end >= 0 {
				seg = b[i : i+end+1]
			}
			if !long {
				if str = append(str, seg...); len(str) > LongString {
					long = true
				}
			}
			i += len(seg)
			if end < 0 {
				continue
			}
			in = false
			if !long {
				stub = append(stub, str...)
				continue
			}
			p := piece{seq: spools.next(), off: start, n: off + int64(i) - start}
			pieces = append(pieces, p)
			stub = p.placeholder(stub)
		}
		off += int64(k)
	}
	if in {
		return stub, nil, &InvalidError{Line: stub}
	}
	return stub, pieces, nil
}

// strScan checks a JSON string's body handed in pieces: escapes, control
// characters and UTF-8, as jsonscan.Valid does, across the pieces' ends.
type strScan struct {
	esc     int     // 0; 1 after a backslash; 2..5 in the hex digits of \u
	part    [4]byte // a character cut by the end of the last piece
	np      int
	badUTF8 bool
}

// feed walks b; it returns the offset of the closing quote in b (-1: not
// in b) and false when the string is not valid.
func (s *strScan) feed(b []byte) (int, bool) {
	i := 0
	for s.np > 0 && i < len(b) && !utf8.FullRune(s.part[:s.np]) {
		s.part[s.np] = b[i]
		s.np++
		i++
	}
	if s.np > 0 {
		if !utf8.FullRune(s.part[:s.np]) {
			return -1, true
		}
		if r, size := utf8.DecodeRune(s.part[:s.np]); r == utf8.RuneError && size == 1 {
			s.badUTF8 = true
			return -1, false
		}
		s.np = 0
	}
	for i < len(b) {
		if s.esc == 0 {
			if i = skipPlain(b, i); i == len(b) {
				break
			}
		}
		c := b[i]
		switch {
		case s.esc == 1:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.esc = 0
			case 'u':
				s.esc = 2
			default:
				return -1, false
			}
		case s.esc > 1:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return -1, false
			}
			if s.esc++; s.esc == 6 {
				s.esc = 0
			}
		case c == '"':
			return i, true
		case c == '\\':
			s.esc = 1
		case c < 0x20:
			return -1, false
		case c >= utf8.RuneSelf:
			if !utf8.FullRune(b[i:]) {
				s.np = copy(s.part[:], b[i:])
				return -1, true
			}
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				s.badUTF8 = true
				return -1, false
			}
			i += size
			continue
		}
		i++
	}
	return -1, true
}

// skipPlain returns the offset of the first byte at or after b[i] that
// needs a look (a quote, a backslash, a control character, non-ASCII),
// eight bytes at a time.
func skipPlain(b []byte, i int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(lo*'"'), x^(lo*'\\')
		if ((x-lo*0x20)&^x|(q-lo)&^q|(bs-lo)&^bs|x)&hi != 0 {
			break
		}
	}
	for i < len(b) && b[i] >= 0x20 && b[i] < utf8.RuneSelf && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}

// piece is one long string: where it is in its file.
type piece struct {
	seq    uint64
	off, n int64
}

// The placeholder: a quote, placeholderPrefix, the process's key, the
// piece's number in 12 digits, a quote: 40 characters between the quotes,
// all of base64's alphabet, a multiple of 4.
const placeholderPrefix = "mcpflowspool"

var spoolKey = func() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

var marker = []byte(`"` + placeholderPrefix + spoolKey)

const placeholderLen = 1 + len(placeholderPrefix) + 16 + 12 + 1

func (p piece) placeholder(b []byte) []byte {
	return fmt.Appendf(b, "%s%012d\"", marker, p.seq)
}

// spools holds the long strings of the messages read; live counts them,
// so that a writer looks for placeholders only while there are any.
var spools = &spoolSet{m: map[uint64]*held{}}

var live atomic.Int64

type spoolSet struct {
	mu    sync.Mutex
	seq   uint64
	m     map[uint64]*held
	timer *time.Timer
}

type held struct {
	piece
	f     *spoolFile
	until time.Time // when it is let go
}

type spoolFile struct {
	f    *os.File
	refs int
}

func (ss *spoolSet) next() uint64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.seq++
	return ss.seq
}

func (ss *spoolSet) keep(f *os.File, pieces []piece) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sf := &spoolFile{f: f, refs: len(pieces)}
	until := time.Now().Add(SpoolTTL)
	for _, p := range pieces {
		ss.m[p.seq] = &held{p, sf, until}
	}
	live.Add(int64(len(pieces)))
	if ss.timer == nil {
		ss.timer = time.AfterFunc(time.Minute, ss.sweep)
	}
}

// sweep lets go of what is due, every minute while anything is held.
func (ss *spoolSet) sweep() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := time.Now()
	for seq, h := range ss.m {
		if now.After(h.until) {
			ss.drop(seq, h)
		}
	}
	if len(ss.m) > 0 {
		ss.timer.Reset(time.Minute)
	} else {
		ss.timer = nil
	}
}

func (ss *spoolSet) drop(seq uint64, h *held) {
	delete(ss.m, seq)
	live.Add(-1)
	if h.f.refs--; h.f.refs == 0 {
		h.f.f.Close()
		_ = os.Remove(h.f.f.Name())
	}
}

func (ss *spoolSet) get(seq uint64) *held {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.m[seq]
}

// written lets go of the pieces.
func (ss *spoolSet) written(seqs []uint64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, seq := range seqs {
		if h := ss.m[seq]; h != nil {
			ss.drop(seq, h)
		}
	}
}

// each calls fn for the text before each placeholder of msg with the
// piece it stands for, then for the rest (h nil). A placeholder whose
// piece is gone is text.
func each(msg []byte, fn func(text []byte, h *held) error) error {
	for live.Load() > 0 {
		i := bytes.Index(msg, marker)
		if i < 0 {
			break
		}
		end, h := i+placeholderLen, (*held)(nil)
		if end <= len(msg) && msg[end-1] == '"' {
			if seq, err := strconv.ParseUint(string(msg[i+len(marker):end-1]), 10, 64); err == nil {
				h = spools.get(seq)
			}
		}
		if h == nil {
			end, i = i+len(marker), i+len(marker)
		}
		if err := fn(msg[:i], h); err != nil {
			return err
		}
		msg = msg[end:]
	}
	return fn(msg, nil)
}

// WriteMsg writes msg to w, each long string it names copied from its
// file: the one way a message goes to a peer.
func WriteMsg(w io.Writer, msg []byte) error { return write(w, msg, true) }

// write writes msg to w; done: the long strings are let go once written.
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
	if err == nil && done && len(seqs) > 0 {
		spools.written(seqs)
	}
	return err
}

// Size is the length of msg as WriteMsg writes it.
func Size(msg []byte) int {
	n := 0
	_ = each(msg, func(text []byte, h *held) error {
		n += len(text)
		if h != nil {
			n += int(h.n)
		}
		return nil
	})
	return n
}

// Expand returns msg with its long strings in memory (msg itself when it
// names none): for what mcpflow keeps beyond the message.
func Expand(msg []byte) []byte {
	if live.Load() == 0 || !bytes.Contains(msg, marker) {
		return msg
	}
	var b bytes.Buffer
	_ = write(&b, msg, false)
	return b.Bytes()
}
