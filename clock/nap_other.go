//go:build !linux

package clock

import "time"

// nap sleeps for about d on the runtime's timers, the portable way to
// sleep briefly outside Linux. They may be coarser than Linux's
// nanosleep; Precise is then only as punctual as they are.
func nap(d time.Duration) { time.Sleep(d) }
