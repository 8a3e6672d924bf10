//go:build windows

package proc

// The Windows paths of proc (Job Object, kill-on-close, Stop via stdin
// EOF or after the grace, ctx cancel, cmd /S /C, owner death), run by make
// test-windows under Wine (from the wine-windows kit's probes).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

const probeEnv = "PROC_PROBE_MODE"

// TestMain-free helper: the test binary re-runs itself in a mode.
func TestProbeHelper(t *testing.T) {
	mode := os.Getenv(probeEnv)
	if mode == "" {
		t.Skip("helper")
	}
	switch mode {
	case "sleep":
		time.Sleep(300 * time.Second)
	case "spawn", "spawn-exit", "spawn-eof", "spawn-ignore-eof":
		// Once in the job (it joins just after its start: a child started
		// before would escape it, README's known gap), start a grandchild
		// (sleep) and print its pid.
		for i := 0; i < 500 && !inJob(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		c := exec.Command(os.Args[0], "-test.run=^TestProbeHelper$")
		c.Env = append(os.Environ(), probeEnv+"=sleep")
		if err := c.Start(); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println(c.Process.Pid)
		switch mode {
		case "spawn-exit":
			os.Exit(0)
		case "spawn-eof":
			io.Copy(io.Discard, os.Stdin)
			os.Exit(0)
		case "spawn-ignore-eof":
			io.Copy(io.Discard, os.Stdin)
			time.Sleep(300 * time.Second)
		default:
			time.Sleep(300 * time.Second)
		}
	}
	os.Exit(0)
}

func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, _ := windows.WaitForSingleObject(h, 0)
	return ev == uint32(windows.WAIT_TIMEOUT)
}

func gone(pid int, d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if !alive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !alive(pid)
}

func helper(t *testing.T, mode string, grace time.Duration) (*Cmd, io.WriteCloser, int) {
	t.Helper()
	c := Command(context.Background(), Spec{Argv: []string{os.Args[0], "-test.run=^TestProbeHelper$"}, Env: append(os.Environ(), probeEnv+"="+mode)}, grace)
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	gc, err2 := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || err2 != nil {
		t.Fatalf("helper said %q: %v %v", line, err, err2)
	}
	if !alive(gc) {
		t.Fatalf("grandchild %d not alive", gc)
	}
	return c, in, gc
}

// inJob reports whether this process is in a job.
func inJob() bool {
	var in int32
	r, _, _ := windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob").Call(uintptr(windows.CurrentProcess()), 0, uintptr(unsafe.Pointer(&in)))
	return r != 0 && in != 0
}

func TestProbeJobAssigned(t *testing.T) {
	c, _, gc := helper(t, "spawn", time.Second)
	defer func() { c.Kill(); c.Wait() }()
	if c.sys.job == 0 {
		t.Fatal("no job object: attach failed")
	}
	h, _ := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION, false, uint32(gc))
	defer windows.CloseHandle(h)
	var in int32
	r, _, err := windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob").Call(uintptr(h), uintptr(c.sys.job), uintptr(unsafe.Pointer(&in)))
	if r == 0 || in == 0 {
		t.Fatalf("grandchild in job: %v %v", in, err)
	}
}

func TestProbeKillKillsGrandchild(t *testing.T) {
	c, _, gc := helper(t, "spawn", time.Second)
	t0 := time.Now()
	c.Kill()
	c.Wait()
	if !gone(gc, 5*time.Second) {
		t.Fatalf("grandchild %d survived Kill", gc)
	}
	t.Logf("leader+grandchild gone in %v", time.Since(t0))
}

func TestProbeKillAfterLeaderExit(t *testing.T) {
	c, _, gc := helper(t, "spawn-exit", time.Second)
	time.Sleep(200 * time.Millisecond)
	if !alive(gc) {
		t.Fatal("grandchild died with the leader")
	}
	c.Wait() // Wait releases: kills what is left
	if !gone(gc, 5*time.Second) {
		t.Fatalf("orphan grandchild %d survived Wait/Release", gc)
	}
}

func TestProbeStopByStdinEOF(t *testing.T) {
	c, in, gc := helper(t, "spawn-eof", 3*time.Second)
	go c.Wait()
	t0 := time.Now()
	c.Stop(in, 3*time.Second)
	d := time.Since(t0)
	if d > 2*time.Second {
		t.Errorf("Stop took %v: EOF not seen?", d)
	}
	if !gone(gc, 5*time.Second) {
		t.Fatalf("grandchild %d survived Stop", gc)
	}
	t.Logf("Stop by EOF: %v", d)
}

func TestProbeStopIgnoringEOF(t *testing.T) {
	c, in, gc := helper(t, "spawn-ignore-eof", 500*time.Millisecond)
	go c.Wait()
	t0 := time.Now()
	c.Stop(in, 500*time.Millisecond)
	d := time.Since(t0)
	if d < 400*time.Millisecond || d > 3*time.Second {
		t.Errorf("Stop took %v, want about the grace", d)
	}
	if !gone(gc, 5*time.Second) {
		t.Fatalf("grandchild %d survived Stop", gc)
	}
	t.Logf("Stop after grace: %v", d)
}

func TestProbeCancelKillsGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := Command(ctx, Spec{Argv: []string{os.Args[0], "-test.run=^TestProbeHelper$"}, Env: append(os.Environ(), probeEnv+"=spawn")}, time.Second)
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	cancel()
	err := c.Wait()
	if !gone(gc, 5*time.Second) {
		t.Fatalf("grandchild %d survived cancel", gc)
	}
	t.Logf("Wait after cancel: %v", err)
}

func TestProbeShell(t *testing.T) {
	var b bytes.Buffer
	c := Command(context.Background(), Spec{Argv: []string{"echo", "a", "b c"}, Shell: true}, time.Second)
	c.Stdout = &b
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(b.String()); got != `a b c` {
		t.Errorf("cmd /S /C echo: %q", got)
	}
	b.Reset()
	c = Command(context.Background(), Spec{Argv: []string{`exit 7`}, Shell: true}, time.Second)
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("exit 7: %v", err)
	}
}

// The job's handle closing (its owner dying) kills the group: run a
// sub-helper that starts a group and is then killed hard.
func TestProbeOwnerDeathKillsGroup(t *testing.T) {
	if os.Getenv(probeEnv) == "owner" {
		c := Command(context.Background(), Spec{Argv: []string{os.Args[0], "-test.run=^TestProbeHelper$"}, Env: append(os.Environ(), probeEnv+"=spawn")}, time.Second)
		out, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		fmt.Printf("%d %s", c.Process.Pid, line)
		time.Sleep(300 * time.Second)
	}
	o := exec.Command(os.Args[0], "-test.run=^TestProbeOwnerDeathKillsGroup$")
	o.Env = append(os.Environ(), probeEnv+"=owner")
	out, _ := o.StdoutPipe()
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	var leader, gc int
	fmt.Sscan(line, &leader, &gc)
	if !alive(leader) || !alive(gc) {
		t.Fatalf("not started: %q", line)
	}
	o.Process.Kill() // TerminateProcess: the owner's handles close
	o.Wait()
	if !gone(leader, 5*time.Second) || !gone(gc, 5*time.Second) {
		t.Fatalf("owner killed, group survived: leader %v gc %v", alive(leader), alive(gc))
	}
}
