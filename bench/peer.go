//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// peer is a server process (the fixture, mcpflow, or the floor relay) and
// a raw JSON-RPC client speaking to it: it writes lines and reads lines,
// nothing else, so that all three ways are measured with the same client.
type peer struct {
	name       string
	cmd        *exec.Cmd
	pid        int
	stdin      *os.File
	stdout     *os.File
	r          *bufio.Reader
	line       []byte // reused line buffer; a line is valid until the next read
	stderrPath string
	nextID     int
	notes      []note // notifications read and not yet consumed
	waited     chan struct{}
	exit       string // how it ended, after waited
	closed     bool
}

type note struct {
	method string
	at     time.Time
}

// reply is a response the client read.
type reply struct {
	at     time.Time       // when its last byte was read
	size   int             // length of the line, less the id's digits (so sizes compare across ways)
	result json.RawMessage // the result, for lines up to smallLine bytes
}

// smallLine is the longest line that is fully decoded; longer ones (the
// big tool's results) are only peeked at, as the relays do.
const smallLine = 1 << 20

// start starts argv in dir, in its own process group, with stderr going to
// a file in the work dir.
func (b *bench) start(name, dir string, argv ...string) (*peer, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	// Every way gets the same 1 MiB pipes to the client, so the pipe the
	// client reads from is not what differs between them (mcpflow would
	// otherwise grow its own, and a 95 MB line through the 64 KiB default
	// makes the direct way's times bimodal: 31 to 244 ms).
	setPipeSize(inW, clientPipeSize)
	setPipeSize(outR, clientPipeSize)
	b.seq++
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, name)
	errPath := fmt.Sprintf("%s/%s-%d.stderr", b.tmp, safe, b.seq)
	errF, err := os.Create(errPath)
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errF
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errF.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &peer{
		name:       name,
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		r:          bufio.NewReaderSize(outR, 1<<20),
		stderrPath: errPath,
		waited:     make(chan struct{}),
	}
	go func() {
		err := cmd.Wait()
		switch {
		case err == nil:
			p.exit = "exit status 0"
		default:
			p.exit = err.Error()
		}
		close(p.waited)
	}()
	b.track(p)
	return p, nil
}

// close ends the process the way a client does: close stdin, give it
// grace to exit, then SIGKILL its process group. It reports how the
// process ended and whether it needed to be killed.
func (p *peer) close(grace time.Duration) (exit string, killed bool) {
	if !p.closed {
		p.closed = true
		p.stdin.Close()
	}
	select {
	case <-p.waited:
	case <-time.After(grace):
		killed = true
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.waited
	}
	// Anything left in its group goes too.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	p.stdout.Close()
	return p.exit, killed
}

// kill is for cleanup after a failure or a signal.
func (p *peer) kill() {
	select {
	case <-p.waited: // reaped: its group id may belong to someone else by now
	default:
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

// stderrTail is the end of the process's stderr, for error messages.
func (p *peer) stderrTail() string {
	b, err := os.ReadFile(p.stderrPath)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (p *peer) fail(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if t := strings.TrimSpace(p.stderrTail()); t != "" {
		msg += "\n--- stderr of " + p.name + " (tail) ---\n" + t
	}
	return errors.New(p.name + ": " + msg)
}

func (p *peer) send(b []byte) error {
	if _, err := p.stdin.Write(b); err != nil {
		return p.fail("write: %v", err)
	}
	return nil
}

// stuck describes, for a call that got no answer, where the answer could
// be: bytes read but not yet a whole line, and the state of the peer's
// process tree (what each process waits in), so that a lost answer can be
// told from a stalled process.
func (p *peer) stuck() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client side: %d bytes buffered, %d of a line so far\n", p.r.Buffered(), len(p.line))
	var walk func(pid, depth int)
	walk = func(pid, depth int) {
		state, wchan := "?", "?"
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) {
				state = string(st[i+2 : i+3])
			}
		}
		if w, err := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid)); err == nil {
			wchan = string(w)
		}
		fmt.Fprintf(&b, "%s%d %s state=%s wchan=%s\n", strings.Repeat("  ", depth), pid, procCmdline(pid), state, wchan)
		if depth < 4 {
			for _, c := range procChildren(pid) {
				walk(c, depth+1)
			}
		}
	}
	walk(p.pid, 0)
	return strings.TrimRight(b.String(), "\n")
}

