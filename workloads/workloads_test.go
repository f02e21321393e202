package workloads

import (
	"context"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
)

// run runs w on a fresh emulated network with the given path and the
// reference defaults (1000-packet queue, Linux's delayed ACK).
func run(t testing.TB, w Workload, p Path) (Result, emu.Stats) {
	t.Helper()
	n, err := emu.New(emu.Config{Link: link.Config{Delay: p.RTT / 2, Rate: p.Rate, DelayedACK: p.DelayedACK}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var r Result
	err = n.Run(context.Background(), func(ctx context.Context) error {
		var err error
		r, err = w.Run(ctx, n, p)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", w.Name(), err)
	}
	return r, n.Stats()
}

func path(rtt time.Duration, rate float64) Path {
	return Path{RTT: rtt, Rate: rate, DelayedACK: link.LinuxDelayedACK}
}

func TestTry(t *testing.T) {
	for _, c := range []struct {
		w Workload
		p Path
	}{
		{Page{}, path(50*time.Millisecond, 10e6)},
		{Page{}, path(50*time.Millisecond, 2e6)},
		{Page{}, path(200*time.Millisecond, 10e6)},
		{Bulk{}, path(50*time.Millisecond, 5e6)},
		{Bulk{}, path(200*time.Millisecond, 25e6)},
		{KeepAlive{Mode: Fresh}, path(55*time.Millisecond, 0)},
		{KeepAlive{Mode: Reuse}, path(55*time.Millisecond, 0)},
		{Nagle{}, path(0, 0)},
		{Nagle{NoDelay: true}, path(0, 0)},
		{Nagle{Write: Coalesced}, path(0, 0)},
		{Nagle{}, path(20*time.Millisecond, 0)},
	} {
		start := time.Now()
		r, st := run(t, c.w, c.p)
		t.Logf("%-9s %v %v: elapsed %v model %v conns %d med %v stalled %d drops %d wall %v", r.Workload, c.p.RTT, c.p.Rate, r.Elapsed, r.Model.Elapsed, r.Conns, r.RoundMedian, r.StalledRounds, st.Link[1].Drops.Total(), time.Since(start))
	}
}
