package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// On the virtual clock a case runs with link.DefaultDither unless it asks
// for exact instants: a keep-alive request then takes a little over its
// round trip (each packet up to 1 µs late), the same on every run of the
// seed; exact, it takes the round trip to the nanosecond.
func TestEmulatedDithersUnlessExact(t *testing.T) {
	run := func(exact bool, seed uint64) time.Duration {
		c := Case{Workload: workloads.KeepAlive{Requests: 1}, Link: link.Config{Delay: 25 * time.Millisecond}, Seed: seed, Exact: exact}
		r, _, err := Emulated{}.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return r.Elapsed
	}
	if got := run(true, 1); got%time.Millisecond != 0 {
		t.Errorf("exact: %v; want whole milliseconds (round trips of 50ms)", got)
	}
	a, b, other := run(false, 1), run(false, 1), run(false, 2)
	if a%time.Millisecond == 0 || a != b || a == other {
		t.Errorf("dithered: %v and %v with seed 1, %v with seed 2; want a fraction of a microsecond over whole milliseconds, the same for one seed, another for another", a, b, other)
	}
	if exact := run(true, 1); a < exact || a > exact+10*time.Microsecond {
		t.Errorf("dithered: %v; want at most 10µs over the exact %v (a few packets, each under 1µs later)", a, exact)
	}
}
