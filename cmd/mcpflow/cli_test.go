//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestCLI runs the txtar scripts in testdata/script against the real
// mcpflow binary (built in TestMain): init, check, help, version and their
// errors, each with its exit status.
func TestCLI(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(mcpflowBin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("HOME", env.WorkDir)
			return nil
		},
	})
}
