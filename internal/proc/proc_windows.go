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
type groupSys struct{ job windows.Handle }

func prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
}

// attach assigns the started process to a new kill-on-close job. Processes
// the command starts from then on belong to the job too.
func attach(cmd *exec.Cmd) groupSys {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return groupSys{}
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return groupSys{}
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return groupSys{}
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return groupSys{}
	}
	return groupSys{job: job}
}

func (g groupSys) terminate(pid int) { g.kill(pid) }

func (g groupSys) kill(pid int) {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
		return
	}
	if h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid)); err == nil {
		_ = windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	}
}

func (g *groupSys) release() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
		g.job = 0
	}
}

// GroupAlive cannot tell on Windows; it reports false.
func GroupAlive(int) bool { return false }

// shell returns cmd /S /C "script args..." with the line passed verbatim
// (cmd.exe parses its command line itself).
func shell(ctx context.Context, script string, args ...string) *exec.Cmd {
	line := strings.Join(append([]string{script}, args...), " ")
	cmd := exec.CommandContext(ctx, "cmd.exe")
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `cmd.exe /S /C "` + line + `"`}
	return cmd
}
