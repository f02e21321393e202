package cli

import (
	"fmt"
	"time"
)

// rttFairness: two flows of one congestion control through one
// bottleneck, one near and one far. A loss-based TCP's window grows per
// round trip, so the far flow gets less; how much less is the question.
var rttFairness = func() *question {
	q := &question{
		name:  "rtt-fairness",
		about: "two flows through one 20 mbit bottleneck, at 16 ms and at 16 to 162 ms: the near flow's share against the far one's",
		source: "Reno's throughput goes as 1/RTT with independent losses and as 1/RTT² with synchronised ones (Lakshman and Madhow, 1997); " +
			"CUBIC grows its window in real time, not per round trip, to lessen the gap (Ha, Rhee and Xu, \"CUBIC\", SIGOPS OSR 2008, section 3.3); " +
			"BBR's share follows its window cap, 2 × bandwidth × min RTT, which favours the far flow (Ware et al., IMC 2019). " +
			"1/RTT is the RTT ratio itself, the reference for the near/far column.",
		differs: "Published testbeds used other rates, buffers and run lengths; the columns here are measured on this link, and 1/RTT is a model, not a measurement.",
		plot:    []int{2, 3},
		xName:   "far flow's RTT ÷ near flow's",
		refName: "1/RTT",
	}
	q.figures = []qFigure{
		{name: "near", unit: "Mbit/s", of: mbit(flowAt(0)), decimals: 2},
		{name: "far", unit: "Mbit/s", of: mbit(flowAt(1)), decimals: 2},
		{name: "near/far", of: ratio(mbit(flowAt(0)), mbit(flowAt(1))), decimals: 2},
		{name: "Jain", of: jainOf, decimals: 3},
	}
	// The bottleneck's 10 ms and each client's access link make the
	// flows' round trips; its queue is 100 packets, 60 ms at 20 mbit.
	const base = 10 * time.Millisecond
	near := 6 * time.Millisecond
	for _, cc := range []string{"cubic", "reno", "bbr"} {
		for _, farAccess := range []time.Duration{6 * time.Millisecond, 22 * time.Millisecond, 54 * time.Millisecond, 86 * time.Millisecond, 152 * time.Millisecond} {
			ratio := float64(base+farAccess) / float64(base+near)
			q.cells = append(q.cells, qCell{
				label:  fmt.Sprintf("%s %v/%v", cc, base+near, base+farAccess),
				series: cc, x: ratio,
				args: []string{"share", "--topology", "dumbbell:2", "--rtt", base.String(), "--access-rtt", near.String() + "," + farAccess.String(),
					"--rate", "20mbit", "--queue", "100", "--cc", cc, "--duration", "30s"},
				ref: map[string]float64{"near/far": ratio},
			})
		}
	}
	return q
}()
