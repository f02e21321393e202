package experiment

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// Kernel runs cases over kernel TCP in two network namespaces joined by
// Via (package kernel), or, for a case with a Shape, in a namespace per
// host and per router joined by netemu's links through TUN devices
// (kernel.TopoNet, which refuses Via netem). It needs root, or a user
// namespace (see kernel.Reexec). The case's Clock does not apply: kernel
// TCP runs in real time and delays its own ACKs, so the link's
// delayed-ACK stage is off. The Seed seeds the link's impairments, as on
// the emulated backend.
type Kernel struct {
	Via kernel.Via // "" means kernel.Auto
	// AddedNoise, when set, delays every delivery, on every link of a
	// shape, by a draw of it (link.Config.Noise, seeded by the case's
	// Seed), on top of the time kernel TCP's hosts and routers take of
	// themselves: to measure how the kernel's figures move with its
	// nodes' time. Only through the TUN link (netem cannot express it:
	// auto takes TUN); the record's HostNoise says "own+" and the noise.
	AddedNoise link.Noise
}

// Name implements Backend.
func (Kernel) Name() string { return "kernel" }

// Run implements Backend. An error that names a missing privilege or
// kernel feature wraps kernel.ErrUnsupported.
func (k Kernel) Run(ctx context.Context, c Case) (workloads.Result, Record, error) {
	if err := c.Validate(); err != nil {
		return workloads.Result{}, Record{}, err
	}
	// Kernel TCP's hosts and routers take the time they take: a noise
	// given for the emulated nodes (compare --host-noise) is not the
	// bridge's to add; only AddedNoise is.
	c.Link.Noise = k.AddedNoise
	if c.Shape != nil {
		return k.runShape(ctx, c)
	}
	lc := c.Link
	if lc.Seed == 0 {
		lc.Seed = c.Seed
	}
	n, err := kernel.New(kernel.Config{Link: lc, Via: k.Via, CongestionControl: c.TCP.CongestionControl, Probe: c.Probe})
	if err != nil {
		return workloads.Result{}, Record{}, err
	}
	defer n.Close()
	if c.Observe != nil && !n.Observe(c.Observe) {
		return workloads.Result{}, Record{}, fmt.Errorf("%w: the netem link is in the kernel, with no events to observe; use the TUN link to capture or explain", kernel.ErrUnsupported)
	}
	r, err := workloads.Run(ctx, c.Workload, n, c.Path())
	if err != nil {
		return workloads.Result{}, Record{}, traceEnded(fmt.Errorf("kernel mode: %w", err), c.Link, n.Stats().Link)
	}
	return r, k.record(c, r, n.Stats(), n.Facts()), nil
}

// record is the record of c's run r over kernel TCP, whose network's
// counters are st (its first link's, the pair's or a shape's
// bottleneck's, as the record's drops) and its facts.
func (k Kernel) record(c Case, r workloads.Result, st kernel.Stats, facts kernel.Facts) Record {
	kc := c
	kc.Clock = emu.Real
	kc.Link.DelayedACK = 0
	rec := newRecord(k.Name(), kc, r, st.Link)
	rec.Kernel = &facts
	if !k.AddedNoise.IsZero() {
		rec.HostNoise = "own+" + k.AddedNoise.String()
	}
	if c.Link.Impaired() || !k.AddedNoise.IsZero() {
		rec.Seed = &c.Seed
	}
	if facts.Link == kernel.TUN {
		rec.LateMeanUs = ptr(float64(st.LateMean) / 1e3)
		rec.LateP99Us = ptr(float64(st.LateP99) / 1e3)
		rec.LateMaxUs = ptr(float64(st.LateMax) / 1e3)
		rec.TUNWriteErrors = ptr(st.TUNWriteErrors)
		rec.BridgeLate = BridgeLateWhy(st.LateP99, st.LateMax)
	} else {
		// netem's counters are in the kernel: unknown here.
		rec.Drops, rec.PeakQueue = nil, nil
	}
	return rec
}

// runShape runs c on its shape over kernel TCP: a namespace per host and
// per router, every link netemu's own through TUN devices
// (kernel.TopoNet), every flow's workload at once, as the emulated
// backend runs it (shapePlan), and the run's figures as it gives them.
// The bridge's lateness is the record's, over all the links: they share
// one clock.
func (k Kernel) runShape(ctx context.Context, c Case) (workloads.Result, Record, error) {
	p, err := planShape(c, c.Link)
	if err != nil {
		return workloads.Result{}, Record{}, err
	}
	n, err := kernel.NewTopo(kernel.TopoConfig{Topology: p.t, Via: k.Via, CongestionControl: c.TCP.CongestionControl, Seed: c.Seed, Probe: p.probe(c)})
	if err != nil {
		return workloads.Result{}, Record{}, err
	}
	defer n.Close()
	waits, _ := observeQueues(n, p.t, c)
	// The flows' goroutines end before Run returns: on an error, the
	// others are stopped (their context, their sockets closed) and waited
	// for.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var flows sync.WaitGroup
	spawn := func(f func()) {
		flows.Add(1)
		go func() {
			defer flows.Done()
			f()
		}()
	}
	start := time.Now()
	results, err := p.runFlows(ctx, c, n.Between, spawn)
	end := time.Now()
	// The counters before Close, which counts what is in flight as
	// dropped; the links' observers (waits) are quiet only after it.
	st := n.Stats()
	cancel()
	n.Close()
	flows.Wait()
	if err != nil {
		return workloads.Result{}, Record{}, traceEnded(fmt.Errorf("kernel mode: %w", err), c.Link, st.Links[0])
	}
	r := p.result(c, results, linkResults(p.t, st.Links, waits, end.Sub(start)))
	return r, k.record(c, r, st, n.Facts()), nil
}

// Lateness of the bridge beyond which a kernel run's figures are
// suspect: measured on 2 shared cores (docs/TOPOLOGIES.md), runs whose
// bridge delivered late by at most about 0.6 ms at the 99th percentile
// and 25 ms at most agreed with the emulator within 2 % in goodput,
// those at 1 ms or 50 ms and beyond lost 4-40 %.
const (
	BridgeLateP99 = time.Millisecond
	BridgeLateMax = 50 * time.Millisecond
)

// BridgeLateWhy says why a kernel run whose bridge delivered late by
// p99 at the 99th percentile and max at most is suspect; "" when it is
// not.
func BridgeLateWhy(p99, max time.Duration) string {
	switch {
	case p99 >= BridgeLateP99:
		return fmt.Sprintf("the bridge delivered late by %v at the 99th percentile (from %v on, kernel runs lost 4-40 %% of their goodput against undisturbed ones); run it again on a quieter machine", p99.Round(10*time.Microsecond), BridgeLateP99)
	case max >= BridgeLateMax:
		return fmt.Sprintf("the bridge stalled for %v (from %v on, kernel runs lost 4-40 %% of their goodput against undisturbed ones); run it again on a quieter machine", max.Round(time.Millisecond), BridgeLateMax)
	}
	return ""
}
