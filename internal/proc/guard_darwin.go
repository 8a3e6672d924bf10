package proc

import "golang.org/x/sys/unix"

// children lists the processes whose parent is pid (macOS has no /proc:
// the kernel's process table, through sysctl).
func children(pid int) []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	var kids []int
	for i := range procs {
		if int(procs[i].Eproc.Ppid) == pid {
			kids = append(kids, int(procs[i].Proc.P_pid))
		}
	}
	return kids
}

// guardable reports nil: sysctl lists every process.
func guardable() error { return nil }
