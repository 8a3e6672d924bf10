package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
)

// ServeOptions are Serve's; the zero value logs nothing and waits
// InputGrace for the answers to a closed input.
type ServeOptions struct {
	Log *slog.Logger // bad lines are logged here; nil = discard
	// Traffic, when set, sees every message read from the client
	// (toServer) and written to it, as it travelled; it must return
	// quickly and not keep msg.
	Traffic func(toServer bool, msg []byte)
	// Grace bounds the wait, once the client's input ended, for the
	// answers to the requests it sent before (a one-shot client closes its
	// input before it reads); 0 = InputGrace.
	Grace time.Duration
	// InputEnded, when set, is called once the client's input ended (before
	// the wait for those answers): the serving side then knows no client
	// will act on what it sends later (list_changed), and holds requests
	// for the real answers rather than answer for a server still starting.
	InputEnded func()
}

// Serve is the front for one client on a byte stream (mcpflow's stdin and
// stdout): it opens one session of o and carries the client's messages,
// read from in, to it, and what the session delivers to out, one message
// per line, until in ends or ctx is done; then it closes the session and
// returns (nil at the end of in or of ctx, else the read error).
//
// Contract, in every mode (it is the one front on stdio):
//   - A line that is no message gets its answer here (Refusal: -32700 for
//     one that is not JSON in UTF-8, -32600 for an over-long request) and
//     the session goes on; a line that is JSON but no JSON-RPC message (not
//     an object, or an empty batch) gets -32600.
//   - A batch (an array) is split; its answers go back as one array.
//   - Once in ends, the requests read before wait for their answers for at
//     most Grace (listen streams aside: they last as long as the session);
//     when ctx ends, they are not waited for. Either way, every request
//     still unanswered when the session is closed is answered with
//     TextShuttingDown, once.
//   - Writes to out hold no lock of the serving side: a client that does
//     not read makes the session wait (back-pressure), and a write error
//     ends Serve as the end of in does.
func Serve(ctx context.Context, in Stream, out io.Writer, o Opener, opt ServeOptions) error {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Grace <= 0 {
		opt.Grace = InputGrace
	}
	f := &stdioFront{opt: opt, out: out, bw: bufio.NewWriterSize(out, 64<<10), open: map[string]bool{}, inBatch: map[string]*batch{},
		broken: make(chan struct{}), answered: make(chan struct{}, 1)}
	s := o.Open(f)
	read := make(chan error, 1)
	go func() { read <- f.read(in, s) }()
	var err error
	select {
	case err = <-read:
		if errors.Is(err, io.EOF) {
			err = nil
			if f.opt.InputEnded != nil {
				f.opt.InputEnded()
			}
			f.await(ctx)
		}
	case <-ctx.Done():
	case <-f.broken:
	}
	// A client that takes nothing more must not hold the way out: what is
	// written while the session closes, and then shutDown's answers, get a
	// deadline each, where out has them (a pipe or a socket, non-blocking).
	bound := func() {
		if d, ok := f.out.(interface{ SetWriteDeadline(time.Time) error }); ok {
			_ = d.SetWriteDeadline(time.Now().Add(shutdownWrite))
		}
	}
	bound()
	s.Close()
	bound()
	f.shutDown()
	return err
}

// InputGrace is how long the requests read before a peer's input ended may
// take to be answered: a one-shot client writes its requests and closes
// its input before it reads, and clients send SIGTERM soon after closing
// it (mcpflow is gone within 5 s).
const InputGrace = 2 * time.Second

// TextShuttingDown answers a request still unanswered when mcpflow stops.
const TextShuttingDown = "mcpflow: shutting down (the client's input ended, or mcpflow was asked to stop) before the MCP server answered"

// shutdownWrite bounds each write to the client once Serve is ending.
const shutdownWrite = time.Second

