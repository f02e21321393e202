package clock

import (
	"math"
	"time"
)

// Clock is the time source and timer factory of a run.
type Clock interface {
	// Now returns the current time of the run.
	Now() time.Time

	// AfterFunc arranges for f to be called once d has elapsed on this
	// clock. f must not block. A due time past the end of time (more than
	// math.MaxInt64 nanoseconds from the clock's start) saturates there:
	// such a timer is pending but never fires.
	AfterFunc(d time.Duration, f func()) Timer

	// Wake arranges for f to run as an event of its own: on the virtual
	// clock once the run is idle, after the wakes queued before it; on the
	// wall clocks (Real, Precise) at once, on the caller's goroutine. f
	// must not block; it typically readies a goroutine parked on a channel.
	//
	// Wake is how code outside the scheduler (a TCP stack notifying a
	// reader) hands control back in order, which keeps virtual runs
	// deterministic when several goroutines become ready at one instant.
	Wake(f func())
}

// Timer is a single pending call made by AfterFunc.
type Timer interface {
	// Stop cancels the call. It reports whether the call was still
	// pending.
	Stop() bool

	// Reset makes the timer fire d from now, whether or not it was
	// pending. It reports whether the call was still pending.
	Reset(d time.Duration) bool
}

// endOfTime is the last instant on a clock's own scale (Virtual: time
// since Epoch; Precise: time since its start). A timer due then never
// fires, and on the virtual clock it does not count as scheduled.
const endOfTime = time.Duration(math.MaxInt64)

// addSat returns t+d clamped to [0, endOfTime], for t in that range.
func addSat(t, d time.Duration) time.Duration {
	switch {
	case d > 0 && t > endOfTime-d:
		return endOfTime
	case d < 0 && t+d < 0:
		return 0
	}
	return t + d
}

// Sleep blocks until d has passed on c or ctx is done. A d beyond the end
// of time (math.MaxInt64) lasts until ctx is done.
func Sleep(ctx interface{ Done() <-chan struct{} }, c Clock, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// Signal returns a function that, when called, readies whoever receives
// from ch through c.Wake. ch should have a buffer of one; a signal to a full
// channel is dropped because one pending signal is enough.
func Signal(c Clock, ch chan struct{}) func() {
	send := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return func() { c.Wake(send) }
}

// Optional behaviours. A component that has a faster or more faithful path
// for some clocks asks for one of these interfaces, never for a concrete
// clock type, so a new clock gets the right behaviour by what it offers.

// Sequential is implemented by a discrete-event clock (Virtual): events run
// one at a time and time moves only between them. A component with several
// things due at one instant gives each an event of its own, so that what
// one readies runs before the next.
type Sequential interface {
	Clock
	// Elapsed returns the time since Epoch: Now, read cheaply.
	Elapsed() time.Duration
}

// SpawningTimers is implemented by a clock whose AfterFunc runs each call
// on a new goroutine (Real, through the runtime's timers). A component with
// a hot timer path keeps a long-lived goroutine and only signals it from
// its timers, rather than growing a fresh stack on every call.
type SpawningTimers interface {
	Clock
	// SpawnsTimerGoroutines marks the behaviour; it does nothing.
	SpawnsTimerGoroutines()
}

// Monotonic is implemented by a clock that can measure time since an
// earlier reading more cheaply than Now().Sub (Real: the runtime's
// monotonic clock only).
type Monotonic interface {
	Clock
	// Since returns the time elapsed since t, a time this clock returned.
	Since(t time.Time) time.Duration
}

// QuietTimers is implemented by a clock that waits for the process to
// settle before each event (Virtual). A call made by AfterFuncQuiet
// promises to ready no goroutine itself: whatever it hands to a goroutine
// goes through Wake, whose event is followed by the wait. The clock skips
// the wait after a quiet call, which is most of a run's events (a link's
// packets, a TCP's timers). A quiet call that readies a goroutine on some
// path (a packet handed to a stack with goroutines of its own, a run
// aborted) calls Stir before it does, and the wait runs after the call.
type QuietTimers interface {
	Clock
	// AfterFuncQuiet is AfterFunc for a quiet call.
	AfterFuncQuiet(d time.Duration, f func()) Timer
	// Stir marks the call running now as one that readied a goroutine.
	Stir()
}

// AfterFuncQuiet is c's AfterFuncQuiet where c has one, else its AfterFunc.
func AfterFuncQuiet(c Clock, d time.Duration, f func()) Timer {
	if q, ok := c.(QuietTimers); ok {
		return q.AfterFuncQuiet(d, f)
	}
	return c.AfterFunc(d, f)
}

// Stir calls c's Stir where c has one.
func Stir(c Clock) {
	if q, ok := c.(QuietTimers); ok {
		q.Stir()
	}
}

var (
	_ QuietTimers    = (*Virtual)(nil)
	_ Sequential     = (*Virtual)(nil)
	_ SpawningTimers = Real{}
	_ Monotonic      = Real{}
	_ Monotonic      = (*Precise)(nil)
)
