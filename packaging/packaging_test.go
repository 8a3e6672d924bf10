//go:build linux

package packaging

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestPackaging builds the host platform's release artifacts with
// packaging/dist (as make dist does for every platform) and checks them:
// with MCPFLOW_DIST_CHECK=1 (make dist-check) a second build, which must
// write the same bytes; the names, checksums.txt, the archive's
// contents; then installs the npm packages and the wheel offline and runs
// mcpflow through each entry point: the same version everywhere, exit
// statuses passed through, real MCP sessions, and no process left behind
// however a session ends. Linux only (the file's build constraint): the
// processes are found through /proc.
func TestPackaging(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "dist")
	a := runDist(t, out)
	t.Logf("dist: mcpflow %s (npm %s, PyPI %s)", a.version, a.npmVer, a.pyVer)

	t.Run("reproducible", func(t *testing.T) {
		if os.Getenv("MCPFLOW_DIST_CHECK") != "1" {
			t.Skip("a second release build, compared byte for byte: make dist-check (MCPFLOW_DIST_CHECK=1)")
		}
		again := filepath.Join(tmp, "dist2")
		runDist(t, again)
		first, second := readTree(t, out), readTree(t, again)
		if !slices.Equal(keys(first), keys(second)) {
			t.Fatalf("the two runs wrote different files:\n%v\n%v", keys(first), keys(second))
		}
		for name, data := range first {
			if !bytes.Equal(data, second[name]) {
				t.Errorf("%s differs between two runs of the same commit", name)
			}
		}
	})

	t.Run("names and checksums", func(t *testing.T) {
		checkNames(t, out, a)
		checkChecksums(t, out)
	})

	// The version every channel must print: the archive's binary's.
	bin := checkArchive(t, a, filepath.Join(tmp, "archive"))
	t.Run("wheel contents", func(t *testing.T) { checkWheel(t, a) })
	want := "mcpflow " + a.version + "\n"
	if got := runOut(t, bin, "version"); got != want {
		t.Fatalf("the archive's binary prints %q, want %q", got, want)
	}
	fixture := testkit.Fixture(t)

	t.Run("npm", func(t *testing.T) {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("no %s: %v", tool, err)
			}
		}
		proj := filepath.Join(tmp, "npm-project")
		npmInstall(t, proj, a.npmPlatform, a.npmMain)
		entry := filepath.Join(proj, "node_modules", ".bin", "mcpflow")
		checkNPMManifests(t, proj, a)
		if got := runOut(t, entry, "version"); got != want {
			t.Errorf("npm's mcpflow version prints %q, want %q", got, want)
		}
		if code, _ := runCode(t, entry, "no-such-command"); code != 2 {
			t.Errorf("npm's mcpflow no-such-command: exit %d, want mcpflow's 2", code)
		}

		cfg := sessionProject(t, filepath.Join(tmp, "npm-session"), fixture)
		t.Run("session, stdin closed", func(t *testing.T) {
			s := startSession(t, cfg, entry)
			start := time.Now()
			if err := s.cs.Close(); err != nil {
				t.Fatalf("close: %v (exit: %v)\n%s", err, s.cmd.ProcessState, s.stderr())
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the entry point took %v to exit after stdin closed", d)
			}
			s.noneLeft(t)
		})
		t.Run("session, SIGTERM to the entry point", func(t *testing.T) {
			s := startSession(t, cfg, entry)
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waitExited(t, s.cmd.Process.Pid)
			s.noneLeft(t)
			if err := s.cs.Close(); err != nil || s.cmd.ProcessState.ExitCode() != 0 {
				t.Errorf("after SIGTERM: close %v, exit %v, want 0 (mcpflow's status after a clean shutdown)\n%s", err, s.cmd.ProcessState, s.stderr())
			}
		})
		t.Run("session, entry point killed", func(t *testing.T) {
			s := startSession(t, cfg, entry)
			if err := s.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			waitExited(t, s.cmd.Process.Pid)
			s.noneLeft(t) // mcpflow notices that its parent is gone
			s.cs.Close()
		})
		t.Run("session, binary killed", func(t *testing.T) {
			s := startSession(t, cfg, entry)
			kids := testkit.Children(s.cmd.Process.Pid)
			if len(kids) != 1 {
				t.Fatalf("the entry point has children %v, want one (mcpflow)", kids)
			}
			if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitExited(t, s.cmd.Process.Pid)
			s.cs.Close()
			ws, _ := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("the entry point ended with %v; want killed by SIGKILL, as its binary was", s.cmd.ProcessState)
			}
			s.noneLeft(t)
		})

		t.Run("platform package missing", func(t *testing.T) {
			proj := filepath.Join(tmp, "npm-project-main-only")
			npmInstall(t, proj, a.npmMain)
			code, stderr := runCode(t, filepath.Join(proj, "node_modules", ".bin", "mcpflow"), "version")
			// A development build's platform package was never published:
			// the hint names the tarball make dist wrote, not the registry.
			hint := "npm install " + npmPlatformName() + "@" + a.npmVer
			if strings.Contains(a.npmVer, "-dev.") {
				hint = "npm install dist/npm/" + filepath.Base(a.npmPlatform)
			}
			if code != 1 || !strings.Contains(stderr, hint) {
				t.Errorf("without the platform package: exit %d, stderr %q; want 1 and %q", code, stderr, hint)
			}
		})
	})

	t.Run("wheel", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skipf("no python3: %v", err)
		}
		venv := filepath.Join(tmp, "venv")
		pipInstall(t, venv, a.wheel)
		entry := filepath.Join(venv, "bin", "mcpflow")
		if got := runOut(t, entry, "version"); got != want {
			t.Errorf("the wheel's mcpflow version prints %q, want %q", got, want)
		}
		if code, _ := runCode(t, entry, "no-such-command"); code != 2 {
			t.Errorf("the wheel's mcpflow no-such-command: exit %d, want mcpflow's 2", code)
		}
		cfg := sessionProject(t, filepath.Join(tmp, "wheel-session"), fixture)
		t.Run("session, SIGTERM", func(t *testing.T) {
			s := startSession(t, cfg, entry)
			// os.execv: the process the client started is mcpflow itself.
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.cmd.Process.Pid))
			if err != nil || filepath.Base(exe) != "mcpflow" || !strings.Contains(exe, filepath.Join("site-packages", "mcpflow", "bin")) {
				t.Errorf("the console script's process runs %q (%v), want the bundled binary", exe, err)
			}
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waitExited(t, s.cmd.Process.Pid)
			s.noneLeft(t)
			if err := s.cs.Close(); err != nil || s.cmd.ProcessState.ExitCode() != 0 {
				t.Errorf("after SIGTERM: close %v, exit %v, want 0\n%s", err, s.cmd.ProcessState, s.stderr())
			}
		})
	})
}

