package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handshake opens a session in the given era on a raw wire and returns the
// params prefix every later request must carry ("" for legacy).
func (w *rawPeer) handshake(era string) string {
	w.t.Helper()
	if era == "legacy" {
		w.send(legacyInit)
		w.recvID(0)
		w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return ""
	}
	w.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + modernMeta() + `}}`)
	w.recvID("d")
	w.send(`{"jsonrpc":"2.0","id":"listen","method":"subscriptions/listen","params":{` + modernMeta() + `,"notifications":{"toolsListChanged":true}}}`)
	if ack := w.recv(); ack["method"] != "notifications/subscriptions/acknowledged" {
		w.t.Fatalf("no ack: %v", ack)
	}
	return modernMeta() + ","
}

func toolCall(id int, meta, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s"name":%q,"arguments":%s}}`, id, meta, name, args)
}

// collect reads messages for d and counts the responses per id.
func (w *rawPeer) collect(d time.Duration, until func(map[string]int) bool) map[string]int {
	w.t.Helper()
	counts := map[string]int{}
	deadline := time.After(d)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				return counts
			}
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				w.t.Fatalf("invalid JSON from relay: %s", line)
			}
			if _, isNotif := m["method"]; !isNotif {
				counts[mustMarshal(m["id"])]++
			}
			if until != nil && until(counts) {
				return counts
			}
		case <-deadline:
			return counts
		}
	}
}

func TestChaosEveryIDAnsweredOnce(t *testing.T) {
	t.Parallel()
	for _, era := range []string{"modern", "legacy"} {
		for _, how := range []string{"crash", "recompile"} {
			t.Run(era+"/"+how, func(t *testing.T) {
				w := newRawPeer(t, func(c *Config) { c.OnCrash = "wait" })
				meta := w.handshake(era)
				const n = 64
				for i := range n {
					w.send(toolCall(100+i, meta, "slow", `{"ms":30000}`))
				}
				waitStats(t, w.r, "the calls sent to the child", func(st Stats) bool { return st.InFlight == n })
				switch how {
				case "crash":
					w.send(toolCall(999, meta, "panic", `{"text":"chaos"}`))
				case "recompile":
					w.send(toolCall(999, meta, "recompile", `{}`))
				}
				counts := w.collect(30*time.Second, func(c map[string]int) bool { return len(c) == n+1 })
				// Then a quiet spell, to catch any second answer.
				for id, k := range w.collect(time.Second, nil) {
					counts[id] += k
				}
				for i := range n {
					if got := counts[fmt.Sprint(100+i)]; got != 1 {
						t.Errorf("id %d answered %d times", 100+i, got)
					}
				}
				if counts["999"] != 1 {
					t.Errorf("the %s call answered %d times", how, counts["999"])
				}
				if len(counts) != n+1 {
					t.Errorf("answers for unknown ids: %v", counts)
				}
			})
		}
	}
}

func TestStaleSamplingAnswerDropped(t *testing.T) {
	t.Parallel()
	w := newRawPeer(t, nil)
	w.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	w.recvID(0)
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	w.send(toolCall(1, "", "legacy_sample", `{"text":"first"}`))
	old := w.recv()
	if old["method"] != "sampling/createMessage" {
		t.Fatalf("want a sampling request, got %v", old)
	}
	oldID := mustMarshal(old["id"])
	os.WriteFile(w.variant, []byte("v2"), 0o644) // a new tool: the list changes
	go w.r.Restart(context.Background())
	// The call on the old child gets its restart error; the client is told.
	for seen := 0; seen < 2; {
		m := w.recv()
		switch {
		case m["method"] == "notifications/tools/list_changed":
			seen++
		case m["method"] == "notifications/cancelled":
			// The old child gave up its sampling request: mapped to the
			// relay's id, as the client knows it.
			if !strings.Contains(mustMarshal(m), oldID) {
				t.Fatalf("cancel not mapped: %v", m)
			}
		case mustMarshal(m["id"]) == "1":
			if errCode(m) != wire.CodeServerRestarted {
				t.Fatalf("call on the old child: %v", m)
			}
			seen++
		default:
			t.Fatalf("unexpected: %v", m)
		}
	}

	w.send(toolCall(2, "", "legacy_sample", `{"text":"second"}`))
	fresh := w.recv()
	if fresh["method"] != "sampling/createMessage" {
		t.Fatalf("want a sampling request, got %v", fresh)
	}
	if mustMarshal(fresh["id"]) == oldID {
		t.Fatalf("the relay reused id %s for a new child's request", oldID)
	}
	// The new child numbers its requests as the old one did; the relay's
	// ids differ, so the stale answer cannot be mistaken for the new one.
	answer := func(id, text string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"` + text + `"}}}`
	}
	w.send(answer(oldID, "STALE"))
	w.send(answer(mustMarshal(fresh["id"]), "FRESH"))
	res := w.recvID(2)
	if s := mustMarshal(res); !strings.Contains(s, "model said: FRESH") {
		t.Fatalf("result: %s", s)
	}
	if !strings.Contains(w.logs.String(), "replaced") && !strings.Contains(w.logs.String(), "unknown request id") {
		t.Fatal("the stale answer was not logged as dropped")
	}
}

