//go:build unix

package experiment

import (
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns a copy of f (a worker's stdin) that reads through the
// runtime's poller, or nil where f is not a pipe or cannot be made so. A
// goroutine waiting on it is parked in Go, not blocked in a system call:
// the virtual clock's idle probe counts goroutines in system calls as busy
// until it has seen one there for a while, and a worker's stdin reader
// waits through every run (docs/PERFORMANCE.md, "Sweeps on several
// cores"). The copy has its own descriptor, closed on exec; non-blocking
// mode is shared with f, which the worker reads no more, and only ever
// set on a pipe (the sweep's), never on a terminal.
func pollable(f *os.File) *os.File {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), f.Name())
}
