//go:build unix && !linux

package main

// parentExit: no pidfd here; the caller polls.
func parentExit(int, <-chan struct{}, chan<- struct{}) bool { return false }
