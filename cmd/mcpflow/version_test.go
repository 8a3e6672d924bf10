package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	t.Parallel()
	stamp := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		name     string
		bi       debug.BuildInfo
		fallback string
		want     string
	}{
		{"go install", debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "", "v0.4.0"},
		{"a clone", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: stamp(
			"vcs.revision", "2870e6d0123456789abcdef", "vcs.time", "2026-11-20T10:00:00Z", "vcs.modified", "false")},
			"", "devel+2870e6d01234 (2026-11-20)"},
		{"a clone with edits", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: stamp(
			"vcs.revision", "2870e6d0123456789abcdef", "vcs.modified", "true")},
			"", "devel+2870e6d01234-dirty"},
		{"no stamp, the Makefile's", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "2870e6d", "2870e6d"},
		{"nothing known", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "devel"},
	} {
		if got := versionOf(&c.bi, c.fallback); got != c.want {
			t.Errorf("%s: versionOf = %q, want %q", c.name, got, c.want)
		}
	}
}
