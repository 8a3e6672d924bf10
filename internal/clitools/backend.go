package clitools

import (
	"cmp"
	"context"
	"sync"

	"github.com/mcpflow/mcpflow/internal/mux"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// Backend serves a Server behind a mux (a mux.Backend): a start or reload
// runs the attached hooks' cycle (build, then refresh) or, with none,
// re-reads the schema.
type Backend struct {
	srv   *Server
	emit  func(mux.Event)
	hooks mux.Hooks

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// NewBackend is the backend of srv; emit is the mux's.
func NewBackend(srv *Server, emit func(mux.Event)) *Backend {
	b := &Backend{srv: srv, emit: emit}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b
}

// Attach gives the backend its hooks and runs their loop until Close; call it once, before Start.
func (b *Backend) Attach(h mux.Hooks) {
	b.hooks = h
	if h.Run != nil {
		b.wg.Go(func() { h.Run(b.ctx) })
	}
}

func (b *Backend) Open(c wire.Client) wire.Session { return b.srv.Open(c) }

func (b *Backend) Start(ctx context.Context) result.Build { return b.cycle(ctx, b.hooks.Start) }

func (b *Backend) Reload(ctx context.Context) result.Build { return b.cycle(ctx, b.hooks.Reload) }

func (b *Backend) cycle(ctx context.Context, hook func(context.Context) result.Build) result.Build {
	b.emit(mux.Event{Kind: mux.EventStarting})
	var res result.Build
	if hook != nil {
		res = hook(ctx)
	} else {
		rs, _ := b.srv.Restart(ctx)
		res = result.Build{Skipped: true, OK: true, Restart: rs}
	}
	if rs := res.Restart; res.OK && rs != nil && rs.Err != nil {
		if sch, _ := b.srv.Schema(); sch != nil {
			// The old tools keep serving: a failed refresh is reported
			// as a failed build, not as a crash.
			res.OK, res.Errors = false, cmp.Or(res.Errors, rs.Err.Error())
		}
	}
	ev := mux.Event{Kind: mux.EventUp, Build: &res}
	switch {
	case !res.OK:
		ev.Kind, ev.Report = mux.EventBuildFailed, "the build failed:\n"+res.Errors
	case res.Restart != nil && res.Restart.Err != nil:
		ev.Kind, ev.Report = mux.EventCrashed, res.Restart.Err.Error()
	}
	if res.Restart != nil {
		ev.Gen = res.Restart.Gen
	}
	b.emit(ev)
	return res
}

// NoteBuild tells the mux how a build cycle ended (list_servers).
func (b *Backend) NoteBuild(res result.Build) {
	if res.Canceled {
		return
	}
	ev := mux.Event{Kind: mux.EventBuilt, Build: &res}
	if !res.OK {
		ev.Kind, ev.Report = mux.EventBuildFailed, "the build failed:\n"+res.Errors
	}
	b.emit(ev)
}

func (b *Backend) Close() {
	b.once.Do(func() {
		b.cancel()
		b.wg.Wait()
		b.srv.Close()
	})
}
