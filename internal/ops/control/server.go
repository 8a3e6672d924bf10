package control

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpflow/mcpflow/internal/ops/logring"
)

// Limits of a Server.
const (
	MaxRequest        = 64 << 10         // bytes in a request's line and headers
	MaxArguments      = 16 << 20         // bytes in the body of POST /call: the tool's arguments
	maxConns          = 32               // connections served at once; as many more are answered busy
	readHeaderTimeout = 10 * time.Second // for a peer to send its request
	writeTimeout      = 10 * time.Second // for a peer to take each part of a response
	idleTimeout       = time.Minute      // between requests on one connection
	closeGrace        = 500 * time.Millisecond

	tokenHeader   = "Mcpflow-Token" // on Windows, the token of the instance's control file
	maxSocketPath = 103             // sun_path holds 104 bytes on macOS and BSDs (108 on Linux), with its NUL
)

// Info is what Listen needs from the instance.
type Info struct {
	Dir     string        // runtime folder; "" = runtimeDirs()'s first
	Config  string        // absolute path of the config file; "" when started from the command line
	Project string        // absolute project folder
	Mode    string        // ModeSingle, ModeMux or ModeCLI
	Version string        // mcpflow's version
	Target  Target        // required
	Logs    *logring.Ring // nil: GET /logs answers an error
	Tools   Tools         // nil: GET /tools and POST /call answer an error
}

// Tools is what mcpflow tools and call need of an instance: a session of
// their own on its server, answering the MCP result's JSON as is.
type Tools interface {
	ListTools(ctx context.Context) (json.RawMessage, error)
	CallTool(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// Server is one instance's control endpoint. Make it with Listen.
type Server struct {
	info    Info
	hello   Instance
	wantUID int    // the uid peers must have, where peerUID can tell
	token   string // "": no token asked (Windows asks one)
	ln      *limitListener
	srv     *http.Server

	cancel     context.CancelFunc // ends every request's context
	rebuilding sync.Mutex         // held by the one rebuild that runs

	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup
}

// Listen opens the instance's control socket and serves it until Close.
func Listen(info Info) (*Server, error) {
	return listen(info, os.Geteuid())
}

// listen is Listen with the uid peers must have.
func listen(info Info, wantUID int) (*Server, error) {
	if info.Target == nil {
		return nil, errors.New("control: Listen needs a Target")
	}
	if info.Dir == "" {
		info.Dir = runtimeDirs()[0]
	}
	if err := prepareDir(info.Dir, true); err != nil {
		return nil, err
	}
	cleanStale(info.Dir)
	ln, path, token, err := listenFree(info.Dir, os.Getpid())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{info: info, wantUID: wantUID, token: token, cancel: cancel, hello: Instance{
		Pid: os.Getpid(), Config: info.Config, Project: info.Project, Mode: info.Mode,
		Version: info.Version, Started: time.Now(), Socket: path,
	}}
	s.ln = &limitListener{Listener: ln, served: make(chan struct{}, maxConns), busy: make(chan struct{}, maxConns), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /instance", func(w http.ResponseWriter, _ *http.Request) { send(w, http.StatusOK, s.hello) })
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { send(w, http.StatusOK, s.status()) })
	mux.HandleFunc("POST /rebuild", s.rebuild)
	mux.HandleFunc("GET /logs", s.logs)
	mux.HandleFunc("GET /tools", s.tools)
	mux.HandleFunc("POST /call", s.call)
	s.srv = &http.Server{
		Handler:           s.guard(mux),
		ReadHeaderTimeout: readHeaderTimeout, // no ReadTimeout: it would end a long rebuild's context
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    MaxRequest,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext:       s.connContext,
		ErrorLog:          log.New(io.Discard, "", 0), // the instance's stderr is the person's log
	}
	go s.srv.Serve(s.ln)
	return s, nil
}

// listenFree binds <pid>.sock, or <pid>-N.sock when another Server of this
// process holds that name, replacing one of an earlier process (.addr on
// Windows).
func listenFree(dir string, pid int) (net.Listener, string, string, error) {
	lastErr := errors.New("64 live sockets of this process already")
	for n := 1; n <= 64; n++ {
		name := strconv.Itoa(pid)
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		path := filepath.Join(dir, name+endpointExt)
		if live(path) {
			continue
		}
		os.Remove(path) // one an earlier process left, if any
		ln, token, err := listenEndpoint(path)
		if err == nil {
			return ln, path, token, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, "", "", fmt.Errorf("control socket: %w", lastErr)
}

// live reports whether something accepts connections on the socket.
func live(path string) bool {
	addr, _, err := readEndpoint(path)
	if err != nil {
		return false
	}
	c, err := net.DialTimeout(endpointNet, addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// sockets maps the paths of the control sockets in dir (<pid>.sock,
// <pid>-N.sock) to their pids.
func sockets(dir string) (map[string]int, error) {
	ents, err := os.ReadDir(dir)
	out := map[string]int{}
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), endpointExt)
		base, _, _ = strings.Cut(base, "-")
		if pid, err := strconv.Atoi(base); ok && err == nil && pid > 0 && e.Type()&fs.ModeType == endpointType {
			out[filepath.Join(dir, e.Name())] = pid
		}
	}
	return out, err
}

// cleanStale removes sockets whose process is gone and nothing listens on.
func cleanStale(dir string) {
	socks, _ := sockets(dir)
	for path, pid := range socks {
		if pid != os.Getpid() && pidGone(pid) && !live(path) {
			os.Remove(path)
		}
	}
}

// Path is the socket's path.
func (s *Server) Path() string { return s.hello.Socket }

// Close removes the socket, ends every request's context, closes the
// connections after closeGrace and waits for the handlers; it may be called again.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
	err := s.ln.Close() // also when Serve had not started; removes the socket file
	s.handlers.Wait()
	return err
}

// limitListener hands out at most maxConns connections to be served at once and
// as many more marked busy; beyond those, Accept waits for one to close.
type limitListener struct {
	net.Listener
	served, busy chan struct{}
	done         chan struct{} // closed by Close
	once         sync.Once
	err          error
}

// limitedConn is an accepted connection; Close frees its slot.
type limitedConn struct {
	net.Conn
	busy bool // over the limit: every request is answered busy
	slot chan struct{}
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slot })
	return err
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.served <- struct{}{}:
		return &limitedConn{Conn: c, slot: l.served}, nil
	default:
	}
	select {
	case l.served <- struct{}{}:
		return &limitedConn{Conn: c, slot: l.served}, nil
	case l.busy <- struct{}{}:
		return &limitedConn{Conn: c, slot: l.busy, busy: true}, nil
	case <-l.done:
		c.Close()
		return nil, net.ErrClosed
	}
}

