package experiment

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/stats"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// phaseCell is a shape where loss-based flows of different round trips
// share a drop-tail queue: what docs/QUESTIONS.md and GRID-DUMBBELLS.md
// say timing noise moves.
type phaseCell struct {
	name  string
	lc    link.Config
	build func(link.Config) (topo.Topology, []topo.Flow)
	dur   time.Duration
}

var phaseCells = []phaseCell{
	// GRID-DUMBBELLS.md's dumbbell 12: 16 and 6 ms through 11 packets.
	{"dumbbell 12", link.Config{Delay: time.Millisecond, Rate: 8.2e6, Qdisc: link.Qdisc{Limit: 11}}, func(lc link.Config) (topo.Topology, []topo.Flow) {
		return topo.Dumbbell(2, []time.Duration{14 * time.Millisecond, 4 * time.Millisecond}, lc)
	}, 15 * time.Second},
	// GRID-DUMBBELLS.md's dumbbell 9: 4 and 6 ms through 4 packets.
	{"dumbbell 9", link.Config{Delay: time.Millisecond, Rate: 10.8e6, Qdisc: link.Qdisc{Limit: 4}}, func(lc link.Config) (topo.Topology, []topo.Flow) {
		return topo.Dumbbell(2, []time.Duration{2 * time.Millisecond, 4 * time.Millisecond}, lc)
	}, 15 * time.Second},
	// QUESTIONS.md's parking lot of three hops.
	{"chain:3", link.Config{Delay: 10 * time.Millisecond, Rate: 20e6, Qdisc: link.Qdisc{Limit: 100}}, func(lc link.Config) (topo.Topology, []topo.Flow) {
		return topo.Chain(3, lc)
	}, 20 * time.Second},
	// QUESTIONS.md's RTT fairness at 16 against 162 ms.
	{"rtt 16/162 ms", link.Config{Delay: 5 * time.Millisecond, Rate: 20e6, Qdisc: link.Qdisc{Limit: 100}}, func(lc link.Config) (topo.Topology, []topo.Flow) {
		return topo.Dumbbell(2, []time.Duration{6 * time.Millisecond, 152 * time.Millisecond}, lc)
	}, 30 * time.Second},
}

// phaseRuns runs cell with seeds 1 to 5 and noise on every link (none:
// exact instants), and returns each run's shape.
func phaseRuns(t *testing.T, cell phaseCell, noise link.Noise) []ShapeDetail {
	t.Helper()
	var out []ShapeDetail
	for seed := uint64(1); seed <= 5; seed++ {
		lc := cell.lc
		lc.Noise = noise
		c := Case{Exact: noise.IsZero(), Workload: workloads.Share{Duration: cell.dur}, Link: lc, Seed: seed, Shape: &Shape{Name: cell.name, Build: cell.build},
			TCP: tcpstack.TCPConfig{Impl: tcpstack.Netemu, CongestionControl: "cubic"}}
		r, _, err := Emulated{}.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Detail.(ShapeDetail))
	}
	return out
}

// The hosts' noise breaks a drop-tail queue's phase effects: on
// dumbbell 12 of GRID-DUMBBELLS.md (kernel TCP's Jain's index 0.963),
// exact instants leave the two CUBIC flows unfair, and the emulated
// nodes' time to take each packet in (link.DefaultNoise) makes them
// fair. With NETEMU_PHASE=1 it prints, for each cell the docs cite, each
// seed's flows' goodputs and Jain's index, exact and with the noise:
// the figures docs/QUESTIONS.md, TOPOLOGIES.md and GRID-DUMBBELLS.md
// quote.
func TestNoiseBreaksPhase(t *testing.T) {
	jain := func(ds []ShapeDetail) float64 {
		var j []float64
		for _, d := range ds {
			j = append(j, d.Jain)
		}
		return stats.Quantile(stats.Sorted(j), 0.5)
	}
	exact, noisy := jain(phaseRuns(t, phaseCells[0], link.Noise{})), jain(phaseRuns(t, phaseCells[0], link.DefaultNoise))
	if exact > 0.9 || noisy < 0.95 {
		t.Errorf("dumbbell 12: median Jain's index %.3f exact, %.3f with the hosts' noise; want under 0.9 and over 0.95", exact, noisy)
	}
	if os.Getenv("NETEMU_PHASE") == "" {
		return
	}
	for _, cell := range phaseCells {
		for _, n := range []link.Noise{{}, link.DefaultNoise} {
			var runs []string
			for _, s := range phaseRuns(t, cell, n) {
				runs = append(runs, fmt.Sprintf("%.2f/%.2f J%.2f", s.Flows[0].Goodput/1e6, s.Flows[1].Goodput/1e6, s.Jain))
			}
			t.Logf("%s, noise %v: %v", cell.name, n, runs)
		}
	}
}
