package httpmcp

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// Session-less clients share one connection to the server: one that does
// not read must be cut before its flood holds the others' answers behind
// it. So the kernel keeps little of what waits for any client (sendBuffer:
// the rest waits in its session's queue, where the bounds see it), and a
// session-less client is cut once more than sharedQueueBytes wait.
const (
	sendBuffer       = 64 << 10
	sharedQueueBytes = 1 << 20
)

// FrontConfig is what a Front needs; the zero value serves with the
// defaults, logs nothing and records nothing. A bound of 0 is its
// default, which fill sets.
type FrontConfig struct {
	Logger *slog.Logger // nil = discard; the debug line per message goes here
	// Traffic, when set, is called for every message through the front,
	// with the session id it belongs to and its direction. It must not
	// keep or modify msg.
	Traffic           func(session string, toServer bool, msg []byte)
	ShutdownTimeout   time.Duration // bounds Serve's return once its context ends
	MaxMessage        int64         // bounds a POST's body (413 beyond)
	ReadHeaderTimeout time.Duration // bounds reading a request's headers
	// BodyTimeout bounds reading a POST's body: a body that trickles in
	// longer is cut and answered 408.
	BodyTimeout time.Duration
	MaxConns    int // bounds the open connections; more wait to be accepted
	// MaxSessions bounds the open sessions (a session-less POST counts
	// while it runs); a request that would open one more is answered 503.
	MaxSessions int
	// IdleTimeout closes a legacy session with no request and no open
	// stream for this long; its id is 404 from then on.
	IdleTimeout time.Duration
	// QueueBytes bounds what waits for one session's client: messages
	// not yet written to its streams (beyond it the session is full), and
	// messages kept for a GET stream that is not open (beyond it they are
	// dropped, with a warning).
	QueueBytes int
	// StallTimeout closes a session that stays full this long (its client
	// does not read what it is sent); it also bounds the write of one
	// event to a client.
	StallTimeout time.Duration
	// Token, when set, is required of every request as
	// "Authorization: Bearer Token" (401 without it), and replaces the
	// check of each connection's owner (front_owner.go): clients of other
	// users or machines that have the token are served.
	Token string
}

func (c *FrontConfig) fill() {
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.ShutdownTimeout = cmp.Or(max(c.ShutdownTimeout, 0), 2*time.Second)
	c.ReadHeaderTimeout = cmp.Or(max(c.ReadHeaderTimeout, 0), 10*time.Second)
	c.BodyTimeout = cmp.Or(max(c.BodyTimeout, 0), 30*time.Second)
	c.IdleTimeout = cmp.Or(max(c.IdleTimeout, 0), 30*time.Minute)
	c.StallTimeout = cmp.Or(max(c.StallTimeout, 0), 10*time.Second)
	c.MaxMessage = cmp.Or(max(c.MaxMessage, 0), wire.DefaultMaxMessage)
	c.MaxConns = cmp.Or(max(c.MaxConns, 0), 1024)
	c.MaxSessions = cmp.Or(max(c.MaxSessions, 0), 1000)
	c.QueueBytes = cmp.Or(max(c.QueueBytes, 0), 8<<20)
}

// Front is a Streamable HTTP front. Make it with Listen; Serve it once.
type Front struct {
	cfg FrontConfig
	log *slog.Logger
	ln  net.Listener
	url string

	params   paramHeaders  // the tools' x-mcp-header arguments, from the tools/list answers carried
	stop     chan struct{} // closed once Serve's context ends
	kick     chan struct{} // wakes the janitor: a session must be closed
	handlers sync.WaitGroup

	mu       sync.Mutex
	opener   wire.Opener
	fan      *wire.FanIn // the session-less requests' one session of opener
	stopping bool
	opening  int                        // sessions being opened
	byID     map[string]*frontSession   // legacy sessions by id
	all      map[*frontSession]struct{} // every open session
}

// SessionInfo describes an open client session, for `mcpflow status`.
type SessionInfo struct {
	ID string // "" for a session-less (2026-07-28) client's request
	// Client, ClientVersion and Protocol are what the client said in its
	// initialize or its request's _meta (Protocol: the version its
	// requests carry once known), cut to 200 bytes.
	Client, ClientVersion, Protocol string
	Era                             string // "legacy" or "modern"
	Started, LastSeen               time.Time
	Requests                        int64     // requests received
	InFlight                        int       // requests not answered yet
	IdleSince                       time.Time // since when none of its requests or streams is open; zero while one is
}

// Sessions lists the open sessions, oldest first.
func (f *Front) Sessions() []SessionInfo {
	var out []SessionInfo
	for _, s := range f.sessions() {
		s.mu.Lock()
		info := s.info
		info.InFlight = len(s.pending)
		if s.active == 0 {
			info.IdleSince = s.idleSince
		}
		s.mu.Unlock()
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		return cmp.Or(a.Started.Compare(b.Started), strings.Compare(a.ID, b.ID))
	})
	return out
}

// Listen binds addr (host:port; port 0 = a free port) and returns the
// front. Clients that connect before Serve wait for it.
func Listen(addr string, cfg FrontConfig) (*Front, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	cfg.fill()
	return &Front{cfg: cfg, log: cfg.Logger, ln: ln, url: "http://" + ln.Addr().String() + "/mcp",
		stop: make(chan struct{}), kick: make(chan struct{}, 1),
		byID: map[string]*frontSession{}, all: map[*frontSession]struct{}{}}, nil
}

// URL is where the front serves: http://HOST:PORT/mcp, with the port it
// bound.
func (f *Front) URL() string { return f.url }

// Close releases the listener of a front that will not Serve.
func (f *Front) Close() { f.ln.Close() }

