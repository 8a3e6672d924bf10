package instance

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/ops/statedir"
	"github.com/mcpflow/mcpflow/internal/ops/traffic"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/transport/httpmcp"
)

// instanceRun is what a run (watch; mux the same way) adds for a person:
// the control socket (mcpflow status, rebuild, logs), the log ring it
// serves, the traffic capture.
type instanceRun struct {
	cfg     *config.Config
	ring    *logring.Ring
	log     *slog.Logger
	traffic *traffic.Writer // nil: no capture
	srv     *control.Server // nil: no socket
	http    *httpmcp.Front  // the HTTP front ([http] listen); nil: stdio
}

// openRun opens the traffic capture when [log] traffic is set. A capture
// file that cannot be opened is an error: the person asked for it.
func openRun(cfg *config.Config, ring *logring.Ring, logger *slog.Logger) (*instanceRun, error) {
	w := &instanceRun{cfg: cfg, ring: ring, log: logger}
	if cfg.Log.Traffic != "" {
		if err := statedir.MkdirFor(cfg.Log.Traffic); err != nil {
			return nil, fmt.Errorf("traffic capture: %w", err)
		}
		tw, err := traffic.Open(cfg.Log.Traffic, traffic.Options{MaxMessage: int(cfg.Log.TrafficMaxMessage), MaxFile: cfg.Log.TrafficMaxSize})
		if err != nil {
			return nil, fmt.Errorf("traffic capture (log.traffic): %w", err)
		}
		w.traffic = tw
		logger.Info("recording traffic", "file", cfg.Log.Traffic)
	}
	if cfg.HTTP.Listen != "" {
		if err := w.openFront(cfg.HTTP.Listen); err != nil {
			w.close()
			return nil, fmt.Errorf("http front ([http] listen, --http): %w", err)
		}
	}
	return w, nil
}

// trafficHook is relay.Config.Traffic for the server called server (""
// in single-server mode; a mux names each server's relay): nil when
// nothing is recorded.
func (w *instanceRun) trafficHook(server string) func(hop string, toServer bool, gen int, msg []byte) {
	if w.traffic == nil {
		return nil
	}
	return w.traffic.Hook(server)
}

// serveFront serves o to the client(s): the HTTP front's when there is
// one, else the one client on in and out (wire.Serve), whose input's end
// calls inputEnded. Its requests read before that may wait for their
// answers as long as a held request does (relay.queue_timeout: a one-shot
// pipe on a cold build waits for the server); the client hop is recorded.
func (w *instanceRun) serveFront(ctx context.Context, o wire.Opener, in wire.Stream, out io.Writer, inputEnded func()) error {
	if w.http != nil {
		return w.http.Serve(ctx, o)
	}
	opt := wire.ServeOptions{Log: w.log.With("from", "client"), Grace: max(w.cfg.Relay.QueueTimeout, oneShotWait(w.cfg)), InputEnded: inputEnded}
	if hook := w.trafficHook(""); hook != nil {
		opt.Traffic = func(toServer bool, msg []byte) { hook("client", toServer, 0, msg) }
	}
	return wire.Serve(ctx, in, out, o, opt)
}

// oneShotWait bounds how long a one-shot client (mcpflow tools and call, a
// pipe) waits for the first server: the build, then a handshake.
func oneShotWait(cfg *config.Config) time.Duration {
	if cfg.Build.Timeout <= 0 {
		return 0
	}
	return cfg.Build.Timeout + cfg.Relay.Handshake
}

// listen opens the control socket with t as its Target and o, the
// server the instance serves, for mcpflow tools and call. Failing to is
// a warning: the session goes on without it.
func (w *instanceRun) listen(mode string, t control.Target, o wire.Opener) {
	cfgFile := w.cfg.File
	if cfgFile != "" {
		cfgFile = config.AbsFrom(w.cfg.Dir, cfgFile)
	}
	srv, err := control.Listen(control.Info{
		Config: cfgFile, Project: w.cfg.Dir, Mode: mode, Version: Version, Target: t, Logs: w.ring,
		Tools: control.SessionTools{Opener: o, Log: w.log, Version: Version},
	})
	if err != nil {
		w.log.Warn("no control socket: mcpflow status, rebuild and logs will not see this instance", "err", err)
		return
	}
	w.srv = srv
	w.log.Debug("control socket", "path", srv.Path())
}

// tokenEnv, when set, is the bearer token every HTTP client must send
// (Authorization: Bearer TOKEN); without it the front serves only the
// user that runs mcpflow (httpmcp.FrontConfig.Token).
const tokenEnv = "MCPFLOW_HTTP_TOKEN"

// openFront binds [http] listen (--http ADDR): the client side of the run
// is Streamable HTTP at http://ADDR/mcp, one session per client, instead
// of stdin and stdout, which is not read. Binding at the start makes a
// bad address fail it, and clients that connect early wait. The front
// records the client hop with each message's session id.
func (w *instanceRun) openFront(addr string) error {
	fc := httpmcp.FrontConfig{Logger: w.log, MaxMessage: w.cfg.Relay.MaxMessage, Token: os.Getenv(tokenEnv),
		MaxSessions: w.cfg.HTTP.MaxSessions, IdleTimeout: w.cfg.HTTP.IdleTimeout}
	if w.traffic != nil {
		hook := w.traffic.SessionHook("")
		fc.Traffic = func(session string, toServer bool, msg []byte) { hook("client", session, toServer, 0, msg) }
	}
	f, err := httpmcp.Listen(addr, fc)
	if err != nil {
		return err
	}
	w.http = f
	auth := "this user only"
	if fc.Token != "" {
		auth = "bearer token (" + tokenEnv + ")"
	}
	w.log.Info("serving MCP over Streamable HTTP", "url", f.URL(), "auth", auth)
	return nil
}

// httpStatus is the HTTP front's part of status; nil on stdio.
func (w *instanceRun) httpStatus() *control.HTTPStatus {
	if w.http == nil {
		return nil
	}
	hs := &control.HTTPStatus{URL: w.http.URL(), Sessions: []control.SessionStatus{}}
	for _, s := range w.http.Sessions() {
		hs.Sessions = append(hs.Sessions, control.SessionStatus{
			ID:       s.ID,
			Client:   control.ClientInfo{Name: s.Client, Version: s.ClientVersion, Protocol: s.Protocol, Era: s.Era},
			Started:  s.Started,
			LastSeen: s.LastSeen,
			Requests: uint64(s.Requests),
			InFlight: s.InFlight, IdleSince: s.IdleSince,
		})
	}
	return hs
}

// close removes the control socket, releases the HTTP front's address
// and flushes and closes the capture.
func (w *instanceRun) close() {
	if w.srv != nil {
		w.srv.Close()
	}
	if w.http != nil {
		w.http.Close()
	}
	if w.traffic != nil {
		if err := w.traffic.Close(); err != nil {
			w.log.Error("traffic capture", "file", w.cfg.Log.Traffic, "err", err)
		}
	}
}