func (l *limitListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.err = l.Listener.Close()
	})
	return l.err
}

type refusalKey struct{}

// connContext refuses a peer of another uid, or one the OS cannot check,
// and answers a connection over the limit busy, with who is busy.
func (s *Server) connContext(ctx context.Context, nc net.Conn) context.Context {
	c := nc.(*limitedConn)
	var ref *errorBody
	switch uid, known, err := peerUID(c.Conn); {
	case known && err != nil:
		ref = &errorBody{code: http.StatusForbidden, Error: fmt.Sprintf("cannot check who is connecting (%v): refused", err)}
	case known && uid != s.wantUID:
		ref = &errorBody{code: http.StatusForbidden, Error: fmt.Sprintf("permission denied: uid %d may not control an instance of uid %d", uid, s.wantUID)}
	}
	if ref == nil && c.busy {
		ref = &errorBody{code: http.StatusServiceUnavailable, Error: fmt.Sprintf("too many control connections (%d): try again later", maxConns), Instance: &s.hello}
	}
	return context.WithValue(ctx, refusalKey{}, ref)
}

// errorBody is the answer to a request that failed; code is a refusal's status.
type errorBody struct {
	code     int
	Error    string    `json:"error"`
	Instance *Instance `json:"instance,omitempty"` // who is busy, in a 503 of too many connections
}

