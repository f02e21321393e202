package experiment

import (
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// Case is one workload on one network.
type Case struct {
	Workload workloads.Workload
	Link     link.Config // Delay is half the RTT
	TCP      tcpstack.TCPConfig
	Clock    emu.ClockMode // emulated backend only; kernel TCP runs in real time
	Seed     uint64        // emulated backend only
	// Exact runs the emulated backend on a virtual clock without
	// link.DefaultNoise, which it adds otherwise when Link.Noise is zero:
	// the hosts and routers act the instant a packet arrives, every
	// instant is a sum of the links' delays and serialization times, and
	// every tie between them falls the same way on every run.
	Exact bool

	// Shape, if set, is the network the case runs on instead of the
	// pair: Link is its bottleneck, and the workload runs once per flow
	// of the shape, all at once.
	Shape *Shape

	// ObserveLink, if set, gives an observer for each link i of a shape
	// (l, in its topology's order) besides Observe, which watches its
	// first link only. Instruments set it.
	ObserveLink func(i int, l topo.Link) link.Observer

	// Observe and Probe, if set, watch the run: every link event, and
	// every TCP sender state sample (see emu.Net.Observe, emu.Config.Probe).
	// Instruments set them.
	Observe link.Observer
	Probe   func(tcpstack.Sample)
}

// Validate checks the case's workload where it runs: on two hosts, the
// workload as given; on a shape, each flow's workload before runFlows
// gives it its pair's part (shapeFlows): a share without --flows runs
// one connection per flow that takes it, so its --ccs may name one
// congestion control for each of those flows.
func (c Case) Validate() error {
	if c.Shape == nil {
		return c.Workload.Validate()
	}
	_, flows := c.Shape.Build(c.Link)
	for _, f := range shapeFlows(c, len(flows)) {
		if err := f.given.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Path returns what the model knows of c's link: the round trip, and the
// rate of the server→client direction, where the workloads' bytes flow.
func (c Case) Path() workloads.Path {
	p := workloads.Path{RTT: c.RTT(), Rate: rateOf(c.down()), DelayedACK: c.Link.DelayedACK}
	if l := c.down().Loss; l.Model == link.LossRandom {
		p.Loss = l.P
	}
	return p
}

// RTT is the round trip of c's link: both directions' delays.
func (c Case) RTT() time.Duration { return c.Link.Delay + c.down().Delay }

// RateLabel writes the link's rate as tc does, "10mbit", or up/down when
// the directions differ: "1mbit/20mbit".
func (c Case) RateLabel() string {
	label := func(d link.Config) string {
		if d.Trace != nil {
			return "trace " + d.Trace.Name
		}
		return tc.FormatRate(d.Rate)
	}
	up, down := label(c.Link), label(c.down())
	if up == down {
		return up
	}
	return up + "/" + down
}

// FixedDuration reports whether c's workload runs for a duration given
// beforehand (share, loaded) rather than until its work is done: its
// elapsed time is that duration plus the connections' setup, and its
// model the same sum, so neither is a figure to judge the run by. Tables
// print "—" for them; the workload's own figures (Summary, a Headliner's
// headline) are its result.
func (c Case) FixedDuration() bool {
	switch c.Workload.(type) {
	case workloads.Share, workloads.Loaded:
		return true
	}
	return false
}

// TimedByDuration reports whether c's headline figure is the duration it
// was given (share's elapsed time, where loaded's is its probe's RTT):
// a figure with nothing to compare or take a median of.
func (c Case) TimedByDuration() bool {
	if !c.FixedDuration() {
		return false
	}
	k, ok := workloads.Lookup(c.Workload.Name())
	return !ok || k.Headline == ""
}

// rateOf is a direction's rate: its trace's mean, if it has one.
func rateOf(d link.Config) float64 {
	if d.Trace != nil {
		return d.Trace.MeanRate()
	}
	return d.Rate
}

// down is the server→client direction's parameters.
func (c Case) down() link.Config {
	if c.Link.BtoA != nil {
		return *c.Link.BtoA
	}
	return c.Link
}

// ReferenceCase returns a published reference cell as a case with netemu's
// defaults (see workloads.Reference.Link).
func ReferenceCase(ref workloads.Reference, seed uint64) Case {
	return Case{Workload: ref.Workload, Link: ref.Link(), Seed: seed}
}
