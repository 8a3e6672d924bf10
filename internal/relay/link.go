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

// stdioLink is a stdio server's wire.Link: its stdin and stdout, os.Pipe
// rather than cmd.StdoutPipe so that Wait does not close the read ends
// before everything the child wrote was read. Each message goes to stdin
// as one line through an Outbox; stdout is read by the one framer,
// wire.Reader.
type stdioLink struct {
	maxMsg                           int
	inR, inW, outR, outW, errR, errW *os.File
	in                               *wire.Outbox
	done                             chan struct{}
	closeOnce                        sync.Once
}

func newStdioLink(maxMsg int, sent func(msg []byte)) *stdioLink {
	l := &stdioLink{maxMsg: maxMsg, done: make(chan struct{})}
	// A child that computes before it reads its input again is not
	// stalled: only what piles up bounds its queue.
	l.in = &wire.Outbox{Sent: sent, Stall: -1}
	return l
}

// attach gives cmd the link's pipes; the stderr pipe's read end is the
// process's log.
func (l *stdioLink) attach(cmd *exec.Cmd) (io.ReadCloser, error) {
	for _, ends := range [][2]**os.File{{&l.inR, &l.inW}, {&l.outR, &l.outW}, {&l.errR, &l.errW}} {
		r, w, err := os.Pipe()
		if err != nil {
			l.closeAll()
			return nil, err
		}
		*ends[0], *ends[1] = r, w
	}
	growPipe(l.outR)
	growPipe(l.inW)
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

// Start begins reading the child's stdout once it runs.
func (l *stdioLink) Start(rcv wire.LinkReceiver) {
	// The child's ends are the child's now.
	l.inR.Close()
	l.outW.Close()
	l.errW.Close()
	l.in.Start(func() { l.inW.Close() })
	go func() {
		defer close(l.done)
		defer l.outR.Close()
		rd := wire.NewReader(l.outR, l.maxMsg)
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

func (l *stdioLink) Send(msg []byte) { l.in.Send(msg, nil) }

// Close closes the child's stdin once what is queued was written.
func (l *stdioLink) Close() { l.in.Close() }

func (l *stdioLink) Done() <-chan struct{} { return l.done }
func (l *stdioLink) Kind() string          { return "stdio" }
func (l *stdioLink) Lost() string          { return "it closed its stdout" }

// abandon closes the read end of stdout: a process outside the child's
// group that still holds its write end (a daemon it started) must not
// keep the reader waiting once the child is gone.
func (l *stdioLink) abandon() { l.outR.Close() }

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
