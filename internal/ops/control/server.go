package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
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
	MaxRequest   = 64 << 10         // bytes in one request line
	maxConns     = 32               // connections served at once
	writeTimeout = 10 * time.Second // for a peer to take a response
	idleTimeout  = 5 * time.Minute  // between requests
	closeGrace   = 500 * time.Millisecond

	maxSocketPath = 103 // sun_path holds 104 bytes on macOS and BSDs (108 on Linux), with its NUL
)

// ErrUnsupported is returned where this system has no control sockets.
var ErrUnsupported = errors.New("the control socket (mcpflow status, rebuild, logs) is not supported on this system yet")

// Info is what Listen needs from the instance.
type Info struct {
	Dir     string        // runtime folder; "" = runtimeDir()
	Config  string        // absolute path of the config file; "" when started from the command line
	Project string        // absolute project folder
	Mode    string        // ModeSingle, ModeMux or ModeCLI
	Version string        // mcpflow's version
	Target  Target        // required
	Logs    *logring.Ring // nil: the logs method answers an error
}

// Server is one instance's control endpoint. Make it with Listen.
type Server struct {
	info    Info
	path    string
	started time.Time
	ln      *net.UnixListener
	wantUID int // -1: no peer check

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sem    chan struct{}

	mu     sync.Mutex
	conns  map[*net.UnixConn]struct{}
	closed bool
	err    error
}

// Listen opens the instance's control socket, removing stale sockets of
// killed instances on the way, and serves it until Close.
func Listen(info Info) (*Server, error) {
	return listen(info, os.Geteuid())
}

