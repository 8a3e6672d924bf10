// Command dist builds mcpflow's release artifacts (`make dist`). From the
// repository root:
//
//	go run ./packaging/dist [-out dist] [-host] [-version V]
//
// For each platform (linux, darwin and windows, each amd64 and arm64; only
// the one it runs on with -host) it cross-builds cmd/mcpflow with
//
//	CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.buildVersion=V"
//
// so that `mcpflow version` prints V through every channel, and writes into
// the output folder:
//
//	mcpflow_V_OS_ARCH.tar.gz (.zip for windows)      binary, LICENSE, README.md
//	npm/mcpflow-OS-CPU-NV.tgz                         npm package @mcpflow/OS-CPU
//	pypi/mcpflow-PV-py3-none-TAGS.whl                 Python wheel
//
// then npm/mcpflow-NV.tgz (the npm package mcpflow, whose bin entry runs the
// binary of the platform package npm installed beside it) and checksums.txt
// (sha256 of every file, for sha256sum -c). V is the tag at HEAD (v1.2.3),
// else `git describe --always --dirty`; NV and PV are V as npm (semver) and
// PyPI (PEP 440) spell it (1.2.3; an untagged build is 0.0.0-dev.HASH and
// 0.0.0.dev0+HASH). The leading "v" is dropped from file names.
//
// The output is reproducible: the same commit and Go toolchain give the
// same bytes. Every file in an archive, tarball or wheel has the commit's
// time (or SOURCE_DATE_EPOCH), uid and gid 0, mode 0644 or 0755, and comes
// in a fixed order.
//
// The npm launcher and the wheel's Python package are files in
// packaging/npm and packaging/python; the package README is
// packaging/package-readme.md.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// target is one platform, named as Go, Node and Python's wheels name it.
type target struct {
	goos, goarch string
	nodeOS       string   // process.platform
	nodeCPU      string   // process.arch
	wheelTags    []string // platform tags of the wheel
}

// The binary is static (CGO_ENABLED=0), so one Linux wheel serves glibc
// (manylinux, with the manylinux2014 alias older pips know) and musl
// (Alpine). Go 1.25 and later need macOS 12: the wheels say so.
var targets = []target{
	{"linux", "amd64", "linux", "x64", []string{"manylinux_2_17_x86_64", "manylinux2014_x86_64", "musllinux_1_1_x86_64"}},
	{"linux", "arm64", "linux", "arm64", []string{"manylinux_2_17_aarch64", "manylinux2014_aarch64", "musllinux_1_1_aarch64"}},
	{"darwin", "amd64", "darwin", "x64", []string{"macosx_12_0_x86_64"}},
	{"darwin", "arm64", "darwin", "arm64", []string{"macosx_12_0_arm64"}},
	{"windows", "amd64", "win32", "x64", []string{"win_amd64"}},
	{"windows", "arm64", "win32", "arm64", []string{"win_arm64"}},
}

func (t target) exe() string {
	if t.goos == "windows" {
		return "mcpflow.exe"
	}
	return "mcpflow"
}

// npmName is the platform package's name, as esbuild and Biome name theirs:
// a scoped package per platform, in Node's own platform and arch words.
func (t target) npmName() string { return npmScope + "/" + t.nodeOS + "-" + t.nodeCPU }

const npmScope = "@mcpflow"

// release is what every artifact is made of.
type release struct {
	root    string // repository root
	out     string
	version string // what `mcpflow version` prints
	npmVer  string
	pyVer   string
	mtime   time.Time
	license []byte
	readme  []byte // README.md, for the archives
	pkgDoc  []byte // packaging/package-readme.md, for npm and PyPI
}

