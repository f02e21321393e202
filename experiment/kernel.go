package experiment

import (
	"context"
	"fmt"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/workloads"
)

// Kernel runs cases over kernel TCP in two network namespaces joined by
// Via (package kernel). It needs root, or a user namespace (see
// kernel.Reexec). The case's Clock does not apply: kernel TCP runs in real
// time and delays its own ACKs, so the link's delayed-ACK stage is off.
// The Seed seeds the link's impairments, as on the emulated backend.
type Kernel struct {
	Via kernel.Via // "" means kernel.Auto
}

// Name implements Backend.
func (Kernel) Name() string { return "kernel" }

// Run implements Backend. An error that names a missing privilege or
// kernel feature wraps kernel.ErrUnsupported.
func (k Kernel) Run(ctx context.Context, c Case) (workloads.Result, Record, error) {
	if err := c.Workload.Validate(); err != nil {
		return workloads.Result{}, Record{}, err
	}
	if c.Shape != nil {
		return workloads.Result{}, Record{}, fmt.Errorf("%w: the %s topology runs on the emulator only for now; kernel TCP runs the pair", kernel.ErrUnsupported, c.Shape.Name)
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
	st, facts := n.Stats(), n.Facts()
	kc := c
	kc.Clock = emu.Real
	kc.Link.DelayedACK = 0
	rec := newRecord(k.Name(), kc, r, st.Link)
	rec.Kernel = &facts
	if c.Link.Impaired() {
		rec.Seed = &c.Seed
	}
	if facts.Link == kernel.TUN {
		rec.LateMeanUs = ptr(float64(st.LateMean) / 1e3)
		rec.LateP99Us = ptr(float64(st.LateP99) / 1e3)
		rec.LateMaxUs = ptr(float64(st.LateMax) / 1e3)
		rec.TUNWriteErrors = ptr(st.TUNWriteErrors)
	} else {
		// netem's counters are in the kernel: unknown here.
		rec.Drops, rec.PeakQueue = nil, nil
	}
	return r, rec, nil
}
