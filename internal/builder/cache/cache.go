package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpflow/mcpflow/internal/ops/statedir"
)

// Dir returns the cache folder of the project whose root is root.
func Dir(root string) string { return filepath.Join(statedir.Of(root), "cache") }

// State is what the last good build left behind.
type State struct {
	// Key is the Key of the sources the build started from; "" when no
	// good build is recorded, or a build was under way when the state was
	// written (it may have left a half-written output).
	Key string `json:"key"`
	// Time is when that build ended.
	Time time.Time `json:"time"`
	// Output is the file the build writes that the server runs ("" if
	// unknown), with its size and modification time right after the build;
	// a cached build is reused only while it is still that file.
	Output     string    `json:"output,omitempty"`
	OutputSize int64     `json:"output_size,omitempty"`
	OutputTime time.Time `json:"output_time,omitempty"`
	// Outputs are the files (relative to the project root, slash
	// separated) that builds were seen writing among the watched files.
	Outputs []string `json:"outputs,omitempty"`
}

// Fresh reports whether s records a good build of sources whose Key is
// key, with its output still in place as the build left it.
func (s State) Fresh(key string) bool {
	if s.Key == "" || s.Key != key || s.Output == "" {
		return false
	}
	fi, err := os.Stat(s.Output)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == s.OutputSize && fi.ModTime().Equal(s.OutputTime)
}

// SetOutput records path (absolute), as it is now, as the build's output.
// A missing file records none.
func (s *State) SetOutput(path string) {
	s.Output, s.OutputSize, s.OutputTime = "", 0, time.Time{}
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		s.Output, s.OutputSize, s.OutputTime = path, fi.Size(), fi.ModTime()
	}
}

// StateFile names the state file of one build configuration in a cache
// folder: the same project may be built in several ways (several config
// files), each remembered apart.
func StateFile(dir string, config ...string) string {
	h := sha256.New()
	for _, c := range config {
		fmt.Fprintf(h, "%d:%s\n", len(c), c)
	}
	return filepath.Join(dir, "build-"+hex.EncodeToString(h.Sum(nil))[:16]+".json")
}

// Load reads a state file. A missing or unreadable file is an empty State
// (nothing cached), with the error for the log when it is not just missing.
func Load(file string) (State, error) {
	var s State
	b, err := statedir.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w (it is rewritten after the next good build)", file, err)
	}
	return s, nil
}

// Save writes a state file atomically, creating its folder.
func Save(file string, s State) error {
	if err := makeDir(filepath.Dir(file)); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return statedir.WriteFile(file, append(b, '\n'))
}

// Key hashes build (the command, the folder...) and the path, size and
// modification time of each of files (relative to root, slash-separated;
// one that cannot be read counts as absent).
func Key(build []string, root string, files []string) string {
	h := sha256.New()
	for _, b := range build {
		fmt.Fprintf(h, "b%d:%s\n", len(b), b)
	}
	for _, f := range slices.Compact(slices.Sorted(slices.Values(files))) {
		stamp := "-"
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
			stamp = fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
		}
		fmt.Fprintf(h, "f%d:%s %s\n", len(f), f, stamp)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// makeDir creates the cache folder dir, kept out of git by a .gitignore.
func makeDir(dir string) error {
	return statedir.Ignore(dir, "mcpflow's build cache: never committed.")
}
