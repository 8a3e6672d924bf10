package relay

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestClientWait(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]time.Duration{"claude-code": 25 * time.Second, "codex-mcp-client": 8 * time.Second, "gemini-cli-mcp-client": 4 * time.Second, "": 4 * time.Second} {
		if got := ClientWait(name); got != want {
			t.Errorf("ClientWait(%q) = %s, want %s", name, got, want)
		}
	}
}

// With the record of the server's last good start, a client that connects
// while the next build runs is answered at once, in its era, with the
// server's name and tools; a call it makes at once waits for the server
// and is served by it; list_changed then tells it what changed.
func TestRecordAnswersWhileTheBuildRuns(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		version := era.Version
		file := filepath.Join(t.TempDir(), "last-start.json")
		first := func(c *Config) { c.First = First{Record: file, Key: "k1"} }
		// The first start: the client's answers are recorded.
		h := newHarness(t, hopts{version: version, cfg: first})
		h.mustCall("echo", map[string]any{"text": "x"})
		if _, err := h.cs.ListTools(h.ctx(), nil); err != nil {
			t.Fatal(err)
		}
		h.cs.Close()
		<-h.served
		if _, err := os.Stat(file); err != nil {
			t.Fatalf("no record after a good start: %v", err)
		}

		// The next start: the build runs (no Restart yet, so no server
		// can have answered: every answer until the Restart below is the
		// record's).
		h = newHarness(t, hopts{version: version, cfg: first, noStart: true})
		if got := h.cs.InitializeResult().ServerInfo.Name; got != "fixture" {
			t.Errorf("answered as %q, want the server's name", got)
		}
		tools, err := h.cs.ListTools(h.ctx(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if pid := h.childPID(); pid != 0 {
			t.Fatalf("a server (pid %d) runs before the Restart", pid)
		}
		names := []string{}
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Contains(names, "echo") || !slices.Contains(names, "recompile") || slices.Contains(names, "reverse") {
			t.Errorf("tools from the record: %q", names)
		}
		// A call made now waits for the server, which starts as v2 (a
		// changed source): the call is served by it, then list_changed.
		h.setVariant("v2")
		done := make(chan string, 1)
		go func() { done <- h.mustCall("reverse", map[string]any{"text": "ab"}) }()
		time.Sleep(300 * time.Millisecond)
		if _, err := h.r.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-done:
			if got != "ba" {
				t.Errorf("the held call: %q", got)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the held call got no answer")
		}
		select {
		case <-h.listChanged:
		case <-time.After(10 * time.Second):
			t.Fatal("no list_changed after the server came up with other tools")
		}
		// A record written for another config is never used.
		h = newHarness(t, hopts{version: version, cfg: func(c *Config) { c.First = First{Record: file, Key: "k2", Grace: 200 * time.Millisecond} }, noStart: true})
		if got := h.cs.InitializeResult().ServerInfo.Name; got == "fixture" {
			t.Errorf("a record of another config answered the handshake")
		}
	})
}

