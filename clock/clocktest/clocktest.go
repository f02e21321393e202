// Package clocktest is the manual clock of netemu's tests: a clock.Clock
// whose time moves only when the test moves it, firing the timers due on
// the way on the caller's goroutine, each at its own instant, the
// earliest first and timers due together in the order they were set.
// That is the order the virtual clock keeps at one instant, on which the
// determinism rules depend (docs/ARCHITECTURE.md), so a test on this
// clock sees what a run would.
//
// Manual offers none of clock's optional behaviours (Sequential,
// SpawningTimers, Monotonic): code under test takes its plain path.
package clocktest

import (
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
)

// Manual is a clock that moves only when told. Its zero value stands at
// clock.Epoch. It may be read and its timers set from any goroutine;
// timers fire only inside Step and Advance, on their caller's.
type Manual struct {
	mu     sync.Mutex
	now    time.Duration // since clock.Epoch
	seq    uint64        // timers set so far: ties fire in this order
	timers []*timer
}

var _ clock.Clock = (*Manual)(nil)

type timer struct {
	c      *Manual
	f      func()
	due    time.Duration
	seq    uint64
	active bool
}

// Now implements clock.Clock.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return clock.Epoch.Add(c.now)
}

// At is the time since clock.Epoch.
func (c *Manual) At() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Wake implements clock.Clock: f runs at once, on the caller's goroutine.
func (c *Manual) Wake(f func()) { f() }

// AfterFunc implements clock.Clock: f runs when Step or Advance reaches
// d from now.
func (c *Manual) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &timer{c: c, f: f}
	t.Reset(d)
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	return t
}

// Stop implements clock.Timer.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

// Reset implements clock.Timer: due d from now, ordered after every
// timer set before among those due at the same instant.
func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = true
	t.due = t.c.now + max(d, 0)
	t.c.seq++
	t.seq = t.c.seq
	return was
}

// next is the earliest active timer due at or before until; nil if none.
// c.mu is held.
func (c *Manual) next(until time.Duration) *timer {
	var best *timer
	for _, t := range c.timers {
		if t.active && t.due <= until && (best == nil || t.due < best.due || t.due == best.due && t.seq < best.seq) {
			best = t
		}
	}
	return best
}

// Pending is the instant, since clock.Epoch, of the earliest timer set;
// false if none is.
func (c *Manual) Pending() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.next(1<<63 - 1); t != nil {
		return t.due, true
	}
	return 0, false
}

// Step fires the earliest timer due at or before until (since
// clock.Epoch), time moving to its instant; false if there is none.
func (c *Manual) Step(until time.Duration) bool {
	c.mu.Lock()
	t := c.next(until)
	if t == nil {
		c.mu.Unlock()
		return false
	}
	c.now = max(c.now, t.due)
	t.active = false
	c.mu.Unlock()
	t.f()
	return true
}

// Advance moves time on by d, firing every timer due on the way at its
// own instant, in order (Step), then stands at d from where it started.
func (c *Manual) Advance(d time.Duration) {
	end := c.At() + d
	for c.Step(end) {
	}
	c.mu.Lock()
	c.now = max(c.now, end)
	c.mu.Unlock()
}
