package cli

import "fmt"

// parkingLot: one flow crosses every hop of a chain, one short flow per
// hop crosses that hop alone. Each hop is shared by two flows, yet the
// long flow meets every hop's drops and has the longest round trip.
var parkingLot = func() *question {
	q := &question{
		name:  "parking-lot",
		about: "a chain of 1 to 4 hops of 20 mbit and 20 ms: the long flow, crossing all, against each hop's short flow",
		source: "Max-min fairness gives every flow half of each hop; TCP gives the long flow less, from its longer round trip and its drops at every hop " +
			"(Floyd and Jacobson, \"On traffic phase effects in packet-switched gateways\", 1992; Bertsekas and Gallager, Data Networks, section 6.5).",
		differs: "Each hop's queue is 100 packets (60 ms at 20 mbit); no published figure is reproduced cell by cell.",
		plot:    []int{2},
		xName:   "hops",
	}
	q.figures = []qFigure{
		{name: "long", unit: "Mbit/s", of: mbit(flowAt(0)), decimals: 2},
		{name: "short, mean", unit: "Mbit/s", of: mbit(allBut0), decimals: 2},
		{name: "long/short", of: ratio(mbit(flowAt(0)), mbit(allBut0)), decimals: 2},
		{name: "Jain", of: jainOf, decimals: 3},
		{name: "drops", of: drops},
	}
	for _, cc := range []string{"cubic", "reno"} {
		for _, hops := range []int{1, 2, 3, 4} {
			q.cells = append(q.cells, qCell{
				label: fmt.Sprintf("%s chain:%d", cc, hops), series: cc, x: float64(hops),
				args: []string{"share", "--topology", fmt.Sprintf("chain:%d", hops), "--rtt", "20ms", "--rate", "20mbit",
					"--queue", "100", "--cc", cc, "--duration", "20s"},
			})
		}
	}
	return q
}()
