package clock

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// A waker is a short sleep that another goroutine can end: Precise's
// clock naps on one through the last stretch before its next timer, and
// a timer set meanwhile for an earlier instant ends the nap at once. A
// plain nanosleep would fire that timer only when the nap ended, up to
// nanoStep late: kernel mode's links without delay, whose packets are
// due the instant they arrive, were delivered about 200 µs late that
// way (docs/TOPOLOGIES.md).
//
// On Linux it is a futex wait with a timeout, which, like nanosleep,
// the kernel ends on time for a real-time thread.
type waker struct {
	seq     atomic.Uint32 // the futex word: each wake adds one
	waiting atomic.Bool   // a sleep may be under way
}

const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// ticket begins a sleep: a wake after it ends the sleep that passes it
// to sleep, even one that comes before the sleep does.
func (w *waker) ticket() uint32 {
	w.waiting.Store(true)
	return w.seq.Load()
}

// sleep blocks the calling thread for about d, or until a wake after
// ticket t. The runtime treats it as a blocking system call.
func (w *waker) sleep(t uint32, d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&w.seq)), futexWaitPrivate, uintptr(t), uintptr(unsafe.Pointer(&ts)), 0, 0)
	w.waiting.Store(false)
}

// wake ends the sleep under way, if any, and the next one whose ticket
// was taken before it. It makes a system call only while a sleep may
// be under way.
func (w *waker) wake() {
	w.seq.Add(1)
	if w.waiting.Load() {
		syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&w.seq)), futexWakePrivate, 1, 0, 0, 0)
	}
}
