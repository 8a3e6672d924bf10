package builder

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestOutputBufferKeepsAllWhenItFits(t *testing.T) {
	o := newOutputBuffer(64)
	fmt.Fprint(o, "hello\n")
	fmt.Fprint(o, "world\n")
	if got := o.String(); got != "hello\nworld\n" {
		t.Fatalf("got %q", got)
	}
}

func TestOutputBufferKeepsHeadAndTail(t *testing.T) {
	o := newOutputBuffer(100)
	var all strings.Builder
	for i := range 200 {
		line := fmt.Sprintf("line %03d\n", i)
		all.WriteString(line)
		fmt.Fprint(o, line)
	}
	got := o.String()
	if !strings.HasPrefix(got, "line 000\n") {
		t.Errorf("head lost: %q", got)
	}
	if !strings.HasSuffix(got, "line 199\n") {
		t.Errorf("tail lost: %q", got)
	}
	head, tail, ok := strings.Cut(got, "… ")
	if !ok {
		t.Fatalf("no cut marker: %q", got)
	}
	var cut int
	if _, err := fmt.Sscanf(tail, "%d bytes cut …\n", &cut); err != nil {
		t.Fatalf("marker: %v in %q", err, got)
	}
	_, rest, _ := strings.Cut(tail, "…\n")
	if len(head)+cut+len(rest) != all.Len() {
		t.Errorf("head %d + cut %d + tail %d != total %d", len(head), cut, len(rest), all.Len())
	}
	if !strings.HasPrefix(all.String(), head) || !strings.HasSuffix(all.String(), rest) {
		t.Errorf("kept text is not the head and tail of the output: %q", got)
	}
	if len(head)+len(rest) > 100 {
		t.Errorf("kept %d bytes, max 100", len(head)+len(rest))
	}
}

func TestOutputBufferBigWrite(t *testing.T) {
	o := newOutputBuffer(10)
	fmt.Fprint(o, strings.Repeat("a", 1000)+strings.Repeat("z", 1000))
	got := o.String()
	if !strings.HasPrefix(got, "aaaaa\n… 1990 bytes cut …\nzzzzz") {
		t.Errorf("got %q", got)
	}
}

func TestOutputBufferConcurrentWrites(t *testing.T) {
	o := newOutputBuffer(1 << 10)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(o, "writer %d line %d\n", g, i)
				if i%100 == 0 {
					_ = o.String()
				}
			}
		})
	}
	wg.Wait()
	if got := o.String(); !strings.Contains(got, "bytes cut") {
		t.Errorf("no cut marker in %d bytes", len(got))
	}
}
