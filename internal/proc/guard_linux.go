package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// guardable reports why the guard cannot work here, if it cannot: the
// kernel lacks the children files (CONFIG_PROC_CHILDREN, on in the kernels
// of the common distributions).
func guardable() error {
	pid := strconv.Itoa(os.Getpid())
	if _, err := readProc("/proc/"+pid+"/task/"+pid+"/children", make([]byte, 512)); err != nil {
		return fmt.Errorf("the kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN): %w", err)
	}
	return nil
}

// children lists the processes whose parent is pid, from the children
// file of each of pid's threads (a child belongs to the thread that
// forked it). The guard calls it every GuardInterval, so it reads with
// plain system calls into one buffer.
func children(pid int) []int {
	buf := make([]byte, 4096)
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	var kids []int
	for _, tid := range dirNames(dir, buf) {
		b, _ := readProc(dir+tid+"/children", buf)
		kids = appendInts(kids, b)
	}
	return kids
}

// readProc reads a small /proc file whole, into buf when it fits.
func readProc(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	b := buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if n <= 0 || err != nil {
			return b, err
		}
		b = b[:len(b)+n]
	}
}

// dirNames lists a directory's names, using buf for the system call.
func dirNames(dir string, buf []byte) []string {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var names []string
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if n <= 0 || err != nil {
			return names
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}

// appendInts appends the numbers among b's words.
func appendInts(to []int, b []byte) []int {
	for _, w := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(w)); err == nil {
			to = append(to, n)
		}
	}
	return to
}