func main() {
	root := flag.String("root", ".", "the repository root")
	out := flag.String("out", "dist", "the output folder (emptied first)")
	host := flag.Bool("host", false, "build only the platform this runs on")
	version := flag.String("version", "", "the version (default: the v* tag at HEAD, else git describe --always --dirty)")
	flag.Parse()
	if err := run(*root, *out, *version, *host); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(root, out, version string, host bool) error {
	start := time.Now()
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "mcpflow")); err != nil {
		return fmt.Errorf("%s is not the mcpflow repository root (-root)", root)
	}
	r := &release{root: root, out: out, version: version}
	if r.version == "" {
		if r.version, err = gitVersion(root); err != nil {
			return err
		}
	}
	if !regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]*$`).MatchString(r.version) {
		return fmt.Errorf("version %q: only letters, digits and . + _ -", r.version)
	}
	r.npmVer, r.pyVer = npmVersion(r.version), pyVersion(r.version)
	if r.mtime, err = sourceTime(root); err != nil {
		return err
	}
	for _, f := range []struct {
		dst  *[]byte
		name string
	}{{&r.license, "LICENSE"}, {&r.readme, "README.md"}, {&r.pkgDoc, "packaging/package-readme.md"}} {
		data, err := os.ReadFile(filepath.Join(root, f.name))
		if err != nil {
			return err
		}
		*f.dst = lf(data)
	}
	todo := targets
	if host {
		todo = nil
		for _, t := range targets {
			if t.goos == runtime.GOOS && t.goarch == runtime.GOARCH {
				todo = append(todo, t)
			}
		}
		if todo == nil {
			return fmt.Errorf("no release target for this host (%s/%s)", runtime.GOOS, runtime.GOARCH)
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for _, d := range []string{out, filepath.Join(out, "npm"), filepath.Join(out, "pypi")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "mcpflow-dist")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(os.Stderr, "dist: mcpflow %s (npm %s, PyPI %s), files dated %s\n", r.version, r.npmVer, r.pyVer, r.mtime.Format(time.RFC3339))

	// Builds run one per core (go build compiles in parallel too, but a
	// link is one core); each platform's packing (three compressions, one
	// core each) runs beside the next builds.
	names := make([]string, len(todo))
	for i, t := range todo {
		names[i] = t.goos + "/" + t.goarch
	}
	fmt.Fprintf(os.Stderr, "dist: building %s, %d at a time; for each: archive, npm package, wheel\n", strings.Join(names, ", "), runtime.NumCPU())
	errs := make([]error, len(todo))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, t := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			start := time.Now()
			data, err := r.build(t, tmp)
			<-sem
			if err != nil {
				errs[i] = err
				return
			}
			built := time.Since(start)
			errs[i] = r.pack(t, data)
			fmt.Fprintf(os.Stderr, "dist: %s/%s: %.1f MB binary, built in %.1fs, packed in %.1fs\n",
				t.goos, t.goarch, float64(len(data))/1e6, built.Seconds(), (time.Since(start) - built).Seconds())
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if err := r.npmMain(); err != nil {
		return err
	}
	if err := writeChecksums(out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dist: wrote %s in %.1fs\n", out, time.Since(start).Seconds())
	return nil
}

// build cross-builds t's binary and returns it.
func (r *release) build(t target, tmp string) ([]byte, error) {
	bin := filepath.Join(tmp, t.goos+"_"+t.goarch, t.exe())
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.buildVersion="+r.version, "-o", bin, "./cmd/mcpflow")
	cmd.Dir = r.root
	// The environment a build depends on is set here, not inherited.
	cmd.Env = append(os.Environ(), "GOOS="+t.goos, "GOARCH="+t.goarch, "CGO_ENABLED=0",
		"GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s/%s: %v\n%s", t.goos, t.goarch, err, out)
	}
	return os.ReadFile(bin)
}

// pack writes t's archive, npm package and wheel of data, its binary, at
// once.
func (r *release) pack(t target, data []byte) error {
	var errs [3]error
	var wg sync.WaitGroup
	for i, f := range []func(target, []byte) error{r.archive, r.npmPlatform, r.wheel} {
		wg.Go(func() { errs[i] = f(t, data) })
	}
	wg.Wait()
	return errors.Join(errs[:]...)
}

// gitVersion is the v* tag at HEAD (with -dirty for uncommitted changes),
// else `git describe --always --dirty`.
func gitVersion(root string) (string, error) {
	describe, err := git(root, "describe", "--always", "--dirty")
	if err != nil {
		return "", err
	}
	tags, err := git(root, "tag", "--points-at", "HEAD", "--list", "v*", "--sort=-version:refname")
	if err != nil {
		return "", err
	}
	if tags == "" {
		return describe, nil
	}
	v := strings.Fields(tags)[0]
	if strings.HasSuffix(describe, "-dirty") {
		v += "-dirty"
	}
	return v, nil
}

// sourceTime is SOURCE_DATE_EPOCH if set, else the commit time of HEAD.
func sourceTime(root string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		var err error
		if s, err = git(root, "log", "-1", "--format=%ct", "HEAD"); err != nil {
			return time.Time{}, err
		}
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH or commit time %q: %v", s, err)
	}
	// Zip (DOS) times start in 1980.
	if t := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC); sec < t.Unix() {
		return t, nil
	}
	return time.Unix(sec, 0).UTC(), nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

var semverRE = regexp.MustCompile(`^v?(\d+\.\d+\.\d+)(?:-([0-9A-Za-z.-]+))?$`)

// npmVersion is v as a semver: a tag without its "v", else 0.0.0-dev.ID
// with ID what git describe printed, in dot-separated parts.
func npmVersion(v string) string {
	if m := semverRE.FindStringSubmatch(v); m != nil {
		return strings.TrimPrefix(v, "v")
	}
	return "0.0.0-dev." + strings.Join(idParts(v), ".")
}

var pyPreRE = regexp.MustCompile(`^(alpha|a|beta|b|rc|c|pre|preview)\.?(\d+)$`)

// pyVersion is v as PEP 440 spells it: 1.2.3, 1.2.3rc1 for -rc.1 (and a, b
// for alpha, beta), 1.2.3+dirty; 0.0.0.dev0+ID for an untagged build.
func pyVersion(v string) string {
	m := semverRE.FindStringSubmatch(v)
	if m == nil {
		return "0.0.0.dev0+" + strings.ToLower(strings.Join(idParts(v), "."))
	}
	base, pre := m[1], m[2]
	if pre == "" {
		return base
	}
	if p := pyPreRE.FindStringSubmatch(pre); p != nil {
		letter := map[string]string{"alpha": "a", "a": "a", "beta": "b", "b": "b", "rc": "rc", "c": "rc", "pre": "rc", "preview": "rc"}[p[1]]
		n, _ := strconv.Atoi(p[2])
		return fmt.Sprintf("%s%s%d", base, letter, n)
	}
	return base + "+" + strings.ToLower(strings.Join(idParts(pre), "."))
}

// idParts splits s at anything but letters and digits; an all-digit part
// with a leading zero (not a valid semver number) gets an "x" in front.
func idParts(s string) []string {
	parts := strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	for i, p := range parts {
		if len(p) > 1 && p[0] == '0' && strings.Trim(p, "0123456789") == "" {
			parts[i] = "x" + p
		}
	}
	return parts
}

// fileVersion is the version in file names: without the tag's "v".
func (r *release) fileVersion() string { return strings.TrimPrefix(r.version, "v") }

// writeChecksums writes out/checksums.txt: the sha256 of every other file
// under out, by path relative to out, sorted.
func writeChecksums(out string) error {
	var names []string
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, path)
		if err != nil {
			return err
		}
		if rel != "checksums.txt" {
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sha256Hex(data), n)
	}
	return os.WriteFile(filepath.Join(out, "checksums.txt"), []byte(b.String()), 0o644)
}