// stdioFront is Serve's Client and its bookkeeping.
type stdioFront struct {
	opt ServeOptions

	wmu    sync.Mutex // one message at a time on out
	out    io.Writer
	bw     *bufio.Writer
	werr   error
	broken chan struct{} // closed on the first write error

	mu       sync.Mutex
	open     map[string]bool   // requests read and not answered: raw id -> is a listen
	inBatch  map[string]*batch // requests of a batch not answered: raw id -> the batch
	closed   bool              // the session is closed: nothing more goes out but shutDown's
	answered chan struct{}     // poked whenever an answer came
}

// batch is a client's JSON-RPC batch (protocol 2025-03-26 has them),
// answered with one array holding the answers of all its requests, in the
// order they complete; a batch of notifications gets no answer.
type batch struct {
	want int      // requests still unanswered, +1 until every element is sent
	out  [][]byte // answers so far
}

// read hands every message of in to s until in ends.
func (f *stdioFront) read(in Stream, s Session) error {
	for {
		msg, err := in.Next()
		if answer, refused := Refusal(err, f.opt.Log); refused {
			if answer != nil {
				f.write(answer)
			}
			continue
		}
		if err != nil {
			return err
		}
		if f.opt.Traffic != nil {
			f.opt.Traffic(true, msg)
		}
		env, err := Peek(msg)
		switch {
		case err == nil && env.IsArray:
			f.batch(msg, s)
		case f.admit(env, err, nil, &msg):
			s.Send(msg)
		default:
			f.write(msg)
		}
	}
}

// batch splits a batch: each element is sent on its own, the answers are
// collected into one array.
func (f *stdioFront) batch(msg []byte, s Session) {
	var elems []json.RawMessage
	if err := json.Unmarshal(msg, &elems); err != nil || len(elems) == 0 {
		f.write(ErrorResponse(nil, CodeInvalidRequest, TextEmptyBatch, nil))
		return
	}
	b := &batch{want: 1}
	var send [][]byte
	for _, el := range elems {
		m := []byte(el)
		env, err := Peek(m)
		if err == nil && env.IsArray {
			err = errNotObject
		}
		if f.admit(env, err, b, &m) {
			send = append(send, m)
		} else {
			b.out = append(b.out, m)
		}
	}
	for _, el := range send {
		s.Send(el)
	}
	f.mu.Lock()
	whole := f.settle(b, "", nil)
	f.mu.Unlock()
	f.write(whole)
}

// admit reports whether a message read (env, err: Peek's) goes to the
// session: it notes a request (to be answered, in b when it is part of a
// batch) and forgets one the client cancels. Otherwise *msg becomes its
// refusal.
func (f *stdioFront) admit(env Envelope, err error, b *batch, msg *[]byte) bool {
	switch {
	case err != nil:
		*msg = ErrorResponse(nil, CodeInvalidRequest, TextNotAnRPC, nil)
		return false
	case env.IsRequest() && Reserved(env.ID):
		*msg = ErrorResponse(env.ID, CodeInvalidRequest, TextReserved, nil)
		return false
	}
	var whole []byte
	f.mu.Lock()
	switch id := string(env.ID); {
	case env.IsRequest() && IDProblem(env.ID) == "":
		f.open[id] = env.Method == "subscriptions/listen"
		if b != nil && f.inBatch[id] == nil {
			f.inBatch[id] = b
			b.want++
		}
	case env.Method == "notifications/cancelled":
		id = string(jsonscan.Member(env.Params, "requestId"))
		delete(f.open, id)
		if cb := f.inBatch[id]; cb != nil {
			whole = f.settle(cb, id, nil) // no answer will come
		}
	}
	f.mu.Unlock()
	f.write(whole)
	return true
}

// settle adds msg (nil: none) to b's answers, for its request id ("": for
// the sending of its elements); it returns b's array once nothing more is
// missing. f.mu is held.
func (f *stdioFront) settle(b *batch, id string, msg []byte) []byte {
	delete(f.inBatch, id)
	if msg != nil {
		b.out = append(b.out, msg)
	}
	if b.want--; b.want > 0 || len(b.out) == 0 {
		return nil
	}
	return append(append([]byte{'['}, bytes.Join(b.out, []byte{','})...), ']')
}

