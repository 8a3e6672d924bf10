package main

import "golang.org/x/sys/unix"

// parentExit closes gone when the process ppid exits, until done, by
// waiting on its pidfd; false without one (a kernel before 5.3).
func parentExit(ppid int, done <-chan struct{}, gone chan<- struct{}) bool {
	fd, err := unix.PidfdOpen(ppid, 0)
	if err != nil {
		return false
	}
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return false
	}
	go func() {
		<-done
		unix.Close(wake[1])
	}()
	go func() {
		defer unix.Close(fd)
		defer unix.Close(wake[0])
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake[0]), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err == nil && fds[0].Revents != 0 && fds[1].Revents == 0 {
				close(gone)
			}
			return
		}
	}()
	return true
}
