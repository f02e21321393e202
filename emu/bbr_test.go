package emu

import (
	"runtime"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"go.uber.org/goleak"
)

// TestBBRDeterministic: netemu's TCP running BBR (paced, one timer per
// connection; its PROBE_BW phase drawn from the host's seed) on the
// virtual clock is a function of its seed, as `netemu run bulk --cc bbr`
// is: a bulk transfer over a lossy link, and three connections at once
// each way, give one trace hash at GOMAXPROCS 1, 2 and 4; another seed
// gives another.
func TestBBRDeterministic(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := func(seed uint64) Config {
		return Config{
			Link: link.Config{Delay: 10 * time.Millisecond, Rate: 20e6, Qdisc: link.Qdisc{Limit: 60}, Loss: link.RandomLoss(0.01, 0)},
			TCP:  tcpstack.TCPConfig{CongestionControl: "bbr"},
			Seed: seed,
		}
	}
	runs := race.DeterministicRuns(3)
	bulkTrace := func(seed uint64) string {
		_, st := runBulk(t, cfg(seed), 1<<20)
		if st.Link[link.BtoA].Drops[link.DropLoss] == 0 {
			t.Fatalf("seed %d: the link lost nothing; the test needs losses", seed)
		}
		return st.TraceHash
	}
	exchangeTrace := func(seed uint64) string {
		n := newNet(t, cfg(seed))
		res := exchange(t, n, 80, 3, 20<<10, 200<<10)
		checkExchange(t, res, 20<<10, 200<<10)
		st := n.Stats()
		n.Close()
		return st.TraceHash
	}
	for _, c := range []struct {
		name  string
		trace func(uint64) string
	}{{"bulk", bulkTrace}, {"exchange", exchangeTrace}} {
		t.Run(c.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
			want := ""
			for _, procs := range []int{1, 2, 4} {
				runtime.GOMAXPROCS(procs)
				for i := range runs {
					got := c.trace(7)
					if want == "" {
						want = got
						continue
					}
					if got != want {
						t.Fatalf("GOMAXPROCS %d, run %d: trace %s; want %s, the first run's", procs, i, got[:16], want[:16])
					}
				}
			}
			if other := c.trace(8); other == want {
				t.Errorf("seed 8 gave seed 7's trace %s; want the seed to matter", want[:16])
			}
		})
	}
}
