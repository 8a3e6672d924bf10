package mux

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call passes through the side door exactly when the client and the
// child speak the same era; either way it gets the same answer.
func TestSideDoorByEra(t *testing.T) {
	const legacy = "2025-11-25"
	for _, c := range []struct {
		client, child string
		lane          bool
	}{
		{legacy, legacy, true},
		{"", "", true},
		{legacy, "", false},
		{"", legacy, false},
	} {
		for _, stdio := range []bool{false, true} {
			t.Run(transportName(stdio)+",client="+orLatest(c.client)+",child="+orLatest(c.child), func(t *testing.T) {
				e := start(t, envOpts{stdio: stdio, version: c.client, cfg: Config{ChildProtocolVersion: c.child}})
				e.mustOK("add_server", addArgs("s", fixtureV1))
				before := e.m.laneCalls.Load()
				if got := e.mustOK("s__echo", map[string]any{"text": "hi"}); got != "s:hi" {
					t.Errorf("echo: %q", got)
				}
				if got := e.m.laneCalls.Load() - before; (got == 1) != c.lane {
					t.Errorf("%d calls took the side door; want it used: %v", got, c.lane)
				}
				// A progress token keeps the call on the SDK path (progress
				// must not overtake the result); the answer is the same.
				before = e.m.laneCalls.Load()
				res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{
					Meta: mcp.Meta{"progressToken": "p"}, Name: "s__echo", Arguments: map[string]any{"text": "tok"},
				})
				if err != nil || text(res) != "s:tok" {
					t.Errorf("echo with a progress token: %v %v", err, res)
				}
				if n := e.m.laneCalls.Load() - before; n != 0 {
					t.Errorf("a call with a progress token took the side door")
				}
			})
		}
	}
}

// transportName names a test's client transport.
func transportName(stdio bool) string {
	if stdio {
		return "stdio"
	}
	return "memory"
}

// Through the side door, the client's cancel reaches the child, and a
// child that dies under a call answers it once, with the crash report and
// what to do.
func TestSideDoorCancelAndCrash(t *testing.T) {
	for _, stdio := range []bool{false, true} {
		t.Run(transportName(stdio), func(t *testing.T) { testSideDoorCancelAndCrash(t, stdio) })
	}
}

func testSideDoorCancelAndCrash(t *testing.T, stdio bool) {
	logs := &syncBuf{}
	e := start(t, envOpts{stdio: stdio, cfg: Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}})
	e.mustOK("add_server", addArgs("s", fixtureV1))
	before := e.m.laneCalls.Load()

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__slow", Arguments: map[string]any{"ms": 60000}})
		errc <- err
	}()
	eventually(t, "the call to reach the side door", func() bool { return e.m.laneCalls.Load() > before })
	time.Sleep(50 * time.Millisecond) // let it reach the child
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled call: %v", err)
	}
	eventually(t, "the child to see the cancel", func() bool { return strings.Contains(logs.String(), "slow canceled") })
	if got := e.mustOK("s__echo", map[string]any{"text": "after"}); got != "s:after" {
		t.Errorf("after the cancel: %q", got)
	}

	before = e.m.laneCalls.Load()
	resc := make(chan *mcp.CallToolResult, 2)
	go func() {
		res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "s__slow", Arguments: map[string]any{"ms": 60000}})
		if err != nil {
			t.Errorf("call pending at the crash: %v", err)
		}
		resc <- res
	}()
	eventually(t, "the call to reach the side door", func() bool { return e.m.laneCalls.Load() > before })
	time.Sleep(50 * time.Millisecond)
	if err := syscall.Kill(e.server("s").Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-resc:
		if res == nil || !res.IsError || !strings.Contains(text(res), "crashed") || !strings.Contains(text(res), "reload_server") {
			t.Errorf("the pending call's answer: %+v %q", res, text(res))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pending call was never answered")
	}
	select {
	case res := <-resc:
		t.Errorf("a second answer: %v", res)
	case <-time.After(100 * time.Millisecond):
	}
}

// tools/list is answered from the front's cache while nothing changes, and
// follows every change: a server added, crashed, reloaded, removed.
func TestToolsListFollowsEveryChange(t *testing.T) {
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("client="+orLatest(version), func(t *testing.T) {
			e := start(t, envOpts{stdio: version == "", version: version})
			has := func(name string) bool {
				res, err := e.cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, tool := range res.Tools {
					if tool.Name == name {
						return true
					}
				}
				return false
			}
			if has("s__echo") {
				t.Fatal("s__echo listed before s exists")
			}
			e.mustOK("add_server", addArgs("s", fixtureV1))
			eventually(t, "s__echo listed after add_server", func() bool { return has("s__echo") })
			e.call("s__exit", map[string]any{"code": 3})
			eventually(t, "s__echo gone after the crash", func() bool { return !has("s__echo") })
			e.mustOK("reload_server", map[string]any{"name": "s"})
			eventually(t, "s__echo back after reload_server", func() bool { return has("s__echo") })
			e.mustOK("remove_server", map[string]any{"name": "s"})
			eventually(t, "s__echo gone after remove_server", func() bool { return !has("s__echo") })
		})
	}
}

// A large answer passes through the side door whole.
func TestSideDoorLargeAnswer(t *testing.T) {
	for _, stdio := range []bool{false, true} {
		t.Run(transportName(stdio), func(t *testing.T) {
			e := start(t, envOpts{stdio: stdio})
			e.mustOK("add_server", addArgs("s", fixtureV1))
			before := e.m.laneCalls.Load()
			big := strings.Repeat("é\"\\ x", 400<<10) // 2.4 MB of text that needs escaping
			if got := e.mustOK("s__echo", map[string]any{"text": big}); got != "s:"+big {
				t.Errorf("echo of %d bytes came back as %d bytes", len(big), len(got))
			}
			if e.m.laneCalls.Load() == before {
				t.Error("the call did not take the side door")
			}
		})
	}
}

// A passed-through call tells the child the client's own capabilities (its
// input_required requests go to the client as they are), under the mux's
// session otherwise; the SDK path tells it the mux's.
func TestSideDoorTellsTheChildWhatTheClientCanDo(t *testing.T) {
	for _, sampling := range []bool{false, true} {
		t.Run(fmt.Sprintf("sampling=%v", sampling), func(t *testing.T) {
			e := start(t, envOpts{stdio: true, sampling: sampling})
			e.mustOK("add_server", addArgs("s", fixtureV1))
			before := e.m.laneCalls.Load()
			want := fmt.Sprintf("client=mcpflow-mux sampling=%v", sampling)
			if got := e.mustOK("s__whoami", map[string]any{}); got != want {
				t.Errorf("through the side door: %q, want %q", got, want)
			}
			if e.m.laneCalls.Load() == before {
				t.Error("the call did not take the side door")
			}
			params := &mcp.CallToolParams{Name: "s__whoami", Meta: mcp.Meta{"progressToken": "p"}}
			res, err := e.cs.CallTool(context.Background(), params)
			if err != nil || text(res) != "client=mcpflow-mux sampling=true" {
				t.Errorf("through the SDK path: %v %q", err, text(res))
			}
		})
	}
}
