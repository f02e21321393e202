package clock

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// A timer math.MaxInt64 away, set after run time has moved, saturates at
// the end of time and never fires; Sleep for that long lasts until its
// context ends.
func TestVirtualEndOfTimeNeverFires(t *testing.T) {
	v := NewVirtual(0, nil)
	defer v.Close()
	Sleep(context.Background(), v, time.Second)
	var fired atomic.Bool
	v.AfterFunc(math.MaxInt64, func() { fired.Store(true) })
	reset := v.AfterFunc(time.Hour, func() { fired.Store(true) })
	reset.Reset(math.MaxInt64)
	ctx, cancel := context.WithCancel(context.Background())
	v.AfterFunc(time.Hour, cancel)
	if Sleep(ctx, v, math.MaxInt64) {
		t.Errorf("Sleep(math.MaxInt64) returned at %v; want it to last until the cancel", v.Elapsed())
	}
	if v.Elapsed() != time.Second+time.Hour {
		t.Errorf("canceled at %v; want 1h1s", v.Elapsed())
	}
	if fired.Load() {
		t.Error("a timer at the end of time fired")
	}
}

// A run whose only pending timers are at the end of time is stalled, as
// if nothing were scheduled; the stall is reported at the last instant
// reached and the timers stay pending.
func TestVirtualEndOfTimeStalls(t *testing.T) {
	stalled := make(chan struct{})
	v := NewVirtual(10*time.Millisecond, func() { close(stalled) })
	defer v.Close()
	var fired atomic.Bool
	v.AfterFunc(time.Minute, func() {
		v.AfterFunc(math.MaxInt64, func() { fired.Store(true) })
		v.AfterFunc(endOfTime-time.Minute, func() { fired.Store(true) })
	})
	select {
	case <-stalled:
	case <-time.After(5 * time.Second):
		t.Fatal("no stall reported with only end-of-time timers pending")
	}
	if v.Elapsed() != time.Minute {
		t.Errorf("stalled at %v; want 1m", v.Elapsed())
	}
	if fired.Load() {
		t.Error("a timer at the end of time fired")
	}
}

func TestAddSaturates(t *testing.T) {
	for _, c := range []struct{ t, d, want time.Duration }{
		{0, math.MaxInt64, endOfTime},
		{time.Second, math.MaxInt64, endOfTime},
		{endOfTime, 1, endOfTime},
		{time.Second, -2 * time.Second, 0},
		{time.Second, math.MinInt64, 0},
		{time.Second, time.Second, 2 * time.Second},
	} {
		if got := addSat(c.t, c.d); got != c.want {
			t.Errorf("addSat(%v, %v) = %v; want %v", c.t, c.d, got, c.want)
		}
	}
}

// The wall clocks: a timer math.MaxInt64 away does not fire within 50ms,
// and a later ordinary timer still does.
func TestWallClocksEndOfTime(t *testing.T) {
	p := NewPrecise()
	defer p.Close()
	for name, c := range map[string]Clock{"Real": Real{}, "Precise": p} {
		t.Run(name, func(t *testing.T) {
			var fired atomic.Bool
			far := c.AfterFunc(math.MaxInt64, func() { fired.Store(true) })
			defer far.Stop()
			reset := c.AfterFunc(time.Hour, func() { fired.Store(true) })
			defer reset.Stop()
			reset.Reset(math.MaxInt64)
			if !Sleep(context.Background(), c, 50*time.Millisecond) {
				t.Fatal("Sleep(50ms) did not finish")
			}
			if fired.Load() {
				t.Error("a timer math.MaxInt64 away fired within 50ms")
			}
		})
	}
}