// A record written for other sources (an edit made while nothing ran)
// does not answer at once: the client waits for the build within its
// wait; past it, the record answers, and list_changed follows the start.
// The start writes the record anew, for the sources it started from,
// and the next start with those sources is answered at once.
func TestStaleRecordAnswersOnlyWhenTheBuildIsLate(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "last-start.json")
	var sources atomic.Value
	sources.Store("s1")
	first := func(grace time.Duration) func(c *Config) {
		return func(c *Config) {
			c.First = First{Record: file, Key: "k", Grace: grace, Sources: func() string { return sources.Load().(string) }}
		}
	}
	h := newHarness(t, hopts{version: testkit.Legacy.Version, cfg: first(time.Hour)})
	if _, err := h.cs.ListTools(h.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	h.cs.Close()
	<-h.served

	sources.Store("s2")
	h = newHarness(t, hopts{version: testkit.Legacy.Version, cfg: first(500 * time.Millisecond), noStart: true})
	if got := h.cs.InitializeResult().ServerInfo.Name; got != "fixture" {
		t.Fatalf("the late build: answered as %q, want the record's server", got)
	}
	if names := h.toolNames(); !slices.Contains(names, "echo") || slices.Contains(names, "reverse") {
		t.Fatalf("the late build: tools %q, want the record's", names)
	}
	if !strings.Contains(h.logs.String(), "of other sources") {
		t.Fatalf("answered before the client's wait passed:\n%s", h.logs.String())
	}
	h.setVariant("v2")
	if _, err := h.r.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.waitListChanged()
	if names := h.toolNames(); !slices.Contains(names, "reverse") {
		t.Fatalf("after the start: tools %q, want the server's", names)
	}
	h.cs.Close()
	<-h.served

	// The sources of the last start: answered at once (the grace is an hour).
	h = newHarness(t, hopts{version: testkit.Legacy.Version, cfg: first(time.Hour), noStart: true})
	if names := h.toolNames(); !slices.Contains(names, "reverse") {
		t.Fatalf("the record of the last start: tools %q", names)
	}
}

// mcpflow tools and call (wire.OneShotClient) wait for the first build
// as long as First.OneShot says, not the client's usual wait, and a
// record of other sources never answers them: past it, the list says why
// (wire.DownMeta): the build still running, and for how long.
func TestOneShotIsToldTheBuildStillRuns(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "last-start.json")
	var sources atomic.Value
	sources.Store("s1")
	first := func(c *Config) {
		c.First = First{Record: file, Key: "k", Grace: 50 * time.Millisecond, OneShot: 600 * time.Millisecond, Sources: func() string { return sources.Load().(string) }}
	}
	h := newHarness(t, hopts{version: testkit.Legacy.Version, cfg: first})
	if _, err := h.cs.ListTools(h.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	h.cs.Close()
	<-h.served

	sources.Store("s2")
	h = newHarness(t, hopts{version: testkit.Legacy.Version, cfg: first, noStart: true, client: wire.OneShotClient})
	res, err := h.cs.ListTools(h.ctx(), nil)
	if err != nil {
		t.Fatal(err)
	}
	down, _ := res.Meta[wire.DownMeta].(string)
	if !strings.Contains(down, "still running after 600ms") || len(res.Tools) != 1 {
		t.Fatalf("the one-shot's list: %d tools, %s = %q", len(res.Tools), wire.DownMeta, down)
	}
}

// A record written in a modern session answers a legacy client's
// initialize too (the server's name, the version asked), as long as the
// server said it speaks that era; one of a server of 2026-07-28 only does
// not answer it (the client waits for the server, and the era bridge).
func TestRecordOfTheOtherEra(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		answered bool
	}{
		{"both eras", nil, true},
		{"modern only", []string{"-versions", "2026-07-28"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "last-start.json")
			first := func(c *Config) { c.First = First{Record: file, Key: "k", Grace: 500 * time.Millisecond} }
			h := newHarness(t, hopts{version: testkit.Modern.Version, args: tc.args, cfg: first})
			if _, err := h.cs.ListTools(h.ctx(), nil); err != nil {
				t.Fatal(err)
			}
			h.cs.Close()
			<-h.served

			h = newHarness(t, hopts{version: testkit.Legacy.Version, args: tc.args, cfg: first, noStart: true})
			init := h.cs.InitializeResult()
			fromRecord := init.ServerInfo.Name == "fixture"
			if fromRecord != tc.answered {
				t.Fatalf("initialize answered from the record: %v, want %v (serverInfo %+v)", fromRecord, tc.answered, init.ServerInfo)
			}
			if fromRecord && init.ProtocolVersion != testkit.Legacy.Protocol {
				t.Fatalf("answered with protocol %s, want the one asked, %s", init.ProtocolVersion, testkit.Legacy.Protocol)
			}
		})
	}
}

