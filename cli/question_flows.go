package cli

import (
	"fmt"
	"math"
	"slices"
)

// flowsSharing: N flows of CUBIC through one bottleneck, each between
// its own pair of hosts, through a FIFO and through fq_codel: how evenly
// they share, and what the queue costs everyone.
var flowsSharing = func() *question {
	q := &question{
		name:  "flows",
		about: "1 to 16 CUBIC flows through one 20 mbit, 40 ms bottleneck, FIFO against fq_codel: shares, Jain's index, queueing delay and drops",
		source: "fq_codel gives each flow its own queue and drops from the fattest (RFC 8290, sections 1 and 4); " +
			"a FIFO leaves the sharing to the flows' windows and fills to its limit (Gettys and Nichols, \"Bufferbloat\", CACM 2012).",
		differs: "A 1000-packet queue each way (600 ms at 20 mbit), as tc's default txqueuelen; no published figure is reproduced cell by cell.",
		plot:    []int{1, 3},
		xName:   "flows",
	}
	q.figures = []qFigure{
		{name: "total", unit: "Mbit/s", of: func(r qRun) float64 { return mbit(allFlows)(r) * float64(len(r.flows)) }, decimals: 2},
		{name: "Jain", of: jainOf, decimals: 3},
		{name: "slowest/fair", of: func(r qRun) float64 {
			if len(r.flows) == 0 {
				return math.NaN()
			}
			var g []float64
			sum := 0.0
			for _, f := range r.flows {
				g = append(g, f.goodput)
				sum += f.goodput
			}
			return slices.Min(g) / (sum / float64(len(g)))
		}, decimals: 2},
		{name: "queue p50", unit: "ms", of: queueMs(false), decimals: 1},
		{name: "queue p99", unit: "ms", of: queueMs(true), decimals: 1},
		{name: "drops", of: drops},
	}
	for _, qd := range []string{"fifo", "fq_codel"} {
		for _, n := range []int{1, 2, 4, 8, 16} {
			q.cells = append(q.cells, qCell{
				label: fmt.Sprintf("%s %d", qd, n), series: qd, x: float64(n),
				args: []string{"share", "--topology", fmt.Sprintf("dumbbell:%d", n), "--rtt", "40ms", "--rate", "20mbit",
					"--qdisc", qd, "--duration", "10s"},
			})
		}
	}
	return q
}()
