package bench

import (
	"time"

	"github.com/netemu/netemu/clock"
)

// manualClock is a clock.Clock driven by hand on the caller's goroutine:
// timers fire inside advance, nothing runs in the background. It lets a
// benchmark put a link's whole per-packet path on one goroutine, where
// allocations can be attributed to it.
type manualClock struct {
	now    time.Time
	timers []*manualTimer
}

func newManualClock() *manualClock { return &manualClock{now: clock.Epoch} }

func (c *manualClock) Now() time.Time { return c.now }

func (c *manualClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &manualTimer{c: c, f: f}
	c.timers = append(c.timers, t)
	t.Reset(d)
	return t
}

func (c *manualClock) Wake(f func()) { f() }

// advance runs every timer due within d, in due order, moving time to
// each, and ends at now+d.
func (c *manualClock) advance(d time.Duration) {
	end := c.now.Add(d)
	for {
		var next *manualTimer
		for _, t := range c.timers {
			if t.pending && !t.when.After(end) && (next == nil || t.when.Before(next.when)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		if next.when.After(c.now) {
			c.now = next.when
		}
		next.pending = false
		next.f()
	}
	c.now = end
}

type manualTimer struct {
	c       *manualClock
	f       func()
	when    time.Time
	pending bool
}

func (t *manualTimer) Stop() bool {
	was := t.pending
	t.pending = false
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	was := t.pending
	t.when = t.c.now.Add(max(d, 0))
	t.pending = true
	return was
}
