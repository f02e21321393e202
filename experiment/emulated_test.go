package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// On the virtual clock a case runs with link.DefaultNoise unless it asks
// for exact instants: a keep-alive request then takes a little over its
// round trip (each packet tens of microseconds late), the same on every
// run of the seed; exact, it takes the round trip to the nanosecond.
func TestEmulatedNoisyUnlessExact(t *testing.T) {
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
		t.Errorf("noisy: %v and %v with seed 1, %v with seed 2; want more than whole milliseconds, the same for one seed, another for another", a, b, other)
	}
	// Two round trips, the handshake's and the request's, each two
	// packets' noise: at least four times Base.
	if exact := run(true, 1); a < exact+4*link.DefaultNoise.Base || a > exact+time.Millisecond {
		t.Errorf("noisy: %v; want between %v and 1ms over the exact %v (four packets' noise)", a, 4*link.DefaultNoise.Base, exact)
	}
}
