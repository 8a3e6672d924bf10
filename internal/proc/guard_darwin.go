package proc

import "golang.org/x/sys/unix"

// guardable reports nil: sysctl lists every process.
func guardable() error { return nil }

// childLister lists a process's children (macOS has no /proc: the
// kernel's process table, through sysctl).
type childLister struct{ pid int }

func newChildLister(pid int) *childLister { return &childLister{pid: pid} }

// list returns the process's children now.
func (l *childLister) list() []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	var kids []int
	for i := range procs {
		if int(procs[i].Eproc.Ppid) == l.pid {
			kids = append(kids, int(procs[i].Proc.P_pid))
		}
	}
	return kids
}

func (l *childLister) close() {}
