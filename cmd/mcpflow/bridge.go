package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/charmbracelet/log"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/control"
	"github.com/mcpflow/mcpflow/internal/logring"
	"github.com/mcpflow/mcpflow/internal/wire"
	"github.com/mcpflow/mcpflow/mux"
)

// The era bridge of single-server mode.
//
// The client and the child may speak different protocol eras: a legacy
// client opens its session with initialize, which a child that serves
// only 2026-07-28 may refuse; a modern client opens it with
// server/discover, which a legacy-only child does not know. serveBridging
// runs the relay (serve) as usual, with relay.Config.Handoff set: when
// the child refuses the client's initialize (forwarded to it, or replayed
// after the relay answered it during the first build), or does not speak
// 2026-07-28 when the relay answered the client's server/discover
// itself, the client never sees the refusal; the relay hands the session
// over, mcpflow stops the relay (and its child) and serves the same
// server through the mux engine in single mode instead: a real MCP server
// toward the client, a real MCP client toward the child (which negotiates
// the child's era), the server's tools under their own names, its build
// and watch as configured, and relay.tool as the rebuild tool. The
// messages that opened the session are handed to it unchanged; answers
// the client already has (the relay's own, during the first build) are
// not sent twice. Every other session stays on the relay, untouched.

// serveBridging is serve with the era bridge (single-server configs only).
// With an HTTP front ([http] listen, --http) it is serveHTTP: each client
// session is served by the mux engine, which speaks each side's era.
func serveBridging(ctx context.Context, cfg *config.Config, logger *log.Logger, ring *logring.Ring, in wire.Stream, stdout io.Writer) error {
	if cfg.HTTP.Listen != "" {
		return serveHTTP(ctx, cfg, slog.New(logger), ring)
	}
	if cfg.Mode() != config.Single {
		return serve(ctx, cfg, logger, ring, in, stdout, nil)
	}
	h := &handoff{in: in, switched: make(chan struct{})}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(rctx, cfg, logger, ring, relayStream{h}, stdout, h.take) }()
	select {
	case err := <-served:
		return err
	case <-h.switched:
	}
	logger.Warn("the server speaks the other protocol era than the client: serving it through the mux engine, which speaks each side's")
	cancel()
	<-served
	return serveSingleMux(ctx, cfg, slog.New(logger), ring, muxStream{h}, &answeredOnce{w: stdout, ids: h.answeredIDs()})
}

// handoff is the client's message stream, read by the relay until the
// child refuses initialize, then by the mux engine: first what the relay
// handed over (the initialize, what it held and what it read since),
// then the stream. No message is lost between the two: a read of the
// relay's that is under way at the switch is kept for the mux engine.
type handoff struct {
	in       wire.Stream
	switched chan struct{} // closed at the switch

	readMu sync.Mutex // held during each read of in

	mu       sync.Mutex
	taken    []read   // handed over by the relay, or read for it after the switch
	answered [][]byte // ids of taken requests the client has its answers to
}

// read is one result of a stream's Next.
type read struct {
	msg []byte
	err error
}

func (h *handoff) isSwitched() bool {
	select {
	case <-h.switched:
		return true
	default:
		return false
	}
}

// take is the relay's Config.Handoff.
func (h *handoff) take(msgs, answered [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answered = append(h.answered, answered...)
	for _, m := range msgs {
		h.taken = append(h.taken, read{msg: m})
	}
	if !h.isSwitched() {
		close(h.switched)
	}
}

// relayStream is the relay's view of the stream: it ends at the switch.
type relayStream struct{ h *handoff }

func (r relayStream) Next() ([]byte, error) {
	h := r.h
	h.readMu.Lock()
	defer h.readMu.Unlock()
	if h.isSwitched() {
		return nil, io.EOF
	}
	msg, err := h.in.Next()
	if h.isSwitched() {
		h.mu.Lock()
		h.taken = append(h.taken, read{msg, err})
		h.mu.Unlock()
		return nil, io.EOF
	}
	return msg, err
}

// muxStream is the mux engine's view of the stream, after the switch.
type muxStream struct{ h *handoff }

func (m muxStream) Next() ([]byte, error) {
	h := m.h
	if r, ok := h.next(); ok {
		return r.msg, r.err
	}
	h.readMu.Lock() // a read of the relay's under way ends first: it may be taken
	defer h.readMu.Unlock()
	if r, ok := h.next(); ok {
		return r.msg, r.err
	}
	return h.in.Next()
}

func (h *handoff) answeredIDs() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.answered
}

// answeredOnce is the mux engine's stdout after a switch: it drops the
// engine's answers to the requests the relay answered before (an
// initialize answered from the record), once each. wire.Transport writes
// one message per Write.
type answeredOnce struct {
	w   io.Writer
	ids [][]byte
}

func (a *answeredOnce) Write(p []byte) (int, error) {
	if len(a.ids) > 0 {
		if env, err := wire.Peek(bytes.TrimSpace(p)); err == nil && env.IsResponse() {
			for i, id := range a.ids {
				if bytes.Equal(env.ID, id) {
					a.ids = slices.Delete(a.ids, i, i+1)
					return len(p), nil
				}
			}
		}
	}
	return a.w.Write(p)
}

// next returns the first message taken for the mux engine, if any.
func (h *handoff) next() (read, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.taken) == 0 {
		return read{}, false
	}
	r := h.taken[0]
	h.taken = h.taken[1:]
	return r, true
}

// serveSingleMux serves cfg's one server through the mux engine in single
// mode on stdin/stdout until the client leaves or ctx ends.
func serveSingleMux(ctx context.Context, cfg *config.Config, logger *slog.Logger, ring *logring.Ring, in wire.Stream, stdout io.Writer) error {
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
	return m.Run(ctx, run.front(in, stdout, logger))
}
