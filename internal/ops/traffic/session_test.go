package traffic

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSessionHookNamesTheSession(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hook := w.SessionHook("")
	hook("client", "ABC123", true, 0, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	hook("client", "", false, 0, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines: %q", lines)
	}
	if !strings.Contains(lines[0], `"hop":"client","dir":"c2s","gen":0,"session":"ABC123","msg":{`) {
		t.Errorf("the first line names no session: %s", lines[0])
	}
	if strings.Contains(lines[1], `"session"`) {
		t.Errorf("a session-less message has a session: %s", lines[1])
	}
	for _, l := range readLines(t, path) {
		if l.Hop != "client" || len(l.Msg) == 0 {
			t.Errorf("line %+v", l)
		}
	}
}
