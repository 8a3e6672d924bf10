package instance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/clitools"
	"github.com/mcpflow/mcpflow/internal/mux"
	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

func TestCLITarget(t *testing.T) {
	t.Parallel()
	var sch *clitools.Schema
	var schErr error
	builds := &buildLog{}
	calls := 0
	tg := oneTarget{"tool", func() control.Status {
		return cliStatus("tool", func() (*clitools.Schema, error) { return sch, schErr }, builds)
	}, func(context.Context) result.Build { calls++; return result.Build{OK: true, Trigger: "recompile"} }}
	if sv := tg.Status().Servers[0]; sv.State != "starting" || sv.Tools != -1 || sv.Build != nil {
		t.Fatalf("before the first cycle: %+v", sv)
	}
	sch = &clitools.Schema{Tools: []*clitools.Tool{{}, {}}}
	builds.note(result.Build{OK: true, Trigger: "startup", Duration: time.Second})
	if sv := tg.Status().Servers[0]; sv.State != "serving" || sv.Tools != 2 || sv.Build == nil || !sv.Build.OK {
		t.Fatalf("serving: %+v", sv)
	}
	schErr = errors.New("bad schema")
	if sv := tg.Status().Servers[0]; !strings.HasPrefix(sv.State, "schema failed") || sv.Tools != 2 {
		t.Fatalf("schema failed: %+v", sv)
	}
	if b, err := tg.Rebuild(context.Background(), ""); err != nil || !b.OK || calls != 1 {
		t.Fatalf("rebuild: %+v %v", b, err)
	}
	if _, err := tg.Rebuild(context.Background(), "other"); err == nil || calls != 1 {
		t.Fatalf("rebuild of another name: %v", err)
	}
}

// fakeMux plays the mux for muxTarget.
type fakeMux struct {
	list    []mux.ServerInfo
	res     *result.Build
	err     error
	reloads []string
}

func (f *fakeMux) List(bool) []mux.ServerInfo { return f.list }

func (f *fakeMux) Client() mux.ClientInfo {
	return mux.ClientInfo{Name: "gemini-cli", Version: "0.61.0", Protocol: "2025-06-18", Era: wire.EraLegacy}
}

func (f *fakeMux) Reload(_ context.Context, name string) (mux.Outcome, *result.Build, error) {
	f.reloads = append(f.reloads, name)
	return mux.Outcome{}, f.res, f.err
}

func TestMuxTarget(t *testing.T) {
	t.Parallel()
	fm := &fakeMux{list: []mux.ServerInfo{
		{Name: "notes", Status: "running", Pid: 11, Restarts: 2, Tools: []string{"a", "b"}},
		{Name: "search", Status: "crashed", Tools: []string{}, LastBuild: &mux.BuildInfo{OK: false, Duration: "380ms", Errors: "# pkg\n./main.go:12:3: undefined: x"}},
	}}
	mt := newMuxTarget()
	mt.m = fm
	tg := mt
	mt.addRelay("notes", relay.New(relay.Config{Child: relay.Child{Command: []string{"true"}}}))
	notes := &buildLog{}
	mt.setBuilds("notes", notes)
	notes.note(result.Build{OK: true, Trigger: "startup", Duration: time.Second})

	st := tg.Status()
	if len(st.Servers) != 2 {
		t.Fatalf("servers: %+v", st.Servers)
	}
	if st.Client.Name != "gemini-cli" || st.Client.Protocol != "2025-06-18" || st.Client.Era != "legacy" {
		t.Errorf("client: %+v", st.Client)
	}
	n, s := st.Servers[0], st.Servers[1]
	if n.Name != "notes" || n.State != "running" || n.Tools != 2 || n.Build == nil || !n.Build.OK {
		t.Errorf("notes: %+v", n)
	}
	if s.State != "crashed" || s.Tools != 0 || s.Build == nil || s.Build.OK || s.Build.Duration != control.Millis(380*time.Millisecond) ||
		s.Build.FirstError != "./main.go:12:3: undefined: x" {
		t.Errorf("search: %+v (build %+v)", s, s.Build)
	}

	// No name with two servers: an error naming them; no reload ran.
	if _, err := tg.Rebuild(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "notes, search") {
		t.Fatalf("rebuild without a name: %v", err)
	}
	if _, err := tg.Rebuild(context.Background(), "nope"); err == nil || len(fm.reloads) != 0 {
		t.Fatalf("rebuild of an unknown server: %v (reloads %v)", err, fm.reloads)
	}

	// A good reload: the diff.
	fm.res = &result.Build{OK: true, Duration: 1210 * time.Millisecond, Restart: &result.Restart{Pid: 12,
		Tools: result.ToolDiff{Known: true, Added: []string{"c"}, Removed: []string{"b"}, Current: []string{"a", "c"}}}}
	b, err := tg.Rebuild(context.Background(), "notes")
	if err != nil || control.ExitCode(b) != 0 || b.Duration != 1210*time.Millisecond || b.Restart == nil || b.Restart.Pid != 12 ||
		strings.Join(b.Restart.Tools.Added, ",") != "c" || strings.Join(b.Restart.Tools.Current, ",") != "a,c" {
		t.Fatalf("good reload: %+v %v", b, err)
	}
	// A failed build: exit status 1, the errors.
	fm.res = &result.Build{OK: false, Duration: 380 * time.Millisecond, Errors: "./main.go:1: bad", Err: errors.New("exit status 1")}
	b, err = tg.Rebuild(context.Background(), "notes")
	if err != nil || control.ExitCode(b) != 1 || b.Errors != "./main.go:1: bad" || b.Restart != nil {
		t.Fatalf("failed reload: %+v %v", b, err)
	}
	// A restart that failed after a good build.
	fm.res = &result.Build{OK: true, Restart: &result.Restart{Err: errors.New("the server did not come back up: exit status 2")}}
	b, _ = tg.Rebuild(context.Background(), "notes")
	if control.ExitCode(b) != 1 || b.Restart == nil || b.Restart.Err == nil {
		t.Fatalf("failed restart: %+v", b)
	}
	if !slices.Equal(fm.reloads, []string{"notes", "notes", "notes"}) {
		t.Fatalf("reloads: %v", fm.reloads)
	}
}
