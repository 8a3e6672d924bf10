package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/texts"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/proc/tail"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// child is one generation of the MCP server process. It owns the process,
// its link and the goroutines that serve them; done is closed once the
// process was waited, its group killed and its link and output ended.
type child struct {
	gen  int
	pid  int
	cmd  *proc.Cmd
	tail *tail.Buffer

	link         Link             // how its messages travel
	traffic      func(msg []byte) // Config.Traffic for what is sent to it; nil = none
	stopping     atomic.Bool      // set before the relay stops it on purpose
	ending       atomic.Bool      // set when the relay begins to stop or kill it
	closedStdout atomic.Bool      // its link ended while it kept running: the relay stopped it
	started      time.Time
	// answered is closed when the child first answers a request (its
	// handshake, as a rule); a child that exits before is a failed start.
	answered     chan struct{}
	answeredOnce sync.Once
	// speaks is the era the child was seen to speak (its answer to a
	// handshake); eraUnknown until then. Guarded by the switchboard's lock.
	speaks era
	// settled is set (under the switchboard's lock) once the restart that
	// started the child has completed: it served.
	settled bool
	endedAt time.Time // when it exited; valid after done
	// failed, set under the switchboard's lock before the relay kills a
	// child that is up but of no use (no answer to its handshake, stdout
	// closed), is the report its exit is given.
	failed string

	reaped chan struct{} // closed after the relay handled its exit

	done     chan struct{}
	exitDesc string // "exit status 2", "killed by signal 9"; valid after done
}

// childSpec says how to start the child.
type childSpec struct {
	argv   []string
	shell  bool
	dir    string
	env    []string
	maxMsg int
	grace  time.Duration // StopTimeout
	// traffic is Config.Traffic: what is sent to the child is recorded.
	traffic func(hop string, toServer bool, gen int, msg []byte)
	// link is Child.Link: the link of each new child; nil = its stdio.
	link func() Link
}

// newLink makes the link of one start.
func (s childSpec) newLink() Link {
	if s.link != nil {
		return s.link()
	}
	return newStdioLink(s.maxMsg)
}

// stdoutGrace is how long a child whose link ended (it closed its stdout,
// its HTTP session was lost) may take to exit before the relay stops it:
// it can answer nothing more.
const stdoutGrace = 500 * time.Millisecond

// childPeer is what a child's link reports to: every message the child
// sends (rel: see wire.LinkReceiver), the lines that are too large or no
// JSON-RPC, and each line of its stderr.
type childPeer interface {
	fromChild(c *child, msg, rel []byte)
	childTooLarge(c *child, tl *wire.TooLargeError)
	childJunk(c *child, line []byte, badJSON bool)
	childStderr(c *child, line string)
}

// receiver is a child's wire.LinkReceiver: it hands what the link
// receives to the peer, with the child it came from.
type receiver struct {
	c    *child
	peer childPeer
}

func (r receiver) Message(msg, rel []byte)         { r.peer.fromChild(r.c, msg, rel) }
func (r receiver) TooLarge(tl *wire.TooLargeError) { r.peer.childTooLarge(r.c, tl) }
func (r receiver) Junk(line []byte, badJSON bool)  { r.peer.childJunk(r.c, line, badJSON) }

// launched is a started process whose link the relay has not yet started:
// the next generation, started while the current one drains (see
// Overlapper), or just started by startChild.
type launched struct {
	cmd  *proc.Cmd
	link Link
	logs io.ReadCloser
	at   time.Time
}

// errAborted is what a launched process's link is started with when the
// relay gives it up before it became a child.
var errAborted = errors.New("stopped before it served")

// launch starts the process of spec with a new link.
func launch(spec childSpec) (*launched, error) {
	if len(spec.argv) == 0 {
		return nil, errors.New("run.command is empty")
	}
	if spec.dir != "" {
		if fi, err := os.Stat(spec.dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s", texts.ErrNoDir, spec.dir)
		}
	}
	argv := spec.argv
	if spec.shell {
		argv = argv[:1] // the script; Config.Command has no positional arguments
	}
	// Stop cancels the command: SIGTERM, and SIGKILL StopTimeout later.
	cmd := proc.Command(context.Background(), proc.Spec{Argv: argv, Shell: spec.shell, Dir: spec.dir, Env: spec.env}, spec.grace)
	link := spec.newLink()
	logs, err := link.Attach(cmd.Cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", describeCommand(spec), err)
	}
	if err := cmd.Start(); err != nil {
		link.Start(err, nil)
		logs.Close()
		return nil, fmt.Errorf("start %s: %w", describeCommand(spec), err)
	}
	return &launched{cmd: cmd, link: link, logs: logs, at: time.Now()}, nil
}

// abort stops a launched process that never became a child: its whole
// group, at once.
func (l *launched) abort() {
	l.link.Start(errAborted, nil)
	l.cmd.Kill()
	_ = l.cmd.Wait()
	l.logs.Close()
}

// startChild starts a new generation whose output goes to peer.
func startChild(spec childSpec, gen int, peer childPeer) (*child, error) {
	l, err := launch(spec)
	if err != nil {
		return nil, err
	}
	return adopt(l, spec, gen, peer), nil
}

