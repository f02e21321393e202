package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

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
// ask for: a pcap file, a timeline (CSV or plot), and the counters whose
// totals go into the record. With explain, it also keeps every link event.
// variant tells files of several cases apart.
func (o *options) measure(ctx context.Context, c workloads.Case, backend, variant string, explain bool) (workloads.Result, record, *instruments, error) {
	in, err := o.attach(&c, variant, explain)
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
	in.summarize(&rec)
	return r, rec, in, nil
}

// measureKernel runs c over kernel TCP.
func (o *options) measureKernel(ctx context.Context, c workloads.Case) (workloads.Result, record, error) {
	r, kr, err := c.RunKernel(ctx, o.via)
	if err != nil {
		if errors.Is(err, kernel.ErrUnsupported) {
			return workloads.Result{}, record{}, usagef("--backend kernel: %v", err)
		}
		return workloads.Result{}, record{}, fmt.Errorf("kernel mode: %w", err)
	}
	kc := c
	kc.Clock = emu.Real
	rec := newRecord(kc, r, emu.Stats{Link: kr.Stats.Link})
	rec.Backend = kernelBE
	rec.TraceSHA256 = ""
	rec.ACKsHeld = 0
	rec.DelackMs = 0
	rec.Seed = nil
	rec.Kernel = &kr.Facts
	if kr.Facts.Link == kernel.TUN {
		rec.LateMeanUs = ptr(float64(kr.Stats.LateMean) / 1e3)
		rec.LateP99Us = ptr(float64(kr.Stats.LateP99) / 1e3)
		rec.TUNWriteErrors = ptr(kr.Stats.TUNWriteErrors)
	} else {
		// netem's counters are in the kernel: unknown here.
		rec.Drops, rec.PeakQueue = nil, nil
	}
	return r, rec, nil
}

// cmdCompare runs each case on the emulator (virtual clock) and on kernel
// TCP over the same link, side by side.
func cmdCompare(ctx context.Context, args []string, w, stderr io.Writer) error {
	o, cases, err := parseCases("compare", args, false)
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
		vname := o.caseVariant(c, len(cases) > 1)
		er, erec, ein, err := o.measure(ctx, ec, emulated, vname, false)
		if err != nil {
			return err
		}
		kr, krec, kin, err := o.measure(ctx, c, kernelBE, joinVariant(vname, "kernel"), false)
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
		eg, model := er.Headline()
		kg, _ := kr.Headline()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", er.Workload, fmtDur(2*c.Link.Delay), link.FormatRate(c.Link.Rate),
			variant(er), fmtDur(eg), fmtDur(kg), fmtDur(model), pct(msf(eg), msf(kg)))
		facts = krec.Kernel.String()
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
