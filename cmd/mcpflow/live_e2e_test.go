//go:build unix

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// A config with a typo still talks to the agent: the handshake's
// instructions and the rebuild tool's answer name the file, the line and
// the fix, as check does; once the file is fixed the server starts in
// the same session and the client is told its tools changed. Then an
// edit of the valid file (another server) applies without reconnecting.
func TestBrokenConfigTalksAndIsFixedLive(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfgFile := filepath.Join(dir, "mcpflow.toml")
			good := "[run]\ncommand = [\"" + fixtureBin + "\"]\n[watch]\nenabled = false\n"
			if err := os.WriteFile(cfgFile, []byte(strings.Replace(good, "[run]", "[rnu]", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			h := startE2E(t, dir, era.Version, "watch")
			if era.Name == testkit.Legacy.Name {
				if in := h.cs.InitializeResult().Instructions; !strings.Contains(in, "mcpflow.toml:1") || !strings.Contains(in, `did you mean "run"`) {
					t.Errorf("the instructions do not name the line and the fix: %q", in)
				}
			}
			text, isErr := h.call("recompile", nil)
			if !isErr || !strings.Contains(text, "mcpflow.toml:1") || !strings.Contains(text, "rnu") {
				t.Errorf("recompile while the config is broken: isError=%v %q", isErr, text)
			}
			drain(h.listChanged)
			if err := os.WriteFile(cfgFile, []byte(good), 0o644); err != nil {
				t.Fatal(err)
			}
			h.waitListChanged()
			h.waitTools("echo")
			if got, _ := h.call("echo", map[string]any{"text": "hi"}); got != "hi" {
				t.Errorf("echo after the fix: %q", got)
			}

			// A valid edit: the server is now called "renamed", whose echo
			// answers renamed:TEXT.
			drain(h.listChanged)
			renamed := strings.Replace(good, `"]`, `", "-name", "renamed"]`, 1)
			if err := os.WriteFile(cfgFile, []byte(renamed), 0o644); err != nil {
				t.Fatal(err)
			}
			h.waitListChanged()
			testkit.Eventually(t, 30*time.Second, "the edited config to apply", func() bool {
				got, _ := h.call("echo", map[string]any{"text": "hi"})
				return got == "renamed:hi"
			})
			if !strings.Contains(h.stderr.String(), "the config changed") {
				t.Errorf("the log does not say the config changed:\n%s", h.stderr.String())
			}
			if !slices.Contains(h.tools(), "echo") {
				t.Errorf("tools after the edit: %v", h.tools())
			}

			// Broken while the client is connected: the next recompile
			// answer and the next tool result say where and how to fix it,
			// the tool result once; the previous settings serve on.
			if err := os.WriteFile(cfgFile, []byte(renamed+"[bulid]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			want := []string{"mcpflow.toml:5:1", `did you mean "build"`, "the previous settings still serve"}
			hasAll := func(text string) bool {
				return !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(text, w) })
			}
			testkit.Eventually(t, 30*time.Second, "recompile to name the broken config", func() bool {
				text, _ := h.call("recompile", nil)
				return hasAll(text)
			})
			if err := os.WriteFile(cfgFile, []byte(renamed+"\n\n[bulid]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			want[0] = "mcpflow.toml:7:1"
			testkit.Eventually(t, 30*time.Second, "the notice on the next tool result", func() bool {
				got, _ := h.call("echo", map[string]any{"text": "hi"})
				return strings.HasPrefix(got, "renamed:hi") && hasAll(got)
			})
			if got, _ := h.call("echo", map[string]any{"text": "hi"}); got != "renamed:hi" {
				t.Errorf("the notice is said twice: %q", got)
			}
			if err := os.WriteFile(cfgFile, []byte(renamed), 0o644); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 30*time.Second, "recompile to stop naming the fixed config", func() bool {
				text, isErr := h.call("recompile", nil)
				return !isErr && !strings.Contains(text, "mcpflow.toml")
			})
			if got, _ := h.call("echo", map[string]any{"text": "hi"}); got != "renamed:hi" {
				t.Errorf("echo after the fix: %q", got)
			}
		})
	}
}
