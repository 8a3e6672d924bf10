package relay

import (
	"os"
	"syscall"
)

// pipeSize is what large messages move through: a 64 KiB pipe (Linux's
// default) costs a context switch per 64 KiB on each side.
const pipeSize = 1 << 20

// GrowPipe enlarges the pipe behind f, if f is one (mcpflow's stdout, a
// child's stdio): large messages then cost fewer context switches. Best
// effort: the kernel caps it at /proc/sys/fs/pipe-max-size.
func GrowPipe(f *os.File) {
	if f == nil {
		return
	}
	const fSetPipeSz = 1031 // F_SETPIPE_SZ
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, pipeSize)
		})
	}
}
