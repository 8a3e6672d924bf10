package httpmcp

import (
	"cmp"
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

// Prepare readies a start's command (its logs, its port: the package
// doc) and returns the URL this start serves.
func (c Child) Prepare(cmd *exec.Cmd) (logs io.ReadCloser, url string, err error) {
	url = c.URL
	if c.Overlaps() {
		u, err := neturl.Parse(strings.ReplaceAll(url, c.Placeholder, "0"))
		var ln net.Listener // a port of the host that is free a moment ago
		if err == nil {
			ln, err = net.Listen("tcp", net.JoinHostPort(u.Hostname(), "0"))
		}
		if err != nil {
			return nil, "", fmt.Errorf("picking a port for %s: %w", c.URL, err)
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
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
	return &logPipe{r: r, w: w}, url, nil
}

// logPipe is a process's log: the read end of its output pipe, whose
// write end is the process's once it starts, closed here at the first
// read or at Close (a start that failed).
type logPipe struct {
	r, w *os.File
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
	wait := cmp.Or(max(c.Wait, 0), 30*time.Second)
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: time.Second}
	deadline := time.Now().Add(wait)
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 100*time.Millisecond) {
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
		if err != nil {
			return fmt.Errorf("run.url %s: %v", url, err)
		}
		if resp, err := hc.Do(req); err == nil {
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
	}
}

// Link returns one session's link to the server serving at url; sent,
// when set, sees each message as it is sent.
func (c Child) Link(url string, sent func(msg []byte)) wire.Link {
	c.MaxMessage = cmp.Or(max(c.MaxMessage, 0), wire.DefaultMaxMessage)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	hc := &http.Client{Transport: &http.Transport{
		Proxy:               nil, // the child is local: no proxy from the environment
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // bytes pass as the server wrote them
	}}
	l := &Link{cfg: c, log: c.Logger, url: url, ctx: ctx, cancel: cancel, hc: hc, done: make(chan struct{})}
	l.out = &wire.Outbox{Write: func(msg, _ []byte) error { l.dispatch(msg); return nil }, Stall: -1, Sent: sent}
	return l
}

// failGrace is how long the link keeps to itself that a request's
// exchange ended without its answer: the process has most likely died.
const failGrace = time.Second

// Link is the wire.Link of a child that serves Streamable HTTP (the
// package doc says what it does, and why not through the Go SDK).
type Link struct {
	cfg Child
	log *slog.Logger
	url string

	ctx    context.Context // ends with Close or when the link ends itself
	cancel context.CancelFunc
	hc     *http.Client
	out    *wire.Outbox   // what goes to the server, in order
	wg     sync.WaitGroup // every goroutine of the link but the one that closes done
	done   chan struct{}

	rcvMu sync.Mutex // one call of rcv at a time
	rcv   wire.LinkReceiver

	session linkSession  // the legacy era's session
	params  paramHeaders // the tools' x-mcp-header bindings (SEP-2243)
	greeted atomic.Bool  // the server answered a request
	lost    atomic.Bool  // the server forgot the session: the link ended
}

// linkSession is a link's legacy session: the id the server gave, the
// version negotiated, and the checks of whether the server still knows
// it after a 404.
type linkSession struct {
	mu        sync.Mutex
	id        string
	version   string
	listening bool // the standalone GET stream was opened
	checking  bool // a check runs on a goroutine of its own
	checks    int  // checks made (their ids)
}

// legacy returns the session id and negotiated version.
func (s *linkSession) legacy() (id, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, s.version
}

// negotiated notes the legacy version; true the first time, when the
// standalone stream is to be opened.
func (s *linkSession) negotiated(version string) (listen bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = version
	listen, s.listening = !s.listening, true
	return listen
}

// check returns the id of a new check's ping; false when there is no
// session, or, for a check in the background, one runs already.
func (s *linkSession) check(background bool) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id == "" || (background && s.checking) {
		return nil, false
	}
	s.checking = s.checking || background
	s.checks++
	return []byte(strconv.Quote("mcpflow-session-check-" + strconv.Itoa(s.checks))), true
}

func (s *linkSession) checked(background bool) {
	s.mu.Lock()
	s.checking = s.checking && !background
	s.mu.Unlock()
}

// Kind names the transport in the log.
func (l *Link) Kind() string { return "http" }

// Done is closed once nothing more will be received.
func (l *Link) Done() <-chan struct{} { return l.done }

// textSessionLost is Lost once the server forgot the link's session.
const textSessionLost = "its HTTP session ended (the server answered 404 for its session id)"

// Lost says why the link ended on its own.
func (l *Link) Lost() string {
	if l.lost.Load() {
		return textSessionLost
	}
	return fmt.Sprintf("its HTTP connection (%s) ended", l.url)
}

// Start begins carrying messages: each message the server sends goes to
// rcv.
func (l *Link) Start(rcv wire.LinkReceiver) {
	l.rcv = rcv
	l.wg.Go(func() { l.out.Run(nil) })
	go func() {
		<-l.ctx.Done()
		l.out.Drop()
		l.wg.Wait()
		l.hc.CloseIdleConnections()
		close(l.done)
	}()
}

// Send queues msg for the server; the link owns msg from then on.
func (l *Link) Send(msg []byte) { l.out.Send(msg, nil) }

// Close stops sending: what is queued goes out first (at most closeWait),
// then every exchange in flight is canceled.
func (l *Link) Close() {
	l.out.Close()
	go func() {
		wire.WaitClosed(l.out.Done(), closeWait)
		l.cancel()
	}()
}

// closeWait bounds how long Close lets what is queued go out.
const closeWait = 2 * time.Second

// receive calls fn with the receiver, one call at a time; not once the
// link ended.
func (l *Link) receive(fn func(wire.LinkReceiver)) {
	l.rcvMu.Lock()
	defer l.rcvMu.Unlock()
	if l.ctx.Err() == nil {
		fn(l.rcv)
	}
}

// deliver hands one message to the receiver.
func (l *Link) deliver(msg, rel []byte) {
	l.receive(func(r wire.LinkReceiver) { r.Message(msg, rel) })
}

func (l *Link) junk(msg []byte, badJSON bool) {
	l.receive(func(r wire.LinkReceiver) { r.Junk(msg, badJSON) })
}
