package fastlane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio returns a transport for a server that reads newline-delimited
// JSON-RPC from in and writes it to out, with the lane of cfg in front.
//
// A goroutine of the connection's reads in line by line and offers each
// object line to the lane first: a claimed call (Start's Starter, or
// Route's Handler), a cancel of one, a request the cache answers. Every
// other JSON-RPC message (batches included, where the session's version
// has them) goes on, as it was read, to the SDK's own stream connection
// (mcp.IOTransport), which decodes it and whose rules apply. A line that
// connection would fail on, which would end its session, is answered
// here with a JSON-RPC error instead (see handle). Writes to out are whole
// lines, one at a time: the server's messages, and the answers to claimed
// calls, written as the Reply gave the result, without a second encoding.
//
// The reading goroutine ends when in does (EOF or an error, which ends
// the session) or, after Close, once its read of in returns. in is never
// closed by the connection, and neither is out.
func Stdio(in io.Reader, out io.Writer, cfg Config) mcp.Transport {
	return &stdio{in: in, out: out, cfg: cfg}
}

type stdio struct {
	in  io.Reader
	out io.Writer
	cfg Config
}

func (t *stdio) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	w := &lockedWriter{w: t.out}
	inner, err := (&mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: -1}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := newConn(inner, t.cfg)
	c.raw = w
	go c.readLines(t.in, pw)
	return c, nil
}

// keepLine is the largest buffer the reader keeps between lines; a longer
// line's memory is let go once it is handled.
const keepLine = 1 << 20

// readLines reads in until it ends and handles each line (handle).
func (c *conn) readLines(in io.Reader, pw *io.PipeWriter) {
	br := bufio.NewReaderSize(in, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if !c.handle(bytes.TrimSpace(line), pw) {
			return // the connection is closed
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			pw.CloseWithError(err)
			return
		}
		if cap(long) > keepLine {
			long = nil
		}
	}
}

// handle gives one line (without its line ending) to the lane or, if the
// lane does not take it, to the server's connection through pw. A line
// the SDK's connection would fail on (which ends its session) is answered
// here instead, as the JSON-RPC spec wants: a parse error for what is not
// JSON in UTF-8, an invalid request for JSON that is no JSON-RPC message,
// or a batch in a session whose protocol version has none. It reports
// false once pw is closed.
func (c *conn) handle(line []byte, pw *io.PipeWriter) bool {
	if len(line) == 0 {
		return true
	}
	if !jsonscan.Valid(line) {
		c.raw.fail(nil, -32700, "Parse error: the line is not one JSON value in UTF-8")
		return true
	}
	switch line[0] {
	case '{':
		took, read := c.offerLine(line)
		if took {
			return true
		}
		// A line the lane read as a request, the SDK reads the same way
		// (FuzzRequest); anything else is checked with the SDK's decoder.
		if !read {
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				c.raw.fail(jsonscan.Member(line, "id"), -32600, "Invalid Request: "+err.Error())
				return true
			}
		}
	case '[':
		if reason := c.batchRefused(line); reason != "" {
			c.raw.fail(nil, -32600, "Invalid Request: "+reason)
			return true
		}
	default:
		c.raw.fail(nil, -32600, "Invalid Request: a message must be a JSON object (or a batch)")
		return true
	}
	c.scratch = append(append(c.scratch[:0], line...), '\n')
	_, err := pw.Write(c.scratch)
	if cap(c.scratch) > keepLine {
		c.scratch = nil
	}
	return err == nil
}

// batchRefused says why the server's connection must not get batch line
// (it would end the session), or "" when it may: a 2025-03-26 session
// that began with initialize, and elements that are all JSON-RPC messages.
func (c *conn) batchRefused(line []byte) string {
	c.mu.Lock()
	version := c.initialized
	c.mu.Unlock()
	if version == "" || version >= "2025-06-18" {
		return "JSON-RPC batches are not supported in this session's protocol version"
	}
	var elems []json.RawMessage
	if json.Unmarshal(line, &elems) != nil || len(elems) == 0 {
		return "an empty batch"
	}
	for _, el := range elems {
		if _, err := jsonrpc.DecodeMessage(el); err != nil {
			return "a batch element is not a JSON-RPC message: " + err.Error()
		}
	}
	return ""
}

// offerLine offers one line, valid JSON, to the lane; it reports whether
// the lane took it, and whether it read the line as a request. Only lines
// that may concern the lane are read here.
func (c *conn) offerLine(line []byte) (took, read bool) {
	if c.cfg.Cache == nil && !bytes.Contains(line, []byte(`"tools/call"`)) && !bytes.Contains(line, []byte(`"notifications/cancelled"`)) {
		return false, false
	}
	req, ok := request(line) // parts of line, valid until offer returns (see Call)
	return ok && c.offer(req), ok
}

// lockedWriter writes one message at a time to w. The SDK's connection
// writes each message in one Write call.
type lockedWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// fail writes an error response to id (raw JSON; nil or not a valid id:
// null).
func (l *lockedWriter) fail(id []byte, code int64, msg string) {
	if _, ok := parseID(id); !ok {
		id = []byte("null")
	}
	b, _ := json.Marshal(&jsonrpc.Error{Code: code, Message: msg})
	out := make([]byte, 0, len(b)+len(id)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"error":`...)
	out = append(out, b...)
	out = append(out, "}\n"...)
	_, _ = l.Write(out)
}

// response writes a successful response to id with the raw result res.
func (l *lockedWriter) response(id jsonrpc.ID, res json.RawMessage) {
	if bytes.IndexByte(res, '\n') >= 0 {
		var b bytes.Buffer
		if json.Compact(&b, res) == nil {
			res = b.Bytes()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := append(l.buf[:0], `{"jsonrpc":"2.0","id":`...)
	switch v := id.Raw().(type) {
	case string:
		q, _ := json.Marshal(v)
		b = append(b, q...)
	case int64:
		b = strconv.AppendInt(b, v, 10)
	default:
		b = append(b, "null"...)
	}
	b = append(b, `,"result":`...)
	if len(res) == 0 {
		res = []byte("{}")
	}
	b = append(b, res...)
	b = append(b, "}\n"...)
	_, _ = l.w.Write(b)
	if cap(b) <= 64<<10 {
		l.buf = b
	}
}
