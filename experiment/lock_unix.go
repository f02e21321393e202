//go:build unix

package experiment

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes f's exclusive lock, without waiting: one process writes
// a results file at a time. The lock goes with the file's closing, or
// the process's end.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errors.New("another netemu sweep is writing it; wait for that one, or give another file")
	}
	return err
}
