package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWatchConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := env{getwd: func() (string, error) { return dir, nil }}

	// -- CMD: the command is the server, run directly; --build is sh -c.
	c, err := watchConfig(e, "", "make", []string{"./srv", "-v"})
	if err != nil {
		t.Fatal(err)
	}
	if c.File != "" || c.Dir != dir || strings.Join(c.Run.Command.Argv, " ") != "./srv -v" || c.Run.Command.Shell ||
		!c.Build.Command.Shell || c.Build.Command.Argv[0] != "make" {
		t.Errorf("-- CMD config: %+v", c)
	}

	for _, tc := range []struct {
		path, build string
		args        []string
		want        string
	}{
		{"x.toml", "", []string{"srv"}, "either -c FILE or -- CMD"},
		{"", "make", nil, "--build goes with -- CMD"},
		{"", "", nil, `no mcpflow.toml in ` + dir},
	} {
		if _, err := watchConfig(e, tc.path, tc.build, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("watchConfig(%q, %q, %q) = %v, want %q", tc.path, tc.build, tc.args, err, tc.want)
		}
	}

	// The file in the working folder, with its errors located.
	if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte("[run]\ncommand = [\"./srv\"]\n[log]\nformat = \"xml\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = watchConfig(e, "", "", nil)
	if want := filepath.Join(dir, "mcpflow.toml") + `:4:10: log.format: "xml" is not one of "text", "json"`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
