package experiment

import (
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// Case is one workload on one network.
type Case struct {
	Workload workloads.Workload
	Link     link.Config // Delay is half the RTT
	TCP      tcpstack.TCPConfig
	Clock    emu.ClockMode // emulated backend only; kernel TCP runs in real time
	Seed     uint64        // emulated backend only

	// Observe and Probe, if set, watch the run: every link event, and
	// every TCP sender state sample (see emu.Net.Observe, emu.Config.Probe).
	// Instruments set them.
	Observe link.Observer
	Probe   func(tcpstack.Sample)
}

// Path returns what the model knows of c's link.
func (c Case) Path() workloads.Path {
	return workloads.Path{RTT: 2 * c.Link.Delay, Rate: c.Link.Rate, DelayedACK: c.Link.DelayedACK}
}

// ReferenceCase returns a published reference cell as a case with netemu's
// defaults (see workloads.Reference.Link).
func ReferenceCase(ref workloads.Reference, seed uint64) Case {
	return Case{Workload: ref.Workload, Link: ref.Link(), Seed: seed}
}
