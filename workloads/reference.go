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
