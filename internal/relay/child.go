package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/proc/tail"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// HTTPChild is a server of Streamable HTTP (internal/transport/httpmcp).
type HTTPChild interface {
	// Prepare sets up a process (its log, a port); url is what it serves.
	Prepare(cmd *exec.Cmd) (logs io.ReadCloser, url string, err error)
	// Link is a new session's link to url; sent sees what it sends.
	Link(url string, sent func(msg []byte)) wire.Link
	// Overlaps: a new process may run beside the one it replaces.
	Overlaps() bool
	// Ready waits until the server answers at url, or says why not.
	Ready(ctx context.Context, url string) error
}

// child is one process of the server; done: waited, group killed, log read.
type child struct {
	gen      int
	pid      int
	cmd      *proc.Cmd
	tail     *tail.Buffer
	url      string      // an HTTP server's
	stopping atomic.Bool // set before mcpflow stops it on purpose
	served   atomic.Bool // it answered a request of a session's
	ending   atomic.Bool // set when mcpflow begins to stop or kill it
	lost     atomic.Pointer[string]
	started  time.Time
	endedAt  time.Time // valid after done
	exitDesc string    // "exit status 2", "killed by SIGKILL"; valid after done
	done     chan struct{}
}

// check finds what keeps any process of the server from starting.
func (c *Child) check() error {
	if len(c.Command) == 0 {
		return errors.New("run.command is empty")
	}
	if c.Dir != "" {
		if fi, err := os.Stat(c.Dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: %s", texts.ErrNoDir, c.Dir)
		}
	}
	if c.Shell {
		return nil
	}
	prog := proc.Program(c.Command[0], c.Dir)
	var err error
	if filepath.Base(prog) != prog {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(c.Dir, prog)
		}
		_, err = os.Stat(prog)
	} else if _, err = exec.LookPath(prog); errors.Is(err, exec.ErrDot) && runtime.GOOS != "windows" {
		err = nil
	} else if err != nil && runtime.GOOS == "windows" { // what exec says names PATH, or the wrong folder
		dir, _ := filepath.Abs(c.Dir)
		err = fmt.Errorf("%s is neither in the folder %s nor on PATH", prog, dir)
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", c.describe(), err)
	}
	return nil
}

// start starts a process of the server, a generation of its own (the
// Starting event); attach sets its stdio and returns its log.
func (r *Relay) start(attach func(*exec.Cmd) (io.ReadCloser, error), onLine func(string)) (*child, error) {
	c, gen := &r.cfg.Child, int(r.gen.Add(1))
	if err := c.check(); err != nil {
		return nil, err
	}
	argv := c.Command
	if c.Shell {
		argv = argv[:1] // the script; Child.Command has no positional arguments
	}
	cmd := proc.Command(context.Background(), proc.Spec{Argv: argv, Shell: c.Shell, Dir: c.Dir, Env: r.env.environ(c)}, c.StopTimeout)
	logs, err := attach(cmd.Cmd)
	if err == nil {
		if err = cmd.Start(); err != nil {
			logs.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.describe(), err)
	}
	p := &child{gen: gen, pid: cmd.Process.Pid, cmd: cmd, tail: tail.New(0, 64<<10, nil), started: time.Now(), done: make(chan struct{})}
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		p.readLogs(logs, onLine)
	}()
	go func() {
		err := cmd.Wait() // kills what is left of the group
		p.endedAt = time.Now()
		p.exitDesc = describeExit(err, cmd.ProcessState)
		if why := p.lost.Load(); why != nil {
			p.exitDesc = *why + ", so mcpflow stopped it"
		}
		if !wire.WaitClosed(logsDone, 2*time.Second) {
			logs.Close() // a process outside the group holds its output
		}
		close(p.done)
	}()
	r.events.post(Event{Kind: Starting, Gen: gen, Pid: p.pid})
	return p, nil
}

