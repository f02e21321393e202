package cli

import (
	"fmt"
	"math"
	"time"

	"github.com/netemu/netemu/stats"
	"github.com/netemu/netemu/workloads"
)

// homeLink: a page load and a latency probe from one host while another
// uploads through the same access link, FIFO against fq_codel: the
// bufferbloat that makes a video call stutter while a backup runs.
var homeLink = func() *question {
	q := &question{
		name:  "home-link",
		about: "a page load and a latency probe from a laptop while a desktop uploads through the same 10 mbit access link, FIFO against fq_codel",
		source: "An upload fills the home router's queue and every packet behind it waits (Gettys and Nichols, \"Bufferbloat\", CACM 2012); " +
			"fq_codel keeps the probe's and the page's packets out of the upload's queue (RFC 8290; Høiland-Jørgensen et al., \"The Good, the Bad and the WiFi\", 2016, measure it with RRUL).",
		differs: "The access link is 10 mbit each way with a 200-packet FIFO (240 ms at 10 mbit) or fq_codel at its defaults and 10 ms of round trip, each server 10 ms further; " +
			"the topology files are cli/questions/home-N.yaml (N uploading flows); no published figure is reproduced cell by cell.",
		plot:    []int{0, 2},
		xName:   "uploading flows",
		refName: "",
	}
	probe := func(p float64) func(r qRun) float64 {
		return func(r qRun) float64 {
			for _, f := range r.flows {
				if d, ok := f.result.Detail.(workloads.RPCDetail); ok && len(d.Calls) > 0 {
					return float64(stats.Quantile(stats.Sorted(d.Calls), p)) / float64(time.Millisecond)
				}
			}
			return math.NaN()
		}
	}
	q.figures = []qFigure{
		{name: "page load", unit: "ms", of: func(r qRun) float64 {
			for _, f := range r.flows {
				if f.workload == "page" {
					return float64(f.result.Elapsed) / float64(time.Millisecond)
				}
			}
			return math.NaN()
		}},
		{name: "probe p50", unit: "ms", of: probe(0.5), decimals: 1},
		{name: "probe p99", unit: "ms", of: probe(0.99), decimals: 1},
		{name: "upload", unit: "Mbit/s", of: func(r qRun) float64 {
			sum, any := 0.0, false
			for _, f := range r.flows {
				if f.workload == "share" {
					sum, any = sum+f.goodput, true
				}
			}
			if !any {
				return math.NaN()
			}
			return sum / 1e6
		}, decimals: 2},
	}
	for _, qd := range []string{"fifo", "fq_codel"} {
		for _, n := range []int{0, 1, 4} {
			args := []string{"--topology", fmt.Sprintf("questions/home-%d.yaml", n), "--rtt", "10ms", "--rate", "10mbit", "--qdisc", qd}
			if qd == "fifo" {
				args = append(args, "--queue", "200")
			}
			q.cells = append(q.cells, qCell{label: fmt.Sprintf("%s, %d uploading", qd, n), series: qd, x: float64(n), args: args})
		}
	}
	return q
}()