// guard refuses what connContext refused and a body where none is taken,
// answers a panic with an error, and counts the handlers for Close.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref, _ := r.Context().Value(refusalKey{}).(*errorBody)
		if s.token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(tokenHeader)), []byte(s.token)) != 1 {
			ref = &errorBody{code: http.StatusForbidden, Error: "permission denied: no valid " + tokenHeader + " (it is in the instance's control file)"}
		}
		if r.ContentLength != 0 && r.URL.Path != "/call" {
			// Nothing reads the body: the connection ends instead.
			http.NewResponseController(w).SetReadDeadline(time.Now())
			ref = &errorBody{code: http.StatusRequestEntityTooLarge, Error: "control requests have no body"}
		}
		if ref != nil {
			w.Header().Set("Connection", "close")
			send(w, ref.code, ref)
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			send(w, http.StatusServiceUnavailable, errorBody{Error: "the instance is stopping"})
			return
		}
		s.handlers.Add(1)
		s.mu.Unlock()
		defer s.handlers.Done()
		defer func() {
			if p := recover(); p != nil {
				send(w, http.StatusInternalServerError, errorBody{Error: fmt.Sprintf("internal error in %s: %v", r.URL.Path, p)})
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// send writes v as the JSON answer, to be taken within writeTimeout.
func send(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: "internal error: " + err.Error()})
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func (s *Server) status() Status {
	st, now := s.info.Target.Status(), time.Now()
	st.Pid = cmp.Or(st.Pid, s.hello.Pid)
	st.Config = cmp.Or(st.Config, s.info.Config)
	st.Project = cmp.Or(st.Project, s.info.Project)
	st.Mode = cmp.Or(st.Mode, s.info.Mode)
	st.Version = cmp.Or(st.Version, s.info.Version)
	if st.Started.IsZero() {
		st.Started = s.hello.Started
	}
	st.Uptime = cmp.Or(st.Uptime, Millis(now.Sub(st.Started)))
	for i, sv := range st.Servers {
		if sv.Uptime == 0 && !sv.Started.IsZero() {
			st.Servers[i].Uptime = Millis(now.Sub(sv.Started))
		}
	}
	if st.Servers == nil {
		st.Servers = []ServerStatus{}
	}
	return st
}

// answer sends v, or err as an error of the instance (422).
func answer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		send(w, http.StatusUnprocessableEntity, errorBody{Error: err.Error()})
		return
	}
	send(w, http.StatusOK, v)
}

// rebuild answers busy while another rebuild runs.
func (s *Server) rebuild(w http.ResponseWriter, r *http.Request) {
	if !s.rebuilding.TryLock() {
		send(w, http.StatusConflict, errorBody{Error: "a rebuild is already running: try again when it ends"})
		return
	}
	defer s.rebuilding.Unlock()
	b, err := s.info.Target.Rebuild(r.Context(), r.URL.Query().Get("name"))
	answer(w, BuildToJSON(b), err)
}

func (s *Server) tools(w http.ResponseWriter, r *http.Request) {
	if s.info.Tools == nil {
		send(w, http.StatusNotFound, errorBody{Error: "this instance cannot list its tools"})
		return
	}
	res, err := s.info.Tools.ListTools(r.Context())
	answer(w, res, err)
}

// call's body is the tool's arguments, read within readHeaderTimeout.
func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	if s.info.Tools == nil {
		send(w, http.StatusNotFound, errorBody{Error: "this instance cannot call its tools"})
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(readHeaderTimeout))
	args, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxArguments))
	if err != nil {
		send(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("reading the arguments: %v", err)})
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Time{})
	res, err := s.info.Tools.CallTool(r.Context(), r.URL.Query().Get("name"), args)
	answer(w, res, err)
}

// logs streams the kept lines, then with follow the new ones until the
// peer leaves or the Server closes.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	ring := s.info.Logs
	if ring == nil {
		send(w, http.StatusNotFound, errorBody{Error: "this instance keeps no log in memory"})
		return
	}
	q := r.URL.Query()
	tail, err := strconv.Atoi(cmp.Or(q.Get("tail"), "0"))
	follow, ferr := strconv.ParseBool(cmp.Or(q.Get("follow"), "0"))
	if err != nil || tail < 0 || ferr != nil {
		send(w, http.StatusBadRequest, errorBody{Error: "logs takes tail=LINES and follow=1"})
		return
	}
	var lines []string
	var sub *logring.Sub
	if follow {
		lines, sub = ring.Follow(0)
		defer sub.Close()
	} else {
		lines = ring.Lines()
	}
	if tail > 0 && len(lines) > tail {
		lines = lines[len(lines)-tail:]
	}
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, l := range lines {
		io.WriteString(w, l+"\n")
	}
	if !follow || rc.Flush() != nil {
		return
	}
	var dropped uint64
	for {
		select {
		case <-r.Context().Done():
			return
		case l := <-sub.C:
			rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			io.WriteString(w, l+"\n")
			for range min(len(sub.C), 256) { // this goroutine alone receives
				io.WriteString(w, <-sub.C+"\n")
			}
			if d := sub.Dropped(); d > dropped {
				fmt.Fprintf(w, "[mcpflow: %d lines dropped]\n", d-dropped)
				dropped = d
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}