// artifacts is what one host-only dist run wrote.
type artifacts struct {
	out                    string
	version, npmVer, pyVer string
	archive                string // mcpflow_V_OS_ARCH.tar.gz
	npmMain, npmPlatform   string
	wheel                  string
}

var announceRE = regexp.MustCompile(`dist: mcpflow (\S+) \(npm (\S+), PyPI (\S+)\)`)

// runDist runs packaging/dist -host into out.
func runDist(t *testing.T, out string) artifacts {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("go", "run", "./dist", "-root", "..", "-out", out, "-host")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./dist: %v\n%s", err, b)
	}
	t.Logf("dist -host in %.1fs", time.Since(start).Seconds())
	m := announceRE.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("dist did not say which version it built:\n%s", b)
	}
	a := artifacts{out: out, version: m[1], npmVer: m[2], pyVer: m[3]}
	fv := strings.TrimPrefix(a.version, "v")
	a.archive = filepath.Join(out, fmt.Sprintf("mcpflow_%s_%s_%s.tar.gz", fv, runtime.GOOS, runtime.GOARCH))
	a.npmMain = filepath.Join(out, "npm", "mcpflow-"+a.npmVer+".tgz")
	a.npmPlatform = filepath.Join(out, "npm", "mcpflow-"+nodePlatform()+"-"+a.npmVer+".tgz")
	wheels, _ := filepath.Glob(filepath.Join(out, "pypi", "*.whl"))
	if len(wheels) == 1 {
		a.wheel = wheels[0]
	}
	return a
}

