package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// lossyRecord is one lossy cell's summary on one backend, as a JSON line;
// the runs' own records precede it.
type lossyRecord struct {
	Table   string `json:"table"`
	Label   string `json:"label"`
	Backend string `json:"backend"`
	Summary bool   `json:"summary"`
	experiment.Spread
	ModelMs     float64  `json:"model_ms"`
	LossBoundMs *float64 `json:"model_loss_bound_ms,omitempty"`
}

// reproduceLossy runs every lossy cell on the emulator with seeds 1 to
// runs, and kernelRuns times on kernel TCP where kernel mode works here,
// and prints medians with their spread.
func reproduceLossy(ctx context.Context, o *cli.Options, clk emu.ClockMode, runs, kernelRuns int, w, stderr io.Writer) error {
	emulated, err := o.NewBackend(experiment.Emulated{}.Name())
	if err != nil {
		return err
	}
	kern, err := o.NewBackend(experiment.Kernel{}.Name())
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	bar := cli.NewProgress(stderr, len(workloads.LossyCells()), true)
	defer bar.Close()
	var lastFacts *kernel.Facts
	out := cli.NewSections(w)
	l := experiment.Lossy{Runs: runs, KernelRuns: kernelRuns, Clock: clk, Emulated: emulated, Kernel: kern,
		Start: func(cell workloads.Cell) { bar.Start(cell.Table + " " + cell.Label) }}
	if o.JSON {
		l.Run = func(cell workloads.Cell, rec experiment.Record) error {
			rec.Table = cell.Table + ", " + cell.Label
			return enc.Encode(rec)
		}
	}
	kernelWhy, err := l.Measure(ctx, func(r experiment.LossyRow) error {
		bar.Finish()
		if r.KernelFacts != nil {
			lastFacts = r.KernelFacts
		}
		return writeLossyRow(o, enc, out, r, runs)
	})
	if err != nil {
		return err
	}
	if kernelRuns == 0 {
		kernelWhy = "--kernel-runs 0"
	}
	if o.JSON {
		return nil
	}
	out.Flush()
	kernelAbout := fmt.Sprintf("kernel: Linux TCP over the same link, median of %d runs", kernelRuns)
	if lastFacts != nil {
		kernelAbout += " (" + lastFacts.String() + ")"
	}
	if kernelWhy != "" {
		kernelAbout = "kernel: not measured: " + kernelWhy
	}
	if kernelWhy == "" {
		kernelAbout += fmt.Sprintf(",\nseeds 1–%d; netemu vs kernel compares the medians over the same seeds (the link draws the same losses for both)", kernelRuns)
	}
	fmt.Fprintf(w, "\nnetemu: %s on the emulated link, %s clock, median of seeds 1–%d with the 10th–90th percentiles (drops and retx: their medians); %s.\n"+
		"model: round trips × RTT + bytes ÷ rate; loss bound: the rate limited also by Mathis et al., MSS/RTT · 1.22/√p.\n", implName(tcpstack.DefaultImpl), clk, runs, kernelAbout)
	return nil
}

// writeLossyRow writes one cell: its summaries as JSON lines, or its
// row of the table.
func writeLossyRow(o *cli.Options, enc *json.Encoder, out *cli.Sections, r experiment.LossyRow, runs int) error {
	cell, es, ks := r.Cell, r.Emulated[0], r.Kernel
	var bound *float64
	if r.LossBound > 0 {
		bound = ptr(experiment.Ms(r.LossBound))
	}
	if o.JSON {
		for _, s := range []struct {
			name string
			sp   experiment.Spread
		}{{"emulated", es}, {"kernel", ks}} {
			if s.sp.Runs == 0 {
				continue
			}
			if err := enc.Encode(lossyRecord{cell.Table, cell.Label, s.name, true, s.sp, experiment.Ms(r.Model), bound}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := out.Table(cell.Table, "\tnetemu median\tp10–p90\tdrops\tretx\tkernel median\tp10–p90\tdrops\tretx\tnetemu vs kernel\tmodel\tloss bound\t")
	kcols := "—\t\t\t\t—"
	if ks.Runs > 0 {
		// Against the kernel, the emulator's median over the same seeds.
		kcols = fmt.Sprintf("%s\t%s\t%s\t%s\t%s", fmtDur(ks.Median), experiment.SpreadRange(ks), experiment.MedianCount(ks.Drops), experiment.MedianCount(ks.Retransmits), experiment.Deviation(experiment.Ms(r.Same[0].Median), experiment.Ms(ks.Median)))
	}
	lb := "—"
	if bound != nil {
		lb = fmtDur(r.LossBound)
	}
	label := cell.Label
	if cell.MinRuns > runs {
		label += fmt.Sprintf(" (%d seeds)", cell.MinRuns)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", label, fmtDur(es.Median), experiment.SpreadRange(es), experiment.MedianCount(es.Drops), experiment.MedianCount(es.Retransmits), kcols, fmtDur(r.Model), lb)
	return nil
}
