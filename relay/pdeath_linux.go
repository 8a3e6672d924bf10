package relay

import "syscall"

// setDeathSignal makes the kernel kill the child if mcpflow itself dies
// without a chance to stop it (SIGKILL, OOM).
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