func TestSessionReplayLegacy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25"})
	ctx := h.ctx()
	if err := h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"fixture://status", "fixture://other"} {
		if err := h.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "fixture://other"}); err != nil {
		t.Fatal(err)
	}
	before := h.mustCall("state", nil)
	if !strings.Contains(before, "level=debug subs=fixture://status ") {
		t.Fatalf("state before: %q", before)
	}
	h.mustCall("recompile", nil)
	after := h.mustCall("state", nil)
	if !strings.Contains(after, "level=debug subs=fixture://status ") || after == before {
		t.Fatalf("state after a restart: %q (before %q)", after, before)
	}
}

// newHeldWire opens a legacy session, then starts a restart whose new
// server takes startDelay to exec, and returns once client messages are
// being held for it.
func newHeldWire(t *testing.T, startDelay string, cfg func(*Config)) *rawPeer {
	t.Helper()
	testkit.UnixOnly(t, "its server command is a sh script")
	w := newRawPeer(t, func(c *Config) {
		if cfg != nil {
			cfg(c)
		}
		c.Child.Shell = true
		c.Child.Command = []string{"sleep " + startDelay + "; exec " + c.Child.Command[0] + " " + strings.Join(c.Child.Command[1:], " ")}
	})
	w.handshake("legacy")
	w.send(`{"jsonrpc":"2.0","id":"sync","method":"ping"}`) // the handshake is through
	w.recvID("sync")
	go w.r.Restart(context.Background())
	waitStats(t, w.r, "the restart under way", func(st Stats) bool { return st.State == "restarting" }) // held from now on
	return w
}

func TestQueueOverflowAndDeadline(t *testing.T) {
	t.Parallel()
	w := newHeldWire(t, "2", func(c *Config) {
		c.Queue.Size = 2
		c.Queue.Timeout = 500 * time.Millisecond
	})
	for i := range 5 {
		w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 10+i))
	}
	var full, late int
	for range 5 {
		m := w.recv()
		if errCode(m) != wire.CodeQueueFull {
			t.Fatalf("want -32003, got %v", m)
		}
		switch msg := errMessage(m); {
		case strings.Contains(msg, "already waiting"):
			full++
		case strings.Contains(msg, "still restarting"):
			late++
		default:
			t.Fatalf("unexpected message: %s", msg)
		}
	}
	if full != 3 || late != 2 {
		t.Fatalf("queue full %d (want 3), deadline %d (want 2)", full, late)
	}
}

func TestRestartMarker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25", args: []string{"-marker", "MCPFLOW-RESTART"}, cfg: func(c *Config) { c.Child.RestartMarker = "MCPFLOW-RESTART" }})
	before := h.childPID()
	h.setVariant("v2") // a new tool: the client is told
	h.mustCall("marker", nil)
	h.waitListChanged()
	testkit.Eventually(t, 20*time.Second, "a restart after the marker line", func() bool {
		pid := h.childPID()
		return pid != before && pid != 0
	})
	h.mustCall("echo", map[string]any{"text": "after marker"})
}

func TestEnvOverrides(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25", cfg: func(c *Config) {
		c.Child.EnvOverridable = []string{"FOO"}
		c.Child.ExtraEnv = map[string]string{"FOO": "base"} // run.env
	}})
	if got := h.mustCall("env", map[string]any{"text": "FOO"}); strings.TrimSpace(got) != "base" {
		t.Fatalf("FOO before: %q", got)
	}
	h.mustCall("recompile", map[string]any{"env": map[string]string{"FOO": "bar"}})
	if got := h.mustCall("env", map[string]any{"text": "FOO"}); strings.TrimSpace(got) != "bar" {
		t.Fatalf("FOO after override: %q", got)
	}
	h.mustCall("recompile", nil)
	if got := h.mustCall("env", map[string]any{"text": "FOO"}); strings.TrimSpace(got) != "bar" {
		t.Fatalf("FOO did not persist: %q", got)
	}
	text, isErr, err := h.call("recompile", map[string]any{"env": map[string]string{"PATH": "/evil"}})
	if err != nil || !isErr || !strings.Contains(text, "PATH") || !strings.Contains(text, "Allowed keys: FOO") {
		t.Fatalf("refused key: %q %v %v", text, isErr, err)
	}
}

func TestServerSuffix(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version, cfg: func(c *Config) { c.ServerSuffix = "-dev" }})
		info := h.cs.InitializeResult().ServerInfo
		if info == nil || info.Name != "fixture-dev" || info.Version != "v1-dev" {
			t.Fatalf("serverInfo: %+v", info)
		}
	})
}

