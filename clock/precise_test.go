package clock

import (
	"context"
	"testing"
	"time"
)

// Shapes only: timers fire in due order, never early, and Close stops
// them. How late they fire depends on the machine and is reported, not
// asserted.
func TestPreciseOrderNeverEarly(t *testing.T) {
	t.Run("spins", func(t *testing.T) { orderNeverEarly(t, NewPrecise()) })
	// A clock on a thread of its own, told it wakes on time: it sleeps
	// to each timer's due instant and never yields in a loop.
	t.Run("sleeps", func(t *testing.T) { orderNeverEarly(t, NewPreciseOn(func() bool { return true }, nil)) })
}

func orderNeverEarly(t *testing.T, p *Precise) {
	defer p.Close()
	type fired struct {
		name string
		at   time.Time
		due  time.Time
	}
	ch := make(chan fired, 4)
	start := p.Now()
	for _, c := range []struct {
		name string
		d    time.Duration
	}{{"b", 3 * time.Millisecond}, {"a", time.Millisecond}, {"c", 5 * time.Millisecond}} {
		due := start.Add(c.d)
		p.AfterFunc(c.d, func() { ch <- fired{c.name, time.Now(), due} })
	}
	never := p.AfterFunc(2*time.Millisecond, func() { ch <- fired{name: "stopped"} })
	never.Stop()
	var order string
	for range 3 {
		f := <-ch
		order += f.name
		if f.at.Before(f.due) {
			t.Errorf("%s fired %v early", f.name, f.due.Sub(f.at))
		}
	}
	if order != "abc" {
		t.Errorf("fired in order %q, want abc", order)
	}
	mean, p99, most, n := p.Lateness()
	if n != 3 || mean < 0 || p99 < 0 || most < p99 || most < mean {
		t.Errorf("lateness mean %v p99 %v max %v over %d timers", mean, p99, most, n)
	}
	t.Logf("lateness: mean %v, p99 %v, max %v", mean, p99, most)
	if !Sleep(context.Background(), p, time.Millisecond) {
		t.Error("Sleep on the precise clock failed")
	}
}
