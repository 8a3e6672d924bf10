//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestE2ELegacyClientModernOnlyChild: under plain mcpflow watch, a legacy
// client (initialize, 2025-11-25) in front of a child that serves only
// 2026-07-28 and refuses initialize lists and calls the child's tools, and
// its rebuild tool restarts it; a modern client in front of the same child
// stays on the relay. No process is left after either.
func TestE2ELegacyClientModernOnlyChild(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// A build step (a copy of the fixture) and a watch, so that the
			// bridged engine's builder and watcher are the configured ones.
			// The fixture serves 2026-07-28 only and refuses initialize.
			cfg := fmt.Sprintf("[build]\ncommand = \"cp %s srv.tmp && mv srv.tmp srv\"\n\n[run]\ncommand = [\"./srv\", \"-name\", \"m\", \"-versions\", \"2026-07-28\", \"-refuse-initialize\"]\n\n[watch]\npaths = [\".\"]\ninclude = [\"*.src\"]\n\n[relay]\nstartup_grace = \"1m\"\n", fixtureBin)
			if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			h := startE2E(t, dir, era.Version, "watch")
			h.waitTools("echo")
			if got := h.mustCall("echo", map[string]any{"text": "x"}); got != "m:x" {
				t.Fatalf("echo: %q", got)
			}
			tools := h.tools()
			if !slices.Contains(tools, "recompile") || slices.Contains(tools, "list_servers") {
				t.Fatalf("tools: %v", tools)
			}
			out := h.mustCall("recompile", map[string]any{})
			if want := "Build succeeded"; !strings.Contains(out, want) {
				t.Errorf("recompile did not build (no %q): %s", want, out)
			}
			if got := h.mustCall("echo", map[string]any{"text": "y"}); got != "m:y" {
				t.Fatalf("echo after recompile (%s): %q", out, got)
			}
			bridged := strings.Contains(h.stderr.String(), "handed to the era bridge")
			if bridged != (era.Version != "") {
				t.Errorf("bridged = %v for the %s client\nstderr:\n%s", bridged, era.Name, h.stderr.String())
			}
			h.stopAndCheckGroups(nil) // and that nothing it started is left
		})
	}
}
