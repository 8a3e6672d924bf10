package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestParseFlags: flags before, between and after positional arguments;
// "--" ends the flags and keeps what follows as given.
func TestParseFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args    []string
		force   bool
		c       string
		pos     []string
		wantErr bool
	}{
		{args: nil, pos: nil},
		{args: []string{"DIR"}, pos: []string{"DIR"}},
		{args: []string{"--force", "DIR"}, force: true, pos: []string{"DIR"}},
		{args: []string{"DIR", "--force"}, force: true, pos: []string{"DIR"}},
		{args: []string{"DIR", "-c", "x.toml", "B"}, c: "x.toml", pos: []string{"DIR", "B"}},
		{args: []string{"DIR", "-c=x.toml"}, c: "x.toml", pos: []string{"DIR"}},
		{args: []string{"-c", "x.toml", "--", "node", "--force", "-c"}, c: "x.toml", pos: []string{"node", "--force", "-c"}},
		{args: []string{"A", "--", "--force"}, pos: []string{"A", "--force"}},
		{args: []string{"DIR", "--nope"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			force := fs.Bool("force", false, "")
			c := fs.String("c", "", "")
			pos, err := parseFlags(fs, tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			if *force != tc.force || *c != tc.c || !slices.Equal(pos, tc.pos) {
				t.Fatalf("force=%v c=%q pos=%q; want %v %q %q", *force, *c, pos, tc.force, tc.c, tc.pos)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseFlags(fs, []string{"DIR", "-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h after DIR: %v", err)
	}
}

// TestIsTerminalNotForFilesAndPipes: /dev/null, a file and a pipe are not
// terminals (a character device is not enough).
func TestIsTerminalNotForFilesAndPipes(t *testing.T) {
	t.Parallel()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Errorf("%s is a terminal", os.DevNull)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(r) {
		t.Error("a pipe is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(strings.NewReader("")) {
		t.Error("a file or a reader is a terminal")
	}
}
