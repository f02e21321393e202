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

// TestTCPNetemuDeterministic: on the virtual clock a run of netemu's TCP,
// against itself or gVisor's in either role, is a function of its seed.
// Twenty runs (three under the race detector: deterministicRuns) at each
// of GOMAXPROCS 1, 2 and 4, with loss, reordering and three connections
// at once in both directions, give one trace hash (every packet, its
// instant and its bytes); another seed gives another.
func TestTCPNetemuDeterministic(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, p := range tcpPairs {
		t.Run(p.name, func(t *testing.T) { checkDeterministic(t, p.client, p.server) })
	}
}

func checkDeterministic(t *testing.T, client, server tcpstack.Impl) {
	cfg := func(seed uint64) Config {
		return pairConfig(Config{
			Link: link.Config{
				Delay: 5 * time.Millisecond, Rate: 20e6, Qdisc: link.Qdisc{Limit: 30},
				Loss:    link.RandomLoss(0.03, 0),
				Reorder: link.Chance{P: 0.1},
			},
			Seed: seed,
		}, client, server)
	}
	runs := 20
	if testing.Short() {
		runs = 5
	}
	runs = race.DeterministicRuns(runs)
	trace := func(seed uint64) string {
		n := newNet(t, cfg(seed))
		res := exchange(t, n, 80, 3, 20<<10, 60<<10)
		checkExchange(t, res, 20<<10, 60<<10)
		st := n.Stats()
		if st.Link[link.AtoB].Drops[link.DropLoss]+st.Link[link.BtoA].Drops[link.DropLoss] == 0 || st.Link[link.AtoB].Reordered+st.Link[link.BtoA].Reordered == 0 {
			t.Fatalf("seed %d: the link lost or reordered nothing; the test needs both", seed)
		}
		n.Close()
		return st.TraceHash
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	want := ""
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for i := range runs {
			got := trace(11)
			if want == "" {
				want = got
				continue
			}
			if got != want {
				t.Fatalf("GOMAXPROCS %d, run %d: trace %s; want %s, the first run's", procs, i, got[:16], want[:16])
			}
		}
	}
	if other := trace(12); other == want {
		t.Errorf("seed 12 gave seed 11's trace %s; want the seed to matter", want[:16])
	}
}
