package workloads

import (
	"time"

	"github.com/netemu/netemu/link"
)

// Reference is one cell of the published reference tables: a workload on
// a link, and the time the articles measured with Linux TCP over netem.
// Each Kind holds its own.
type Reference struct {
	Table    string // e.g. "page, RTT 50 ms"
	Label    string // the varied value, e.g. "2mbit"
	Workload Workload
	RTT      time.Duration
	Rate     float64 // bits per second, 0 unlimited
	// Time is the measured figure: the whole run, or the kind's Headline
	// figure (nagle: the median round).
	Time time.Duration
}

// Link returns the reference cell's link with netemu's defaults: a
// 1000-packet queue and Linux's 40 ms delayed ACK.
func (r Reference) Link() link.Config {
	return link.Config{Delay: r.RTT / 2, Rate: r.Rate, DelayedACK: link.LinuxDelayedACK}
}

const msec = time.Millisecond

// A Cell is one cell of a table netemu measures where nothing was
// published to compare with (reproduce --lossy): a workload on a link.
// Each Kind holds its own.
type Cell struct {
	Table    string // e.g. "bulk 5 MiB, 10 mbit, RTT 50 ms"
	Label    string // the varied value, e.g. "queue 20"
	Workload Workload
	Link     link.Config
	// MinRuns is how many seeds the cell needs at least, on each backend,
	// for its median to settle: a distribution whose modes lie a timeout
	// apart needs more than the default. 0: as many as asked.
	MinRuns int
}

// Runs returns how many seeds to run c with when n are asked for: n, or
// c.MinRuns if that is more, and none if n is 0.
func (c Cell) Runs(n int) int {
	if n == 0 {
		return 0
	}
	return max(n, c.MinRuns)
}

// LossyCells returns every kind's lossy cells, in registry and table
// order.
func LossyCells() []Cell {
	var cells []Cell
	for _, k := range registry {
		cells = append(cells, k.Lossy...)
	}
	return cells
}

// lossyLink is the link of the lossy cells: rate and RTT, Linux's delayed
// ACK, the default queue, changed by f.
func lossyLink(rate float64, rtt time.Duration, f func(*link.Config)) link.Config {
	c := link.Config{Delay: rtt / 2, Rate: rate, DelayedACK: link.LinuxDelayedACK}
	f(&c)
	return c
}
