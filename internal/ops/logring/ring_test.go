package logring

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestKeepsLastLinesWhole(t *testing.T) {
	r := New(3)
	fmt.Fprint(r, "one\ntw")
	fmt.Fprint(r, "o\r\nthree\n")
	if got := r.Lines(); strings.Join(got, "|") != "one|two|three" {
		t.Fatalf("Lines = %q", got)
	}
	fmt.Fprint(r, "four\nfive\nsix")
	if got := r.Lines(); strings.Join(got, "|") != "three|four|five" {
		t.Fatalf("after wrap, Lines = %q (the unfinished line must wait)", got)
	}
	fmt.Fprint(r, "\n")
	if got := r.Lines(); strings.Join(got, "|") != "four|five|six" {
		t.Fatalf("Lines = %q", got)
	}
}

func TestDefaultCapacityAndLongLines(t *testing.T) {
	r := New(0)
	for i := range defaultLines + 10 {
		fmt.Fprintf(r, "line %d\n", i)
	}
	got := r.Lines()
	if len(got) != defaultLines || got[0] != "line 10" || got[len(got)-1] != fmt.Sprintf("line %d", defaultLines+9) {
		t.Fatalf("kept %d lines, first %q last %q", len(got), got[0], got[len(got)-1])
	}
	r = New(10)
	long := strings.Repeat("x", maxLine+5)
	r.Write([]byte(long[:100]))
	r.Write([]byte(long[100:]))
	r.Write([]byte("\n"))
	got = r.Lines()
	if len(got) != 2 || len(got[0]) != maxLine || got[1] != "xxxxx" {
		t.Fatalf("long line kept as %d pieces", len(got))
	}
}

func TestFollowHasNoGapAndNoDuplicate(t *testing.T) {
	r := New(100000)
	const writers, per = 4, 2000
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range per {
				fmt.Fprintf(r, "w%d %d\n", w, i)
			}
		}()
	}
	close(start)
	// Follow while the writers write: backlog + channel must be every line
	// exactly once.
	backlog, sub := r.Follow(writers * per)
	wg.Wait()
	seen := map[string]int{}
	for _, l := range backlog {
		seen[l]++
	}
	total := len(backlog)
	for total < writers*per {
		l := <-sub.C
		seen[l]++
		total++
	}
	sub.Close()
	if sub.Dropped() != 0 {
		t.Fatalf("dropped %d with room for all", sub.Dropped())
	}
	if len(seen) != writers*per {
		t.Fatalf("saw %d distinct lines, want %d", len(seen), writers*per)
	}
	for l, n := range seen {
		if n != 1 {
			t.Fatalf("line %q seen %d times", l, n)
		}
	}
	// Lines of one writer stay in order and whole.
	last := map[string]int{}
	for _, l := range r.Lines() {
		var w string
		var i int
		if _, err := fmt.Sscanf(l, "%s %d", &w, &i); err != nil {
			t.Fatalf("torn line %q", l)
		}
		if p, ok := last[w]; ok && i != p+1 {
			t.Fatalf("%s: %d after %d", w, i, p)
		}
		last[w] = i
	}
}

func TestSlowFollowerLosesLinesNotTheWriter(t *testing.T) {
	r := New(10)
	_, sub := r.Follow(2)
	for i := range 5 {
		fmt.Fprintf(r, "%d\n", i)
	}
	if sub.Dropped() != 3 {
		t.Fatalf("Dropped = %d, want 3", sub.Dropped())
	}
	sub.Close()
	sub.Close()
	var got []string
	for l := range sub.C {
		got = append(got, l)
	}
	if strings.Join(got, "") != "01" {
		t.Fatalf("follower got %q", got)
	}
	fmt.Fprintln(r, "after close") // must not panic on a closed channel
}
