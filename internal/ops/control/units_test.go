package control

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every --json output gives durations in whole milliseconds, in fields
// ending in _ms: status --json as rebuild --json (the recompile tool's
// structuredContent).
func TestJSONDurationsAreMilliseconds(t *testing.T) {
	b := result.Build{Seq: 2, Trigger: "watch", OK: true, Duration: 1214 * time.Millisecond,
		Restart: &result.Restart{Gen: 3, Pid: 9, Duration: 38 * time.Millisecond}}
	st := Status{Pid: 1, Mode: ModeSingle, Uptime: Millis(3*time.Minute + 4*time.Second), Servers: []ServerStatus{{
		Name: "x", State: "running", Uptime: Millis(1500 * time.Millisecond), Tools: 2,
		Build: BuildStatusOf(b, time.Time{}),
	}}}
	var status, rebuild bytes.Buffer
	if err := WriteStatusJSON(&status, []Status{st}); err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(&rebuild).Encode(BuildToJSON(b)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		out  []byte
		want map[string]float64
	}{
		{"status --json", status.Bytes(), map[string]float64{"uptime_ms": 184000, "servers.uptime_ms": 1500, "servers.last_build.duration_ms": 1214}},
		{"rebuild --json", rebuild.Bytes(), map[string]float64{"build.duration_ms": 1214, "restart.duration_ms": 38}},
	} {
		var v any
		if err := json.Unmarshal(c.out, &v); err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		walkDurations(t, c.name, "", v, got)
		for k, want := range c.want {
			if got[k] != want {
				t.Errorf("%s: %s = %v, want %v\n%s", c.name, k, got[k], want, c.out)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: duration fields %v, want %v", c.name, got, c.want)
		}
	}

	// Read back, as mcpflow status reads an instance's answer.
	var back []Status
	if err := json.Unmarshal(status.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back[0].Uptime != st.Uptime || back[0].Servers[0].Uptime != Millis(1500*time.Millisecond) || back[0].Servers[0].Build.Duration != Millis(1214*time.Millisecond) {
		t.Errorf("read back: %+v", back[0])
	}
}

// walkDurations collects the numeric fields of v whose names end in _ms,
// by dotted path (array elements share their array's path), and fails on
// any field in another unit.
func walkDurations(t *testing.T, name, at string, v any, got map[string]float64) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if at != "" {
				p = at + "." + k
			}
			if strings.HasSuffix(k, "_ns") || strings.HasSuffix(k, "_us") || strings.HasSuffix(k, "_s") || k == "duration" || k == "uptime" {
				t.Errorf("%s: %s is a duration in another unit than milliseconds", name, p)
			}
			if n, ok := x.(float64); ok && strings.HasSuffix(k, "_ms") {
				got[p] = n
			}
			walkDurations(t, name, p, x, got)
		}
	case []any:
		for _, x := range v {
			walkDurations(t, name, at, x, got)
		}
	}
}

// A status that is not one is an error, not a zero Status.
func TestStatusJSONErrors(t *testing.T) {
	var bad Status
	if err := json.Unmarshal([]byte(`{"pid":"x"}`), &bad); err == nil {
		t.Errorf("a bad pid read without error")
	}
	if err := json.Unmarshal([]byte(`{"uptime_ms":"x"}`), &bad); err == nil {
		t.Errorf("a bad uptime read without error")
	}
}

func TestWriteTools(t *testing.T) {
	var b strings.Builder
	WriteTools(&b, []*mcp.Tool{
		{Name: "a", Description: "does a", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"x": map[string]any{"type": []any{"string", "null"}, "description": "an x"},
			"n": map[string]any{"type": "integer"},
		}, "required": []any{"x"}}},
		{Name: "b", InputSchema: map[string]any{"type": "object"}},
	})
	want := "a\n  does a\n  arguments:\n    x (string|null, required)  an x\n    n (integer)\n\nb\n  arguments: none\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
