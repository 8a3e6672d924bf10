package main

import "testing"

// TestVersions: what `mcpflow version` prints, as npm (semver) and PyPI
// (PEP 440) spell it.
func TestVersions(t *testing.T) {
	for _, c := range []struct{ v, npm, py string }{
		{"v1.2.3", "1.2.3", "1.2.3"},
		{"v1.2.3-dirty", "1.2.3-dirty", "1.2.3+dirty"},
		{"v0.4.0-rc.1", "0.4.0-rc.1", "0.4.0rc1"},
		{"v2.0.0-beta2", "2.0.0-beta2", "2.0.0b2"},
		{"v2.0.0-alpha.10", "2.0.0-alpha.10", "2.0.0a10"},
		{"59203df", "0.0.0-dev.59203df", "0.0.0.dev0+59203df"},
		{"59203df-dirty", "0.0.0-dev.59203df.dirty", "0.0.0.dev0+59203df.dirty"},
		{"0123456", "0.0.0-dev.x0123456", "0.0.0.dev0+x0123456"},
		{"v0.1.0-3-g59203df", "0.1.0-3-g59203df", "0.1.0+3.g59203df"},
		{"release-7_B", "0.0.0-dev.release.7.B", "0.0.0.dev0+release.7.b"},
	} {
		if got := npmVersion(c.v); got != c.npm {
			t.Errorf("npmVersion(%q) = %q, want %q", c.v, got, c.npm)
		}
		if got := pyVersion(c.v); got != c.py {
			t.Errorf("pyVersion(%q) = %q, want %q", c.v, got, c.py)
		}
	}
}