// nodePlatform is process.platform-process.arch for this host.
func nodePlatform() string {
	os := map[string]string{"windows": "win32"}[runtime.GOOS]
	if os == "" {
		os = runtime.GOOS
	}
	cpu := map[string]string{"amd64": "x64"}[runtime.GOARCH]
	if cpu == "" {
		cpu = runtime.GOARCH
	}
	return os + "-" + cpu
}

func npmPlatformName() string { return "@mcpflow/" + nodePlatform() }

// checkNames checks that out holds exactly the host's artifacts, named as
// the release workflow and the README expect.
func checkNames(t *testing.T, out string, a artifacts) {
	t.Helper()
	want := []string{"checksums.txt", rel(out, a.archive), rel(out, a.npmMain), rel(out, a.npmPlatform)}
	if a.wheel == "" {
		t.Fatal("no wheel in pypi/")
	}
	want = append(want, rel(out, a.wheel))
	slices.Sort(want)
	if got := keys(readTree(t, out)); !slices.Equal(got, want) {
		t.Errorf("dist wrote\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	wheelTag := map[string]string{
		"linux/amd64": "manylinux_2_17_x86_64", "linux/arm64": "manylinux_2_17_aarch64",
		"darwin/amd64": "macosx_12_0_x86_64", "darwin/arm64": "macosx_12_0_arm64",
		"windows/amd64": "win_amd64", "windows/arm64": "win_arm64",
	}[runtime.GOOS+"/"+runtime.GOARCH]
	name := filepath.Base(a.wheel)
	if !strings.HasPrefix(name, "mcpflow-"+a.pyVer+"-py3-none-") || !strings.Contains(name, wheelTag) {
		t.Errorf("wheel %s: want mcpflow-%s-py3-none-...%s...whl", name, a.pyVer, wheelTag)
	}
}

// checkChecksums checks checksums.txt against the files, in Go and with
// sha256sum -c where there is one.
func checkChecksums(t *testing.T, out string) {
	t.Helper()
	files := readTree(t, out)
	sums := string(files["checksums.txt"])
	listed := 0
	for _, line := range strings.Split(strings.TrimSuffix(sums, "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("checksums.txt: bad line %q", line)
		}
		h := sha256.Sum256(files[name])
		if files[name] == nil || hex.EncodeToString(h[:]) != sum {
			t.Errorf("checksums.txt: %s does not match", name)
		}
		listed++
	}
	if listed != len(files)-1 {
		t.Errorf("checksums.txt lists %d files, want every other one (%d)", listed, len(files)-1)
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "-c", "checksums.txt")
		cmd.Dir = out
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c checksums.txt: %v\n%s", err, b)
		}
	}
}

