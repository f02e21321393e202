//go:build unix

package clock

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// A goroutine blocked in a system call for good (here a blocking read of a
// pipe nobody writes) must not stop virtual time; one that is only briefly
// in a system call is waited for.
func TestVirtualIgnoresGoroutineStuckInSyscall(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Skip(err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	released := make(chan struct{})
	go func() {
		buf := make([]byte, 1)
		syscall.Read(fds[0], buf) // blocks in the kernel until written
		close(released)
	}()
	v := NewVirtual(0, nil)
	defer v.Close()
	for range 3 {
		if !Sleep(context.Background(), v, time.Second) {
			t.Fatal("Sleep failed")
		}
	}
	if v.Elapsed() != 3*time.Second {
		t.Errorf("elapsed %v, want 3s", v.Elapsed())
	}
	syscall.Write(fds[1], []byte{1})
	<-released
}
