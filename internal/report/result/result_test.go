package result

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestDur(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{650*time.Millisecond + 900*time.Microsecond, "651ms"},
		{1214 * time.Millisecond, "1.21s"},
		{38*time.Millisecond + 400*time.Microsecond, "38ms"},
		{4*time.Millisecond + 830*time.Microsecond, "4.8ms"},
		{650 * time.Microsecond, "650µs"},
		{12345 * time.Millisecond, "12.3s"},
		{0, "0s"},
	} {
		if got := Dur(c.d); got != c.want {
			t.Errorf("Dur(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestToolDiffEmpty(t *testing.T) {
	if !(ToolDiff{Current: []string{"a"}}).Empty() {
		t.Error("a diff with only Current should be empty")
	}
	if (ToolDiff{Changed: []string{"a"}}).Empty() {
		t.Error("a changed tool is not an empty diff")
	}
}

func TestToolDiffString(t *testing.T) {
	d := ToolDiff{
		Known:   true,
		Added:   []string{"b"},
		Changed: []string{"a", "c"},
		Removed: []string{"z"},
		Current: []string{"a", "b", "c"},
		Details: map[string]ToolDetail{"a": {SchemaChanged: true}, "c": {}},
	}
	if got, want := d.String(), "~a (input schema changed) +b ~c (description changed) -z"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (ToolDiff{Known: true, Current: []string{"a"}}).String(); got != "unchanged" {
		t.Errorf("unchanged diff: %q", got)
	}
	if got := (ToolDiff{Added: []string{"a"}}).String(); got != "" {
		t.Errorf("unknown baseline: %q", got)
	}
}

func TestStructuredKeys(t *testing.T) {
	b := Build{Trigger: "recompile", OK: true, Duration: 1500 * time.Millisecond,
		Restart: &Restart{Duration: 40 * time.Millisecond, Tools: ToolDiff{Known: true, Added: []string{"x"}, Current: []string{"x"}}}}
	raw, err := json.Marshal(b.Structured())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]any
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if top["trigger"] != "recompile" {
		t.Errorf("trigger: %s", raw)
	}
	delete(top, "trigger")
	rest, _ := json.Marshal(top)
	if err := json.Unmarshal(rest, &m); err != nil {
		t.Fatal(err)
	}
	for part, keys := range map[string][]string{
		"build":   {"ok", "skipped", "cached", "duration_ms", "errors"},
		"restart": {"ok", "duration_ms", "error"},
		"tools":   {"added", "removed", "changed", "current"},
	} {
		for _, k := range keys {
			if _, ok := m[part][k]; !ok {
				t.Errorf("%s.%s missing: %s", part, k, raw)
			}
		}
	}
	if m["build"]["duration_ms"] != float64(1500) || m["restart"]["ok"] != true {
		t.Errorf("values: %s", raw)
	}
	if r, ok := m["tools"]["removed"].([]any); !ok || len(r) != 0 {
		t.Errorf("removed must be [] not null: %s", raw)
	}
	failed := Build{Trigger: "watch", Err: errors.New("exit status 2"), Errors: "x.go:1: bad"}
	s := failed.Structured()
	if s.Build.OK || s.Build.Error != "exit status 2" || s.Restart.Attempted || s.Tools.Added == nil {
		t.Errorf("failed build: %+v", s)
	}
}