// checkArchive checks the archive's files and modes (one folder named as
// the archive, holding the binary, executable, LICENSE and README.md) and
// writes the binary into dir.
func checkArchive(t *testing.T, a artifacts, dir string) string {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(a.archive), ".tar.gz")
	f, err := os.Open(a.archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var bin []byte
	tr := tar.NewReader(bufio.NewReader(gz))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h.Mode
		if h.Name == base+"/mcpflow" {
			if bin, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]int64{base + "/": 0o755, base + "/mcpflow": 0o755, base + "/LICENSE": 0o644, base + "/README.md": 0o644}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("archive holds %v, want %v", got, want)
	}
	path := filepath.Join(dir, "mcpflow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkWheel checks the wheel's layout, RECORD and the binary's mode.
func checkWheel(t *testing.T, a artifacts) {
	t.Helper()
	zr, err := zip.OpenReader(a.wheel)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	info := "mcpflow-" + a.pyVer + ".dist-info/"
	files := map[string][]byte{}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name], _ = io.ReadAll(rc)
		rc.Close()
		if f.Name == "mcpflow/bin/mcpflow" && f.Mode().Perm() != 0o755 {
			t.Errorf("the wheel's binary has mode %v, want 0755", f.Mode())
		}
	}
	if len(names) == 0 || names[len(names)-1] != info+"RECORD" {
		t.Errorf("wheel entries %v: want %sRECORD last", names, info)
	}
	for _, n := range []string{"mcpflow/__init__.py", "mcpflow/__main__.py", "mcpflow/bin/mcpflow", info + "METADATA", info + "WHEEL", info + "entry_points.txt"} {
		if files[n] == nil {
			t.Errorf("the wheel has no %s", n)
		}
	}
	if !strings.Contains(string(files[info+"METADATA"]), "\nVersion: "+a.pyVer+"\n") {
		t.Errorf("METADATA does not say Version: %s", a.pyVer)
	}
	if !strings.Contains(string(files[info+"entry_points.txt"]), "mcpflow = mcpflow.__main__:main") {
		t.Errorf("entry_points.txt: %q", files[info+"entry_points.txt"])
	}
	recorded := 0
	for _, line := range strings.Split(strings.TrimSpace(string(files[info+"RECORD"])), "\n") {
		parts := strings.Split(line, ",")
		if len(parts) != 3 {
			t.Fatalf("RECORD line %q", line)
		}
		if parts[0] == info+"RECORD" {
			continue
		}
		sum := sha256.Sum256(files[parts[0]])
		if parts[1] != "sha256="+base64.RawURLEncoding.EncodeToString(sum[:]) || parts[2] != strconv.Itoa(len(files[parts[0]])) {
			t.Errorf("RECORD: %s does not match", parts[0])
		}
		recorded++
	}
	if recorded != len(names)-1 {
		t.Errorf("RECORD lists %d files, the wheel has %d besides RECORD", recorded, len(names)-1)
	}
}

// checkNPMManifests checks the installed packages' package.json.
func checkNPMManifests(t *testing.T, proj string, a artifacts) {
	t.Helper()
	var main, plat struct {
		Version              string
		Bin                  map[string]string
		OS, CPU              []string
		OptionalDependencies map[string]string
	}
	readJSON(t, filepath.Join(proj, "node_modules", "mcpflow", "package.json"), &main)
	readJSON(t, filepath.Join(proj, "node_modules", "@mcpflow", nodePlatform(), "package.json"), &plat)
	if main.Bin["mcpflow"] != "bin/mcpflow.js" || len(main.OptionalDependencies) != 6 {
		t.Errorf("mcpflow's package.json: bin %v, optionalDependencies %v", main.Bin, main.OptionalDependencies)
	}
	for name, v := range main.OptionalDependencies {
		if v != a.npmVer || !strings.HasPrefix(name, "@mcpflow/") {
			t.Errorf("optional dependency %s@%s, want @mcpflow/...@%s", name, v, a.npmVer)
		}
	}
	os, cpu, _ := strings.Cut(nodePlatform(), "-")
	if plat.Version != a.npmVer || !slices.Equal(plat.OS, []string{os}) || !slices.Equal(plat.CPU, []string{cpu}) {
		t.Errorf("%s: version %s, os %v, cpu %v", npmPlatformName(), plat.Version, plat.OS, plat.CPU)
	}
}

