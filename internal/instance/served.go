package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mcpflow/mcpflow/internal/builder"
	"github.com/mcpflow/mcpflow/internal/builder/cache"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/logging"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/watcher"
)

// served is what every served server has, in every mode (one [run]
// server, [cli], each server of a mux): the builder of its [build], with
// the build cache, restarting the server through its relay or its
// clitools server; the watcher of its [watch]; the last build, for
// mcpflow status.
type served struct {
	*builder.Builder
	w      *watcher.Watcher // nil: not watched
	log    *slog.Logger
	builds buildLog
	attrs  []any // what the "watching" line names
}

// assemble makes the served server of sc (a single-server config: a
// mux server's own sections) whose server r restarts. Each build cycle is
// logged (one line a cycle), kept for status, then given to note. ignore
// are more paths the watcher leaves out.
func assemble(sc *config.Config, log *slog.Logger, r builder.Restarter, note func(result.Build), ignore ...string) (*served, error) {
	charm := logging.Charm(log)
	s := &served{log: log, attrs: []any{"paths", sc.Watch.Paths}}
	buildLog := slog.New(charm.WithPrefix("build"))
	bc := builder.Config{
		Command: sc.Build.Command.Argv,
		Shell:   sc.Build.Command.Shell,
		Dir:     sc.Dir,
		Timeout: sc.Build.Timeout,
		Logger:  buildLog,
		OnResult: func(res result.Build) {
			if (!res.Canceled || !errors.Is(res.Err, context.Canceled)) && (res.Restart == nil || !errors.Is(res.Restart.Err, relay.ErrClosed)) {
				logging.Cycle(charm, res) // a cycle cut short by the end of the run says nothing
			}
			s.builds.note(res)
			note(res)
		},
	}
	if !sc.Build.Command.IsZero() {
		bc = cache.Attach(project.CacheOptions(sc, buildLog), bc)
	}
	if sc.Watch.Enabled {
		wc := project.WatchConfig(sc)
		wc.Ignore = append(wc.Ignore, ignore...)
		wc.Logger = slog.New(charm.WithPrefix("watch"))
		w, err := watcher.New(wc)
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		s.w = w
	}
	s.Builder = builder.New(bc, r)
	return s, nil
}

// run runs the builds and the watch until ctx ends (see
// builder.RunWatching); the startup cycle is Startup's.
func (s *served) run(ctx context.Context) { s.RunWatching(ctx, s.w, s.log, s.attrs...) }

// start runs run and the startup cycle, then started, until stop, which
// closes the server (closeServer) first, then ends both and waits for them.
func (s *served) start(ctx context.Context, started, closeServer func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.run(ctx) })
	wg.Go(func() {
		defer started()
		s.Startup(ctx)
	})
	return func() {
		closeServer()
		cancel()
		wg.Wait()
	}
}

// rebuild is the agent's and the person's rebuild: build, restart.
func (s *served) rebuild(ctx context.Context) result.Build { return s.Recompile(ctx, nil) }
