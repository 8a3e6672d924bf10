//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// selfWriteConfig runs a server that appends a start marker to
// server.log, in the watched folder, each time it starts.
const selfWriteConfig = `[run]
command = ["sh", "server.sh"]
stop_timeout = "1s"
[watch]
include = ["**/*"]
debounce = "50ms"
[log]
file = "mcpflow.log"
`

// A server that appends to a file in its watched tree at each start is
// started at most 3 times in 10 s, and the log names the file and the
// fix once. Its first start may come before the watch does (the child of
// the client's session starts as soon as the session opens): an edit
// then starts it again, under the watch.
func TestServerAppendingToItsTreeIsNotRestartedInALoop(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ config, script string }{
		"include, before its handshake": {selfWriteConfig, "echo started >> server.log\nexec %q\n"},
		"paths, before its handshake":   {selfWritePaths, "echo started >> server.log\nexec %q\n"},
		"paths, after its handshake":    {selfWritePaths, "(sleep 0.2; echo started >> server.log) &\nexec %q\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testSelfWriter(t, c.config, fmt.Sprintf(c.script, fixtureBin))
		})
	}
}

// selfWritePaths is selfWriteConfig as issue 39 wrote it: the project
// folder watched, the default debounce.
const selfWritePaths = `[run]
command = ["sh", "server.sh"]
stop_timeout = "1s"
[watch]
paths = ["."]
[log]
file = "mcpflow.log"
`

func testSelfWriter(t *testing.T, config, script string) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"mcpflow.toml": config,
		"server.sh":    script,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := startE2E(t, dir, "", "watch")
	if len(h.tools()) == 0 {
		t.Fatal("no tools")
	}
	// The test's own edit comes once the loop is found, so that it does
	// not fall in a start and get named beside server.log (or for it).
	warned := regexp.MustCompile(`writes (\S+, )*server\.log(, \S+)* in its watched folder`)
	testkit.Eventually(t, 10*time.Second, "the warning naming server.log", func() bool { return warned.MatchString(readLog(dir)) })
	if err := os.WriteFile(filepath.Join(dir, "edit.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	starts := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return strings.Count(string(b), "started")
	}
	// The observation window is bounded; a loop (a start, the debounce,
	// a start) restarts the server ten times in it.
	time.Sleep(10 * time.Second)
	log := readLog(dir)
	most := 3
	if strings.Contains(log, "changed edit.txt →") {
		most++ // the test's edit had a restart of its own
	}
	if n := starts(); n > most {
		t.Errorf("the server was started %d times in 10 s, want at most %d\nlog:\n%s", n, most, log)
	}
	t.Logf("%d starts\n%s", starts(), log)
	if n := len(warned.FindAllString(log, -1)); n != 1 || !strings.Contains(log, "watch.exclude") {
		t.Errorf("the log does not name server.log and the fix:\n%s", log)
	}
}
