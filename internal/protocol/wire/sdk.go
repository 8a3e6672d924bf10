package wire

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where mcpflow terminates the protocol with the Go SDK (it answers for
// itself: [cli]'s tools; or it translates between the eras: the bridge),
// the SDK's peer meets the message-level seams here, in memory: no pipe,
// no second framer. Both directions keep Transport's promises (ids exactly
// as the other side wrote them, a bad message answered).

// SDKServer is an Opener whose sessions a Go SDK server serves: each Open
// connects srv to the client on a Transport of its own.
type SDKServer struct {
	Server *mcp.Server
	Log    *slog.Logger // nil = discard
}

// Open connects a session of the SDK server to c.
func (s SDKServer) Open(c Client) Session {
	q := newQueue()
	w := &deliverWriter{c: c}
	t := &Transport{In: q, Out: w, Log: s.Log}
	ss, err := s.Server.Connect(context.Background(), t, nil)
	if err != nil {
		q.close()
		return closedSession{}
	}
	return &sdkSession{q: q, w: w, close: func() { ss.Close() }}
}

// SessionTransport is an mcp.Transport on which a Go SDK peer (the
// bridge's client) talks to a session of o: what the peer writes is the
// session's Send, what the session delivers the peer reads. Each Connect
// opens a session; closing the connection closes it.
func SessionTransport(o Opener, log *slog.Logger) mcp.Transport {
	return sessionTransport{o: o, log: log}
}

type sessionTransport struct {
	o   Opener
	log *slog.Logger
}

func (st sessionTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	q := newQueue()
	s := st.o.Open(ClientFunc(func(msg, _ []byte) { q.push(msg) }))
	out := writerFunc(func(p []byte) (int, error) {
		s.Send(bytes.Clone(bytes.TrimSuffix(p, []byte{'\n'})))
		return len(p), nil
	})
	conn, err := (&Transport{In: q, Out: out, Log: st.log}).Connect(ctx)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &closingConn{Connection: conn, close: func() { s.Close(); q.close() }}, nil
}

// closingConn is a connection whose Close also closes its session.
type closingConn struct {
	mcp.Connection
	once  sync.Once
	close func()
}

func (c *closingConn) Close() error {
	err := c.Connection.Close()
	c.once.Do(c.close)
	return err
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// sdkSession is a session an SDK server serves.
type sdkSession struct {
	q     *queue
	w     *deliverWriter
	once  sync.Once
	close func()
}

func (s *sdkSession) Send(msg []byte) { s.q.push(msg) }

func (s *sdkSession) Close() {
	s.once.Do(func() {
		s.w.stop()
		s.q.close()
		s.close()
	})
}

type closedSession struct{}

func (closedSession) Send([]byte) {}
func (closedSession) Close()      {}

// deliverWriter delivers each line a Transport writes (one message per
// Write) to a Client; a response is delivered with its own id as rel.
type deliverWriter struct {
	mu      sync.Mutex
	c       Client
	stopped bool
}

func (w *deliverWriter) Write(p []byte) (int, error) {
	msg := bytes.Clone(bytes.TrimSuffix(p, []byte{'\n'}))
	var rel []byte
	if IsResponse(msg) {
		if env, err := Peek(msg); err == nil {
			rel = env.ID
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return 0, io.ErrClosedPipe
	}
	w.c.Deliver(msg, rel)
	return len(p), nil
}

func (w *deliverWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// queue is a Stream of the messages pushed to it, in order, bounded:
// push waits while queueLen messages wait to be read (back-pressure), and
// returns at once once the queue is closed; Next returns io.EOF once it is
// closed and empty.
type queue struct {
	ch     chan []byte
	closed chan struct{}
	once   sync.Once
}

// queueLen bounds the messages a queue holds.
const queueLen = 16

func newQueue() *queue {
	return &queue{ch: make(chan []byte, queueLen), closed: make(chan struct{})}
}

func (q *queue) push(msg []byte) {
	select {
	case q.ch <- msg:
	case <-q.closed:
	}
}

func (q *queue) close() { q.once.Do(func() { close(q.closed) }) }

func (q *queue) Next() ([]byte, error) {
	select {
	case msg := <-q.ch:
		return msg, nil
	case <-q.closed:
		select {
		case msg := <-q.ch:
			return msg, nil
		default:
			return nil, io.EOF
		}
	}
}
