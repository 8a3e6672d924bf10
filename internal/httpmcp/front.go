package httpmcp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/wire"
)

// The front: Streamable HTTP served to clients in front of one
// *mcp.Server (the mux engine's, single mode included, or [cli]'s), many
// client sessions at once.
//
// Contract:
//   - Only the path /mcp is served; every other path is 404.
//   - A request whose Origin header is present and not a loopback origin
//     (http or https, host localhost, 127.0.0.0/8 or [::1], any port) is
//     answered 403 before anything else (the spec's DNS rebinding
//     defence); so is one that reached a loopback address under a Host
//     that is not loopback (the SDK's own check). No Origin passes: that
//     is what non-browser clients send.
//   - Both eras. A request with no Mcp-Session-Id whose
//     MCP-Protocol-Version header is 2026-07-28 or later goes to the
//     SDK's stateless handler (session-less HTTP: each request its own
//     short session, subscriptions/listen held open on its POST); every
//     other request to the SDK's stateful one, which issues the session
//     ids of legacy clients at initialize and answers GET (the client's
//     notification stream), DELETE and unknown ids (404). The server
//     outlives every child, so a session id stays valid across all of the
//     child's restarts.
//   - Serve serves until ctx ends, then shuts the HTTP server down (open
//     streams closed, at most ShutdownTimeout) and closes every session.
//   - Traffic, when set, sees every message both ways with the session id
//     it belongs to ("" for a session-less request): a POST's body (as
//     the client sent it: one message or a batch), each event of a
//     response stream, or a JSON response.
//   - Sessions are the mux's to report (it sees every request); the front
//     reports its URL.

// DefaultShutdownTimeout bounds the HTTP server's graceful shutdown.
const DefaultShutdownTimeout = 2 * time.Second

// FrontConfig is what a Front needs; the zero value serves, logs nothing
// and records nothing.
type FrontConfig struct {
	Logger *slog.Logger // nil = discard; the debug line per message goes here
	// Traffic, when set, is called for every message through the front,
	// with the session id it belongs to and its direction.
	Traffic func(session string, toServer bool, msg []byte)
	// ShutdownTimeout bounds the graceful shutdown; 0 = DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// MaxMessage bounds a request's body (413 beyond); 0 = the SDK's
	// default (mcp.DefaultMaxRequestBodyBytes).
	MaxMessage int64
}

// Front is a Streamable HTTP front. Make it with Listen; Serve it once.
type Front struct {
	cfg FrontConfig
	log *slog.Logger
	ln  net.Listener
	url string

	closeOnce sync.Once

	mu  sync.Mutex
	srv *mcp.Server // while Serve runs
}

// Session is a client session of the front that has an id (a legacy
// client's), as its initialize described it.
type Session struct {
	ID                      string
	Name, Version, Protocol string
}

// Sessions lists the open sessions with an id. A session-less
// (2026-07-28) client has none between its requests.
func (f *Front) Sessions() []Session {
	f.mu.Lock()
	srv := f.srv
	f.mu.Unlock()
	if srv == nil {
		return nil
	}
	var out []Session
	for ss := range srv.Sessions() {
		if ss.ID() == "" {
			continue
		}
		s := Session{ID: ss.ID()}
		if ip := ss.InitializeParams(); ip != nil {
			s.Protocol = ip.ProtocolVersion
			if ip.ClientInfo != nil {
				s.Name, s.Version = ip.ClientInfo.Name, ip.ClientInfo.Version
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Session) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Listen binds addr (host:port; port 0 = a free port) and returns the
// front, which accepts connections from now on (they wait for Serve).
func Listen(addr string, cfg FrontConfig) (*Front, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	u := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/mcp"}
	return &Front{cfg: cfg, log: log, ln: ln, url: u.String()}, nil
}

// URL is where the front serves: http://HOST:PORT/mcp, with the port it
// bound.
func (f *Front) URL() string { return f.url }

// Addr is the address the front bound.
func (f *Front) Addr() string { return f.ln.Addr().String() }

// Close releases the listener of a front that will not Serve.
func (f *Front) Close() { f.closeOnce.Do(func() { f.ln.Close() }) }

// Serve serves srv until ctx ends (nil) or the listener fails.
func (f *Front) Serve(ctx context.Context, srv *mcp.Server) error {
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
	get := func(*http.Request) *mcp.Server { return srv }
	h := &frontHandler{
		f:         f,
		stateful:  mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: f.log, MaxRequestBodyBytes: f.cfg.MaxMessage}),
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: f.log, MaxRequestBodyBytes: f.cfg.MaxMessage, Stateless: true}),
	}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(f.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(f.ln) }()
	select {
	case err := <-served:
		f.Close()
		return err
	case <-ctx.Done():
	}
	// Shutdown waits for handlers; a client's GET stream and a held
	// subscriptions/listen never end by themselves, so the sessions are
	// closed at once and the wait is bounded.
	sctx, cancel := context.WithTimeout(context.Background(), f.cfg.ShutdownTimeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		_ = hs.Shutdown(sctx)
		close(done)
	}()
	for _, ss := range slices.Collect(srv.Sessions()) {
		ss.Close()
	}
	<-done
	hs.Close()
	<-served
	f.Close()
	return nil
}

