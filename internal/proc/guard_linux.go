package proc

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// guardable reports why the guard cannot work here, if it cannot: the
// kernel lacks the children files (CONFIG_PROC_CHILDREN, on in the kernels
// of the common distributions).
func guardable() error {
	path := "/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("the kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN): %w", err)
	}
	return nil
}

// childLister lists a process's children from the children file of each
// of its threads (a child belongs to the thread that forked it). The guard
// looks every GuardInterval, so the files stay open between looks: reading
// a /proc file again costs a tenth of opening it.
type childLister struct {
	dir   string         // /proc/PID/task/
	dirFD int            // dir, open; -1 once it cannot be opened
	files map[string]int // thread id → its children file, open
	buf   []byte
}

func newChildLister(pid int) *childLister {
	l := &childLister{dir: "/proc/" + strconv.Itoa(pid) + "/task/", files: map[string]int{}, buf: make([]byte, 4096)}
	var err error
	if l.dirFD, err = syscall.Open(l.dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0); err != nil {
		l.dirFD = -1
	}
	return l
}

// list returns the process's children now (none once it is gone).
func (l *childLister) list() []int {
	if l.dirFD < 0 {
		return nil
	}
	var tids []string
	if _, err := syscall.Seek(l.dirFD, 0, 0); err != nil {
		return nil
	}
	for {
		n, err := syscall.ReadDirent(l.dirFD, l.buf)
		if n <= 0 || err != nil {
			break
		}
		_, _, tids = syscall.ParseDirent(l.buf[:n], -1, tids)
	}
	for tid, fd := range l.files { // threads that exited
		if !slices.Contains(tids, tid) {
			_ = syscall.Close(fd)
			delete(l.files, tid)
		}
	}
	var kids []int
	for _, tid := range tids {
		fd, ok := l.files[tid]
		if !ok {
			var err error
			if fd, err = syscall.Open(l.dir+tid+"/children", syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != nil {
				continue
			}
			l.files[tid] = fd
		}
		kids = appendInts(kids, l.read(fd))
	}
	return kids
}

// read reads an open /proc file from its start.
func (l *childLister) read(fd int) []byte {
	n := 0
	for {
		if n == len(l.buf) {
			l.buf = append(l.buf, make([]byte, len(l.buf))...)
		}
		m, err := syscall.Pread(fd, l.buf[n:], int64(n))
		if m <= 0 || err != nil {
			return l.buf[:n]
		}
		n += m
	}
}

// close closes the files.
func (l *childLister) close() {
	for _, fd := range l.files {
		_ = syscall.Close(fd)
	}
	if l.dirFD >= 0 {
		_ = syscall.Close(l.dirFD)
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
