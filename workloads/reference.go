package workloads

import (
	"time"

	"github.com/netemu/netemu/link"
)

// Reference is one cell of the published reference tables: a workload on
// a link, and the time the articles measured with Linux TCP over netem.
type Reference struct {
	Table    string // e.g. "page, RTT 50 ms"
	Label    string // the varied value, e.g. "2mbit"
	Workload Workload
	RTT      time.Duration
	Rate     float64 // bits per second, 0 unlimited
	// Time is the measured figure: the whole run, or for nagle the
	// median round.
	Time time.Duration
}

// Case returns the reference cell as an emulated case with netemu's
// defaults: a 1000-packet queue and Linux's 40 ms delayed ACK.
func (r Reference) Case(seed uint64) Case {
	return Case{
		Workload: r.Workload,
		Link:     link.Config{Delay: r.RTT / 2, Rate: r.Rate, DelayedACK: link.LinuxDelayedACK},
		Seed:     seed,
	}
}

const ms = time.Millisecond

// References are the tables of EXPERIMENTS.md, in order.
var References = []Reference{
	{"page, RTT 50 ms", "2mbit", Page{}, 50 * ms, 2e6, 697 * ms},
	{"page, RTT 50 ms", "10mbit", Page{}, 50 * ms, 10e6, 521 * ms},
	{"page, RTT 50 ms", "50mbit", Page{}, 50 * ms, 50e6, 538 * ms},
	{"page, rate 10 mbit", "10ms", Page{}, 10 * ms, 10e6, 149 * ms},
	{"page, rate 10 mbit", "100ms", Page{}, 100 * ms, 10e6, 915 * ms},
	{"page, rate 10 mbit", "200ms", Page{}, 200 * ms, 10e6, 1749 * ms},

	{"bulk, RTT 50 ms", "5mbit", Bulk{}, 50 * ms, 5e6, 9035 * ms},
	{"bulk, RTT 50 ms", "10mbit", Bulk{}, 50 * ms, 10e6, 4624 * ms},
	{"bulk, RTT 50 ms", "50mbit", Bulk{}, 50 * ms, 50e6, 1207 * ms},
	{"bulk, rate 25 mbit", "10ms", Bulk{}, 10 * ms, 25e6, 1811 * ms},
	{"bulk, rate 25 mbit", "100ms", Bulk{}, 100 * ms, 25e6, 2399 * ms},
	{"bulk, rate 25 mbit", "200ms", Bulk{}, 200 * ms, 25e6, 3165 * ms},

	{"keepalive, RTT 0 (loopback)", "fresh", KeepAlive{Mode: Fresh}, 0, 0, 2 * ms},
	{"keepalive, RTT 0 (loopback)", "reuse", KeepAlive{Mode: Reuse}, 0, 0, 1 * ms},
	{"keepalive, RTT 55 ms", "fresh", KeepAlive{Mode: Fresh}, 55 * ms, 0, 2360 * ms},
	{"keepalive, RTT 55 ms", "reuse", KeepAlive{Mode: Reuse}, 55 * ms, 0, 1195 * ms},

	{"nagle, RTT 0 (loopback), median round", "nagle on", Nagle{}, 0, 0, 40918 * time.Microsecond},
	{"nagle, RTT 0 (loopback), median round", "nagle off", Nagle{NoDelay: true}, 0, 0, 5 * time.Microsecond},
}