// readLine reads one line into the reused buffer.
func (p *peer) readLine(deadline time.Time) ([]byte, error) {
	if err := p.stdout.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	p.line = p.line[:0]
	for {
		frag, err := p.r.ReadSlice('\n')
		p.line = append(p.line, frag...)
		if err == nil {
			return p.line[:len(p.line)-1], nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// peek classifies a line. Small lines are decoded; a big one is read from
// its head only: `{"jsonrpc":"2.0","id":N,"result":...`.
func peek(line []byte) (envelope, error) {
	var e envelope
	if len(line) <= smallLine {
		err := json.Unmarshal(line, &e)
		return e, err
	}
	head := line[:4096]
	i := bytes.Index(head, []byte(`"id":`))
	if i < 0 || bytes.Contains(head[:i], []byte(`"method"`)) {
		return e, fmt.Errorf("big line without an id in its head: %.200s", head)
	}
	j := i + 5
	k := j
	for k < len(head) && (head[k] >= '0' && head[k] <= '9' || head[k] == '-') {
		k++
	}
	e.ID = json.RawMessage(head[j:k])
	if !bytes.Contains(head, []byte(`"result":`)) {
		return e, fmt.Errorf("big line is not a result: %.200s", head)
	}
	e.Result = json.RawMessage(`{}`)
	return e, nil
}

// call sends a request and reads until its response, keeping the
// notifications read meanwhile. It returns when the response's last byte
// was read.
func (p *peer) call(method string, params string, timeout time.Duration) (reply, error) {
	p.nextID++
	id := p.nextID
	msg := make([]byte, 0, 128+len(params))
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = strconv.AppendInt(msg, int64(id), 10)
	msg = append(msg, `,"method":"`...)
	msg = append(msg, method...)
	msg = append(msg, '"')
	if params != "" {
		msg = append(msg, `,"params":`...)
		msg = append(msg, params...)
	}
	msg = append(msg, "}\n"...)
	if err := p.send(msg); err != nil {
		return reply{}, err
	}
	return p.await(id, method, time.Now().Add(timeout))
}

func (p *peer) await(id int, method string, deadline time.Time) (reply, error) {
	want := strconv.Itoa(id)
	for {
		line, err := p.readLine(deadline)
		at := time.Now()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return reply{}, p.fail("%s (id %d): no response in time\n%s", method, id, p.stuck())
			}
			return reply{}, p.fail("%s (id %d): read: %v", method, id, err)
		}
		e, err := peek(line)
		if err != nil {
			return reply{}, p.fail("%s (id %d): bad line from server: %v", method, id, err)
		}
		switch {
		case e.Method != "" && e.ID == nil:
			p.notes = append(p.notes, note{method: e.Method, at: at})
		case e.Method != "":
			if err := p.answer(e); err != nil {
				return reply{}, err
			}
		case string(e.ID) == want:
			if e.Error != nil {
				return reply{}, p.fail("%s (id %d): error %d: %s", method, id, e.Error.Code, e.Error.Message)
			}
			r := reply{at: at, size: len(line) - len(want)}
			if len(line) <= smallLine {
				r.result = append(json.RawMessage(nil), e.Result...)
			}
			return r, nil
		default:
			// A late response to something else: not ours to wait for.
		}
	}
}

// answer replies to a server→client request: ping gets {}, anything else
// method-not-found.
func (p *peer) answer(e envelope) error {
	var msg string
	if e.Method == "ping" {
		msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", e.ID)
	} else {
		msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not supported by the benchmark client"}}`+"\n", e.ID)
	}
	return p.send([]byte(msg))
}

// waitNote returns the first notification with method read since the
// notes were last cleared, reading on until the deadline.
func (p *peer) waitNote(method string, deadline time.Time) (time.Time, error) {
	for {
		for i, n := range p.notes {
			if n.method == method {
				p.notes = append(p.notes[:i:i], p.notes[i+1:]...)
				return n.at, nil
			}
		}
		line, err := p.readLine(deadline)
		at := time.Now()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return time.Time{}, p.fail("no %s notification in time", method)
			}
			return time.Time{}, p.fail("waiting for %s: read: %v", method, err)
		}
		e, err := peek(line)
		if err != nil {
			return time.Time{}, p.fail("bad line from server: %v", err)
		}
		switch {
		case e.Method != "" && e.ID == nil:
			p.notes = append(p.notes, note{method: e.Method, at: at})
		case e.Method != "":
			if err := p.answer(e); err != nil {
				return time.Time{}, err
			}
		}
	}
}

// handshake runs the legacy MCP handshake.
func (p *peer) handshake(timeout time.Duration) (reply, error) {
	r, err := p.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpflow-bench","version":"1"}}`, timeout)
	if err != nil {
		return r, err
	}
	return r, p.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
}

// toolText is the first text item of a tools/call result, and isError.
func toolText(res json.RawMessage) (string, bool, error) {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", false, err
	}
	for _, c := range r.Content {
		if c.Type == "text" {
			return c.Text, r.IsError, nil
		}
	}
	return "", r.IsError, nil
}

// clientPipeSize is the size of the pipes between the bench client and
// each way.
const clientPipeSize = 1 << 20

// setPipeSize sets the capacity of the pipe behind f (F_SETPIPE_SZ).
func setPipeSize(f *os.File, size int) {
	const fSetPipeSz = 1031
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, uintptr(size))
		})
	}
}
