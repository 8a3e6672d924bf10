package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func readOne(t *testing.T, line string) ([]byte, error) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	rd := NewReader(strings.NewReader(line+"\n"), 0)
	rd.Stub = true
	return rd.Next()
}

// A stub is what a peer may decode and encode again: the long string as
// a string and as base64 bytes (an image's data, a blob) comes back as
// it was; the message WriteMsg writes is the line; a long string with a
// bad escape or bad UTF-8 deep inside makes the line invalid.
func TestSpoolStub(t *testing.T) {
	long := strings.Repeat("QUJD", 100<<10) // base64, longer than LongString
	line := `{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"image","data":"` + long + `","mimeType":"image/png"},{"type":"text","text":"é` + long + `\n"}]}}`
	stub, err := readOne(t, line)
	if err != nil || len(stub) > 400 {
		t.Fatalf("stub of %d bytes, %v", len(stub), err)
	}
	var v struct {
		ID     string `json:"id"`
		Result struct {
			Content []struct {
				Type     string `json:"type"`
				Data     []byte `json:"data,omitempty"`
				MimeType string `json:"mimeType,omitempty"`
				Text     string `json:"text,omitempty"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(stub, &v); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": v.ID, "result": v.Result})
	size, whole := Size(again), Expand(again)
	var out bytes.Buffer
	if err := WriteMsg(&out, again); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(out.Bytes(), []byte(line)) || size != out.Len() || string(whole) != out.String() {
		t.Fatalf("decoded and encoded again, the stub does not write the line (%d bytes, want %d)", out.Len(), len(line))
	}
	// Characters and escapes cut by the walk's 64 KiB blocks.
	for _, unit := range []string{"漢", `\u00e9`, `\n`, "🙂"} {
		line := `{"s":"` + strings.Repeat(unit, 3*LongString/len(unit)) + `"}`
		stub, err := readOne(t, line)
		var out bytes.Buffer
		if err == nil {
			err = WriteMsg(&out, stub)
		}
		if err != nil || out.String() != line || len(stub) > 100 {
			t.Errorf("%q repeated: %v, %d bytes written, stub of %d", unit, err, out.Len(), len(stub))
		}
	}
	for _, bad := range []string{`\q`, "\xff", "\x01"} {
		_, err := readOne(t, `{"s":"`+long+bad+long+`"}`)
		var inv *InvalidError
		if !errors.As(err, &inv) {
			t.Errorf("%q in a long string: %v, want an InvalidError", bad, err)
		}
	}
	if _, err := readOne(t, `{"s":"`+long+`"`); err == nil {
		t.Error("a stub left unclosed is valid")
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && jsonText(x) == jsonText(y)
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }

// A long string is let go once written, when its message is discarded,
// or SpoolTTL after it was read; afterwards its placeholder is "".
func TestSpoolLetGo(t *testing.T) {
	long := `{"s":"` + strings.Repeat("a", 2*LongString) + `"}`
	stub, err := readOne(t, long)
	if err != nil {
		t.Fatal(err)
	}
	before := heldCount()
	var out bytes.Buffer
	if n := Size(stub); n != len(long) {
		t.Fatalf("size %d, want %d", n, len(long))
	}
	if err := WriteMsg(&out, stub); err != nil || out.String() != long {
		t.Fatalf("%v, %d bytes written", err, out.Len())
	}
	if heldCount() != before-1 {
		t.Fatalf("%d pieces held after the write, %d before", heldCount(), before)
	}
	var again bytes.Buffer
	if err := WriteMsg(&again, stub); err != nil || again.String() != `{"s":""}` || Size(stub) != again.Len() {
		t.Fatalf("a placeholder whose piece is gone is written as %q (Size %d), want an empty string", again.String(), Size(stub))
	}

	SpoolTTL = 100 * time.Millisecond
	defer func() { SpoolTTL = 10 * time.Minute }()
	stub, _ = readOne(t, long)
	Discard(stub)
	if heldCount() != 0 {
		t.Fatalf("%d pieces held after Discard", heldCount())
	}

	stub, _ = readOne(t, long)
	if Size(stub) != len(long) {
		t.Fatal("the new stub's piece is not held")
	}
	deadline := time.Now().Add(10 * time.Second)
	for heldCount() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if heldCount() != 0 || Size(stub) == len(long) {
		t.Fatalf("%d pieces held after SpoolTTL", heldCount())
	}
}

// heldCount counts the long strings held.
func heldCount() int {
	spools.mu.Lock()
	defer spools.mu.Unlock()
	return len(spools.m)
}