// A first start longer than the client's wait (the relay answered the
// handshake alone, then the server came up) still leaves a whole record:
// the server's handshake and its lists, so the next start is answered
// from it at once.
func TestRecordOfASlowFirstStart(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "last-start.json")
		first := func(c *Config) { c.First = First{Record: file, Key: "k", Grace: 100 * time.Millisecond} }
		h := newHarness(t, hopts{version: era.Version, cfg: first, noStart: true})
		if got := h.cs.InitializeResult().ServerInfo.Name; got == "fixture" {
			t.Fatalf("the first start was answered as the server before it ran")
		}
		if names := h.toolNames(); slices.Contains(names, "echo") {
			t.Fatalf("tools before the server ran: %q", names)
		}
		if _, err := h.r.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.waitListChanged()
		h.cs.Close()
		<-h.served
		rec := loadRecord(file, "k", "", slog.New(slog.DiscardHandler))
		if rec == nil || rec.Initialize == nil && rec.Discover == nil || rec.Lists["tools"] == nil {
			b, _ := os.ReadFile(file)
			t.Fatalf("the record of a slow first start lacks the handshake or the tools:\n%s", b)
		}

		h = newHarness(t, hopts{version: era.Version, cfg: first, noStart: true})
		if got := h.cs.InitializeResult().ServerInfo.Name; got != "fixture" {
			t.Errorf("the second start answered as %q, want the server's name from the record", got)
		}
		if names := h.toolNames(); !slices.Contains(names, "echo") {
			t.Errorf("the second start's first tools/list: %q, want the server's tools from the record", names)
		}
		if pid := h.childPID(); pid != 0 {
			t.Fatalf("a server (pid %d) runs before the Restart", pid)
		}
	})
}

// A record that is not one in every part is left unused with a warning:
// never a panic, never an invalid answer.
func TestCorruptRecord(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`{"key":"k","lists":{"tools":1}}`,
		`{"key":"k","lists":{"tools":{}}}`,
		`{"key":"k","lists":{"tools":null}}`,
		`{"key":"k","lists":{"tools":"x"}}`,
		`{"key":"k","lists":{"tools":true}}`,
		`{"key":"k","lists":{"tools":[1]}}`,
		`{"key":"k","lists":{"other":[]}}`,
		`{"key":"k","initialize":"x"}`,
		`{"key":"k","initialize":{}}`,
		`{"key":"k","initialize":null,"discover":true}`,
		`{"key":"k","discover":{"capabilities":{},"_meta":{"io.modelcontextprotocol/serverInfo":1}}}`,
		`{}`, `null`, `"x"`, `true`, `1`, `[`,
	} {
		file := filepath.Join(t.TempDir(), "last-start.json")
		if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		logs := &testkit.Buffer{}
		if rec := loadRecord(file, "k", "", slog.New(slog.NewTextHandler(logs, nil))); rec != nil {
			t.Errorf("%s: used", bad)
		}
		if strings.Count(logs.String(), "level=WARN") != 1 {
			t.Errorf("%s: want one warning, got:\n%s", bad, logs)
		}
	}
}

// A record's answer to a legacy client holds none of 2026-07-28's fields.
func TestRecordAnswersInTheClientsEra(t *testing.T) {
	t.Parallel()
	rec := &record{Key: "k", Initialize: []byte(`{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"},"resultType":"complete","ttlMs":5,"cacheScope":"public"}`)}
	if err := rec.valid(); err != nil {
		t.Fatal(err)
	}
	res, ok := rec.answer(wire.Envelope{Method: "initialize", Params: []byte(`{"protocolVersion":"2025-06-18"}`)}, nil)
	if !ok {
		t.Fatal("no answer")
	}
	for _, k := range modernOnly {
		if jsonscan.Member(res, k) != nil {
			t.Errorf("a legacy initialize answer has %s: %s", k, res)
		}
	}
}
