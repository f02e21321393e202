//go:build unix

package experiment

import (
	"os"
	"syscall"
)

// pollable returns a copy of f (a worker's stdin) that reads through the
// runtime's poller, or nil where f cannot be made so. A goroutine waiting
// on it is parked in Go, not blocked in a system call: the virtual
// clock's idle probe counts goroutines in system calls as busy until it
// has seen one there for a while, every run anew, and a worker's stdin
// reader waits through every run (docs/PERFORMANCE.md, "Sweeps on several
// cores"). The copy has its own descriptor; non-blocking mode is shared
// with f, which the worker reads no more.
func pollable(f *os.File) *os.File {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return nil
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), f.Name())
}
