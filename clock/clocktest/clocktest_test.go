package clocktest

import (
	"slices"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
)

// Timers fire in due order, each at its own instant, ties in the order
// they were set (a Reset counts as setting again); a stopped one does
// not fire; a timer set by a firing one fires on the same pass if due.
func TestOrder(t *testing.T) {
	var c Manual
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().Sub(clock.Epoch).String()) }
	}
	c.AfterFunc(2*time.Second, at("b"))
	c.AfterFunc(time.Second, at("a"))
	tie1 := c.AfterFunc(3*time.Second, at("tie1"))
	c.AfterFunc(3*time.Second, at("tie2"))
	tie1.Reset(3 * time.Second) // set again: now after tie2
	c.AfterFunc(4*time.Second, at("stopped")).Stop()
	c.AfterFunc(time.Second, func() {
		c.AfterFunc(500*time.Millisecond, at("chained"))
	})
	c.Advance(5 * time.Second)
	want := []string{"a@1s", "chained@1.5s", "b@2s", "tie2@3s", "tie1@3s"}
	if !slices.Equal(got, want) {
		t.Errorf("fired %v; want %v", got, want)
	}
	if c.At() != 5*time.Second {
		t.Errorf("at %v after Advance(5s); want 5s", c.At())
	}
	if _, ok := c.Pending(); ok {
		t.Errorf("a timer pending after all fired")
	}
}

// The manual clock is no clock.Sequential, SpawningTimers or Monotonic:
// code under test takes its plain path on it.
func TestNoOptionalBehaviours(t *testing.T) {
	var c any = &Manual{}
	if _, ok := c.(clock.Sequential); ok {
		t.Error("Manual is a clock.Sequential")
	}
	if _, ok := c.(clock.SpawningTimers); ok {
		t.Error("Manual is a clock.SpawningTimers")
	}
	if _, ok := c.(clock.Monotonic); ok {
		t.Error("Manual is a clock.Monotonic")
	}
}