// npmInstall installs tarballs into a new project at dir, offline (no
// registry: the other platforms' optional packages are left out).
func npmInstall(t *testing.T, dir string, tarballs ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", "--cache", filepath.Join(dir, ".npm-cache")}
	cmd := exec.Command("npm", append(args, tarballs...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
}

// pipInstall makes a venv and installs the wheel into it, offline. The
// venv gets no pip of its own when python3 has one that can install into
// it (--python), which saves the seconds ensurepip takes.
func pipInstall(t *testing.T, venv, wheel string) {
	t.Helper()
	python := filepath.Join(venv, "bin", "python")
	mkvenv := []string{"python3", "-m", "venv", "--without-pip", venv}
	pip := []string{"python3", "-m", "pip", "--python", python}
	if exec.Command("python3", "-m", "pip", "--version").Run() != nil {
		mkvenv = []string{"python3", "-m", "venv", venv}
		pip = []string{python, "-m", "pip"}
	}
	if out, err := exec.Command(mkvenv[0], mkvenv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(mkvenv, " "), err, out)
	}
	pip = append(pip, "install", "--no-index", "--no-deps", "--disable-pip-version-check", "--quiet", wheel)
	if out, err := exec.Command(pip[0], pip[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(pip, " "), err, out)
	}
}

// sessionProject writes an mcpflow.toml in dir that runs the fixture.
func sessionProject(t *testing.T, dir, fixture string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcpflow.toml")
	toml := fmt.Sprintf(`[run]
command = [%q]
stop_timeout = "1s"

[watch]
paths = ["."]
include = ["*.txt"]
debounce = "50ms"

[log]
level = "info"
file = "mcpflow.log"
`, fixture)
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// session is an MCP client session with `ENTRY watch -c CFG`. Every
// process started for it has the test's tag (testkit.Tag) in its
// environment, which mcpflow passes on to its server: that is how
// noneLeft finds them, whoever their parent is by then.
type session struct {
	cmd       *exec.Cmd
	cs        *mcp.ClientSession
	tag       string
	stderrLog string
}

func startSession(t *testing.T, cfg, entry string) *session {
	t.Helper()
	s := &session{tag: testkit.Tag(t)}
	s.cmd = exec.Command(entry, "watch", "-c", cfg)
	s.cmd.Dir = filepath.Dir(cfg)
	s.cmd.Env = append(os.Environ(), s.tag)
	// A file, not a pipe the test copies: Wait must not wait for a
	// process that outlives the entry point.
	s.stderrLog = filepath.Join(t.TempDir(), "stderr")
	f, err := os.Create(s.stderrLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.cmd.Stderr = f
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("entry point's stderr:\n%s", s.stderr())
		}
		testkit.Procs{Tag: s.tag}.Kill()
		if s.cmd.ProcessState == nil && s.cmd.Process != nil {
			s.cmd.Process.Kill()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "packaging-test", Version: "1"}, nil)
	// Close waits this long for an exit before it sends SIGTERM itself.
	transport := &mcp.CommandTransport{Command: s.cmd, TerminateDuration: 20 * time.Second}
	s.cs, err = client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect through %s: %v\n%s", entry, err, s.stderr())
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "through " + filepath.Base(entry)}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("tools/call echo: %v %+v\n%s", err, res, s.stderr())
	}
	if text, _ := res.Content[0].(*mcp.TextContent); text == nil || text.Text != "through "+filepath.Base(entry) {
		t.Fatalf("tools/call echo answered %+v", res.Content[0])
	}
	if live := (testkit.Procs{Tag: s.tag}).Live(); len(live) < 2 {
		t.Fatalf("processes of the session: %v; want at least mcpflow and its server", live)
	}
	return s
}

func (s *session) stderr() string {
	b, _ := os.ReadFile(s.stderrLog)
	return string(b)
}

// noneLeft waits until no process of the session is left.
func (s *session) noneLeft(t *testing.T) {
	t.Helper()
	testkit.NoLeftovers(t, testkit.Procs{Tag: s.tag})
}

// waitExited waits until pid (a child of the test, not yet reaped) has
// exited.
func waitExited(t *testing.T, pid int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("process %d to exit", pid), func() bool { return !testkit.Alive(pid) })
}

// readTree reads every file under dir, by slash path relative to dir.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files[rel(dir, path)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func rel(dir, path string) string {
	r, err := filepath.Rel(dir, path)
	if err != nil {
		panic(err)
	}
	return filepath.ToSlash(r)
}

func keys(m map[string][]byte) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// runOut runs a command and returns its stdout; it must exit 0.
func runOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// runCode runs a command and returns its exit code and stderr.
func runCode(t *testing.T, name string, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}
