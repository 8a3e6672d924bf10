package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"

	"github.com/charmbracelet/log"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/control"
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
	br := &bridge{in: stdin, out: stdout, switched: make(chan struct{})}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(rctx, cfg, logger, ring, relayIn{br}, br) }()
	select {
	case err := <-served:
		return err
	case <-br.switched:
	}
	logger.Warn("the server refused the legacy handshake (initialize): serving it through the mux engine, which speaks 2026-07-28 to it and the legacy protocol to the client")
	cancel()
	<-served
	return serveSingleMux(ctx, cfg, slog.New(logger), ring, &muxIn{b: br}, stdout)
}

// bridge is the relay's stdin and stdout while the session's era is
// undecided: it notes the client's first message when it is initialize,
// and watches the relay's answer to it. After a refusal the relay reads
// EOF and the mux engine reads the client's initialize, then the rest.
// The relay's reads go straight to stdin: no copy, no goroutine between.
type bridge struct {
	in       io.Reader
	out      io.Writer
	switched chan struct{} // closed when the child refused initialize

	readMu sync.Mutex // held during each read of in
	stash  []byte     // read by the relay's last read after the switch: the mux's

	mu      sync.Mutex
	first   []byte // the client's bytes until its first newline
	initID  []byte // the id of the client's initialize; nil = none seen
	initMsg []byte
	decided bool // the client's first message is not initialize, or its answer was seen
	bridged bool
	partial []byte
}

func (b *bridge) isSwitched() bool {
	select {
	case <-b.switched:
		return true
	default:
		return false
	}
}

// relayIn is the relay's stdin.
type relayIn struct{ b *bridge }

func (r relayIn) Read(p []byte) (int, error) {
	b := r.b
	b.readMu.Lock()
	defer b.readMu.Unlock()
	if b.isSwitched() {
		return 0, io.EOF
	}
	n, err := b.in.Read(p)
	if b.isSwitched() {
		b.stash = append(b.stash, p[:n]...)
		return 0, io.EOF
	}
	b.noteClient(p[:n])
	return n, err
}

// muxIn is the mux engine's stdin after a switch: the client's
// initialize, what the relay read after the switch, then stdin.
type muxIn struct {
	b    *bridge
	head []byte
	init bool
}

func (m *muxIn) Read(p []byte) (int, error) {
	b := m.b
	if !m.init {
		m.init = true
		b.mu.Lock()
		m.head = bytes.Clone(b.initMsg)
		b.mu.Unlock()
	}
	if len(m.head) == 0 {
		// Wait for a read the relay may still be in: its bytes are stashed.
		b.readMu.Lock()
		m.head, b.stash = b.stash, nil
		b.readMu.Unlock()
	}
	if len(m.head) > 0 {
		n := copy(p, m.head)
		m.head = m.head[n:]
		return n, nil
	}
	b.readMu.Lock()
	defer b.readMu.Unlock()
	return b.in.Read(p)
}

// noteClient looks at the client's first message: when it is
// initialize, the bridge watches the answer; else the relay serves the
// session alone.
func (b *bridge) noteClient(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.decided || b.initMsg != nil {
		return
	}
	b.first = append(b.first, p...)
	i := bytes.IndexByte(b.first, '\n')
	if i < 0 {
		return
	}
	line := b.first[:i+1]
	b.first = nil
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "initialize" || len(m.ID) == 0 {
		b.decided = true
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
func serveSingleMux(ctx context.Context, cfg *Config, logger *slog.Logger, ring *logring.Ring, stdin io.Reader, stdout io.Writer) error {
	run, err := openRun(cfg, ring, logger)
	if err != nil {
		return err
	}
	defer run.close() // every way serveSingleMux returns removes the control socket
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
	w := &muxWiring{cfg: cfg, single: cfg, logger: logger, run: run, target: newMuxTarget()}
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
	w.target.m = m
	run.listen(control.ModeSingle, w.target)
	return m.RunStdio(ctx, stdin, stdout)
}