// adopt makes the launched process l the generation gen, whose output
// goes to peer.
func adopt(l *launched, spec childSpec, gen int, peer childPeer) *child {
	cmd := l.cmd
	c := &child{
		gen:      gen,
		pid:      cmd.Process.Pid,
		cmd:      cmd,
		link:     l.link,
		tail:     tail.New(0, 64<<10, nil),
		started:  l.at,
		done:     make(chan struct{}),
		reaped:   make(chan struct{}),
		answered: make(chan struct{}),
	}
	if spec.traffic != nil {
		c.traffic = func(msg []byte) { spec.traffic("server", true, gen, msg) }
	}
	c.link.Start(nil, receiver{c, peer})

	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		c.readStderr(l.logs, peer)
	}()
	go c.watchLink(spec.grace)
	go func() {
		err := cmd.Wait() // kills what is left of the group
		c.endedAt = time.Now()
		c.exitDesc = describeExit(err, cmd.ProcessState)
		if c.closedStdout.Load() {
			c.exitDesc = c.link.Lost() + ", so mcpflow stopped it"
		}
		// The pipes reach EOF only when every holder is gone; a link of
		// another kind ends once it is closed.
		c.link.Close()
		if !waitBoth(c.link.Done(), logsDone, 2*time.Second) {
			// A process outside the group holds the pipes: stop waiting.
			if a, ok := c.link.(interface{ abandon() }); ok {
				a.abandon()
			}
			l.logs.Close()
			// A reader still held by a client that takes nothing (its
			// Deliver blocked) is left to end with it.
			waitBoth(c.link.Done(), logsDone, 2*time.Second)
		}
		l.logs.Close()
		close(c.done)
	}()
	return c
}

// send sends one message to the child.
func (c *child) send(msg []byte) {
	if c.traffic != nil {
		c.traffic(msg)
	}
	c.link.Send(msg)
}

// watchLink stops a child whose link ended while it runs: a child that
// does not exit within stdoutGrace of that can answer nothing more.
func (c *child) watchLink(grace time.Duration) {
	select {
	case <-c.cmd.Done():
		return
	case <-c.link.Done():
	}
	select {
	case <-c.cmd.Done():
	case <-time.After(stdoutGrace):
		if c.ending.Load() {
			return // the relay is stopping it already
		}
		c.closedStdout.Store(true)
		c.stopGroup(grace)
	}
}

// readStderr keeps the tail of the child's stderr and hands each line to
// peer until it closes.
func (c *child) readStderr(errR io.Reader, peer childPeer) {
	sc := bufio.NewReaderSize(errR, 64<<10)
	for {
		line, err := sc.ReadString('\n')
		if line != "" {
			c.tail.Write([]byte(line))
			if !strings.HasSuffix(line, "\n") {
				c.tail.Write([]byte("\n"))
			}
			peer.childStderr(c, strings.TrimRight(line, "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

// waitBoth waits for a and b to be closed, at most d; it reports whether
// both were.
func waitBoth(a, b <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for a != nil || b != nil {
		select {
		case <-a:
			a = nil
		case <-b:
			b = nil
		case <-t.C:
			return false
		}
	}
	return true
}

// stop stops the child: close its stdin, wait grace, SIGTERM its group, wait
// grace again, then SIGKILL. It returns when the child is fully gone.
// When relay ends (the relay shuts down), what is left of the stop is cut
// short: the group gets SIGKILL.
func (c *child) stop(grace time.Duration, relay context.Context) {
	c.stopping.Store(true)
	c.kill(grace, relay)
}

// kill stops a child that failed (c.failed says why) as stop does, but
// its exit is handled as a failure, not as a stop the relay asked for.
func (c *child) kill(grace time.Duration, relay context.Context) {
	c.ending.Store(true)
	defer context.AfterFunc(relay, c.cmd.Kill)()
	c.stopGroup(grace)
	<-c.done
}

// stopGroup stops the child's group (proc.Cmd.Stop): the end of its input
// first, given grace for a stdio child; a child of another kind is
// signalled at once once its link is closed.
func (c *child) stopGroup(grace time.Duration) {
	if c.link.Kind() == "stdio" {
		c.cmd.Stop(closerFunc(c.link.Close), grace)
		return
	}
	c.link.Close()
	c.cmd.Stop(nil, grace)
}

type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func describeCommand(spec childSpec) string {
	if spec.shell {
		return fmt.Sprintf("sh -c %q", spec.argv[0])
	}
	return fmt.Sprintf("%q", strings.Join(spec.argv, " "))
}

func describeExit(err error, ps *os.ProcessState) string {
	if ps == nil {
		if err != nil {
			return err.Error()
		}
		return "exited"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + signalName(int(ws.Signal()))
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode())
}

// signalName names the signals a server is commonly killed by.
func signalName(n int) string {
	if name, ok := map[int]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
		9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM"}[n]; ok {
		return name
	}
	return fmt.Sprintf("signal %d", n)
}

// markAnswered records that the child answered a request.
func (c *child) markAnswered() { c.answeredOnce.Do(func() { close(c.answered) }) }

// hasAnswered reports whether the child ever answered a request.
func (c *child) hasAnswered() bool {
	select {
	case <-c.answered:
		return true
	default:
		return false
	}
}

// ranFor is how long the child ran (so far, or until it exited).
func (c *child) ranFor() time.Duration {
	if c.exited() {
		return c.endedAt.Sub(c.started)
	}
	return time.Since(c.started)
}

// exitInfo is what the agent is told of c, which exited.
func (c *child) exitInfo() texts.Exit {
	return texts.Exit{Status: c.exitDesc, Uptime: c.ranFor(), Stderr: strings.TrimSpace(c.tail.String())}
}

// stderrInfo is what is known of c, which may still run: its stderr.
func (c *child) stderrInfo() texts.Exit {
	return texts.Exit{Stderr: strings.TrimSpace(c.tail.String())}
}
