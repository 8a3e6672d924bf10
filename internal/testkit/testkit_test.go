//go:build unix

package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) { Main(m) }

// A zombie is dead to Alive, though kill(pid, 0) still finds it.
func TestAliveZombie(t *testing.T) {
	if !procMounted() {
		t.Skip("no /proc")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	Eventually(t, 10*time.Second, "true to exit", func() bool { return !Alive(pid) })
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the zombie was reaped already: the test proves nothing")
	}
	if (Procs{Pids: []int{pid}}).Live() != nil {
		t.Fatal("Live counts a zombie")
	}
	if !Alive(os.Getpid()) || Alive(0) {
		t.Fatal("Alive is wrong about this process or pid 0")
	}
}

// Procs finds a grandchild by the tag it inherited, by its group, and by
// its working folder, after its parent exited; Kill ends it.
func TestProcsFindsAnOrphan(t *testing.T) {
	if !procMounted() {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	tag := Tag(t)
	cmd := Command(tag, nil, "sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	for _, p := range []Procs{{Tag: tag}, {Groups: []int{cmd.Process.Pid}}, {Dir: dir}, {Pids: []int{orphan}}} {
		left := p.Live()
		if len(left) != 1 || !strings.HasPrefix(left[0], "pid "+strconv.Itoa(orphan)+" sleep 300") {
			t.Errorf("%+v: live %q, want the sleep %d", p, left, orphan)
		}
	}
	if left := (Procs{Tag: tag, Except: []int{orphan}}).Live(); len(left) != 0 {
		t.Errorf("Except: %q", left)
	}
	if !GroupAlive(cmd.Process.Pid) {
		t.Error("GroupAlive: false")
	}
	Procs{Tag: tag}.Kill()
	NoLeftovers(t, Procs{Tag: tag, Dir: dir, Groups: []int{cmd.Process.Pid}, Pids: []int{orphan}})
	if GroupAlive(cmd.Process.Pid) {
		t.Error("GroupAlive after the kill: true")
	}
}

// Build builds once per package and flags.
func TestBuildOnce(t *testing.T) {
	a, b := Fixture(t), Fixture(t)
	v2 := Fixture(t, FixtureV2)
	if a != b || a == v2 {
		t.Fatalf("paths %s %s %s", a, b, v2)
	}
	if st, err := os.Stat(a); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v", a, err)
	}
}

// The fixture serves both eras; its name, its variant (linked in or
// from a file) and its options from the environment.
func TestFixture(t *testing.T) {
	EachEra(t, func(t *testing.T, era Era) {
		t.Parallel()
		variant := filepath.Join(t.TempDir(), "variant")
		os.WriteFile(variant, []byte("v2"), 0o644)
		cases := []struct {
			name    string
			bin     string
			args    []string
			env     []string
			echo    string
			reverse bool
		}{
			{"plain", Fixture(t), nil, nil, "hi", false},
			{"named", Fixture(t), []string{"-name", "n"}, nil, "n:hi", false},
			{"named by env", Fixture(t), nil, []string{"FIXTURE_NAME=e"}, "e:hi", false},
			{"v2 linked", Fixture(t, FixtureV2), nil, nil, "hi", true},
			{"v2 from a file", Fixture(t), []string{"-variant-file", variant}, nil, "hi", true},
		}
		for _, c := range cases {
			cmd := exec.Command(c.bin, c.args...)
			cmd.Env = append(os.Environ(), c.env...)
			cs := Connect(t, era.Version, nil, &mcp.CommandTransport{Command: cmd})
			if got := cs.InitializeResult().ProtocolVersion; got != era.Protocol {
				t.Errorf("%s: protocol %s, want %s", c.name, got, era.Protocol)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || Text(res) != c.echo {
				t.Errorf("%s: echo %q %v, want %q", c.name, Text(res), err, c.echo)
			}
			var names []string
			for tool, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			if slices.Contains(names, "reverse") != c.reverse {
				t.Errorf("%s: tools %v, reverse want %v", c.name, names, c.reverse)
			}
		}
	})
}
