// Package traffic records every MCP message that passes through mcpflow,
// in both directions, to a JSON Lines file a person can read or grep
// (mcpflow watch --traffic FILE, or [log] traffic = "FILE"), a line per
// message:
//
//	{"t":"2026-11-23T09:14:03.123456789Z","hop":"client","dir":"c2s","gen":2,"server":"notes","msg":{...}}
//
// t is when it was recorded (RFC 3339, UTC, nanoseconds); hop is "client"
// (between the client and mcpflow) or "server" (between mcpflow and the
// child): a message mcpflow forwards is recorded on each hop, one it makes
// itself (a list_changed, an answer of its own, a replayed handshake) on
// the hop it goes over; dir is "c2s" (toward the server) or "s2c"; gen is
// the child generation it went to or came from (0 when none ran); server
// is the server's name, on a mux's server hop only; session is the HTTP
// front's Mcp-Session-Id, on its client hop only and when the client has
// one; msg is the message as it travelled. A message larger than
// Options.MaxMessage is recorded as "truncated":true, "size" and
// "msg_prefix" (its first MaxMessage bytes, as a string) instead of msg;
// bytes that are not JSON as "invalid":true and "msg_text".
//
// Lines are written in the order the hook is called, buffered (at most 64
// KiB or half of Options.MaxFile at once) for 200 ms at most, to a File:
// rotated to FILE.1 past Options.MaxFile, created 0600 since messages may
// hold secrets. The hook copies what it keeps. A Writer is safe for
// concurrent use. A write error stops the recording (the relay must not
// fail because of it); Close reports it.
package traffic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Defaults of the zero Options (internal/config's too).
const (
	DefaultMaxMessage = 64 << 10
	DefaultMaxFile    = 16 << 20
)

// flushInterval bounds how long a recorded line waits in memory.
const flushInterval = 200 * time.Millisecond

// Options tune a Writer; the zero value means the defaults.
type Options struct {
	MaxMessage int   // bytes of a message recorded whole; larger ones are truncated
	MaxFile    int64 // size at which FILE is rotated to FILE.1
}

// Writer records messages to one file. Make it with Open.
type Writer struct {
	maxMsg int

	mu     sync.Mutex
	f      *File
	buf    []byte      // whole lines not yet written
	bufMax int         // written once buf would grow past it
	timer  *time.Timer // flushes flushInterval after a line is buffered
	line   []byte      // scratch
	err    error
	closed bool
}

// Open starts recording to path, appending to what is there.
func Open(path string, opts Options) (*Writer, error) {
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	f, err := OpenFile(path, opts.MaxFile) // DefaultMaxFile when not set
	if err != nil {
		return nil, fmt.Errorf("traffic file: %w", err)
	}
	w := &Writer{maxMsg: opts.MaxMessage, f: f, bufMax: int(min(64<<10, f.max/2))}
	w.timer = time.AfterFunc(flushInterval, w.flush)
	return w, nil
}

// Hook returns the function the relay calls for every message; server is
// the server's name in a mux, "" otherwise.
func (w *Writer) Hook(server string) func(hop string, toServer bool, gen int, msg []byte) {
	frag := field("server", server)
	return func(hop string, toServer bool, gen int, msg []byte) { w.record(frag, hop, toServer, gen, msg) }
}

// SessionHook is Hook for the HTTP front's client hop, with each message's
// Mcp-Session-Id ("" = none).
func (w *Writer) SessionHook(server string) func(hop, session string, toServer bool, gen int, msg []byte) {
	frag := slices.Clip(field("server", server)) // appending copies
	return func(hop, session string, toServer bool, gen int, msg []byte) {
		w.record(append(frag, field("session", session)...), hop, toServer, gen, msg)
	}
}

// field is `,"key":value` with value as a JSON string, or nothing for "".
func field(key, value string) []byte {
	if value == "" {
		return nil
	}
	return appendString([]byte(`,"`+key+`":`), value)
}

func (w *Writer) record(fields []byte, hop string, toServer bool, gen int, msg []byte) {
	w.mu.Lock() // the time is taken under the lock: the file's lines never go back in time
	defer w.mu.Unlock()
	if w.closed || w.err != nil {
		return
	}
	b := append(w.line[:0], `{"t":"`...)
	b = time.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","hop":`...)
	b = appendString(b, hop)
	if toServer {
		b = append(b, `,"dir":"c2s","gen":`...)
	} else {
		b = append(b, `,"dir":"s2c","gen":`...)
	}
	b = strconv.AppendInt(b, int64(gen), 10)
	b = append(b, fields...)
	msg = bytes.TrimSpace(msg)
	switch {
	case len(msg) > w.maxMsg:
		cut := w.maxMsg
		for cut > 0 && cut > w.maxMsg-utf8.UTFMax && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		b = append(b, `,"truncated":true,"size":`...)
		b = strconv.AppendInt(b, int64(len(msg)), 10)
		b = append(b, `,"msg_prefix":`...)
		b = appendString(b, string(msg[:cut]))
	case !json.Valid(msg):
		b = append(b, `,"invalid":true,"msg_text":`...)
		b = appendString(b, string(msg))
	case bytes.IndexByte(msg, '\n') >= 0:
		c := bytes.NewBuffer(append(b, `,"msg":`...))
		json.Compact(c, msg) // valid, checked above
		b = c.Bytes()
	default:
		b = append(b, `,"msg":`...)
		b = append(b, msg...)
	}
	b = append(b, "}\n"...)
	w.line = b
	if len(w.line) > 1<<20 {
		defer func() { w.line = nil }()
	}
	if len(w.buf)+len(b) > w.bufMax {
		w.flushLocked()
	}
	if len(b) > w.bufMax {
		w.writeLocked(b) // a long line, written alone
		return
	}
	if len(w.buf) == 0 {
		w.timer.Reset(flushInterval)
	}
	w.buf = append(w.buf, b...)
}

// flushLocked writes the buffered lines in one write.
func (w *Writer) flushLocked() {
	if len(w.buf) > 0 && w.err == nil {
		w.writeLocked(w.buf)
	}
	w.buf = w.buf[:0]
}

func (w *Writer) writeLocked(b []byte) {
	if _, err := w.f.Write(b); err != nil {
		w.err = fmt.Errorf("traffic file: %w", err)
	}
}

func (w *Writer) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

// Close flushes and closes the file, and returns the first error the
// recording met; later calls of a hook are ignored.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	w.timer.Stop()
	w.flushLocked()
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("traffic file: %w", err)
	}
	return w.err
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
