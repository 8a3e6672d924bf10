//go:build windows

package proc

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// groupSys holds the Job Object the command was assigned to; killing the
// job (or closing its last handle) kills every process in it, grandchildren
// included.
type groupSys struct {
	job windows.Handle
	pid int // the leader
}

// startGroup starts cmd in a new process group and assigns it to a new
// kill-on-close job. Processes the command starts from then on belong to
// the job too.
func startGroup(cmd *exec.Cmd) (groupSys, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
	if err := cmd.Start(); err != nil {
		return groupSys{}, err
	}
	return groupSys{job: attach(cmd), pid: cmd.Process.Pid}, nil
}

// attach assigns the started process to a new kill-on-close job; 0 if it
// cannot.
func attach(cmd *exec.Cmd) windows.Handle {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return 0
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return 0
	}
	return job
}

func (g groupSys) terminate() { g.kill() }

func (g groupSys) kill() {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
		return
	}
	if h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(g.pid)); err == nil {
		_ = windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	}
}

// release kills what is left of the group and closes the job.
func (g *groupSys) release() {
	g.kill()
	if g.job != 0 {
		windows.CloseHandle(g.job)
		g.job = 0
	}
}

// ShellName is how a script is run, as messages name it.
const ShellName = "cmd /S /C"

// shell returns cmd /S /C "script args..." with the line passed verbatim
// (cmd.exe parses its command line itself).
func shell(ctx context.Context, script string, args ...string) *exec.Cmd {
	line := strings.Join(append([]string{script}, args...), " ")
	cmd := exec.CommandContext(ctx, "cmd.exe")
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `cmd.exe /S /C "` + line + `"`}
	return cmd
}
