//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The record tests run the real binary on a project whose build waits
// for the file "gate" (at most a minute), then writes bin/server and
// "built": while gate is absent no server can run, so whatever answers
// the client is mcpflow alone or the record of the last start.

const gatedBuildScript = `rm -f built
i=0
while [ ! -e gate ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
mkdir -p bin
printf '#!/bin/sh\nexec %q -name srv\n' > bin/server
chmod +x bin/server
touch built
`

const gatedConfig = `[build]
command = "sh build.sh"
[run]
command = ["./bin/server"]
stop_timeout = "1s"
[relay]
startup_grace = "300ms"
[watch]
exclude = ["gate", "built", "bin/**"]
debounce = "50ms"
[log]
file = ".mcpflow/mcpflow.log"
`

// gatedProject writes a cold project (no .mcpflow), its gate open or not.
func gatedProject(t *testing.T, open bool) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"mcpflow.toml": gatedConfig, "build.sh": fmt.Sprintf(gatedBuildScript, fixtureBin)}
	if open {
		files["gate"] = ""
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func setGate(t *testing.T, dir string, open bool) {
	t.Helper()
	gate := filepath.Join(dir, "gate")
	if open {
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	os.Remove(gate)
	os.Remove(filepath.Join(dir, "built"))
	os.RemoveAll(filepath.Join(dir, "bin")) // no build cache hit: the build runs, held
}

func recordPath(dir string) string { return filepath.Join(dir, ".mcpflow", "last-start.json") }

// recordKeys are the top-level fields of the record (jq keys).
func recordKeys(t *testing.T, dir string) []string {
	t.Helper()
	var rec map[string]json.RawMessage
	b, err := os.ReadFile(recordPath(dir))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("no record: %v\n%s", err, b)
	}
	var keys []string
	for k := range rec {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// goodStart runs one start of dir with its gate open, until the server's
// tools are listed, and stops it: the record is written.
func goodStart(t *testing.T, dir, version string) {
	t.Helper()
	setGate(t, dir, true)
	h := startE2E(t, dir, version, "watch")
	h.waitTools("echo")
	stopE2E(t, h)
}

// TestRecordOfASlowFirstStart: a first build longer than the client's
// wait (mcpflow answered alone, then the server came up) still records
// the server's handshake with its lists, so the next start, whose build
// is held, answers at once as the server with its tools.
func TestRecordOfASlowFirstStart(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		dir := gatedProject(t, false)
		h := startE2E(t, dir, era.Version, "watch")
		if name := h.cs.InitializeResult().ServerInfo.Name; name == "srv" || built(dir) {
			t.Fatalf("the first start was answered by the server (%q) before its build", name)
		}
		setGate(t, dir, true)
		h.waitListChanged()
		h.waitTools("echo")
		stopE2E(t, h)
		if keys := recordKeys(t, dir); !slices.Contains(keys, "initialize") && !slices.Contains(keys, "discover") || !slices.Contains(keys, "lists") {
			t.Fatalf("the record of a slow first start: keys %q, want the handshake and the lists", keys)
		}

		setGate(t, dir, false)
		h = startE2E(t, dir, era.Version, "watch")
		tools := h.tools()
		if name := h.cs.InitializeResult().ServerInfo.Name; name != "srv" || !slices.Contains(tools, "echo") {
			t.Fatalf("the second start: serverInfo %q, tools %q, want the server's from the record", name, tools)
		}
		if built(dir) || h.serverPIDs() != nil {
			t.Fatal("the build ended before the answers: they need not be the record's")
		}
		setGate(t, dir, true)
		if text, _ := h.call("echo", map[string]any{"text": "x"}); text != "srv:x" {
			t.Fatalf("echo once the build ended: %q", text)
		}
		stopE2E(t, h)
	})
}

// TestCorruptRecord: a record that is not one in every part is ignored
// with a warning in the log: mcpflow neither dies nor sends an invalid
// answer (the client would fail on it), and answers alone while the
// build is held.
func TestCorruptRecord(t *testing.T) {
	t.Parallel()
	dir := gatedProject(t, true)
	goodStart(t, dir, "")
	var good map[string]json.RawMessage
	b, _ := os.ReadFile(recordPath(dir))
	if err := json.Unmarshal(b, &good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`1`, `{}`, `null`, `"x"`, `true`} {
		t.Run(bad, func(t *testing.T) {
			rec := map[string]json.RawMessage{"key": good["key"], "initialize": good["initialize"], "lists": json.RawMessage(`{"tools":` + bad + `}`)}
			b, _ := json.Marshal(rec)
			if err := os.WriteFile(recordPath(dir), b, 0o600); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, ".mcpflow", "mcpflow.log"))
			setGate(t, dir, false)
			h := startE2E(t, dir, "", "watch")
			tools := h.tools() // an invalid answer fails here
			if slices.Contains(tools, "echo") {
				t.Fatalf("tools from a corrupt record: %q", tools)
			}
			if h.cs.InitializeResult().ServerInfo.Name == "srv" {
				t.Fatal("the handshake was answered from a corrupt record")
			}
			stopE2E(t, h)
			if err := <-h.exited; err != nil {
				t.Fatalf("mcpflow: %v\n%s", err, h.stderr)
			}
			h.exited <- nil
			log, _ := os.ReadFile(filepath.Join(dir, ".mcpflow", "mcpflow.log"))
			if n := strings.Count(string(log), "the record of the server's last start is not used"); n != 1 {
				t.Fatalf("%d warnings about the record, want 1:\n%s", n, log)
			}
		})
	}
}

