package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// Backends.
const (
	emulated = "emulated"
	kernelBE = "kernel"
)

// measure runs c on the backend, watched by the instruments the options
// ask for (a pcap file, a timeline CSV) and, when watch is set, by a
// recorder and a timeline whose summaries go into the record. variant
// tells files of several cases apart.
func (o *options) measure(ctx context.Context, c workloads.Case, backend, variant string, watch bool) (workloads.Result, record, *instruments, error) {
	in, err := o.attach(&c, variant, watch)
	if err != nil {
		return workloads.Result{}, record{}, nil, err
	}
	var r workloads.Result
	var rec record
	if backend != kernelBE {
		var st emu.Stats
		r, st, err = c.Run(ctx)
		if err == nil {
			rec = newRecord(c, r, st)
		}
	} else {
		r, rec, err = o.measureKernel(ctx, c)
	}
	if ferr := in.finish(); err == nil {
		err = ferr
	}
	if err != nil {
		return r, rec, nil, err
	}
	in.summarize(&rec, r)
	return r, rec, in, nil
}

// measureKernel runs c over kernel TCP.
func (o *options) measureKernel(ctx context.Context, c workloads.Case) (workloads.Result, record, error) {
	if err := c.Workload.Validate(); err != nil {
		return workloads.Result{}, record{}, err
	}
	n, err := kernel.New(kernel.Config{Link: c.Link, Via: o.via, CongestionControl: c.TCP.CongestionControl})
	if err != nil {
		if errors.Is(err, kernel.ErrUnsupported) {
			return workloads.Result{}, record{}, usagef("--backend kernel: %v", err)
		}
		return workloads.Result{}, record{}, fmt.Errorf("kernel mode: %w", err)
	}
	defer n.Close()
	if c.Observe != nil && !n.Observe(c.Observe) && o.pcap != "" {
		return workloads.Result{}, record{}, usagef("--pcap with --backend kernel needs --link tun: netem has no userspace link to capture")
	}
	r, err := c.Workload.Run(ctx, n, c.Path())
	if err != nil {
		return r, record{}, fmt.Errorf("kernel mode: %s: %w", c.Workload.Name(), err)
	}
	ks := n.Stats()
	kc := c
	kc.Clock = emu.Real
	rec := newRecord(kc, r, statsOf(ks))
	rec.Backend = kernelBE
	rec.TraceSHA256 = ""
	rec.ACKsHeld = 0
	rec.DelackMs = 0
	facts := n.Facts()
	rec.Kernel = &facts
	if facts.Link == kernel.TUN {
		rec.LateMeanUs = ptr(float64(ks.LateMean) / 1e3)
		rec.LateP99Us = ptr(float64(ks.LateP99) / 1e3)
	}
	return r, rec, nil
}

// statsOf presents the kernel bridge's link counters as emu.Stats so that
// records are built the same way for both backends.
func statsOf(ks kernel.Stats) emu.Stats { return emu.Stats{Link: ks.Link} }

// headline is the figure a workload is judged by: the median round for
// nagle, the whole run otherwise; with its model.
func headline(r workloads.Result) (got, model time.Duration) {
	if r.Workload == "nagle" && len(r.Rounds) > 0 {
		return r.RoundMedian, r.Model.PerRound
	}
	return r.Elapsed, r.Model.Elapsed
}

// cmdCompare runs each case on the emulator (virtual clock) and on kernel
// TCP over the same link, side by side.
func cmdCompare(ctx context.Context, args []string, w, stderr io.Writer) error {
	o, err := parseArgs("compare", args)
	if err != nil {
		return err
	}
	cases, err := o.cases(false)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if !o.json {
		fmt.Fprintln(tw, "workload\trtt\trate\tcase\temulated\tkernel\tmodel\temulated vs kernel\t")
	}
	var facts string
	bar := newProgress(stderr, len(cases), true)
	defer bar.close()
	for _, c := range cases {
		bar.start(caseLabel(c))
		ec := c
		ec.Clock = emu.Virtual
		vname := caseVariant(c, len(cases) > 1)
		er, erec, ein, err := o.measure(ctx, ec, emulated, vname, o.plot != "")
		if err != nil {
			return err
		}
		kr, krec, kin, err := o.measure(ctx, c, kernelBE, joinVariant(vname, "kernel"), o.plot != "")
		bar.finish()
		if err != nil {
			return err
		}
		if o.plot != "" {
			if err := compareFigure(er, ein, kin).Save(variantPath(o.plot, vname)); err != nil {
				return err
			}
		}
		if o.json {
			if err := enc.Encode(erec); err != nil {
				return err
			}
			if err := enc.Encode(krec); err != nil {
				return err
			}
			continue
		}
		eg, model := headline(er)
		kg, _ := headline(kr)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", er.Workload, fmtDur(2*c.Link.Delay), link.FormatRate(c.Link.Rate),
			variant(er), fmtDur(eg), fmtDur(kg), fmtDur(model), pct(msf(eg), msf(kg)))
		f := krec.Kernel
		facts = fmt.Sprintf("kernel %s (HZ %d), link %s, cc %s, tcp_pingpong_thresh %s, tcp_slow_start_after_idle %s",
			f.Kernel, f.HZ, f.Link, f.CongestionControl, f.PingpongThresh, f.SlowStartAfterIdle)
		if krec.LateMeanUs != nil {
			facts += fmt.Sprintf("; bridge delivery late by %.0f µs mean, %.0f µs p99", *krec.LateMeanUs, *krec.LateP99Us)
		}
	}
	if o.json {
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nemulated: gVisor TCP on the virtual clock; kernel: %s.\nnagle rows show the median round.\n", facts)
	return nil
}
