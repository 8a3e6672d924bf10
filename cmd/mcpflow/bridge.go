package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"

	"github.com/charmbracelet/log"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/logring"
	"github.com/mcpflow/mcpflow/mux"
)

// The era bridge of single-server mode.
//
// A legacy client opens its session with initialize; a child that serves
// only 2026-07-28 may refuse it. serveBridging runs the relay (serve) as
// usual and watches its answer to the client's first initialize: when it
// is an error, the client never sees it; mcpflow stops the relay (and its
// child) and serves the same server through the mux engine in single mode
// instead: a real MCP server toward the client, a real MCP client toward
// the child (which negotiates 2026-07-28 with it), the server's tools
// under their own names, its build and watch as configured, and
// relay.tool as the rebuild tool. The client's initialize is handed to it
// unchanged. Every other session (a modern client, a child that accepts
// initialize) stays on the relay, untouched.
//
// The refusal is seen when the child answers the client's initialize
// itself: when the first build outlasts relay.startup_grace, the relay
// answers alone and the bridge is not engaged; raise startup_grace for
// such a server.

// serveBridging is serve with the era bridge (single-server configs only).
func serveBridging(ctx context.Context, cfg *Config, logger *log.Logger, ring *logring.Ring, stdin io.Reader, stdout io.Writer) error {
	if cfg.Mode() != config.Single {
		return serve(ctx, cfg, logger, ring, stdin, stdout)
	}
	br := &bridge{out: stdout, switched: make(chan struct{}), done: make(chan struct{})}
	defer close(br.done)
	relayR, relayW := io.Pipe()
	muxR, muxW := io.Pipe()
	lines := make(chan []byte, 16)
	go readLines(stdin, lines)
	go br.forward(lines, relayW, muxW)

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(rctx, cfg, logger, ring, relayR, br) }()
	select {
	case err := <-served:
		return err
	case <-br.switched:
	}
	logger.Warn("the server refused the legacy handshake (initialize): serving it through the mux engine, which speaks 2026-07-28 to it and the legacy protocol to the client")
	cancel()
	relayR.CloseWithError(io.ErrClosedPipe) // the relay reads no more
	<-served
	return serveSingleMux(ctx, cfg, slog.New(logger), muxR, stdout)
}

// readLines sends stdin's lines (each with its newline) and closes lines at
// EOF.
func readLines(r io.Reader, lines chan<- []byte) {
	defer close(lines)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lines <- line
		}
		if err != nil {
			return
		}
	}
}

// bridge watches the relay's output for its answer to the client's first
// initialize, and routes the client's lines to the relay, or after a
// refusal to the mux engine.
type bridge struct {
	out      io.Writer
	switched chan struct{} // closed when the child refused initialize
	done     chan struct{} // closed when serveBridging returns

	mu      sync.Mutex
	initID  []byte // the id of the client's initialize; nil = none seen
	initMsg []byte
	decided bool // the answer to initialize was seen
	bridged bool
	partial []byte
}

// forward sends the client's lines to the relay until a switch, then the
// client's initialize and every later line to the mux engine.
func (b *bridge) forward(lines <-chan []byte, relayW, muxW *io.PipeWriter) {
	dest := relayW
	toMux := func() bool {
		b.mu.Lock()
		init := b.initMsg
		b.mu.Unlock()
		dest = muxW
		_, err := muxW.Write(init)
		return err == nil
	}
	for {
		select {
		case <-b.switched:
			if dest == relayW && !toMux() {
				return
			}
		case <-b.done:
			relayW.Close()
			muxW.Close()
			return
		case line, ok := <-lines:
			if !ok {
				relayW.Close()
				// A switch may still come (the relay answers after the
				// client's EOF); the mux then reads initialize, then EOF.
				select {
				case <-b.switched:
					if dest == relayW {
						toMux()
					}
				case <-b.done:
				}
				muxW.Close()
				return
			}
			if dest == relayW {
				b.noteClient(line)
			}
			if _, err := dest.Write(line); err != nil && dest == relayW {
				select {
				case <-b.switched:
					if !toMux() {
						return
					}
					if _, err := dest.Write(line); err != nil {
						return
					}
				case <-b.done:
					return
				}
			}
		}
	}
}

// noteClient remembers the client's first message when it is initialize.
func (b *bridge) noteClient(line []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.initMsg != nil || b.decided {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "initialize" || len(m.ID) == 0 {
		b.decided = true // not a legacy session: the relay serves it
		return
	}
	b.initID, b.initMsg = compactJSON(m.ID), bytes.Clone(line)
}

func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// Write is the relay's stdout: lines pass through to the client, except
// an error answer to the client's initialize, which switches to the mux
// engine, and, after that, whatever the stopping relay still writes.
func (b *bridge) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bridged {
		return len(p), nil
	}
	if b.decided && len(b.partial) == 0 {
		return b.out.Write(p)
	}
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := b.partial[:i+1]
		if !b.decided && b.initID != nil && b.refusal(line) {
			b.bridged = true
			b.partial = nil
			close(b.switched)
			return len(p), nil
		}
		if _, err := b.out.Write(line); err != nil {
			return 0, err
		}
		b.partial = b.partial[i+1:]
		if b.decided && len(b.partial) == 0 {
			b.partial = nil
			return len(p), nil
		}
	}
}

// refusal reports whether line answers the client's initialize with an
// error; any answer to it decides the session. b.mu is held.
func (b *bridge) refusal(line []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "" || len(m.ID) == 0 || !bytes.Equal(compactJSON(m.ID), b.initID) {
		return false
	}
	b.decided = true
	return len(m.Error) > 0 && string(m.Error) != "null"
}

// serveSingleMux serves cfg's one server through the mux engine in single
// mode on stdin/stdout until the client leaves or ctx ends.
func serveSingleMux(ctx context.Context, cfg *Config, logger *slog.Logger, stdin io.Reader, stdout io.Writer) error {
	spec := mux.ServerSpec{
		Name:        "server",
		Command:     cfg.Run.Command.Argv,
		Shell:       cfg.Run.Command.Shell,
		Dir:         cfg.Run.Cwd,
		Env:         cfg.Run.Env,
		OnCrash:     cfg.Relay.OnCrash,
		StopTimeout: cfg.Run.StopTimeout,
	}
	if cfg.Watch.Enabled {
		spec.Watch = cfg.Watch.Paths
	}
	w := &muxWiring{cfg: cfg, single: cfg, logger: logger}
	m := mux.New(mux.Config{
		Servers:    []mux.ServerSpec{spec},
		Single:     true,
		SingleTool: cfg.Relay.Tool,
		CallTool:   cfg.Relay.CallTool,
		NewBackend: mux.NewRelayBackends(mux.RelayOptions{
			NewHooks:  w.hooks,
			Configure: w.configureRelay,
			Logger:    logger,
			Version:   version(),
		}),
		Logger:  logger,
		Version: version(),
	})
	return m.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}, MaxLineLength: -1})
}
