package main

import (
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/mcpflow/mcpflow/internal/proc"
)

// guardCommand is the hidden subcommand "mcpflow __guard PID" (internal/proc's guard).
const guardCommand = "__guard"

// startGuard starts this binary as the guard that kills the run's process
// groups should mcpflow die without stopping them; call the result when the
// run is over. A test binary (the executable is the test) starts none.
func startGuard(logger *slog.Logger) (stop func()) {
	if testing.Testing() {
		return func() {}
	}
	exe, err := os.Executable()
	if err == nil {
		stop, err = proc.StartGuard([]string{exe, guardCommand}, func(err error) {
			logger.Error("mcpflow's guard died", "err", err)
		})
	}
	if err != nil {
		logger.Warn("no guard: should mcpflow be killed, what it started may outlive it", "err", err)
		return func() {}
	}
	return stop
}

// cmdGuard watches mcpflow (PID) until its stdin closes.
func cmdGuard(e env, args []string) int {
	if len(args) != 1 {
		return exitUsage
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil {
		return exitUsage
	}
	runtime.GOMAXPROCS(1)
	proc.RunGuard(e.stdin, pid)
	return exitOK
}
