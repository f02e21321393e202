//go:build unix

package clock

import (
	"os"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// A goroutine blocked in a system call for good (a reader of a pipe) holds
// back the first run that meets it for syscallPatience checks; the runs
// after it know it already.
func TestBlockedSyscallLearntOnce(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd := int(r.Fd()) // blocking mode: the read stays in the system call
	read := make(chan struct{})
	go func() {
		var b [1]byte
		syscall.Read(fd, b[:])
		close(read)
	}()
	defer func() {
		w.Close()
		<-read
	}()
	checks := func() uint64 {
		v := NewVirtual(0, nil)
		defer v.Close()
		done := make(chan struct{})
		v.AfterFunc(time.Millisecond, func() { close(done) })
		<-done
		return v.checks.Load()
	}
	stepMu.Lock()
	blockedInSyscall = 0 // as in a new process
	stepMu.Unlock()
	for !inSyscall() {
		time.Sleep(time.Millisecond)
	}
	if c := checks(); c < syscallPatience {
		t.Errorf("first run: %d checks; want %d or more while it learns the blocked reader", c, syscallPatience)
	}
	if c := checks(); c >= syscallPatience {
		t.Errorf("second run: %d checks; want fewer than %d: the blocked reader is known", c, syscallPatience)
	}
}

// inSyscall reports whether a goroutine of the process is in a system call.
func inSyscall() bool {
	s := []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64() > 0
}
