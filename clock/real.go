package clock

import "time"

// Real is the wall clock. Its zero value is ready to use.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc, whose runtime timers saturate a due
// time past the end of time: such a timer never fires.
func (Real) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

// Wake calls f at once.
func (Real) Wake(f func()) { f() }

type realTimer struct{ t *time.Timer }

func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// SpawnsTimerGoroutines implements SpawningTimers: time.AfterFunc runs f
// on a new goroutine.
func (Real) SpawnsTimerGoroutines() {}

// Since implements Monotonic with time.Since.
func (Real) Since(t time.Time) time.Duration { return time.Since(t) }
