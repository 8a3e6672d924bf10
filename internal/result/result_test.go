package result

import (
	"testing"
	"time"
)

func TestDur(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{650*time.Millisecond + 900*time.Microsecond, "651ms"},
		{1214 * time.Millisecond, "1.21s"},
		{38*time.Millisecond + 400*time.Microsecond, "38ms"},
		{4*time.Millisecond + 830*time.Microsecond, "4.8ms"},
		{650 * time.Microsecond, "650µs"},
		{12345 * time.Millisecond, "12.3s"},
		{0, "0s"},
	} {
		if got := Dur(c.d); got != c.want {
			t.Errorf("Dur(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestToolDiffEmpty(t *testing.T) {
	if !(ToolDiff{Current: []string{"a"}}).Empty() {
		t.Error("a diff with only Current should be empty")
	}
	if (ToolDiff{Changed: []string{"a"}}).Empty() {
		t.Error("a changed tool is not an empty diff")
	}
}