// readLogs keeps the tail of the log and hands each line to onLine.
func (p *child) readLogs(r io.Reader, onLine func(string)) {
	sc := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := sc.ReadString('\n')
		if line != "" {
			p.tail.Write([]byte(line))
			if !strings.HasSuffix(line, "\n") {
				p.tail.Write([]byte("\n"))
			}
			onLine(strings.TrimRight(line, "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stop stops it on purpose: closeIn, grace, SIGTERM, grace, SIGKILL (at
// once when ctx ends). It returns when the process is gone.
func (p *child) stop(grace time.Duration, ctx context.Context, closeIn io.Closer) {
	p.stopping.Store(true)
	p.kill(grace, ctx, closeIn)
}

// kill stops a process as stop does, but its exit is a failure.
func (p *child) kill(grace time.Duration, ctx context.Context, closeIn io.Closer) {
	p.ending.Store(true)
	defer context.AfterFunc(ctx, p.cmd.Kill)()
	p.cmd.Stop(closeIn, grace)
	<-p.done
}

type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

func (p *child) exited() bool { return closed(p.done) }

func (p *child) ranFor() time.Duration {
	if p.exited() {
		return p.endedAt.Sub(p.started)
	}
	return time.Since(p.started)
}

func (p *child) exitInfo() texts.Exit {
	return texts.Exit{Status: p.exitDesc, Uptime: p.ranFor(), Stderr: strings.TrimSpace(p.tail.String())}
}

// describe names the command in messages (a script with its shell).
func (c *Child) describe() string {
	if c.Shell {
		return fmt.Sprintf("%s %q", proc.ShellName, c.Command[0])
	}
	return fmt.Sprintf("%q", strings.Join(c.Command, " "))
}

func describeExit(err error, ps *os.ProcessState) string {
	if ps == nil {
		if err != nil {
			return err.Error()
		}
		return "exited"
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || runtime.GOOS == "windows" || !ws.Signaled() {
		return fmt.Sprintf("exit status %d", ps.ExitCode())
	}
	if name, ok := map[syscall.Signal]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
		9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM"}[ws.Signal()]; ok {
		return "killed by " + name
	}
	return fmt.Sprintf("killed by signal %d", ws.Signal())
}

// overrides are the agent's accepted env overrides for the next starts.
type overrides struct {
	allowed []string
	mu      sync.Mutex
	set     map[string]string
}

// accept validates and stores env overrides, a JSON object (null: none).
func (o *overrides) accept(raw []byte) error {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	var env map[string]string
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("env must be an object of strings: %v", err)
	}
	refused := slices.DeleteFunc(slices.Sorted(maps.Keys(env)), func(k string) bool { return slices.Contains(o.allowed, k) })
	if len(refused) > 0 {
		allowed := "none (set run.env_overridable in mcpflow.toml)"
		if len(o.allowed) > 0 {
			allowed = strings.Join(o.allowed, ", ")
		}
		return fmt.Errorf("env keys not allowed: %s. Allowed keys: %s", strings.Join(refused, ", "), allowed)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	maps.Copy(o.set, env)
	return nil
}

// environ is the environment of a process of c: Env, ExtraEnv, overrides.
func (o *overrides) environ(c *Child) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return mergeEnv(mergeEnv(c.Env, c.ExtraEnv), o.set)
}

func mergeEnv(base []string, over map[string]string) []string {
	if len(over) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := over[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(over)) {
		out = append(out, k+"="+over[k])
	}
	return out
}

// stdioLink is a stdio server's wire.Link: a line a message to its stdin
// through an Outbox, its stdout read by wire.Reader. os.Pipe: Wait must
// not close the read ends before all was read.
type stdioLink struct {
	maxMsg                           int
	inR, inW, outR, outW, errR, errW *os.File
	in                               *wire.Outbox
	done                             chan struct{}
	closeOnce                        sync.Once
}

// attach gives cmd the link's pipes; stderr's read end is the log.
func (l *stdioLink) attach(cmd *exec.Cmd) (io.ReadCloser, error) {
	for _, ends := range [][2]**os.File{{&l.inR, &l.inW}, {&l.outR, &l.outW}, {&l.errR, &l.errW}} {
		r, w, err := os.Pipe()
		if err != nil {
			l.closeAll()
			return nil, err
		}
		*ends[0], *ends[1] = r, w
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = l.inR, l.outW, l.errW
	bw := bufio.NewWriterSize(l.inW, 64<<10)
	l.in.Write = func(msg, _ []byte) error {
		if _, err := bw.Write(msg); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}
	l.in.Flush = bw.Flush
	return l.errR, nil
}

func (l *stdioLink) Start(rcv wire.LinkReceiver) {
	// The child's ends are the child's now.
	l.inR.Close()
	l.outW.Close()
	l.errW.Close()
	go l.in.Run(func() { l.inW.Close() })
	go func() {
		defer close(l.done)
		defer l.outR.Close()
		rd := wire.NewReader(l.outR, l.maxMsg)
		rd.Stub = true // what the child says goes on without its long strings in memory
		for {
			msg, err := rd.Next()
			var tl *wire.TooLargeError
			var bad *wire.InvalidError
			switch {
			case errors.As(err, &tl):
				rcv.TooLarge(tl)
			case errors.As(err, &bad):
				// A line cut by the child's death: its call gets the crash report.
				rcv.Junk(bad.Line, !rd.Cut())
			case err != nil:
				return
			default:
				rcv.Message(msg, nil)
			}
		}
	}()
}

func (l *stdioLink) Send(msg []byte) { l.in.Send(msg, nil) }

// Close closes the child's stdin once what is queued was written.
func (l *stdioLink) Close() { l.in.Close() }

func (l *stdioLink) Done() <-chan struct{} { return l.done }
func (l *stdioLink) Kind() string          { return "stdio" }
func (l *stdioLink) Lost() string          { return "it closed its stdout" }

// closeAll closes every pipe (a start that failed).
func (l *stdioLink) closeAll() {
	l.closeOnce.Do(func() {
		for _, f := range []*os.File{l.inR, l.inW, l.outR, l.outW, l.errR, l.errW} {
			if f != nil {
				f.Close()
			}
		}
	})
}
