//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	dir := t.TempDir()
	for name, text := range map[string]string{
		"mcpflow.toml": selfWriteConfig,
		"server.sh":    fmt.Sprintf("echo started >> server.log\nexec %q\n", fixtureBin),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := startE2E(t, dir, "", "watch")
	if len(h.tools()) == 0 {
		t.Fatal("no tools")
	}
	if err := os.WriteFile(filepath.Join(dir, "edit.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	starts := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return strings.Count(string(b), "started")
	}
	// The observation window is bounded; a loop (a start, the debounce,
	// a start) restarts the server ten times in it.
	time.Sleep(3 * time.Second)
	if n := starts(); n > 3 {
		t.Errorf("the server was started %d times in 3 s, want at most 3\nlog:\n%s", n, readLog(dir))
	}
	log := readLog(dir)
	t.Logf("%d starts", starts())
	if n := strings.Count(log, "the server writes server.log"); n != 1 || !strings.Contains(log, "watch.exclude") {
		t.Errorf("the log does not name server.log and the fix:\n%s", log)
	}
}
