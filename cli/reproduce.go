package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// reproduce's tables: the published reference cells, and the lossy table.

// ReproduceLossy checks the flags of reproduce --lossy, runs seeds 1 to
// runs on the emulator and kernelRuns on kernel TCP, and writes the
// lossy table.
func ReproduceLossy(ctx context.Context, o *Options, runs, kernelRuns int, w, stderr io.Writer) error {
	if o.Given("backend") || o.Given("seed") {
		return Usagef("reproduce --lossy: --backend and --seed do not apply: it runs seeds 1 to --runs on the emulator and --kernel-runs on kernel TCP")
	}
	if runs < 1 || kernelRuns < 0 {
		return Usagef("reproduce --lossy: --runs %d, --kernel-runs %d: want --runs 1 or more and --kernel-runs 0 or more", runs, kernelRuns)
	}
	clk, err := o.ClockMode()
	if err != nil {
		return err
	}
	return reproduceLossy(ctx, o, clk, runs, kernelRuns, w, stderr)
}

// ReproduceTables measures every reference cell on b with clock clk and
// writes each table, its times beside the reference's, and the note
// that says what was measured; with --json, a record per cell instead.
// A failed write to w stops it before the next cell.
func ReproduceTables(ctx context.Context, o *Options, b experiment.Backend, clk emu.ClockMode, w, stderr io.Writer) error {
	refs := workloads.References()
	enc := json.NewEncoder(w)
	out := NewSections(w)
	var lastKernel *kernel.Facts
	bar := NewProgress(stderr, len(refs), true)
	defer bar.Close()
	for _, ref := range refs {
		if err := writeFailed(w); err != nil {
			return err // a full disk: the cells left would be measured for nothing
		}
		c := experiment.ReferenceCase(ref, o.Seed)
		c.Clock = clk
		bar.Start(ref.Table + " " + ref.Label)
		r, rec, _, err := o.Measure(ctx, b, c, "", false)
		bar.Finish()
		if err != nil {
			return err
		}
		if rec.Kernel != nil {
			lastKernel = rec.Kernel
		}
		got, model := r.Headline()
		if o.JSON {
			if err := enc.Encode(referenceRecord(rec, ref, got)); err != nil {
				return err
			}
			continue
		}
		name := "netemu"
		if b.Name() == (experiment.Kernel{}).Name() {
			name = "kernel"
		}
		tw := out.Table(ref.Table, fmt.Sprintf("\treference\t%s\tmodel\t%s vs reference\t", name, name))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", ref.Label, fmtDur(ref.Time), fmtDur(got), fmtDur(model), experiment.Deviation(experiment.Ms(got), experiment.Ms(ref.Time)))
	}
	if out.Flush() {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(reproduceFooter(lastKernel)))
	}
	return nil
}

// referenceRecord is rec, a reference cell's record whose headline time
// is got, with the cell's table, the reference's time and got's
// difference from it; at RTT 0 the virtual clock counts no time, so no
// difference.
func referenceRecord(rec experiment.Record, ref workloads.Reference, got time.Duration) experiment.Record {
	rec.Table = ref.Table
	rec.ReferenceMs = ptr(experiment.Ms(ref.Time))
	if got > 0 {
		rec.DiffPct = ptr((experiment.Ms(got) - experiment.Ms(ref.Time)) / experiment.Ms(ref.Time) * 100)
	}
	return rec
}

// reproduceFooter is the note under the tables: what reference and
// netemu mean, or, when the cells ran on kernel TCP, the facts of the
// last kernel run f.
func reproduceFooter(f *kernel.Facts) string {
	if f == nil {
		return reproduceNote
	}
	return fmt.Sprintf(kernelNote, f.Kernel, f.HZ, f.Link, f.CongestionControl, f.PingpongThresh, f.SlowStartAfterIdle)
}

func ptr[T any](v T) *T { return &v }

const kernelNote = `
reference: Linux TCP over tc netem, as published. kernel: this machine's kernel TCP in two network namespaces:
kernel %s (HZ %d), link %s, cc %s, tcp_pingpong_thresh %s, tcp_slow_start_after_idle %s. model: round trips × RTT
+ bytes ÷ rate (+ delayed-ACK waits for nagle).`

const reproduceNote = `
reference: Linux TCP over tc netem, as published. netemu: netemu's TCP (Linux's algorithms, cubic, its own delayed
ACKs) on the emulated link, virtual clock, 1000-packet queue. model: round trips × RTT + bytes ÷ rate (+ delayed-ACK
waits for nagle).
At RTT 0 the reference figures are the kernel's processing time; the virtual clock counts no CPU time, so netemu
shows 0 there and no difference is computed.`

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
func reproduceLossy(ctx context.Context, o *Options, clk emu.ClockMode, runs, kernelRuns int, w, stderr io.Writer) error {
	emulated, err := o.NewBackend(experiment.Emulated{}.Name())
	if err != nil {
		return err
	}
	kern, err := o.NewBackend(experiment.Kernel{}.Name())
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	bar := NewProgress(stderr, len(workloads.LossyCells()), true)
	defer bar.Close()
	var lastFacts *kernel.Facts
	out := NewSections(w)
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
func writeLossyRow(o *Options, enc *json.Encoder, out *Sections, r experiment.LossyRow, runs int) error {
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

// writeFailed returns the error of an earlier write to w, when w keeps
// it (WriteErr, as cmd/netemu's checked stdout does): a command of many
// runs stops there instead of measuring what it cannot print.
func writeFailed(w io.Writer) error {
	if c, ok := w.(interface{ WriteErr() error }); ok {
		return c.WriteErr()
	}
	return nil
}
