package httpmcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// Child says where a child serves Streamable HTTP and how long it may
// take to answer there. Its Link method makes the link of one start.
type Child struct {
	// URL is where the server serves, http://HOST:PORT/PATH; where it
	// holds Placeholder, each start gets a free port of HOST, given to the
	// command as PORT in its environment.
	URL         string
	Placeholder string // "{port}" (config.PortPlaceholder); "" = none
	// Wait bounds the wait for the URL to answer after the start
	// (relay.handshake_timeout); 0 = 30 s.
	Wait time.Duration
	// MaxMessage bounds each message the server sends (relay.max_message);
	// 0 = wire.DefaultMaxMessage.
	MaxMessage int
	// Logger receives what the link does on its own (a session check, a
	// refused notification); nil = discard.
	Logger *slog.Logger
}

// Prepare is called before the server's process starts: its stdout and
// stderr both go to logs (an HTTP server's stdout is not protocol), and
// with a placeholder URL it gets a free port, as PORT in its environment.
// It returns the URL this start serves.
func (c Child) Prepare(cmd *exec.Cmd) (logs io.ReadCloser, url string, err error) {
	url = c.URL
	if c.Overlaps() {
		port, err := freePort(strings.ReplaceAll(url, c.Placeholder, "0"))
		if err != nil {
			return nil, "", fmt.Errorf("picking a port for %s: %w", c.URL, err)
		}
		url = strings.ReplaceAll(url, c.Placeholder, port)
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, "PORT="+port)
	}
	if _, err := neturl.Parse(url); err != nil {
		return nil, "", fmt.Errorf("run.url %s: %w", url, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stdout, cmd.Stderr = w, w
	// The write end is the process's once it starts: closed here once
	// the reader is done with it (at the process's end, whoever else
	// holds it), and at once should the start fail.
	return &logPipe{r: r, w: w, cmd: cmd}, url, nil
}

// logPipe is a process's log: the read end of its output pipe, whose
// write end mcpflow closes once the process started (or failed to).
type logPipe struct {
	r    *os.File
	w    *os.File
	cmd  *exec.Cmd
	once sync.Once
}

func (p *logPipe) Read(b []byte) (int, error) {
	p.once.Do(func() { p.w.Close() }) // the process has it, or nobody
	return p.r.Read(b)
}

func (p *logPipe) Close() error {
	p.once.Do(func() { p.w.Close() })
	return p.r.Close()
}

// Overlaps reports whether a start may run beside the one it replaces:
// with a placeholder URL each start has a port of its own.
func (c Child) Overlaps() bool {
	return c.Placeholder != "" && strings.Contains(c.URL, c.Placeholder)
}

// Ready waits until url answers an HTTP request at all (any status),
// within Wait (30 s when 0).
func (c Child) Ready(ctx context.Context, url string) error {
	wait := c.Wait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	deadline := time.Now().Add(wait)
	delay := 5 * time.Millisecond
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		req, err := http.NewRequestWithContext(rctx, http.MethodHead, url, nil)
		if err != nil {
			cancel()
			return fmt.Errorf("run.url %s: %v", url, err)
		}
		resp, err := hc.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("it did not answer at %s within %s (is run.url where it listens?)", url, wait)
		}
		if !sleep(ctx, delay) {
			return ctx.Err()
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
}

// Link returns one session's link to the server serving at url; sent,
// when set, sees each message as it is sent.
func (c Child) Link(url string, sent func(msg []byte)) wire.Link {
	l := c.newLink(url)
	l.out.Sent = sent
	return l
}

func (c Child) newLink(url string) *Link {
	if c.MaxMessage <= 0 {
		c.MaxMessage = wire.DefaultMaxMessage
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := &http.Transport{
		Proxy:               nil, // the child is local: no proxy from the environment
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // bytes pass as the server wrote them
	}
	l := &Link{cfg: c, log: log, url: url, ctx: ctx, cancel: cancel, tr: tr, hc: &http.Client{Transport: tr}, done: make(chan struct{})}
	l.out = &wire.Outbox{Write: func(msg, _ []byte) error { l.dispatch(msg); return nil }, Stall: -1}
	return l
}

// failGrace is how long the link keeps to itself the news that a
// request's HTTP exchange ended without its answer (the connection
// reset, the stream cut): the process has most likely died, and the
// relay's crash report is the better answer. A server that still runs
// after it gets an error answer for the request from the link.
const failGrace = time.Second

// Link is the wire.Link of a child that serves Streamable HTTP: it
// carries the relay's messages to the server at the child's URL and
// hands each message the server sends to the relay's LinkReceiver.
//
// It frames Streamable HTTP itself, with net/http, rather than through
// the Go SDK's client transport, for three reasons. The SDK's connection
// decodes every message into a jsonrpc.Message and encodes it again, so
// a message does not pass as the server wrote it: ids become jsonrpc.IDs
// (1.5 turns into 1, 2^53+1 into 2^53), and fields the SDK does not
// know are at its mercy. It fails the whole connection, for good, on one
// error status: a TypeScript server's 400 to logging/setLevel once made
// mcpflow kill and restart a healthy server. And it does not say which
// request's stream a message arrived on, which a progress notification
// or a request of the server needs to reach the client's right stream.
// Here every byte the server sent is passed on as it came, and the link
// reads of a message only what routing and the headers need, without
// decoding it (the envelope, by wire.Peek; initialize's protocolVersion;
// a 2026-07-28 request's _meta version, name and marked arguments); each
// message comes with the id of the request whose exchange carried it;
// and one failed exchange is an answer to that request, never the end of
// the link.
//
// Contract (wire.Link's, for HTTP):
//
//   - Attach: the process's stdout and stderr both go to logs (an HTTP
//     server's stdout is not protocol); its stdin is empty. With a
//     placeholder URL it picks a free port and adds PORT to the
//     command's environment.
//   - Start(nil, rcv): the link waits until the URL answers an HTTP
//     request at all (any status), within Child.Wait; messages sent
//     meanwhile wait, in order. A URL that never answers ends the link:
//     Done closes, and Lost (and Waiting) name the command and the URL.
//   - Send: a request is POSTed with the message's bytes as the body, on
//     a goroutine of its own; the next message goes out once the request
//     was written, not once it was answered, except after an initialize,
//     whose answer comes first (the session id in its headers, the
//     version in its result). A
//     notification or a response is POSTed and its 202 awaited (bounded),
//     so the server sees the messages in the order they were sent; any
//     other answer to it is logged, never fatal.
//   - Each message of the server's answer (a JSON body, or each event of
//     an event stream) is checked as the one framer checks a line: over
//     MaxMessage it is dropped unread (rcv.TooLarge), not JSON in UTF-8 or
//     no JSON-RPC object it is junk (rcv.Junk). A message that is no
//     response comes with rel, the id of the request whose stream carried
//     it; a response comes with rel nil. rcv is called one call at a time.
//   - A request whose exchange ends without its answer (the stream cut,
//     the connection reset) is answered by the link with a -32603 error
//     after failGrace, unless the link ended meanwhile; an event stream
//     whose events had ids is first resumed (GET with Last-Event-ID,
//     bounded). An error status is that request's answer: the server's
//     JSON-RPC response as written when the body is one for the request's
//     id; the server's JSON-RPC error under the request's id when it
//     wrote it under another (null: before it read the request); else a
//     -32603 error naming the status and the start of the body. The link
//     goes on.
//   - A 404 to a message carrying the legacy session id (unless the body
//     is the request's own answer), or to the GET stream, makes the link
//     check the session with a ping of its own (one at a time; its answer
//     stays in the link); only a 404 that does not answer that ping too
//     ends the link, and Lost says so.
//   - Until the server first answered a request, the link answers a ping
//     itself (the URL answered, which is what a ping asks): a server may
//     refuse anything before its handshake (the TypeScript SDK's 1.x
//     servers answer 400). A server/discover refused at the HTTP level
//     gets -32601 "method not found": the server speaks the legacy
//     handshake.
//   - Legacy era: after an initialize answered with a version before
//     2026-07-28, the link sends that version and the session id with
//     each request and opens the session's standalone GET stream, whose
//     messages come with rel nil; it reconnects (Last-Event-ID) when the
//     server ends it. 2026-07-28: session-less, no GET stream; a
//     subscriptions/listen request's stream stays open and its
//     notifications come with rel = the listen request's id. Each request
//     carries the SEP-2243 headers (Mcp-Method, Mcp-Name, Mcp-Param-*).
//   - Close stops sending and cancels every exchange in flight (no
//     DELETE: the process is being stopped); Done closes once every
//     goroutine of the link ended.
type Link struct {
	cfg Child
	log *slog.Logger
	url string

	ctx    context.Context // ends with Close or when the link ends itself
	cancel context.CancelFunc
	tr     *http.Transport
	hc     *http.Client
	out    *wire.Outbox   // what goes to the server, in order
	wg     sync.WaitGroup // every goroutine of the link but the one that closes done
	done   chan struct{}
	ended  sync.Once // closes done

	mu       sync.Mutex
	session  string // the legacy session id
	version  string // the legacy era's negotiated protocol version
	getOpen  bool   // the standalone GET stream was opened
	checking bool   // a session check is in flight
	checks   int    // session checks made (their ids)

	rcvMu sync.Mutex
	rcv   wire.LinkReceiver

	greeted atomic.Bool // the server answered a request
	lost    atomic.Pointer[string]

	params paramHeaders // the tools' x-mcp-header bindings (SEP-2243)
}

// Kind names the transport in the log.
func (l *Link) Kind() string { return "http" }

// Done is closed once nothing more will be received.
func (l *Link) Done() <-chan struct{} { return l.done }

// Lost says why the link ended on its own: the URL never answered, or
// the server's session ended.
func (l *Link) Lost() string {
	if p := l.lost.Load(); p != nil {
		return *p
	}
	return fmt.Sprintf("its HTTP connection (%s) ended", l.url)
}

// freePort returns a port that was free on the host of rawURL a moment ago.
func freePort(rawURL string) (string, error) {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// Start begins carrying messages: each message the server sends goes to
// rcv.
func (l *Link) Start(rcv wire.LinkReceiver) {
	l.rcv = rcv
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.out.Run(nil)
	}()
	go func() {
		<-l.ctx.Done()
		l.out.Drop()
		l.wg.Wait()
		l.finish()
	}()
}

// finish ends the link: its context, its idle connections, and Done.
func (l *Link) finish() {
	l.ended.Do(func() {
		l.cancel()
		l.tr.CloseIdleConnections()
		close(l.done)
	})
}

// Send queues msg for the server; the link owns msg from then on.
func (l *Link) Send(msg []byte) { l.out.Send(msg, nil) }

// Close stops sending: what is queued goes out first (at most closeWait),
// then every exchange in flight is canceled; Done closes once the link's
// goroutines ended.
func (l *Link) Close() {
	l.out.Close()
	go func() {
		waitDone(l.out.Done(), closeWait)
		l.cancel()
	}()
}

// closeWait bounds how long Close lets what is queued go out.
const closeWait = 2 * time.Second

func waitDone(ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// end ends the link on its own, for the reason why (Lost).
func (l *Link) end(why string) {
	if l.ctx.Err() != nil {
		return // closed already: the relay knows why
	}
	l.lost.CompareAndSwap(nil, &why)
	l.log.Warn("HTTP child link ended", "url", l.url, "why", why)
	l.cancel()
}

// deliver hands one message to the receiver; nothing once the link ended.
func (l *Link) deliver(msg, rel []byte) {
	l.rcvMu.Lock()
	defer l.rcvMu.Unlock()
	if l.ctx.Err() == nil {
		l.rcv.Message(msg, rel)
	}
}

func (l *Link) tooLarge(tl *wire.TooLargeError) {
	l.rcvMu.Lock()
	defer l.rcvMu.Unlock()
	if l.ctx.Err() == nil {
		l.rcv.TooLarge(tl)
	}
}

func (l *Link) junk(line []byte, badJSON bool) {
	l.rcvMu.Lock()
	defer l.rcvMu.Unlock()
	if l.ctx.Err() == nil {
		l.rcv.Junk(line, badJSON)
	}
}

// legacy returns the legacy session id and negotiated version.
func (l *Link) legacy() (session, version string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.session, l.version
}
