package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/tail"
	"github.com/mcpflow/mcpflow/internal/wire"
)

// child is one generation of the MCP server process. It owns the process,
// its three pipes and the goroutines that serve them; done is closed once
// the process was waited, its group killed and its stdout read to the end.
type child struct {
	gen   int
	pid   int
	cmd   *exec.Cmd
	group *proc.Group
	in    *outbox
	tail  *tail.Buffer

	link         Link        // how its messages travel
	stopping     atomic.Bool // set before the relay stops it on purpose
	ending       atomic.Bool // set when the relay begins to stop or kill it
	closedStdout atomic.Bool // its link ended while it kept running: the relay stopped it
	started      time.Time
	// answered is closed when the child first answers a request (its
	// handshake, as a rule); a child that exits before is a failed start.
	answered     chan struct{}
	answeredOnce sync.Once
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

// Link carries the messages between the relay and one child process. The
// child's own stdin and stdout are one (the default); Child.Link makes
// another for each start, such as a connection to a server that serves
// Streamable HTTP (internal/httpmcp). A Link is used for one start only;
// making one has no effect until Attach.
//
// Contract:
//   - Attach is called before the process starts. It sets the command's
//     Stdin, Stdout and Stderr (and may add to its Env and Args), and
//     returns the relay's ends: in, where the relay writes each message
//     for the child as one line; out, where the child's messages come
//     from, one per line (read by a wire.Reader, with the relay's
//     max_message); logs, the lines the process writes for a person (its
//     stderr), whose tail goes into crash reports. out and logs end once
//     the child can send nothing more.
//   - Started is called once, after the start: with nil, the process
//     runs and the link lets go of what the process holds now; with an
//     error, it did not start and the link frees everything.
//   - Closing in is the first step of stopping the child, and out must
//     then end soon. The relay also closes in once the process has
//     exited, so that out ends then.
//   - Kind names the transport ("stdio", "http") in the log. A stdio
//     child is given Child.StopTimeout to exit at the end of its input
//     before SIGTERM; any other kind gets SIGTERM at once, since a server
//     does not exit when its connection ends.
//   - Lost says, for the report of its stop, what ended out while the
//     process kept running ("it closed its stdout").
//   - Waiting says what keeps the link from reaching the server, such as
//     an HTTP server that does not answer at its URL yet: a report that
//     names the command and where it waits, or "" once nothing does. A
//     child that did not answer its handshake in time is reported so.
type Link interface {
	Attach(cmd *exec.Cmd) (in io.WriteCloser, out, logs io.ReadCloser, err error)
	Started(err error)
	Kind() string
	Lost() string
	Waiting() string
}

// stdioLink is the default Link: the child's stdin, stdout and stderr.
// They are os.Pipe rather than cmd.StdoutPipe, so that Wait does not
// close the read ends before everything the child wrote was read.
type stdioLink struct{ inR, inW, outR, outW, errR, errW *os.File }

func (p *stdioLink) Attach(cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, io.ReadCloser, error) {
	for _, ends := range [][2]**os.File{{&p.inR, &p.inW}, {&p.outR, &p.outW}, {&p.errR, &p.errW}} {
		r, w, err := os.Pipe()
		if err != nil {
			p.close()
			return nil, nil, nil, err
		}
		*ends[0], *ends[1] = r, w
	}
	growPipe(p.outR)
	growPipe(p.inW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	return p.inW, p.outR, p.errR, nil
}

func (p *stdioLink) Started(err error) {
	if err != nil {
		p.close()
		return
	}
	// The child's ends are the child's now.
	p.inR.Close()
	p.outW.Close()
	p.errW.Close()
}

func (p *stdioLink) Kind() string { return "stdio" }

func (p *stdioLink) Lost() string { return "it closed its stdout" }

func (p *stdioLink) Waiting() string { return "" }

func (p *stdioLink) close() {
	for _, f := range []*os.File{p.inR, p.inW, p.outR, p.outW, p.errR, p.errW} {
		if f != nil {
			f.Close()
		}
	}
}

// stdoutGrace is how long a child that closed its stdout may take to exit
// before the relay stops it: with its stdout gone it can answer nothing.
const stdoutGrace = 500 * time.Millisecond

// childPeer is what a child's reader goroutines report to: every message
// the child writes on stdout, the lines that are too large or not JSON,
// and each stderr line. They are called from the child's goroutines, in
// the order the child wrote.
type childPeer interface {
	fromChild(c *child, msg []byte)
	childTooLarge(c *child, tl *wire.TooLargeError)
	childJunk(c *child, line []byte, badJSON bool)
	childStderr(c *child, line string)
}

// launched is a started process whose link the relay has not yet read:
// the next generation, started while the current one drains (see
// Overlapper), or just started by startChild.
type launched struct {
	cmd   *exec.Cmd
	group *proc.Group
	link  Link
	in    io.WriteCloser
	out   io.ReadCloser
	logs  io.ReadCloser
	at    time.Time
}

// Overlapper is a Link that may say that its process can run beside the
// one it replaces, because nothing of theirs is shared (an HTTP server
// on a port of its own per start). The relay then starts it while the
// calls of the old child drain, and makes it the current child once the
// old one stopped. Any other Link's process starts only once the old one
// is gone.
type Overlapper interface {
	Overlaps() bool
}

// launch starts the process of spec with its link.
func launch(spec childSpec) (*launched, error) {
	if len(spec.argv) == 0 {
		return nil, errors.New("run.command is empty")
	}
	if spec.dir != "" {
		if fi, err := os.Stat(spec.dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s", errNoDir, spec.dir)
		}
	}
	argv := spec.argv
	if spec.shell {
		argv = argv[:1] // the script; Config.Command has no positional arguments
	}
	cmd := proc.Spec{Argv: argv, Shell: spec.shell, Dir: spec.dir, Env: spec.env}.Cmd()

	var link Link = &stdioLink{}
	if spec.link != nil {
		link = spec.link()
	}
	inW, outR, errR, err := link.Attach(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", describeCommand(spec), err)
	}
	group, err := proc.Start(cmd)
	link.Started(err)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", describeCommand(spec), err)
	}
	return &launched{cmd: cmd, group: group, link: link, in: inW, out: outR, logs: errR, at: time.Now()}, nil
}

// abort stops a launched process that never became a child: its whole
// group, at once.
func (l *launched) abort() {
	l.in.Close()
	l.group.Kill()
	_ = l.cmd.Wait()
	l.group.Release()
	l.out.Close()
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
	cmd, group, link, inW, outR, errR := l.cmd, l.group, l.link, l.in, l.out, l.logs
	c := &child{
		gen:      gen,
		pid:      cmd.Process.Pid,
		cmd:      cmd,
		group:    group,
		link:     link,
		in:       newOutbox(),
		tail:     tail.New(0, 64<<10, nil),
		started:  l.at,
		done:     make(chan struct{}),
		reaped:   make(chan struct{}),
		answered: make(chan struct{}),
	}
	if spec.traffic != nil {
		c.in.sent = func(msg []byte) { spec.traffic("server", true, gen, msg) }
	}
	go c.in.run(inW, func() { inW.Close() })

	waited := make(chan struct{}) // closed once the process was waited
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		c.readStdout(outR, spec, peer, waited)
	}()
	go func() {
		defer readers.Done()
		c.readStderr(errR, peer)
	}()

	go func() {
		err := cmd.Wait()
		c.endedAt = time.Now()
		c.exitDesc = describeExit(err, cmd.ProcessState)
		if c.closedStdout.Load() {
			c.exitDesc = link.Lost() + ", so mcpflow stopped it"
		}
		close(waited)
		// The leader is gone: nothing of its group may outlive it, and the
		// pipes reach EOF only when every holder is gone; a link of
		// another kind ends once its input does.
		c.group.Release()
		c.in.close()
		waitOrClose(&readers, 2*time.Second, outR, errR)
		outR.Close()
		errR.Close()
		close(c.done)
	}()
	return c
}

