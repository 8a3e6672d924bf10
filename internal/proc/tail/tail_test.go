package tail

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestString(t *testing.T) {
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "line %02d\n", i)
		}
		return b.String()
	}
	for _, c := range []struct {
		name       string
		head, tail int
		writes     []string
		want       string
	}{
		{"empty", 8, 8, nil, ""},
		{"all fits", 32, 32, []string{"hello\n", "world\n"}, "hello\nworld\n"},
		{"all fits in the tail", 0, 16, []string{"hello", "\nworld"}, "hello\nworld"},
		{"all fits, partial runes kept", 0, 8, []string{"\xc3", "\xa9\xff"}, "é\xff"},
		{"tail starts at a line", 0, 10, []string{lines(0, 1)}, "line 01\n"},
		{"tail starts at a line, small writes", 0, 20, strings.SplitAfter(lines(0, 99), "\n"), "line 98\nline 99\n"},
		{"tail keeps a long last line", 0, 10, []string{"aaaaaaaaaaaaaaa\nbb"}, "aaaaaaa\nbb"},
		{"tail at a whole rune", 0, 5, []string{"ééé"}, "éé"},
		{"tail of one big write", 0, 3, []string{strings.Repeat("x", 100) + "yz"}, "xyz"},
		{"no tail", 4, 0, []string{"abcdefgh"}, "abcd\n… 4 bytes cut …\n"},
		{"head and tail of one big write", 5, 5, []string{strings.Repeat("a", 1000) + strings.Repeat("z", 1000)},
			"aaaaa\n… 1990 bytes cut …\nzzzzz"},
		{"head and tail at whole runes", 5, 5, []string{strings.Repeat("é", 10)}, "éé\n… 12 bytes cut …\néé"},
		{"head and tail at lines", 20, 20, []string{lines(0, 9)}, "line 00\nline 01\n… 48 bytes cut …\nline 08\nline 09\n"},
		{"head and tail at lines, small writes", 20, 20, strings.SplitAfter(lines(0, 9), "\n"),
			"line 00\nline 01\n… 48 bytes cut …\nline 08\nline 09\n"},
		{"head ends with a line break only if that keeps half", 10, 10, []string{"a\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
			"a\nbbbbbbbb\n… 12 bytes cut …\nbbbbbbbbbb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := New(c.head, c.tail, nil)
			for _, w := range c.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := b.String(); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// Whatever is written, the head, the cut count and the tail add up to the
// whole, and what is kept is the start and the end of what was written.
func TestHeadAndTailAddUp(t *testing.T) {
	b := New(50, 50, nil)
	var all strings.Builder
	for i := range 200 {
		line := fmt.Sprintf("line %03d\n", i)
		all.WriteString(line)
		fmt.Fprint(b, line)
	}
	got := b.String()
	head, rest, ok := strings.Cut(got, "… ")
	if !ok {
		t.Fatalf("no cut marker: %q", got)
	}
	var cut int
	if _, err := fmt.Sscanf(rest, "%d bytes cut …\n", &cut); err != nil {
		t.Fatalf("marker: %v in %q", err, got)
	}
	_, tail, _ := strings.Cut(rest, "…\n")
	if len(head)+cut+len(tail) != all.Len() {
		t.Errorf("head %d + cut %d + tail %d != total %d", len(head), cut, len(tail), all.Len())
	}
	if !strings.HasPrefix(all.String(), head) || !strings.HasSuffix(all.String(), tail) {
		t.Errorf("kept text is not the head and tail of the output: %q", got)
	}
	if !strings.HasPrefix(head, "line 000\n") || !strings.HasSuffix(tail, "line 199\n") {
		t.Errorf("first or last line lost: %q", got)
	}
	if len(head)+len(tail) > 100 {
		t.Errorf("kept %d bytes, max 100", len(head)+len(tail))
	}
}

func TestLines(t *testing.T) {
	long := strings.Repeat("x", 2000)
	cutRune := strings.Repeat("y", maxLine-1) + "é"
	for _, c := range []struct {
		name   string
		writes []string
		want   []string
	}{
		{"split across writes", []string{"a", "b\r\nc\n", "\n"}, []string{"ab", "c", ""}},
		{"last line flushed", []string{"one\ntwo"}, []string{"one", "two"}},
		{"long line capped", []string{long[:700], long[700:] + "\nnext\n"}, []string{long[:maxLine], "next"}},
		{"cap at a whole rune", []string{cutRune + "\n"}, []string{cutRune[:maxLine-1]}},
		{"nothing after the last break", []string{"done\n"}, []string{"done"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			b := New(0, 8, func(line string) { got = append(got, line) })
			for _, w := range c.writes {
				b.Write([]byte(w))
			}
			b.Flush()
			b.Flush()
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// Run with -race: writers, readers and the line function at once.
func TestConcurrentUse(t *testing.T) {
	var lines int
	b := New(1<<9, 1<<9, func(string) { lines++ })
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(b, "writer %d line %d\n", g, i)
				if i%100 == 0 {
					_ = b.String()
				}
			}
		})
	}
	wg.Wait()
	b.Flush()
	if lines != 2000 {
		t.Errorf("%d lines passed on, want 2000", lines)
	}
	got := b.String()
	if !strings.HasPrefix(got, "writer ") || !strings.Contains(got, " bytes cut …\n") || !strings.HasSuffix(got, " line 499\n") {
		t.Errorf("got %q", got)
	}
}
