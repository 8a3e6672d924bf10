package relay

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// Link is how the relay exchanges messages with one child process: its
// stdin and stdout (stdioLink, the default) or, through Child.Link,
// another wire.Link such as internal/httpmcp's for a server that serves
// Streamable HTTP.
type Link = wire.Link

// Overlapper is a Link that may say that its process can run beside the
// one it replaces, because nothing of theirs is shared (an HTTP server
// on a port of its own per start). The relay then starts it while the
// calls of the old child drain, and makes it the current child once the
// old one stopped. Any other Link's process starts only once the old one
// is gone.
type Overlapper interface {
	Overlaps() bool
}

// inliner is a Link whose queue the goroutine that sent to it can write
// itself once it released the relay's lock (the stdio link): it calls
// beginInline before taking the lock and endInline after releasing it.
type inliner interface {
	beginInline()
	endInline()
}

// stdioLink is the default Link: the child's stdin, stdout and stderr.
// They are os.Pipe rather than cmd.StdoutPipe, so that Wait does not
// close the read ends before everything the child wrote was read. Each
// message goes to stdin as one line through an outbox; stdout is read by
// the one framer, wire.Reader.
type stdioLink struct {
	maxMsg                           int
	inR, inW, outR, outW, errR, errW *os.File
	in                               *outbox
	done                             chan struct{}
	closeOnce                        sync.Once
}

func newStdioLink(maxMsg int) *stdioLink {
	return &stdioLink{maxMsg: maxMsg, done: make(chan struct{})}
}

func (p *stdioLink) Attach(cmd *exec.Cmd) (io.ReadCloser, error) {
	for _, ends := range [][2]**os.File{{&p.inR, &p.inW}, {&p.outR, &p.outW}, {&p.errR, &p.errW}} {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeAll()
			return nil, err
		}
		*ends[0], *ends[1] = r, w
	}
	growPipe(p.outR)
	growPipe(p.inW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	bw := bufio.NewWriterSize(p.inW, 64<<10)
	p.in = newOutbox(func(it item) error {
		if _, err := bw.Write(it.msg); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}, bw.Flush)
	return p.errR, nil
}

func (p *stdioLink) Start(started error, rcv wire.LinkReceiver) {
	if started != nil {
		p.closeAll()
		close(p.done)
		return
	}
	// The child's ends are the child's now.
	p.inR.Close()
	p.outW.Close()
	p.errW.Close()
	go p.in.run(func() { p.inW.Close() })
	go func() {
		defer close(p.done)
		defer p.outR.Close()
		rd := wire.NewReader(p.outR, p.maxMsg)
		for {
			msg, err := rd.Next()
			var tl *wire.TooLargeError
			var bad *wire.InvalidError
			switch {
			case errors.As(err, &tl):
				rcv.TooLarge(tl)
			case errors.As(err, &bad):
				// A line cut by the child's death is no answer: the call it
				// was for gets the crash report.
				rcv.Junk(bad.Line, !rd.Cut())
			case err != nil:
				return
			default:
				rcv.Message(msg, nil)
			}
		}
	}()
}

func (p *stdioLink) Send(msg []byte) { p.in.send(msg, nil) }

// Close closes the child's stdin once what is queued was written.
func (p *stdioLink) Close() { p.in.close() }

func (p *stdioLink) Done() <-chan struct{} { return p.done }

func (p *stdioLink) Kind() string { return "stdio" }

func (p *stdioLink) Lost() string { return "it closed its stdout" }

func (p *stdioLink) Waiting() string { return "" }

func (p *stdioLink) beginInline() { p.in.beginInline() }

func (p *stdioLink) endInline() { p.in.endInline() }

// abandon closes the read end of stdout: a process outside the child's
// group that still holds its write end (a daemon it started) must not
// keep the reader waiting once the child is gone.
func (p *stdioLink) abandon() { p.outR.Close() }

func (p *stdioLink) closeAll() {
	p.closeOnce.Do(func() {
		for _, f := range []*os.File{p.inR, p.inW, p.outR, p.outW, p.errR, p.errW} {
			if f != nil {
				f.Close()
			}
		}
	})
}