// readStdout hands each message of the child's stdout to peer until it
// closes; a child that does not exit within stdoutGrace of closing it
// (waited is closed when it did) can answer nothing more and is stopped.
func (c *child) readStdout(outR io.Reader, spec childSpec, peer childPeer, waited <-chan struct{}) {
	rd := wire.NewReader(outR, spec.maxMsg)
	for {
		msg, err := rd.Next()
		var tl *wire.TooLargeError
		var bad *wire.InvalidError
		switch {
		case errors.As(err, &tl):
			peer.childTooLarge(c, tl)
		case errors.As(err, &bad):
			// A line cut by the child's death is no answer: the call it
			// was for gets the crash report.
			peer.childJunk(c, bad.Line, !rd.Cut())
		case err != nil:
			select {
			case <-waited:
			case <-time.After(stdoutGrace):
				if c.ending.Load() {
					return // the relay is stopping it already
				}
				c.closedStdout.Store(true)
				c.stopGroup(waited, spec.grace)
			}
			return
		default:
			peer.fromChild(c, msg)
		}
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

// waitOrClose waits for the readers; if a process outside the group still
// holds the pipes after d, it closes them to unblock the readers.
func waitOrClose(wg *sync.WaitGroup, d time.Duration, files ...io.Closer) {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(d):
		for _, f := range files {
			f.Close()
		}
		<-ch
	}
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
	defer context.AfterFunc(relay, c.group.Kill)()
	c.stopGroup(c.done, grace)
}

// stopGroup stops the child's group (proc.Group.Stop) once done is
// closed: the end of its input first, given grace for a stdio child; a
// child of another kind is signalled at once once its link is closed.
func (c *child) stopGroup(done <-chan struct{}, grace time.Duration) {
	if c.link.Kind() == "stdio" {
		c.group.Stop(closerFunc(c.in.close), done, grace)
		return
	}
	c.in.close()
	c.group.Stop(nil, done, grace)
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

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
