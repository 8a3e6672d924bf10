package clitools

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// NewGate puts a Gate around srv: notices (relay.notices) notes a failed
// build in call results; grace (relay.startup_grace; 0 = as long as the
// client waits) bounds the wait for the startup cycle.
func NewGate(srv *Server, notices bool, grace time.Duration) *Gate {
	st := &Gate{srv: srv, notices: notices, grace: grace, ready: make(chan struct{})}
	srv.cfg.Note = st.note
	srv.srv.AddReceivingMiddleware(st.middleware)
	return st
}

// Started says the startup cycle is over: the calls waiting for it go on.
func (st *Gate) Started() { st.once.Do(func() { close(st.ready) }) }

// Gate is what a CLI served alone adds around its Server: tools/list and
// tools/call wait for the startup cycle, so that the first list holds the
// CLI's tools; a call of a tool that is not served says why.
type Gate struct {
	srv     *Server
	notices bool // note a failed build in call results
	grace   time.Duration
	ready   chan struct{} // closed when the startup cycle is over
	once    sync.Once

	mu        sync.Mutex
	lastBuild *result.Build // the last cycle that was not canceled
}

// waitReady reports whether the startup cycle ended within st.grace, or, when
// 0, as long as the client waits for a server (relay.ClientWait): a slow first
// build must not make the client give up on a silent server.
func (st *Gate) waitReady(ctx context.Context, req mcp.Request) (bool, error) {
	grace := st.grace
	if grace <= 0 {
		name := ""
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() != nil && ss.InitializeParams().ClientInfo != nil {
			name = ss.InitializeParams().ClientInfo.Name
		}
		grace = relay.ClientWait(name)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-st.ready:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// note is the notices note for a CLI tool's result, or "".
func (st *Gate) note() string {
	p := st.buildProblem()
	if !st.notices || p == "" {
		return ""
	}
	p, _, _ = strings.Cut(p, "\n")
	return "mcpflow note: " + p + "; this call ran the program as it is on disk. " + st.fixHint()
}

// NoteBuild tells the gate how a build cycle ended (the builder's OnResult).
func (st *Gate) NoteBuild(res result.Build) {
	if res.Canceled {
		return
	}
	st.mu.Lock()
	st.lastBuild = &res
	st.mu.Unlock()
}

// buildProblem says why the last build failed, or "" when it did not.
func (st *Gate) buildProblem() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	b := st.lastBuild
	if b == nil || b.OK || b.Skipped {
		return ""
	}
	msg := fmt.Sprintf("the last build (%s) failed: %v", b.Trigger, b.Err)
	if e := strings.TrimSpace(b.Errors); e != "" {
		msg += "\n" + e
	}
	return msg
}

func (st *Gate) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" && method != "tools/call" {
			return next(ctx, method, req)
		}
		ready, err := st.waitReady(ctx, req)
		if err != nil {
			return nil, err
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil || call.Params.Name == st.srv.cfg.Tool {
			return next(ctx, method, req)
		}
		name := call.Params.Name
		sch, schemaErr := st.srv.Schema()
		if sch.Tool(name) == nil {
			if !ready {
				msg := fmt.Sprintf("tool %q is not served yet: the first build and schema read are still running; the client gets tools/list_changed when they finish. Retry then", name)
				if tool := st.srv.cfg.Tool; tool != "-" {
					msg += ", or call " + tool + " to wait for them"
				}
				return textResult(msg+".", true), nil
			}
			var why []string
			if p := st.buildProblem(); p != "" {
				why = append(why, p)
			}
			if schemaErr != nil {
				why = append(why, "the CLI's tool list could not be read: "+schemaErr.Error())
			}
			if len(why) > 0 {
				return errResult("tool %q is not served: %s\n%s", name, strings.Join(why, "\n"), st.fixHint()), nil
			}
		}
		return next(ctx, method, req)
	}
}

func (st *Gate) fixHint() string {
	if tool := st.srv.cfg.Tool; tool != "-" {
		return "Fix it and save, or call " + tool + " to rebuild and see the errors."
	}
	return "Fix it and save."
}