// listen is Listen with the uid peers must have (-1: no check).
func listen(info Info, wantUID int) (*Server, error) {
	if err := unsupported(); err != nil {
		return nil, err
	}
	if info.Target == nil {
		return nil, errors.New("control: Listen needs a Target")
	}
	if info.Dir == "" {
		d, err := runtimeDir()
		if err != nil {
			return nil, err
		}
		info.Dir = d
	}
	if err := prepareDir(info.Dir, true); err != nil {
		return nil, err
	}
	cleanStale(info.Dir)
	ln, path, err := listenFree(info.Dir, os.Getpid())
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	s := &Server{
		info: info, path: path, started: time.Now(), ln: ln, wantUID: wantUID,
		sem: make(chan struct{}, maxConns), conns: make(map[*net.UnixConn]struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// listenFree binds <pid>.sock, or <pid>-N.sock when another Server of this
// process holds that name. A socket with this pid that nothing answers on
// is left over from an earlier process and is replaced.
func listenFree(dir string, pid int) (*net.UnixListener, string, error) {
	lastErr := errors.New("64 live sockets of this process already")
	for n := 1; n <= 64; n++ {
		name := strconv.Itoa(pid)
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		path := filepath.Join(dir, name+".sock")
		if len(path) > maxSocketPath {
			return nil, "", fmt.Errorf("control socket path %s is longer than the %d bytes a Unix socket allows: set XDG_RUNTIME_DIR (or TMPDIR) to a shorter folder", path, maxSocketPath)
		}
		if _, err := os.Lstat(path); err == nil {
			if live(path) {
				continue
			}
			os.Remove(path)
		}
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err == nil {
			return ln, path, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, "", fmt.Errorf("control socket: %w", lastErr)
}

// live reports whether something accepts connections on the socket.
func live(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// socketPid parses "<pid>.sock" or "<pid>-N.sock".
func socketPid(name string) (int, bool) {
	base, ok := strings.CutSuffix(name, ".sock")
	if !ok {
		return 0, false
	}
	base, _, _ = strings.Cut(base, "-")
	pid, err := strconv.Atoi(base)
	return pid, err == nil && pid > 0
}

// cleanStale removes sockets whose process is gone and on which nothing
// listens.
func cleanStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, ok := socketPid(e.Name())
		if !ok || e.Type()&fs.ModeSocket == 0 || pid == os.Getpid() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if pidGone(pid) && !live(path) {
			os.Remove(path)
		}
	}
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops serving, ends every connection (a follower of the log gets
// its end line), waits for the handlers and removes the socket. It may be
// called more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return s.err
	}
	s.closed = true
	s.cancel()
	s.err = s.ln.Close() // also removes the socket file
	s.mu.Unlock()

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-done
	}
	if _, err := os.Lstat(s.path); err == nil {
		os.Remove(s.path)
	}
	return s.err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and friends: back off instead of spinning.
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		select {
		case s.sem <- struct{}{}:
		default:
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			c.Write(errLine(fmt.Sprintf("too many control connections (%d): try again later", maxConns)))
			c.Close()
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			<-s.sem
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

func errLine(msg string) []byte {
	b, _ := json.Marshal(response{Error: msg})
	return append(b, '\n')
}

// request is one line a peer sends.
type request struct {
	Method string `json:"method"`
	Name   string `json:"name,omitempty"`   // rebuild
	Follow bool   `json:"follow,omitempty"` // logs
	Tail   int    `json:"tail,omitempty"`   // logs: the last N lines only; 0 = all kept
}

// response is one line the Server sends.
type response struct {
	OK      bool       `json:"ok"`
	Error   string     `json:"error,omitempty"`
	Hello   *Instance  `json:"hello,omitempty"`
	Status  *Status    `json:"status,omitempty"`
	Build   *BuildJSON `json:"build,omitempty"`
	Line    *string    `json:"line,omitempty"`
	Dropped uint64     `json:"dropped,omitempty"`
	End     bool       `json:"end,omitempty"`
}

// item is one line read from a peer, or the news that it was too long.
type item struct {
	line    []byte
	tooLong bool
}

// conn is one peer's connection.
type conn struct {
	s   *Server
	c   *net.UnixConn
	out *bufio.Writer
	bad bool // a write failed: stop
}

func (s *Server) serveConn(c *net.UnixConn) {
	defer s.wg.Done()
	defer func() { <-s.sem }()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	cn := &conn{s: s, c: c, out: bufio.NewWriterSize(c, 16<<10)}
	if s.wantUID >= 0 {
		uid, known, err := peerUID(c)
		if known && (err != nil || uid != s.wantUID) {
			if err != nil {
				cn.send(response{Error: fmt.Sprintf("cannot check who is connecting (%v): refused", err)})
			} else {
				cn.send(response{Error: fmt.Sprintf("permission denied: uid %d may not control an instance of uid %d", uid, s.wantUID)})
			}
			cn.flush()
			c.Close()
			return
		}
	}

	ctx, cancel := context.WithCancel(s.ctx)
	items := make(chan item)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel() // the peer is gone: end its rebuild or follow
		readLines(ctx, c, items)
	}()
	defer func() {
		cancel()
		c.Close()
		<-readerDone
	}()

	idle := time.NewTimer(idleTimeout)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
			cn.send(response{Error: "idle for too long: closing"})
			cn.flush()
			return
		case it := <-items:
			if !cn.handle(ctx, it) || cn.bad {
				return
			}
			idle.Reset(idleTimeout)
		}
	}
}

// readLines hands each line of c to items, skipping blank ones; a line
// over MaxRequest is reported as tooLong and skipped to its end.
func readLines(ctx context.Context, c *net.UnixConn, items chan<- item) {
	br := bufio.NewReaderSize(c, MaxRequest)
	for {
		line, err := br.ReadSlice('\n')
		it := item{line: bytes.Clone(bytes.TrimSpace(line))}
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			it = item{tooLong: true}
		}
		if err != nil && !it.tooLong {
			return // EOF or closed; an unterminated last line is not a request
		}
		if len(it.line) > 0 || it.tooLong {
			select {
			case items <- it:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (cn *conn) send(r response) {
	if cn.bad {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(response{Error: "internal error: " + err.Error()})
	}
	b = append(b, '\n')
	if cn.out.Available() < len(b) {
		cn.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	if _, err := cn.out.Write(b); err != nil {
		cn.bad = true
	}
}

func (cn *conn) flush() {
	if cn.bad {
		return
	}
	cn.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := cn.out.Flush(); err != nil {
		cn.bad = true
	}
}

// handle answers one request; false ends the connection.
func (cn *conn) handle(ctx context.Context, it item) (keep bool) {
	defer cn.flush()
	if it.tooLong {
		cn.send(response{Error: fmt.Sprintf("request larger than %d bytes: ignored", MaxRequest)})
		return true
	}
	var req request
	if err := json.Unmarshal(it.line, &req); err != nil {
		cn.send(response{Error: fmt.Sprintf("bad request (one JSON object per line, e.g. {\"method\":\"status\"}): %v", err)})
		return true
	}
	defer func() {
		if p := recover(); p != nil {
			cn.send(response{Error: fmt.Sprintf("internal error in %s: %v", req.Method, p)})
			keep = true
		}
	}()
	s := cn.s
	switch req.Method {
	case "hello":
		h := s.hello()
		cn.send(response{OK: true, Hello: &h})
	case "status":
		st := s.status()
		cn.send(response{OK: true, Status: &st})
	case "rebuild":
		b, err := s.info.Target.Rebuild(ctx, req.Name)
		if err != nil {
			cn.send(response{Error: err.Error()})
			break
		}
		j := BuildToJSON(b)
		cn.send(response{OK: true, Build: &j})
	case "logs":
		return cn.logs(ctx, req)
	case "":
		cn.send(response{Error: `request has no "method": use hello, status, rebuild or logs`})
	default:
		cn.send(response{Error: fmt.Sprintf("unknown method %q: use hello, status, rebuild or logs", req.Method)})
	}
	return true
}

func (s *Server) hello() Instance {
	return Instance{
		Pid: os.Getpid(), Config: s.info.Config, Project: s.info.Project, Mode: s.info.Mode,
		Version: s.info.Version, Started: s.started, Socket: s.path,
	}
}

func (s *Server) status() Status {
	st := s.info.Target.Status()
	now := time.Now()
	if st.Pid == 0 {
		st.Pid = os.Getpid()
	}
	if st.Config == "" {
		st.Config = s.info.Config
	}
	if st.Project == "" {
		st.Project = s.info.Project
	}
	if st.Mode == "" {
		st.Mode = s.info.Mode
	}
	if st.Version == "" {
		st.Version = s.info.Version
	}
	if st.Started.IsZero() {
		st.Started = s.started
	}
	if st.Uptime == 0 {
		st.Uptime = now.Sub(st.Started)
	}
	for i := range st.Servers {
		sv := &st.Servers[i]
		if sv.Uptime == 0 && !sv.Started.IsZero() {
			sv.Uptime = now.Sub(sv.Started)
		}
	}
	if st.Servers == nil {
		st.Servers = []ServerStatus{}
	}
	return st
}

// logs sends the kept lines and, with follow, every new one until the
// peer leaves or the Server closes.
func (cn *conn) logs(ctx context.Context, req request) bool {
	ring := cn.s.info.Logs
	if ring == nil {
		cn.send(response{Error: "this instance keeps no log in memory"})
		return true
	}
	tail := func(lines []string) []string {
		if req.Tail > 0 && len(lines) > req.Tail {
			return lines[len(lines)-req.Tail:]
		}
		return lines
	}
	if !req.Follow {
		for _, l := range tail(ring.Lines()) {
			cn.send(response{OK: true, Line: &l})
		}
		cn.send(response{OK: true, End: true})
		return true
	}
	backlog, sub := ring.Follow(0)
	defer sub.Close()
	for _, l := range tail(backlog) {
		cn.send(response{OK: true, Line: &l})
	}
	cn.flush()
	var dropped uint64
	for !cn.bad {
		select {
		case <-ctx.Done():
			if cn.s.ctx.Err() != nil {
				cn.send(response{OK: true, End: true})
			}
			return false
		case l := <-sub.C:
			cn.send(response{OK: true, Line: &l})
		drain:
			for range 256 {
				select {
				case l := <-sub.C:
					cn.send(response{OK: true, Line: &l})
				default:
					break drain
				}
			}
			if d := sub.Dropped(); d > dropped {
				cn.send(response{OK: true, Dropped: d - dropped})
				dropped = d
			}
			cn.flush()
		}
	}
	return false
}