// frontHandler is the front's http.Handler.
type frontHandler struct {
	f                   *Front
	stateful, stateless *mcp.StreamableHTTPHandler
}

func (h *frontHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !LoopbackOrigin(o) {
		h.f.log.Warn("refused a request from a web page's origin (not this machine)", "origin", o, "method", r.Method)
		http.Error(w, "Forbidden: Origin "+o+" is not this machine", http.StatusForbidden)
		return
	}
	next := h.stateful
	if r.Header.Get("Mcp-Session-Id") == "" && wire.IsModern(r.Header.Get("Mcp-Protocol-Version")) {
		next = h.stateless
	}
	if h.f.cfg.Traffic == nil && !h.f.log.Enabled(r.Context(), slog.LevelDebug) {
		next.ServeHTTP(w, r)
		return
	}
	rec := &recorder{ResponseWriter: w, h: h, session: r.Header.Get("Mcp-Session-Id"), method: r.Method}
	if r.Method == http.MethodPost && r.Body != nil {
		limit := h.f.cfg.MaxMessage
		if limit <= 0 {
			limit = mcp.DefaultMaxRequestBodyBytes
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		r.Body.Close()
		if err != nil {
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		rec.req = body
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	next.ServeHTTP(rec, r)
	rec.finish()
}

// note records one message: the traffic hook and the debug line.
func (h *frontHandler) note(session string, toServer bool, msg []byte) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return
	}
	if h.f.cfg.Traffic != nil {
		h.f.cfg.Traffic(session, toServer, msg)
	}
	if h.f.log.Enabled(context.Background(), slog.LevelDebug) {
		// As the relay's line per message, with the hop's transport and
		// the client's session.
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
		h.f.log.Debug(what, args...)
	}
}

// recorder passes a response through and records the messages in it:
// the request first (once the response's headers name the session an
// initialize opened), then each server-sent event's data, or a JSON body.
type recorder struct {
	http.ResponseWriter
	h       *frontHandler
	session string
	method  string
	req     []byte

	mu      sync.Mutex
	started bool
	sse     bool
	buf     []byte
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) WriteHeader(code int) {
	r.start()
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.start()
	r.mu.Lock()
	r.buf = append(r.buf, p...)
	if r.sse {
		r.events()
	}
	r.mu.Unlock()
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Flush() {
	if fl, ok := r.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// start records the request once the response's headers are set.
func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	hd := r.Header()
	if id := hd.Get("Mcp-Session-Id"); id != "" && r.session == "" {
		r.session = id
	}
	r.sse = strings.HasPrefix(hd.Get("Content-Type"), "text/event-stream")
	if r.req != nil {
		r.h.note(r.session, true, r.req)
		r.req = nil
	}
}

// events records each complete event in buf. r.mu is held.
func (r *recorder) events() {
	for {
		i := bytes.Index(r.buf, []byte("\n\n"))
		if i < 0 {
			return
		}
		ev := r.buf[:i]
		r.buf = r.buf[i+2:]
		var data [][]byte
		for line := range bytes.SplitSeq(ev, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(d, []byte(" ")))
			}
		}
		if len(data) > 0 {
			r.h.note(r.session, false, bytes.Join(data, []byte("\n")))
		}
	}
}

// finish records what is left: a request that got no response, a JSON
// response body.
func (r *recorder) finish() {
	r.start()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.sse && strings.HasPrefix(r.Header().Get("Content-Type"), "application/json") {
		r.h.note(r.session, false, r.buf)
	}
	r.buf = nil
}

// LoopbackOrigin reports whether an Origin header names this machine:
// http or https, host localhost, an address in 127.0.0.0/8 or [::1], any
// port.
func LoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
