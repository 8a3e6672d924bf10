package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/builder/cache"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/watcher"
)

// check names a watched file that mcpflow saw the build write (kept in the
// build cache), outside the usual output folders.
func TestCheckWarnsAboutLearnedOutputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"src.txt", "gen/out.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default(dir)
	cfg.Build.Command = config.Command{Argv: []string{"sh build.sh"}, Shell: true}
	cfg.Run.Command = config.Command{Argv: []string{"./bin/server"}}
	files, err := watcher.Scan(WatchConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	warned := func() bool {
		for _, w := range checkWarnings(checkView{cfg: cfg}, files) {
			if strings.HasPrefix(w, "gen/out.txt is written by the build") {
				return true
			}
		}
		return false
	}
	if warned() {
		t.Fatal("a warning before mcpflow saw the build write gen/out.txt")
	}
	file := cache.StateFile(cache.Dir(dir), BuildIdentity(cfg)...)
	if err := cache.Save(file, cache.State{Outputs: []string{"gen/out.txt"}}); err != nil {
		t.Fatal(err)
	}
	if !warned() {
		t.Errorf("no warning for gen/out.txt: %q", checkWarnings(checkView{cfg: cfg}, files))
	}
	cfg.Watch.Exclude = []string{"gen/**"}
	if files, err = watcher.Scan(WatchConfig(cfg)); err != nil {
		t.Fatal(err)
	}
	if warned() {
		t.Error("a warning for an excluded output")
	}
}

// check says which file a relative allowed_commands entry allows.
func TestCheckRelativeAllowedCommand(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "mcpflow.toml"), []byte("[mux]\nallowed_commands = [\"npx\", \"./bin/api\"]\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	_, warnings, err := Check(cfg)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, filepath.Join(dir, "bin", "api")) || strings.Contains(joined, `"npx"`) {
		t.Errorf("warnings: %s", joined)
	}
}
