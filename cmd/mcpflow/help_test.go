//go:build unix

package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHelpAndFlags runs the real binary with -h, --help, --version and an
// unknown flag on every listed subcommand, "help CMD" for each, and the
// help-of-help combinations: each exits as documented, help names its
// command, and nothing panics.
func TestHelpAndFlags(t *testing.T) {
	t.Parallel()
	type want struct {
		code   int
		stdout string // a substring of stdout
		stderr string // a substring of stderr
	}
	cases := map[string]want{
		"":              {code: 2, stderr: "mcpflow watch [-c FILE]"},
		"-h":            {stdout: "mcpflow watch [-c FILE]"},
		"--help":        {stdout: "mcpflow watch [-c FILE]"},
		"help":          {stdout: "mcpflow watch [-c FILE]"},
		"help help":     {stdout: "mcpflow watch [-c FILE]"},
		"help -h":       {stdout: "mcpflow help [COMMAND]"},
		"help --help":   {stdout: "mcpflow help [COMMAND]"},
		"-h -h":         {stdout: "mcpflow help [COMMAND]"},
		"-h --help":     {stdout: "mcpflow help [COMMAND]"},
		"--version":     {stdout: "mcpflow "},
		"-v":            {stdout: "mcpflow "},
		"--version -h":  {stdout: "mcpflow version"},
		"--nope":        {code: 2, stderr: `unknown flag --nope (run "mcpflow -h"`},
		"frobnicate":    {code: 2, stderr: `unknown command "frobnicate"`},
		"help nope":     {code: 2, stderr: `unknown command "nope" (run "mcpflow -h" for the commands)`},
		"help a b":      {code: 2, stderr: "one COMMAND at most"},
		"rebuild --all": {code: 2, stderr: "unknown flag --all"},
	}
	for _, c := range commands() {
		if c.lines == nil {
			continue // hidden
		}
		n := c.name
		named := "mcpflow " + n
		cases[n+" -h"] = want{stdout: named}
		cases[n+" --help"] = want{stdout: named}
		cases[n+" -help"] = want{stdout: named}
		cases[n+" -h -h"] = want{stdout: named}
		cases[n+" --version"] = want{stdout: "mcpflow "}
		cases[n+" --version -h"] = want{stdout: named}
		cases["help "+n] = want{stdout: named}
		cases["-h "+n] = want{stdout: named}
		cases[n+" --nope"] = want{code: 2, stderr: "mcpflow " + n + `: unknown flag --nope (run "mcpflow ` + n + ` -h"`}
		cases[n+" -nope=1"] = want{code: 2, stderr: "unknown flag -nope ("}
	}
	for args, w := range cases {
		t.Run(args, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(mcpflowBin, strings.Fields(args)...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(cmd.Environ(), "GORACE=atexit_sleep_ms=0", "XDG_RUNTIME_DIR="+cmd.Dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 10 * time.Second
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("mcpflow %s: still running after 60s", args)
			}
			code := 0
			if x := (*exec.ExitError)(nil); errors.As(err, &x) {
				code = x.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			out := stdout.String() + stderr.String()
			if code != w.code || !strings.Contains(stdout.String(), w.stdout) || !strings.Contains(stderr.String(), w.stderr) ||
				strings.Contains(out, "goroutine ") || strings.Contains(out, "panic") {
				t.Errorf("mcpflow %s: exit %d, want %d (stdout has %q, stderr %q)\nstdout:\n%s\nstderr:\n%s", args, code, w.code, w.stdout, w.stderr, stdout.String(), stderr.String())
			}
		})
	}
}
