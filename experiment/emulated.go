package experiment

import (
	"context"
	"fmt"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// Emulated runs cases on two gVisor hosts joined by netemu's link, on the
// case's clock and seed (package emu).
type Emulated struct{}

// Name implements Backend.
func (Emulated) Name() string { return "emulated" }

// Run implements Backend.
func (e Emulated) Run(ctx context.Context, c Case) (workloads.Result, Record, error) {
	if err := c.Validate(); err != nil {
		return workloads.Result{}, Record{}, err
	}
	lc := c.Link
	switch {
	case c.Clock == emu.Real:
		lc.Noise = link.Noise{} // the real clock has noise of its own
	case lc.Noise.IsZero() && !c.Exact && (c.Shape != nil || !ideal(lc)):
		// A case stands for real hosts and routers, which take time to
		// take a packet in (link.Config.Noise); on a shape, every link
		// gets it (runShape). Two hosts on an ideal link stand for no
		// network at all, where the virtual clock counts no host time.
		lc.Noise = link.DefaultNoise
	}
	if c.Shape != nil {
		return e.runShape(ctx, c, lc)
	}
	n, err := emu.New(emu.Config{Link: lc, TCP: c.TCP, Clock: c.Clock, Seed: c.Seed, Probe: c.Probe})
	if err != nil {
		return workloads.Result{}, Record{}, err
	}
	defer n.Close()
	if c.Observe != nil {
		n.Observe(c.Observe)
	}
	var r workloads.Result
	err = n.Run(ctx, func(ctx context.Context) error {
		var err error
		r, err = workloads.Run(ctx, c.Workload, n, c.Path())
		return err
	})
	st := n.Stats()
	if err != nil {
		return workloads.Result{}, Record{}, traceEnded(err, c.Link, st.Link)
	}
	rec := newRecord(e.Name(), c, r, st.Link)
	rec.Seed = &c.Seed
	rec.HostNoise = hostNoise(c, lc)
	rec.ACKsHeld = st.Link[0].ACKsHeld + st.Link[1].ACKsHeld
	rec.TraceHash = st.TraceHash
	return r, rec, nil
}

// runShape runs c on its shape, lc its bottleneck.
func (e Emulated) runShape(ctx context.Context, c Case, lc link.Config) (workloads.Result, Record, error) {
	r, st, err := runShape(ctx, c, lc)
	if err != nil {
		if len(st.Links) > 0 {
			err = traceEnded(err, c.Link, st.Links[0])
		}
		return workloads.Result{}, Record{}, err
	}
	rec := newRecord(e.Name(), c, r, st.Link)
	rec.Seed = &c.Seed
	rec.HostNoise = hostNoise(c, lc)
	rec.TraceHash = st.TraceHash
	return r, rec, nil
}

// hostNoise is the record's HostNoise for case c run with link lc.
func hostNoise(c Case, lc link.Config) string {
	if c.Clock == emu.Real {
		return ""
	}
	return lc.Noise.String()
}

// ideal reports whether lc adds no time in either direction: no delay,
// rate or trace.
func ideal(lc link.Config) bool {
	still := func(d link.Config) bool { return d.Delay == 0 && d.Rate == 0 && d.Trace == nil }
	return still(lc) && (lc.BtoA == nil || still(*lc.BtoA))
}

// traceEnded adds to err, a workload's failure, that a trace which does
// not repeat ended under it, if the link dropped packets for that reason:
// otherwise the failure reads as a stalled transfer with no cause.
func traceEnded(err error, lc link.Config, st link.Stats) error {
	for d, ds := range st {
		dir := link.Dir(d)
		if n := ds.Drops[link.DropTraceEnded]; n > 0 {
			t := lc.TraceOf(dir)
			return fmt.Errorf("%w (the %s trace, which does not repeat, ended at %v: %d packets found no opportunity after it)", err, map[link.Dir]string{link.AtoB: "up (a>b)", link.BtoA: "down (b>a)"}[dir], t.Period(), n)
		}
	}
	return err
}
