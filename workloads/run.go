package workloads

import (
	"context"
	"fmt"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// Case is one workload on one emulated network.
type Case struct {
	Workload Workload
	Link     link.Config // Delay is half the RTT
	TCP      tcpstack.TCPConfig
	Clock    emu.ClockMode
	Seed     uint64

	// Observe and Probe, if set, watch the run: every link event, and
	// every TCP sender state sample (see emu.Net.Observe, emu.Config.Probe).
	Observe link.Observer
	Probe   func(tcpstack.Sample)
}

// Path returns what the model knows of c's link.
func (c Case) Path() Path {
	return Path{RTT: 2 * c.Link.Delay, Rate: c.Link.Rate, DelayedACK: c.Link.DelayedACK}
}

// Run runs c on a new emulated network and returns the workload's result
// with the network's statistics.
func (c Case) Run(ctx context.Context) (Result, emu.Stats, error) {
	if err := c.Workload.Validate(); err != nil {
		return Result{}, emu.Stats{}, err
	}
	n, err := emu.New(emu.Config{Link: c.Link, TCP: c.TCP, Clock: c.Clock, Seed: c.Seed, Probe: c.Probe})
	if err != nil {
		return Result{}, emu.Stats{}, err
	}
	defer n.Close()
	if c.Observe != nil {
		n.Observe(c.Observe)
	}
	var r Result
	err = n.Run(ctx, func(ctx context.Context) error {
		var err error
		r, err = c.Workload.Run(ctx, n, c.Path())
		return err
	})
	if err != nil {
		return Result{}, emu.Stats{}, fmt.Errorf("%s: %w", c.Workload.Name(), err)
	}
	return r, n.Stats(), nil
}

// KernelRun is what a kernel-mode run reports besides the workload's
// result.
type KernelRun struct {
	Stats kernel.Stats // the TUN bridge's link (zero with netem)
	Facts kernel.Facts
}

// RunKernel runs c over kernel TCP in two network namespaces joined by via
// (kernel.Auto, kernel.TUN or kernel.Netem); see package emu/kernel. It
// needs root. Clock and Seed do not apply: kernel mode runs in real time.
func (c Case) RunKernel(ctx context.Context, via string) (Result, KernelRun, error) {
	if err := c.Workload.Validate(); err != nil {
		return Result{}, KernelRun{}, err
	}
	n, err := kernel.New(kernel.Config{Link: c.Link, Via: via, CongestionControl: c.TCP.CongestionControl})
	if err != nil {
		return Result{}, KernelRun{}, err
	}
	defer n.Close()
	if c.Observe != nil && !n.Observe(c.Observe) {
		return Result{}, KernelRun{}, fmt.Errorf("%w: the netem link is in the kernel, with no events to observe; use the TUN link to capture or explain", kernel.ErrUnsupported)
	}
	r, err := c.Workload.Run(ctx, n, c.Path())
	if err != nil {
		return Result{}, KernelRun{}, fmt.Errorf("kernel mode: %s: %w", c.Workload.Name(), err)
	}
	return r, KernelRun{Stats: n.Stats(), Facts: n.Facts()}, nil
}
