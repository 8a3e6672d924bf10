//go:build linux || darwin || freebsd

package control

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A process of another uid can neither reach the socket through the 0700
// folder nor, with the permissions opened, be served by the instance.
func TestPeerAsAnotherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("connecting as another uid needs root")
	}
	const nobody = 65534
	base, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o711)
	s := listenT(t, Info{Dir: filepath.Join(base, "mcpflow"), Target: &fakeTarget{name: "x"}})

	// This test binary, where the other uid may run it, is the client.
	bin := filepath.Join(base, "control.test")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, self, bin)
	asNobody := func() string {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), clientEnv+"="+s.Path())
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the client as uid %d: %v\n%s", nobody, err, out)
		}
		return string(out)
	}
	if out := asNobody(); !strings.Contains(out, "connect: permission denied") {
		t.Fatalf("another uid reached the socket through the folder: %s", out)
	}
	os.Chmod(filepath.Dir(s.Path()), 0o711)
	os.Chmod(s.Path(), 0o666)
	if out := asNobody(); !strings.Contains(out, "permission denied: uid 65534 may not control an instance of uid 0") {
		t.Fatalf("another uid was not refused: %s", out)
	}
	if _, err := dialAndStatus(t, s.Path()); err != nil {
		t.Fatalf("the instance's own user after the refusal: %v", err)
	}
}

func dialAndStatus(t *testing.T, sock string) (Status, error) {
	ctx := ctxT(t)
	c := dial(sock)
	defer c.Close()
	return c.Status(ctx)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
