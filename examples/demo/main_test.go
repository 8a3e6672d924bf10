package main

import (
	"encoding/json"
	"slices"
	"testing"
)

// The demo reads the recompile tool's structuredContent as the Go SDK
// client hands it over (decoded into plain maps), in the documented shape.
func TestRecompileResultShape(t *testing.T) {
	var sc any
	if err := json.Unmarshal([]byte(`{"trigger":"recompile",
		"build":{"ok":false,"skipped":false,"duration_ms":217.9,"errors":"./main.go:35:32: cannot use"},
		"restart":null,
		"tools":{"added":["reverse"],"removed":[],"changed":["echo"],"current":["echo","reverse"]}}`), &sc); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(sc)
	var rr *recompileResult
	if err := json.Unmarshal(b, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Trigger != "recompile" || rr.Build.OK || rr.Build.DurationMS != 217.9 || rr.Build.Errors == "" || rr.Restart != nil ||
		!slices.Equal(rr.Tools.Added, []string{"reverse"}) || !slices.Equal(rr.Tools.Changed, []string{"echo"}) ||
		!slices.Equal(rr.Tools.Current, []string{"echo", "reverse"}) {
		t.Errorf("decoded %+v", rr)
	}
	if ms(rr.Build.DurationMS) != "218ms" {
		t.Errorf("ms(217.9) = %q", ms(rr.Build.DurationMS))
	}
}
