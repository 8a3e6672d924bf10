package traffic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

type line struct {
	T         time.Time       `json:"t"`
	Hop       string          `json:"hop"`
	Dir       string          `json:"dir"`
	Gen       int             `json:"gen"`
	Server    string          `json:"server"`
	Msg       json.RawMessage `json:"msg"`
	Truncated bool            `json:"truncated"`
	Size      int             `json:"size"`
	Prefix    string          `json:"msg_prefix"`
	Invalid   bool            `json:"invalid"`
	Text      string          `json:"msg_text"`
}

func readLines(t *testing.T, paths ...string) []line {
	t.Helper()
	var out []line
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s: line %q is not JSON: %v", p, sc.Text(), err)
			}
			out = append(out, l)
		}
		f.Close()
	}
	return out
}

func TestEveryMessageInOrderAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	w, err := Open(path, Options{MaxFile: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	hook := w.Hook("")
	buf := make([]byte, 0, 128)
	const n = 60 // about 80 bytes a line: the file rotates several times
	for i := range n {
		buf = fmt.Appendf(buf[:0], `{"jsonrpc":"2.0","id":%d,"method":"tools/call"}`, i)
		hook("client", i%2 == 0, 1+i/20, buf)
		for j := range buf {
			buf[j] = 'X' // the caller reuses its buffer at once
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cur := readLines(t, path)
	old := readLines(t, path+".1")
	if len(cur) == 0 || len(old) == 0 {
		t.Fatalf("no rotation: %d lines in FILE, %d in FILE.1", len(cur), len(old))
	}
	for _, p := range []string{path, path + ".1"} {
		if st, _ := os.Stat(p); st.Size() > 4<<10 {
			t.Errorf("%s is %d bytes, over the 4 KiB cap", p, st.Size())
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 && runtime.GOOS != "windows" { // Windows has ACLs
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
	}
	// FILE.1 holds the lines just before FILE's; older ones are gone.
	all := append(old, cur...)
	first := n - len(all)
	var prev time.Time
	for k, l := range all {
		i := first + k
		var m struct{ ID int }
		if err := json.Unmarshal(l.Msg, &m); err != nil || m.ID != i {
			t.Fatalf("line %d: msg %s, want id %d", k, l.Msg, i)
		}
		wantDir := "s2c"
		if i%2 == 0 {
			wantDir = "c2s"
		}
		if l.Hop != "client" || l.Dir != wantDir || l.Gen != 1+i/20 || l.Server != "" {
			t.Fatalf("line %d: hop %q dir %q gen %d server %q", k, l.Hop, l.Dir, l.Gen, l.Server)
		}
		if l.T.Before(prev) || l.T.IsZero() {
			t.Fatalf("line %d: time %v before %v", k, l.T, prev)
		}
		prev = l.T
	}
}

func TestTruncatedInvalidAndNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Open(path, Options{MaxMessage: 32})
	if err != nil {
		t.Fatal(err)
	}
	big := `{"result":"` + strings.Repeat("é", 40) + `"}`
	notes, odd, single := w.Hook("notes"), w.Hook("a\"b"), w.Hook("")
	notes("server", false, 3, []byte(big))
	notes("client", true, 3, []byte("not json\n"))
	odd("server", true, 0, []byte("{\n  \"id\": 1\n}"))
	single("client", true, 0, []byte(`{"id":"<&>"}`))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	single("client", true, 0, []byte(`{}`)) // after Close: ignored, no panic
	ls := readLines(t, path)
	if len(ls) != 4 {
		t.Fatalf("%d lines", len(ls))
	}
	if l := ls[0]; !l.Truncated || l.Size != len(big) || l.Msg != nil || l.Server != "notes" || l.Gen != 3 ||
		len(l.Prefix) > 32 || !strings.HasPrefix(big, l.Prefix) || len(l.Prefix) < 29 {
		t.Errorf("truncated line: %+v", l)
	}
	if l := ls[0]; l.Hop != "server" || l.Dir != "s2c" {
		t.Errorf("hop and direction: %+v", l)
	}
	if l := ls[1]; !l.Invalid || l.Text != "not json" || l.Dir != "c2s" || l.Hop != "client" {
		t.Errorf("invalid line: %+v", l)
	}
	if l := ls[2]; string(l.Msg) != `{"id":1}` || l.Server != `a"b` {
		t.Errorf("multi-line message: %+v", l)
	}
	if l := ls[3]; string(l.Msg) != `{"id":"<&>"}` {
		t.Errorf("message changed: %s", l.Msg)
	}
}

func TestConcurrentRecordsAndPeriodicFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := w.Hook(fmt.Sprint("s", g))
			for i := range 500 {
				h("client", true, g, fmt.Appendf(nil, `{"id":%d}`, i))
			}
		}()
	}
	wg.Wait()
	// Without Close, the lines reach the file within a few flush intervals.
	lines := 0
	if !testkit.Wait(10*time.Second, func() bool {
		b, _ := os.ReadFile(path)
		lines = strings.Count(string(b), "\n")
		return lines == 2000
	}) {
		t.Fatalf("%d of 2000 lines flushed", lines)
	}
	next := map[string]int{}
	for _, l := range readLines(t, path) {
		var m struct{ ID int }
		json.Unmarshal(l.Msg, &m)
		if m.ID != next[l.Server] {
			t.Fatalf("%s: id %d, want %d", l.Server, m.ID, next[l.Server])
		}
		next[l.Server]++
	}
}

// BenchmarkRecord is the relay's cost per message of a typical size.
func BenchmarkRecord(b *testing.B) {
	w, err := Open(filepath.Join(b.TempDir(), "t.jsonl"), Options{MaxFile: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	hook := w.Hook("")
	msg := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 20) + `"}],"isError":false}}`)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		hook("server", false, 1, msg)
	}
}