// Serve serves o's sessions until ctx ends, then closes every session and
// every open stream and returns nil within ShutdownTimeout; or it returns
// the listener's error (after closing every session).
func (f *Front) Serve(ctx context.Context, o wire.Opener) error {
	f.mu.Lock()
	f.opener, f.fan = o, wire.NewFanIn(o)
	f.mu.Unlock()
	hs := &http.Server{
		Handler:           f,
		ReadHeaderTimeout: f.cfg.ReadHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(f.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	// At most MaxConns connections, of the owner only (where one is
	// known) unless a Token is set.
	var ln net.Listener = &limitListener{Listener: f.ln, sem: make(chan struct{}, f.cfg.MaxConns), done: make(chan struct{})}
	if f.cfg.Token == "" && ownerKnown {
		ln = &ownerListener{Listener: ln, log: f.log, euid: os.Geteuid()}
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var janitor sync.WaitGroup
	janitor.Go(f.janitor) // until f.stop
	defer func() {
		janitor.Wait()
		f.Close()
	}()

	var serveErr error
	select {
	case serveErr = <-served:
	case <-ctx.Done():
	}
	deadline := time.Now().Add(f.cfg.ShutdownTimeout)
	f.mu.Lock()
	f.stopping = true
	close(f.stop) // every handler returns: streams end, new requests get 503
	f.mu.Unlock()
	sctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	shut := make(chan struct{})
	go func() {
		_ = hs.Shutdown(sctx)
		close(shut)
	}()
	var closing sync.WaitGroup // every session, all at once
	for _, s := range f.sessions() {
		closing.Go(func() { s.close() })
	}
	closing.Wait()
	f.fan.Close()
	<-shut
	_ = hs.Close() // what Shutdown left: connections in the middle of a write
	if serveErr == nil {
		<-served
	}
	// Handlers end at once now (their connections are closed, f.stop is);
	// the wait is bounded all the same.
	waited := make(chan struct{})
	go func() {
		f.handlers.Wait()
		close(waited)
	}()
	if !wire.WaitClosed(waited, time.Until(deadline)) {
		f.log.Warn("HTTP front: requests still running after the shutdown timeout", "timeout", f.cfg.ShutdownTimeout)
	}
	return serveErr
}

// ServeHTTP serves one request at /mcp.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.handlers.Add(1)
	defer f.handlers.Done()
	if !f.authorized(w, r) {
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !LoopbackOrigin(o) {
		f.log.Warn("refused a request from a web page's origin (not this machine)", "origin", o, "method", r.Method)
		http.Error(w, "Forbidden: Origin "+o+" is not this machine", http.StatusForbidden)
		return
	}
	if rebinding(r) {
		f.log.Warn("refused a request to this machine under another host name (DNS rebinding)", "host", r.Host, "method", r.Method)
		http.Error(w, "Forbidden: Host "+r.Host+" is not this machine", http.StatusForbidden)
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	select {
	case <-f.stop:
		http.Error(w, textShuttingDown, http.StatusServiceUnavailable)
		return
	default:
	}
	sid := r.Header.Get(hdrSessionID)
	pv := r.Header.Get(hdrProtocolVersion)
	modern := sid == "" && wire.IsModern(pv)
	if pv != "" && !wire.IsModern(pv) && !slices.Contains(mcp.SupportedProtocolVersions(), pv) {
		http.Error(w, "Bad Request: Unsupported protocol version "+pv+" (supported versions: "+strings.Join(mcp.SupportedProtocolVersions(), ",")+")", http.StatusBadRequest)
		return
	}
	getOrDelete := r.Method == http.MethodGet || r.Method == http.MethodDelete
	switch {
	case r.Method == http.MethodPost:
		f.post(w, r, sid, pv, modern)
	case getOrDelete && modern: // 2026-07-28: no standalone stream, no sessions to end
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed: the 2026-07-28 protocol has no "+r.Method+" (no sessions, no standalone stream)", http.StatusMethodNotAllowed)
	case getOrDelete && sid == "":
		http.Error(w, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header", http.StatusBadRequest)
	case r.Method == http.MethodGet:
		f.get(w, r, sid)
	case r.Method == http.MethodDelete:
		f.delete(w, sid)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// rebinding reports a request that reached a loopback address of the
// front under a Host that is not loopback: a web page whose host name an
// attacker resolved to this machine.
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && loopbackHost(local.String()) && !loopbackHost(r.Host)
}

// loopbackHost reports whether host (with or without a port) is
// localhost or a loopback address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.EqualFold(host, "localhost") || net.ParseIP(host).IsLoopback()
}

// LoopbackOrigin reports whether an Origin header names this machine:
// http or https, host localhost, an address in 127.0.0.0/8 or [::1], any
// port.
func LoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && loopbackHost(u.Host)
}

// note records one message: the traffic hook and the debug line.
func (f *Front) note(session string, toServer bool, msg []byte) {
	if f.cfg.Traffic != nil {
		f.cfg.Traffic(session, toServer, msg)
	}
	if !f.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	what := "from client"
	if !toServer {
		what = "to client"
	}
	args := []any{"bytes", len(msg), "via", "http"}
	if session != "" {
		args = append(args, "session", session)
	}
	if env, err := wire.Peek(msg); err == nil {
		if env.Method != "" {
			args = append(args, "method", env.Method)
		}
		if env.ID != nil {
			args = append(args, "id", string(env.ID))
		}
	}
	f.log.Debug(what, args...)
}

// limitListener accepts at most n connections at a time; Accept waits
// while n are open.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(sendBuffer)
	}
	return &limitConn{Conn: c, sem: l.sem}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back once closed.
type limitConn struct {
	net.Conn
	once sync.Once
	sem  chan struct{}
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.sem })
	return err
}
