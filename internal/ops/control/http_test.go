package control

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The HTTP front's part of status: its URL and a line per session, in
// text and JSON.
func TestStatusShowsTheHTTPFront(t *testing.T) {
	now := time.Now()
	st := Status{Pid: 7, Mode: ModeSingle, HTTP: &HTTPStatus{URL: "http://127.0.0.1:8931/mcp", Sessions: []SessionStatus{
		{ID: "ABC", Client: ClientInfo{Name: "claude-code", Version: "2.1", Protocol: "2025-11-25", Era: "legacy"}, Started: now, LastSeen: now, Requests: 3, InFlight: 1},
		{Client: ClientInfo{Name: "inspector", Protocol: "2026-07-28", Era: "modern"}, Started: now, LastSeen: now, Requests: 1},
		{ID: "GONE", Client: ClientInfo{Name: "inspector-client"}, Started: now, LastSeen: now.Add(-5 * time.Minute), Requests: 4, IdleSince: now.Add(-5 * time.Minute)},
	}}}
	var b bytes.Buffer
	if err := WriteStatus(&b, []Status{st}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"http     http://127.0.0.1:8931/mcp  (3 client sessions)",
		"4 requests, last 5m0s ago, nothing open for 5m0s: its client may have exited",
		"ABC  claude-code 2.1, protocol 2025-11-25 (legacy)  3 requests",
		"1 in flight",
		"(session-less)  inspector, protocol 2026-07-28 (modern)  1 request,",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
	var j bytes.Buffer
	if err := WriteStatusJSON(&j, []Status{st}); err != nil {
		t.Fatal(err)
	}
	var back []Status
	if err := json.Unmarshal(j.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if h := back[0].HTTP; h == nil || h.URL != st.HTTP.URL || len(h.Sessions) != 3 || !h.Sessions[2].IdleSince.Equal(st.HTTP.Sessions[2].IdleSince) || h.Sessions[0].ID != "ABC" {
		t.Fatalf("JSON round trip: %s", j.String())
	}
}
