package clock

import (
	"syscall"
	"time"
)

// nap blocks the calling thread for about d (plus the kernel's timer
// slack) in a nanosleep system call, which the runtime treats as a
// blocking system call: the processor is handed to other goroutines if
// the nap lasts.
func nap(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	syscall.Nanosleep(&ts, nil)
}
