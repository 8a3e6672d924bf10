//go:build unix && !linux

package relay

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}
