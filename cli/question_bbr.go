package cli

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// bbrVsCubic: one BBR flow against one and four CUBIC flows over one
// link, with buffers of 1 to 64 bandwidth-delay products. BBR fills a
// shallow buffer that CUBIC leaves idle; in a deep one it is held by its
// window cap, whatever the number of CUBIC flows. bbrVsCubicDumbbell
// asks the same of flows that each have their own hosts and meet only at
// a dumbbell's bottleneck.
var (
	bbrVsCubic         = bbrAgainstCubic(false)
	bbrVsCubicDumbbell = bbrAgainstCubic(true)
)

// bbrAgainstCubic is the question on two hosts (share's flows over one
// link) or, with dumbbell, on a dumbbell of one client and server pair
// per flow.
func bbrAgainstCubic(dumbbell bool) *question {
	const (
		rate     = 10e6 // bits per second
		rtt      = 40 * time.Millisecond
		duration = 40 * time.Second
	)
	q := &question{
		name:  "bbr-vs-cubic",
		about: "one BBR flow against 1 and 4 CUBIC flows on 10 mbit and 40 ms, buffers of 1 to 64 BDP: BBR's share",
		source: "model: Ware, Mukerjee, Seshan and Sherry, \"Modeling BBR's Interactions with Loss-Based Congestion Control\", IMC 2019: " +
			"BBR is held by its in-flight cap, 2 × bandwidth × RTT estimate; the loss-based flows' share is p = 1/2 − 1/(2X) − 4N/q (equation 9, " +
			"X the buffer in BDPs, q in packets, N BBR flows) and BBR's (1 − p)(d − t)/d, less the time t its PROBE_RTT stalls over a run of d " +
			"(equations 10 and 11). Its median error against their testbed is 5 % against CUBIC.",
		differs: "Two hosts, all flows on one link, for 40 s from a common start; the model assumes converged flows, " +
			"1500-byte packets and a full queue, and counts BBR's share of the link where the columns count it of all flows' goodput.",
		plot:    []int{0},
		xName:   "buffer (BDP)",
		refName: "IMC 2019 model",
	}
	if dumbbell {
		q.name = "bbr-vs-cubic-dumbbell"
		q.about = "the same on a dumbbell: each flow its own client and server, meeting only at the 10 mbit, 40 ms bottleneck"
		q.differs = "A dumbbell (one client and one server per flow, no access delay, the routers forwarding as the emulated hosts do), " +
			"for 40 s (the flows connect first, then start a millisecond apart); the model assumes converged flows, " +
			"1500-byte packets and a full queue, and counts BBR's share of the link where the columns count it of all flows' goodput."
	}
	bbr := func(fs []qFlow) []qFlow { return pickCC(fs, "bbr") }
	cubic := func(fs []qFlow) []qFlow { return pickCC(fs, "cubic") }
	q.figures = []qFigure{
		{name: "BBR's share", unit: "%", of: func(r qRun) float64 {
			var mine, all float64
			for _, f := range r.flows {
				all += f.goodput
				if f.cc == "bbr" {
					mine += f.goodput
				}
			}
			if all == 0 || len(bbr(r.flows)) == 0 {
				return math.NaN()
			}
			return 100 * mine / all
		}, decimals: 1},
		{name: "BBR", unit: "Mbit/s", of: mbit(bbr), decimals: 2},
		{name: "CUBIC, each", unit: "Mbit/s", of: mbit(cubic), decimals: 2},
		{name: "drops", of: drops},
	}
	// flows is the command's start for n flows: share's on two hosts, or
	// one per client and server pair of a dumbbell.
	flows := func(n int) []string {
		if dumbbell {
			return []string{"share", "--topology", fmt.Sprintf("dumbbell:%d", n)}
		}
		return []string{"share", "--flows", fmt.Sprint(n)}
	}
	for _, n := range []int{1, 4} {
		ccs := "bbr" + strings.Repeat(",cubic", n)
		for _, x := range []float64{1, 2, 4, 8, 16, 32, 64} {
			q.cells = append(q.cells, qCell{
				label: fmt.Sprintf("1 vs %d, %gbdp", n, x), series: fmt.Sprintf("against %d CUBIC", n), x: x,
				args: append(flows(n+1), "--ccs", ccs, "--rtt", rtt.String(), "--rate", "10mbit",
					"--queue", fmt.Sprintf("%gbdp", x), "--duration", duration.String()),
				ref: map[string]float64{"BBR's share": 100 * imcBBRShare(1, x, rate, rtt, duration)},
			})
		}
	}
	return q
}

// pickCC picks the flows whose congestion control is cc.
func pickCC(fs []qFlow, cc string) []qFlow {
	var out []qFlow
	for _, f := range fs {
		if f.cc == cc {
			out = append(out, f)
		}
	}
	return out
}

// imcBBRShare is n BBR flows' fraction of a link of rate bits per
// second and base round trip l, with a buffer of x bandwidth-delay
// products, against loss-based flows over a run of d, as Ware et al.'s
// model predicts it (IMC 2019, equations 9 to 11): the loss-based flows
// keep p = 1/2 − 1/(2x) − 4n/q of it (none when that is negative), q the
// buffer in packets of 1500 bytes; BBR gets the rest but for its
// PROBE_RTT stalls, each the queue's drain plus 200 ms plus a round
// trip, once every 10 s.
func imcBBRShare(n int, x, rate float64, l, d time.Duration) float64 {
	c := rate / (1500 * 8) // packets per second
	q := x * c * l.Seconds()
	p := math.Max(0, 0.5-1/(2*x)-4*float64(n)/q)
	stalls := (q/c + 0.2 + l.Seconds()) * d.Seconds() / 10
	return (1 - p) * (d.Seconds() - stalls) / d.Seconds()
}