// Deliver writes one message of the session's; a response (rel: its own
// id) ends its request's wait, and one to a request of a batch goes in
// the batch's array.
func (f *stdioFront) Deliver(msg, rel []byte) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	if rel != nil {
		if _, ok := f.open[string(rel)]; ok && IsResponse(msg) {
			delete(f.open, string(rel))
			select {
			case f.answered <- struct{}{}:
			default:
			}
		}
	}
	if len(f.inBatch) > 0 {
		if env, err := Peek(msg); err == nil && env.IsResponse() && f.inBatch[string(env.ID)] != nil {
			msg = f.settle(f.inBatch[string(env.ID)], string(env.ID), msg)
		}
	}
	f.mu.Unlock()
	f.write(msg)
}

// write puts one message (none when nil) on out, flushed.
func (f *stdioFront) write(msg []byte) {
	if msg == nil {
		return
	}
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.werr != nil {
		return
	}
	if f.opt.Traffic != nil {
		f.opt.Traffic(false, msg)
	}
	err := WriteMsg(f.bw, msg)
	if err == nil {
		err = f.bw.WriteByte('\n')
	}
	if err == nil {
		err = f.bw.Flush()
	}
	if err != nil {
		f.werr = err
		close(f.broken)
	}
}

// await waits, at most Grace or until ctx ends, until every request read
// (listens aside) has its answer.
func (f *stdioFront) await(ctx context.Context) {
	deadline := time.NewTimer(f.opt.Grace)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		n := 0
		for _, listen := range f.open {
			if !listen {
				n++
			}
		}
		f.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-f.answered:
		case <-deadline.C:
			f.opt.Log.Warn("the client's input ended; requests still unanswered get an error", "requests", n)
			return
		case <-ctx.Done():
			return
		case <-f.broken:
			return
		}
	}
}

// shutDown answers every request still open (listens aside) with
// TextShuttingDown, once the session is closed.
func (f *stdioFront) shutDown() {
	f.mu.Lock()
	f.closed = true
	var out [][]byte
	for id, listen := range f.open {
		if listen {
			continue
		}
		msg := ErrorResponse([]byte(id), CodeServerDown, TextShuttingDown, nil)
		if b := f.inBatch[id]; b != nil {
			msg = f.settle(b, id, msg)
		}
		out = append(out, msg)
	}
	clear(f.open)
	f.mu.Unlock()
	for _, msg := range out {
		f.write(msg)
	}
}

// Refusal reports whether err, from a Stream's Next, is a line that is no
// message (a *TooLargeError, an *InvalidError); then it logs it and
// returns the answer the peer gets: a parse error, or an invalid-request
// error under the id of a line too large (nil when that id cannot be
// read: a notification, or a line cut before its id).
func Refusal(err error, log *slog.Logger) (answer []byte, refused bool) {
	var tl *TooLargeError
	var bad *InvalidError
	switch {
	case errors.As(err, &tl):
		log.Warn("message too large; not read", "bytes", tl.Size, "limit", tl.Max)
		if id := tl.ID(); id != nil && IDProblem(id) == "" && string(id) != "null" {
			return ErrorResponse(id, CodeInvalidRequest, TextTooLarge(tl.Size, tl.Max), nil), true
		}
		return nil, true
	case errors.As(err, &bad) && bad.BadUTF8:
		log.Warn("a line is not valid UTF-8; answered with a parse error")
		return ErrorResponse(nil, CodeParseError, TextBadUTF8, nil), true
	case errors.As(err, &bad):
		log.Warn("a line is not JSON; answered with a parse error", "line", Abbreviate(bad.Line, 200))
		return ErrorResponse(nil, CodeParseError, TextBadJSON, nil), true
	}
	return nil, false
}

// Abbreviate is b for a log line: its first n bytes, and "…" when it is
// longer.
func Abbreviate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
