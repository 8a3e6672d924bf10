package instance

import (
	"os"

	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/transport/httpmcp"
)

// The HTTP front (--http ADDR, [http] listen): the client side of a run
// is Streamable HTTP at http://ADDR/mcp instead of stdin and stdout.
// openRun binds the address (so a bad one fails the start, and clients
// that connect early wait) and logs the URL; each mode then serves its
// wire.Opener (the relay, the mux, [cli]'s server) through the front,
// one session per client. Stdin is not read: the run lasts until a
// signal or another stop path of runSession's.

// tokenEnv, when set, is the bearer token every HTTP client must send
// (Authorization: Bearer TOKEN); without it the front serves only the
// user that runs mcpflow (httpmcp.FrontConfig.Token).
const tokenEnv = "MCPFLOW_HTTP_TOKEN"

// openFront binds cfg's [http] listen for w, with w's traffic capture
// (the client hop, with each message's session id) and the log.
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
	w.log.Info("serving MCP over Streamable HTTP", "url", f.URL(), "auth", authText(fc.Token))
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
	st.HTTP = t.run.httpStatus()
	return st
}

// authText says who the front serves, for the log.
func authText(token string) string {
	if token != "" {
		return "bearer token (" + tokenEnv + ")"
	}
	return "this user only"
}
