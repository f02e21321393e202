package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
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
func reproduceLossy(ctx context.Context, o *options, clk emu.ClockMode, runs, kernelRuns int, w, stderr io.Writer) error {
	cells := workloads.LossyCells()
	emulated, err := o.newBackend(experiment.Emulated{}.Name())
	if err != nil {
		return err
	}
	kern, err := o.newBackend(experiment.Kernel{}.Name())
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	bar := newProgress(stderr, len(cells), true)
	defer bar.close()
	var kernelWhy string // why kernel TCP was not measured
	if kernelRuns == 0 {
		kernelWhy = "--kernel-runs 0"
	}
	var lastFacts *kernel.Facts
	out := &sections{w: w}
	for _, cell := range cells {
		bar.start(cell.Table + " " + cell.Label)
		measure := func(b experiment.Backend, n int) (experiment.Spread, []time.Duration, workloads.Result, error) {
			c := experiment.Case{Workload: cell.Workload, Link: cell.Link, Clock: clk}
			times, recs, last, err := experiment.Repeat(ctx, b, c, n, func(r workloads.Result, rec experiment.Record) error {
				if rec.Kernel != nil {
					lastFacts = rec.Kernel
				}
				if !o.json {
					return nil
				}
				rec.Table = cell.Table + ", " + cell.Label
				return enc.Encode(rec)
			})
			if errors.Is(err, kernel.ErrUnsupported) {
				err = usagef("--backend %s: %v", b.Name(), err)
			}
			return experiment.SpreadOf(times, recs), times, last, err
		}
		es, etimes, er, err := measure(emulated, cell.Runs(runs))
		if err != nil {
			return fmt.Errorf("%s, %s: %w", cell.Table, cell.Label, err)
		}
		var ks experiment.Spread
		if kernelWhy == "" {
			ks, _, _, err = measure(kern, cell.Runs(kernelRuns))
			var ue *usageError
			switch {
			case errors.As(err, &ue): // kernel mode unavailable (measure made it one)
				kernelWhy = strings.TrimPrefix(err.Error(), "--backend kernel: ")
				ks = experiment.Spread{}
			case err != nil:
				return fmt.Errorf("%s, %s, kernel: %w", cell.Table, cell.Label, err)
			}
		}
		bar.finish()
		_, model := er.Headline()
		var bound *float64
		if er.Model.LossBound > 0 {
			bound = ptr(experiment.Ms(er.Model.LossBound))
		}
		if o.json {
			for _, s := range []struct {
				name string
				sp   experiment.Spread
			}{{"emulated", es}, {"kernel", ks}} {
				if s.sp.Runs == 0 {
					continue
				}
				if err := enc.Encode(lossyRecord{cell.Table, cell.Label, s.name, true, s.sp, experiment.Ms(model), bound}); err != nil {
					return err
				}
			}
			continue
		}
		tw := out.table(cell.Table, "\tnetemu median\tp10–p90\tdrops\tretx\tkernel median\tp10–p90\tdrops\tretx\tnetemu vs kernel\tmodel\tloss bound\t")
		kcols := "—\t\t\t\t—"
		if ks.Runs > 0 {
			// Against the kernel, the emulator's median over the same seeds.
			same := experiment.SpreadOf(etimes[:min(ks.Runs, len(etimes))], nil)
			kcols = fmt.Sprintf("%s\t%s\t%s\t%s\t%s", fmtDur(ks.Median), spreadRange(ks), count(ks.Drops), count(ks.Retransmits), pct(experiment.Ms(same.Median), experiment.Ms(ks.Median)))
		}
		lb := "—"
		if bound != nil {
			lb = fmtDur(er.Model.LossBound)
		}
		label := cell.Label
		if cell.MinRuns > runs {
			label += fmt.Sprintf(" (%d seeds)", cell.MinRuns)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", label, fmtDur(es.Median), spreadRange(es), count(es.Drops), count(es.Retransmits), kcols, fmtDur(model), lb)
	}
	if o.json {
		return nil
	}
	out.flush()
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
	fmt.Fprintf(w, "\nnetemu: gVisor TCP on the emulated link, %s clock, median of seeds 1–%d with the 10th–90th percentiles (drops and retx: their medians); %s.\n"+
		"model: round trips × RTT + bytes ÷ rate; loss bound: the rate limited also by Mathis et al., MSS/RTT · 1.22/√p.\n", clk, runs, kernelAbout)
	return nil
}

func spreadRange(s experiment.Spread) string {
	return strings.ReplaceAll(fmtDur(s.P10), " ms", "") + "–" + fmtDur(s.P90)
}

func count(v float64) string {
	if v < 0 {
		return "—"
	}
	return fmt.Sprintf("%g", v)
}
