//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// muxFixture builds the mux package's fixture: a Go SDK server whose
// FIXTURE_VERSIONS restricts the protocol versions it serves.
func muxFixture(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fixture")
	if out, err := exec.Command("go", "build", "-o", bin, "../../mux/testdata/fixture").CombinedOutput(); err != nil {
		t.Fatalf("building the fixture: %v\n%s", err, out)
	}
	return bin
}

// TestE2ELegacyClientModernOnlyChild: under plain mcpflow watch, a legacy
// client (initialize, 2025-11-25) in front of a child that serves only
// 2026-07-28 and refuses initialize lists and calls the child's tools, and
// its rebuild tool restarts it; a modern client in front of the same child
// stays on the relay. No process is left after either.
func TestE2ELegacyClientModernOnlyChild(t *testing.T) {
	fx := muxFixture(t)
	t.Setenv("FIXTURE_VERSIONS", "2026-07-28")
	t.Setenv("FIXTURE_REFUSE_INITIALIZE", "1")
	t.Setenv("FIXTURE_NAME", "m")
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			dir := t.TempDir()
			// A build step (a copy of the fixture) and a watch, so that the
			// bridged engine's builder and watcher are the configured ones.
			cfg := fmt.Sprintf("[build]\ncommand = \"cp %s srv.tmp && mv srv.tmp srv\"\n\n[run]\ncommand = [\"./srv\"]\n\n[watch]\npaths = [\".\"]\ninclude = [\"*.src\"]\n\n[relay]\nstartup_grace = \"1m\"\n", fx)
			if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			h := startE2E(t, dir, era.version, "watch")
			h.waitTools("echo")
			if got := h.mustCall("echo", map[string]any{"text": "x"}); got != "m:x" {
				t.Fatalf("echo: %q", got)
			}
			tools := h.tools()
			if !slices.Contains(tools, "recompile") || slices.Contains(tools, "list_servers") {
				t.Fatalf("tools: %v", tools)
			}
			out := h.mustCall("recompile", map[string]any{})
			if want := map[bool]string{true: "built in", false: "Build succeeded"}[era.version != ""]; !strings.Contains(out, want) {
				t.Errorf("recompile did not build (no %q): %s", want, out)
			}
			if got := h.mustCall("echo", map[string]any{"text": "y"}); got != "m:y" {
				t.Fatalf("echo after recompile (%s): %q", out, got)
			}
			bridged := strings.Contains(h.stderr.String(), "serving it through the mux engine")
			if bridged != (era.version != "") {
				t.Errorf("bridged = %v for the %s client\nstderr:\n%s", bridged, era.name, h.stderr.String())
			}
			h.stopAndCheckGroups(nil)
			assertNoProcess(t, fx)
		})
	}
}

// assertNoProcess fails if a process runs the program path.
func assertNoProcess(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-f", path).Output()
		if len(strings.TrimSpace(string(out))) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a process of %s survived mcpflow: %s", path, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
