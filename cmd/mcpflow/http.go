package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/control"
	"github.com/mcpflow/mcpflow/internal/httpmcp"
	"github.com/mcpflow/mcpflow/internal/logring"
	"github.com/mcpflow/mcpflow/internal/wire"
	"github.com/mcpflow/mcpflow/mux"
)

// The HTTP front (--http ADDR, [http] listen): the client side of a run
// is Streamable HTTP at http://ADDR/mcp instead of stdin and stdout.
// openRun binds the address (so a bad one fails the start, and clients
// that connect early wait) and logs the URL; run.front then hands the
// serving function an httpFront instead of a wire.Transport, which the
// mux engine (single mode for a [run] server, the mux for [servers]) and
// [cli]'s server serve with as many sessions as clients come. Stdin is
// not read: the run lasts until a signal or another stop path of
// runSession's.

// httpFlag adds --http to a serving command's flags.
func httpFlag(fs *flag.FlagSet) *string {
	return fs.String("http", "", "serve MCP over Streamable HTTP at http://ADDR/mcp (ADDR = host:port, port 0 = a free one) instead of stdin/stdout; [http] listen")
}

// httpFront is the HTTP front as the transport a run is given: it is a
// mux.Front (mux.Mux.Run serves it as Serve does), never connected as one
// mcp.Transport.
type httpFront struct{ f *httpmcp.Front }

var _ mux.Front = httpFront{}

func (h httpFront) Connect(context.Context) (mcp.Connection, error) {
	return nil, errors.New("mcpflow: the HTTP front serves many sessions; serve it, do not connect it")
}

func (h httpFront) Serve(ctx context.Context, srv *mcp.Server) error { return h.f.Serve(ctx, srv) }

// openFront binds cfg's [http] listen for w, with w's traffic capture
// (the client hop, with each message's session id) and the log.
func (w *instanceRun) openFront(addr string) error {
	fc := httpmcp.FrontConfig{Logger: w.log, MaxMessage: w.cfg.Relay.MaxMessage}
	if w.traffic != nil {
		hook := w.traffic.SessionHook("")
		fc.Traffic = func(session string, toServer bool, msg []byte) { hook("client", session, toServer, 0, msg) }
	}
	f, err := httpmcp.Listen(addr, fc)
	if err != nil {
		return err
	}
	w.http = f
	w.log.Info("serving MCP over Streamable HTTP", "url", f.URL())
	return nil
}

// sessionLister is what reports the HTTP front's sessions: the mux
// engine.
type sessionLister interface{ Sessions() []mux.SessionInfo }

// httpStatus is the HTTP front's part of status; nil on stdio.
func (w *instanceRun) httpStatus(sl sessionLister) *control.HTTPStatus {
	if w.http == nil {
		return nil
	}
	hs := &control.HTTPStatus{URL: w.http.URL(), Sessions: []control.SessionStatus{}}
	if sl == nil {
		// [cli]: the open sessions the front knows, without the mux's counts.
		for _, s := range w.http.Sessions() {
			hs.Sessions = append(hs.Sessions, control.SessionStatus{
				ID:     s.ID,
				Client: control.ClientInfo{Name: s.Name, Version: s.Version, Protocol: s.Protocol, Era: "legacy"},
			})
		}
		return hs
	}
	for _, s := range sl.Sessions() {
		hs.Sessions = append(hs.Sessions, control.SessionStatus{
			ID:       s.ID,
			Client:   control.ClientInfo{Name: s.Client.Name, Version: s.Client.Version, Protocol: s.Client.Protocol, Era: s.Era},
			Started:  s.Started,
			LastSeen: s.LastSeen,
			Requests: s.Requests,
			InFlight: s.InFlight,
		})
	}
	return hs
}

// frontTarget adds the HTTP front to a Target's status.
type frontTarget struct {
	control.Target
	run *instanceRun
}

func (t frontTarget) Status() control.Status {
	st := t.Target.Status()
	var sl sessionLister
	if mt, ok := t.Target.(*muxTarget); ok {
		if s, ok := mt.m.(sessionLister); ok {
			sl = s
		}
	}
	st.HTTP = t.run.httpStatus(sl)
	return st
}

// serveHTTP runs cfg with the HTTP front until ctx ends: [cli] through
// clitools' server, [servers] through the mux, one [run] server through
// the mux engine in single mode (a real MCP server toward each client
// session, whichever era it speaks, and a real client toward the child:
// the relay's one byte-level session cannot be shared by several
// clients).
func serveHTTP(ctx context.Context, cfg *config.Config, logger *slog.Logger, ring *logring.Ring) error {
	none := wire.NewReader(strings.NewReader(""), 1) // stdin is not a client
	switch cfg.Mode() {
	case config.CLI:
		return serveCLI(ctx, cfg, logger, ring, none, io.Discard)
	case config.Mux:
		return serveMux(ctx, cfg, logger, ring, none, io.Discard)
	}
	logger.Info("mcpflow started", "version", version(), "config", orFlags(cfg.File), "run", cfg.Run.Command.String())
	return serveSingleMux(ctx, cfg, logger, ring, none, io.Discard)
}