// TestStateFolderLinks: a symbolic link at last-start.json.tmp or at
// mcpflow.log is never followed: the file it points at stays as it was,
// the record is still written and mcpflow runs on.
func TestStateFolderLinks(t *testing.T) {
	t.Parallel()
	dir := gatedProject(t, true)
	state := filepath.Join(dir, ".mcpflow")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"last-start.json.tmp", "mcpflow.log"} {
		if err := os.Symlink(outside, filepath.Join(state, name)); err != nil {
			t.Fatal(err)
		}
	}
	goodStart(t, dir, "")
	if b, _ := os.ReadFile(outside); string(b) != "untouched" {
		t.Fatalf("the file a link in .mcpflow points at was written: %q", b)
	}
	if keys := recordKeys(t, dir); !slices.Contains(keys, "lists") {
		t.Fatalf("no record: %q", keys)
	}
}

// TestStateFolderFIFO: a FIFO at last-start.json or at mcpflow.log never
// blocks mcpflow: it answers initialize, and SIGTERM stops it.
func TestStateFolderFIFO(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"last-start.json", "mcpflow.log"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := gatedProject(t, true)
			if err := os.Mkdir(filepath.Join(dir, ".mcpflow"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(dir, ".mcpflow", name), 0o600); err != nil {
				t.Fatal(err)
			}
			h := startE2E(t, dir, "", "watch")
			h.waitTools("echo")
			stopE2E(t, h)
			if !strings.Contains(h.stderr.String(), "not a regular file") {
				t.Fatalf("no word of the FIFO:\n%s", h.stderr)
			}
		})
	}
}

// TestStateFolderRefused: a .mcpflow writable by others, or of another
// user, is refused with what to do, before anything runs.
func TestStateFolderRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  func(t *testing.T, state string)
		want []string
	}{
		{"mode 0777", func(t *testing.T, state string) {
			if err := os.Chmod(state, 0o777); err != nil {
				t.Fatal(err)
			}
		}, []string{"writable by group or others", "chmod 700"}},
		{"another owner", func(t *testing.T, state string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			if err := os.Chown(state, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{"owned by uid 65534", "chown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := gatedProject(t, true)
			state := filepath.Join(dir, ".mcpflow")
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.set(t, state)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, mcpflowBin, "watch")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("mcpflow ran with %s:\n%s", tc.name, out)
			}
			for _, w := range append(tc.want, state) {
				if !strings.Contains(string(out), w) {
					t.Errorf("the refusal does not say %q:\n%s", w, out)
				}
			}
			if built(dir) {
				t.Error("the build ran")
			}
		})
	}
}

// TestMuxRecord: each configured server of a mux keeps the record of its
// last good start, so the next start lists its tools at once, while its
// build is held, and a call of one waits for the server instead of
// failing.
func TestMuxRecord(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		dir := gatedProject(t, true)
		mux := strings.NewReplacer("[build]", "[servers.g.build]", "[run]", "[servers.g.run]", "[relay]", "[servers.g.relay]", "[watch]", "[servers.g.watch]").Replace(gatedConfig)
		if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(mux), 0o644); err != nil {
			t.Fatal(err)
		}
		h := startE2E(t, dir, era.Version, "watch")
		h.waitTools("g__echo")
		stopE2E(t, h)
		if _, err := os.Stat(filepath.Join(dir, ".mcpflow", "servers", "g", "last-start.json")); err != nil {
			t.Fatalf("no record of server g: %v", err)
		}

		setGate(t, dir, false)
		h = startE2E(t, dir, era.Version, "watch")
		if tools := h.tools(); !slices.Contains(tools, "g__echo") {
			t.Fatalf("the second start lists %q, want g's tools from its record", tools)
		}
		if built(dir) {
			t.Fatal("the build ended before the list: it need not be the record's")
		}
		answer := make(chan string, 1)
		go func() {
			text, _ := h.call("g__echo", map[string]any{"text": "x"})
			answer <- text
		}()
		setGate(t, dir, true)
		if text := <-answer; text != "srv:x" {
			t.Fatalf("g__echo called while g started: %q", text)
		}
		stopE2E(t, h)
	})
}
