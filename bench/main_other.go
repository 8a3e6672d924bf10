//go:build !linux

package main

import (
	"fmt"
	"os"
)

// The benchmark reads /proc and relies on the parent-death signal: it runs
// on Linux only.
func main() {
	fmt.Fprintln(os.Stderr, "bench: runs on Linux only (it reads /proc for memory and leak checks)")
	os.Exit(2)
}
