package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// server is one server behind the mux: its spec, its backend, and what
// list_servers reports of its child, kept by follow from the backend's
// events.
type server struct {
	spec ServerSpec
	log  *slog.Logger
	made chan struct{} // closed once it has a backend (or failed to)
	up   chan struct{} // closed once its first start ended, its state applied
	wake chan struct{} // events are queued for follow
	opMu sync.Mutex    // one reload at a time

	mu       sync.Mutex // guards what follows
	b        Backend
	removed  bool
	starting bool    // its first start is running
	events   []Event // queued for follow
	health
}

// health is what list_servers reports of a server's child.
type health struct {
	status    string
	pid       int
	gen       int // the generation of the child the status is about
	started   time.Time
	restarts  int
	lastBuild *result.Build
	report    string
}

// emit queues a backend event for follow; it never blocks.
func (s *server) emit(ev Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	s.poke()
}

func (s *server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// follow applies the server's events in order, off every read loop,
// until it is removed; up runs when they brought the server up.
func (s *server) follow(up func()) {
	for range s.wake {
		s.mu.Lock()
		evs, removed := s.events, s.removed
		s.events = nil
		s.mu.Unlock()
		if removed {
			return
		}
		came := false
		for _, ev := range evs {
			came = s.apply(ev) || came
		}
		if came {
			up()
		}
	}
}

// apply records one event; it reports whether the server came up.
func (s *server) apply(ev Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return false
	}
	switch ev.Kind {
	case EventStarting:
		if s.status != StatusRunning {
			s.status = StatusStarting
		}
		if ev.Pid != 0 {
			s.pid = ev.Pid // a child of a session's started
		}
	case EventUp:
		if ev.Gen != 0 && ev.Gen < s.gen {
			return false // a late report about an earlier start
		}
		if ev.Build != nil {
			s.lastBuild = ev.Build
		}
		if ev.Gen != 0 && ev.Gen == s.gen && s.status == StatusRunning {
			return false // the same start, reported by the relay and by the cycle
		}
		if !s.started.IsZero() {
			s.restarts++
		}
		s.status, s.started, s.report = StatusRunning, time.Now(), ""
		if ev.Pid != 0 {
			s.pid = ev.Pid
		}
		if ev.Gen != 0 {
			s.gen = ev.Gen
		}
		return true
	case EventCrashed:
		if ev.Gen != 0 && ev.Gen < s.gen || s.status == StatusCrashed && (ev.Gen == 0 || ev.Gen == s.gen) {
			return false // stale, or the same crash reported twice
		}
		if ev.Gen != 0 {
			s.gen = ev.Gen
		}
		s.status, s.pid, s.report = StatusCrashed, 0, ev.Report
		line, _, _ := strings.Cut(s.report, "\n")
		s.log.Error("server crashed", "report", line)
	case EventBuilt:
		s.lastBuild = ev.Build
	case EventBuildFailed:
		if ev.Build != nil {
			s.lastBuild = ev.Build
		}
		if s.status != StatusRunning {
			s.status, s.report = StatusBuildFailed, ev.Report
		}
	}
	return false
}

// attach gives the server its backend; it reports whether the server was
// removed meanwhile.
func (s *server) attach(b Backend) (removed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = b
	return s.removed
}

// detach marks the server removed and returns its backend (nil: none).
func (s *server) detach() Backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removed = true
	return s.b
}

// backend is the server's backend; nil before it has one, and once it is
// removed.
func (s *server) backend() Backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return nil
	}
	return s.b
}

// state is what the server's child is now.
func (s *server) state() health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health
}

// reload rebuilds (when a build is configured) and restarts the server,
// with env's overrides for this start and the next ones.
func (s *server) reload(ctx context.Context, env map[string]string) (result.Build, error) {
	s.mu.Lock()
	b, starting := s.b, s.starting
	s.mu.Unlock()
	if starting {
		return result.Build{}, fmt.Errorf("server %q is still starting (its first build or start is running): call list_servers to see when it runs", s.spec.Name)
	}
	if len(env) > 0 {
		es, ok := b.(interface{ SetEnv(map[string]string) error })
		if !ok {
			return result.Build{}, fmt.Errorf("server %q takes no environment overrides", s.spec.Name)
		}
		if err := es.SetEnv(env); err != nil {
			return result.Build{}, err
		}
	}
	return b.Reload(ctx), nil
}

// finished records a start's or reload's result at once, for its caller to
// report (the same event, later through follow, changes nothing); it says
// whether the server came up, and whether it was removed meanwhile.
func (s *server) finished(res result.Build) (up, removed bool) {
	up = s.apply(eventOf(res, s.spec.Name))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starting, s.lastBuild = false, &res
	return up, s.removed
}

// info is the server as list_servers shows it to a client that is listed
// pub of it.
func (s *server) info(verbose bool, pub published) ServerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.spec
	info := ServerInfo{
		Name:      sp.Name,
		Args:      []string{},
		Cwd:       sp.Dir,
		Source:    sp.Source,
		Status:    s.status,
		Pid:       s.pid,
		Tools:     append([]string{}, pub.names...),
		Prompts:   pub.pnames,
		Restarts:  s.restarts,
		LastBuild: buildInfo(s.lastBuild),
		Report:    s.report,
		Warnings:  pub.warnings,
	}
	if len(sp.Command) > 0 {
		info.Command, info.Args = sp.Command[0], append(info.Args, sp.Command[1:]...)
	}
	if s.status == StatusRunning && !s.started.IsZero() {
		info.Uptime = result.Dur(time.Since(s.started))
	}
	if verbose {
		for _, item := range pub.tools {
			var t ToolInfo
			_ = json.Unmarshal(item, &t)
			info.Schemas = append(info.Schemas, t)
		}
	}
	return info
}
