package wire

// The two seams every part of mcpflow meets at, both message-level: a
// message is one whole JSON-RPC object, valid JSON in valid UTF-8 (a
// framer checked it), without a trailing newline.
//
//   - Session and Client: one client's conversation with whatever serves
//     it (a relay's port on one server, a mux session over several, an
//     SDK server through Adapt). Fronts (stdio, Streamable HTTP) open a
//     session per client with an Opener and carry its messages.
//   - Link and LinkReceiver: the messages of one child process, over its
//     stdin and stdout or over Streamable HTTP.

// Opener opens a Session for each client: a front calls Open once per
// client session (on stdio, once; over HTTP, once per session, or per
// request of a session-less client).
type Opener interface {
	Open(c Client) Session
}

// OpenerFunc adapts a function to Opener.
type OpenerFunc func(c Client) Session

// Open calls f.
func (f OpenerFunc) Open(c Client) Session { return f(c) }

// Session is the serving side of one client's conversation.
//
// Contract:
//   - Send hands over one message from the client, in the order the client
//     sent them: a request, a notification, or its answer to a request
//     the serving side sent it. A batch is split by the front, which
//     answers it with one array (Serve). Send holds no lock while a peer
//     is slow to take what it is given (it may then wait: back-pressure),
//     never waits for an answer, and never calls the Client back before it
//     returns.
//   - Every request sent gets exactly one response through the Client,
//     carrying the request's id byte for byte as the client wrote it, until
//     Close.
//   - Close says the client is gone: what it has in flight is cancelled
//     toward the servers, its subscriptions end, and nothing more is
//     delivered once Close returns. Close may be called more than once.
type Session interface {
	Send(msg []byte)
	Close()
}

// Client is how a Session reaches its client.
//
// Deliver is called with one message for the client at a time, in order,
// with no lock of the serving side held; msg is the client's to keep (the
// serving side never touches it again: a large message is not copied).
// Deliver may block (the serving side then waits: back-pressure) but must
// not call the Session. rel is the id of the client's request the message
// belongs to, as the client wrote it: for a response, the request it
// answers (its own id); for a notification or a request sent while that
// request ran (a progress notification, a log message, a sampling
// request), that request, whose stream it goes on over Streamable HTTP;
// nil when it belongs to none or that is not known.
type Client interface {
	Deliver(msg, rel []byte)
}

// ClientFunc adapts a function to Client.
type ClientFunc func(msg, rel []byte)

// Deliver calls f.
func (f ClientFunc) Deliver(msg, rel []byte) { f(msg, rel) }

// Link carries the messages between one client session and its child:
// the stdin and stdout of a process of its own (relay's), or an HTTP
// session on a server that serves Streamable HTTP
// (internal/transport/httpmcp).
//
// Contract:
//   - Start is called once: the link begins carrying messages, each
//     message from the child going to rcv in the order it arrived, one
//     call at a time.
//   - Send queues one message for the child. It never blocks on the child.
//     A request sent either gets the child's answer through rcv or, when
//     the link cannot carry it while the process keeps running (an HTTP
//     error status, a stream cut before its answer), an error answer the
//     link makes, naming what went wrong: one failed exchange is never the
//     end of the link.
//   - Close ends sending: the first step of stopping the child (a stdio
//     child sees the end of its input). Done is closed once nothing more
//     will be received: after Close, or when the child's side ended (its
//     stdout closed, its HTTP session lost, its URL never answered); Lost
//     then says why, for the report of its stop.
//   - Kind names the transport in the log ("stdio", "http"). A stdio child
//     is given time to exit at the end of its input before SIGTERM; any
//     other kind gets SIGTERM once its link is closed.
type Link interface {
	Start(rcv LinkReceiver)
	Send(msg []byte)
	Close()
	Done() <-chan struct{}
	Kind() string
	Lost() string
}

// LinkReceiver is told what a child sends, one call at a time, in order.
type LinkReceiver interface {
	// Message is one message from the child. rel is the id, as sent to the
	// child, of the request whose exchange carried it (an HTTP child's
	// response stream for that request); nil when none, and always nil
	// on stdio.
	Message(msg, rel []byte)
	// TooLarge is a message over the size limit, dropped unread; its ID
	// says which request it answered, if it was an answer.
	TooLarge(tl *TooLargeError)
	// Junk is a line or event that is no JSON-RPC message, dropped.
	// badJSON: the child wrote something that is not JSON in UTF-8 (a
	// request it seems to answer gets an error); false for valid JSON that
	// is no JSON-RPC message, and for a message cut short by the end of
	// the child's output (its crash report answers the request).
	Junk(line []byte, badJSON bool)
}
