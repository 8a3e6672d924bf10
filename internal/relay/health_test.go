package relay

import (
	"encoding/json"
	"log/slog"
	"slices"
	"testing"

	"github.com/mcpflow/mcpflow/internal/report/texts"
)

func TestClientView(t *testing.T) {
	t.Parallel()
	v := newClientView()
	if !v.unknown() {
		t.Fatal("a new view knows its lists")
	}
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	// Learned lists: the first update of the same contents changes nothing.
	one := map[string]listView{"tools": viewOf([]json.RawMessage{json.RawMessage(`{"name":"a"}`)}), "prompts": viewOf(nil), "resources": viewOf(nil)}
	v.learn(one)
	if v.unknown() {
		t.Fatal("learned lists unknown")
	}
	if got := v.update(one, all); len(got) != 0 {
		t.Fatalf("same contents changed %v", got)
	}
	// Key order does not matter: contents are compared canonically.
	if got := v.update(map[string]listView{"tools": viewOf([]json.RawMessage{json.RawMessage(`{ "name" : "a" }`)})}, all); len(got) != 0 {
		t.Fatalf("same tools, other spacing, changed %v", got)
	}
	if got := v.update(emptyViews(), none); !slices.Equal(got, []string{"tools"}) {
		t.Fatalf("emptied: changed %v, want tools only (prompts and resources unchanged, and unheard of)", got)
	}
	v.forgetKind("prompts")
	if !v.unknown() {
		t.Fatal("forgetKind")
	}
	if got := v.update(emptyViews(), all); len(got) != 0 {
		t.Fatalf("an unknown list the client never got is announced: got %v", got)
	}
	v.hear("prompts/list")
	v.forgetKind("prompts")
	if got := v.update(emptyViews(), all); !slices.Equal(got, []string{"prompts"}) {
		t.Fatalf("an unknown list the client got is not announced: got %v", got)
	}
	v.forget()
	if !v.unknown() {
		t.Fatal("forget")
	}

	// Tools fetched in two pages complete on the last one.
	v.noteTools(true, []byte(`{"tools":[{"name":"a"}],"nextCursor":"c"}`))
	if v.toolsKnown {
		t.Fatal("the client's tools known before the last page")
	}
	v.noteTools(false, []byte(`{"tools":[{"name":"b"}]}`))
	if !v.toolsKnown || len(v.tools) != 2 || v.tools[1].Name != "b" || !v.served["tools"].known {
		t.Fatalf("after two pages: %+v", v.tools)
	}
	v.beginEmpty()
	if len(v.tools) != 0 || v.served["tools"] != viewOf(nil) {
		t.Fatal("beginEmpty")
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	h := health{crashes: crashPolicy{restart: true}}
	if h.describe() != texts.NotRunning {
		t.Fatal("describe without a report")
	}
	h.report = "third"
	if h.describe() != "third" {
		t.Fatal("describe with a report")
	}
	for range crashLoop {
		h.crashed(texts.Exit{}, "recompile", slog.New(slog.DiscardHandler))
	}
	if !h.crashes.stopped {
		t.Fatal("no crash loop")
	}
	h.lastBuildFailed = true
	h.restartedByBuild()
	if h.lastBuildFailed || h.crashes.stopped || h.crashes.quick != 0 {
		t.Fatalf("restartedByBuild: %+v", h)
	}
}