func TestCallToolForwards(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version, cfg: func(c *Config) { c.Tools.Call = "call" }})
		if !slices.Contains(h.toolNames(), "call") {
			t.Fatal("call tool not listed")
		}
		h.setVariant("v2")
		text := h.mustCall("recompile", nil)
		if !strings.Contains(text, "reverse (new)") || !strings.Contains(text, "input schema") {
			t.Fatalf("recompile result lacks the new tool's schema: %q", text)
		}
		// A client that never re-lists tools can still call the new one.
		if got := h.mustCall("call", map[string]any{"name": "reverse", "arguments": map[string]any{"text": "abc"}}); !strings.Contains(got, "cba") {
			t.Fatalf("call reverse: %q", got)
		}
	})
}

func TestCrashBetweenCallsNotice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25"})
	first := h.childPID()
	h.mustCall("die", map[string]any{"ms": 100})
	// No call until the server is back: the crash happened between calls.
	testkit.Eventually(t, 20*time.Second, "a restart after the crash", func() bool {
		pid := h.childPID()
		return h.r.now().state == stateUp && pid != 0 && pid != first
	})
	// One notice, saying what mcpflow did; no call to restart what runs.
	text := h.mustCall("echo", map[string]any{"text": "hi"})
	if strings.Count(text, "mcpflow:") != 1 || !strings.Contains(text, "crashed (exit status 4) between calls and mcpflow restarted it") || strings.Contains(text, "to restart it") {
		t.Fatalf("first result after the crash: want one notice that the server was restarted, got %q", text)
	}
	// The notice is given once.
	if text := h.mustCall("echo", map[string]any{"text": "again"}); strings.Contains(text, "crashed") {
		t.Fatalf("notice repeated: %q", text)
	}
}

func TestRestartCyclesDoNotLeak(t *testing.T) {
	testkit.UnixOnly(t, "counts open fds in /proc/self/fd")
	cycles := 500
	if testing.Short() {
		cycles = 50
	}
	w := newRawPeer(t, func(c *Config) { c.Child.StopTimeout = time.Second })
	w.handshake("legacy")
	// Warm up, so lazily started runtime goroutines are counted in the base.
	for range 5 {
		w.r.Restart(context.Background())
	}
	fdsBefore, gBefore := openFDs(t), runtime.NumGoroutine()
	var pids []int
	for range cycles {
		if _, err := w.r.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, w.r.Stats().Pid)
	}
	w.send(toolCall(1, "", "echo", `{"text":"still here"}`))
	if r := w.recvID(1); !strings.Contains(mustMarshal(r), "still here") {
		t.Fatalf("after %d restarts: %v", cycles, r)
	}
	// The old children's pipes and goroutines close as each one's exit is
	// reaped, after Restart returned: wait for that, bounded; a leak
	// keeps them over the bound until the wait runs out.
	var fdsAfter, gAfter int
	testkit.Wait(10*time.Second, func() bool {
		fdsAfter, gAfter = openFDs(t), runtime.NumGoroutine()
		return fdsAfter <= fdsBefore+3 && gAfter <= gBefore+5
	})
	t.Logf("%d restarts: fds %d -> %d, goroutines %d -> %d", cycles, fdsBefore, fdsAfter, gBefore, gAfter)
	if fdsAfter > fdsBefore+3 {
		t.Errorf("open fds grew from %d to %d over %d restarts", fdsBefore, fdsAfter, cycles)
	}
	if gAfter > gBefore+5 {
		t.Errorf("goroutines grew from %d to %d over %d restarts", gBefore, gAfter, cycles)
	}
	for _, pid := range pids[:len(pids)-1] {
		if testkit.GroupAlive(pid) {
			t.Errorf("process group %d still alive", pid)
		}
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func TestDuplicateIDWhileHeld(t *testing.T) {
	t.Parallel()
	w := newHeldWire(t, "1", nil)
	w.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	w.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	first := w.recv()
	if mustMarshal(first["id"]) != "5" || !strings.Contains(errMessage(first), "in flight") {
		t.Fatalf("second request with a held id: %v", first)
	}
	if second := w.recvID(5); second["result"] == nil {
		t.Fatalf("the held request: %v", second)
	}
	// Exactly one answer each: nothing else for id 5.
	for id, n := range w.collect(500*time.Millisecond, nil) {
		if id == "5" {
			t.Fatalf("id 5 answered %d more times", n)
		}
	}
}

func TestCancelWhileHeld(t *testing.T) {
	t.Parallel()
	w := newHeldWire(t, "1", nil)
	w.send(toolCall(7, "", "echo", `{"text":"canceled"}`))
	w.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`)
	w.send(toolCall(8, "", "echo", `{"text":"kept"}`))
	counts := w.collect(20*time.Second, func(c map[string]int) bool { return c["8"] > 0 })
	for id, n := range w.collect(500*time.Millisecond, nil) {
		counts[id] += n
	}
	// The canceled request was never sent, so it is never answered; the
	// one held after it is.
	if counts["7"] != 0 || counts["8"] != 1 {
		t.Fatalf("answers: %v", counts)
	}
}
