package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// lossyRow is one lossy cell: the emulator's runs (seeds 1 to N) and
// kernel TCP's (seeds 1 to K), each summarized.
type lossyRow struct {
	cell       workloads.Cell
	emu, kern  experiment.Spread
	emuSame    experiment.Spread // the emulator over the kernel's seeds
	own        experiment.Spread // netemu's TCP on the emulator, same seeds as emu
	ownSame    experiment.Spread // netemu's TCP over the kernel's seeds
	model      float64
	lossBound  float64
	kernelNote string
}

// lossyTable measures every lossy cell (workloads.LossyCells). kernelRuns
// 0, or kernel mode unavailable here, leaves the kernel side empty, with
// the reason in why.
func lossyTable(ctx context.Context, runs, kernelRuns int, via kernel.Via, progress func(workloads.Cell)) (rows []lossyRow, why string, err error) {
	if kernelRuns == 0 {
		why = "-lossy-kernel-runs 0"
	}
	for _, cell := range workloads.LossyCells() {
		if progress != nil {
			progress(cell)
		}
		c := experiment.Case{Workload: cell.Workload, Link: cell.Link, Clock: emu.Virtual}
		times, recs, last, err := experiment.Repeat(ctx, experiment.Emulated{}, c, cell.Runs(runs), nil)
		if err != nil {
			return nil, "", fmt.Errorf("%s, %s: %w", cell.Table, cell.Label, err)
		}
		row := lossyRow{cell: cell, emu: experiment.SpreadOf(times, recs)}
		oc := c
		oc.TCP.Impl = tcpstack.Netemu
		otimes, orecs, _, err := experiment.Repeat(ctx, experiment.Emulated{}, oc, cell.Runs(runs), nil)
		if err != nil {
			return nil, "", fmt.Errorf("%s, %s, netemu's TCP: %w", cell.Table, cell.Label, err)
		}
		row.own = experiment.SpreadOf(otimes, orecs)
		_, model := last.Headline()
		row.model = experiment.Ms(model)
		row.lossBound = experiment.Ms(last.Model.LossBound)
		if why == "" {
			kn := cell.Runs(kernelRuns)
			ktimes, krecs, _, err := experiment.Repeat(ctx, experiment.Kernel{Via: via}, c, kn, nil)
			switch {
			case errors.Is(err, kernel.ErrUnsupported):
				why = err.Error()
			case err != nil:
				return nil, "", fmt.Errorf("%s, %s, kernel: %w", cell.Table, cell.Label, err)
			default:
				row.kern = experiment.SpreadOf(ktimes, krecs)
				row.emuSame = experiment.SpreadOf(times[:min(len(times), kn)], nil)
				row.ownSame = experiment.SpreadOf(otimes[:min(len(otimes), kn)], nil)
				if krecs[0].Kernel != nil {
					row.kernelNote = krecs[0].Kernel.String()
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, why, nil
}

// lossyMarkdown writes the lossy section of the report.
func lossyMarkdown(w io.Writer, rows []lossyRow, runs, kernelRuns int, why string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\n# Lossy links\n\n")
	p("Cells where nothing was published (`workloads.LossyCells`; `netemu reproduce --lossy` prints the same table): ")
	p("small queues and random loss. They are distributions: the emulator (virtual clock) runs seeds 1–%d, ", runs)
	p("kernel TCP over the same link (TUN bridge) seeds 1–%d; the link's impairments draw from the seed, so run *i* ", kernelRuns)
	p("of both meets the same draws. Each side shows the median and the 10th–90th percentiles, with median drops ")
	p("and retransmits; **netemu** is gVisor's TCP on the emulator, **netemu TCP** netemu's own TCP there (its own delayed ACKs, the link's stage off); ")
	p("each **Δ** compares that emulated TCP's median over the kernel's seeds with the kernel's median. ")
	p("**loss bound**: the rate limited also by Mathis et al., MSS/RTT · 1.22/√p.\n")
	if why != "" {
		p("\nKernel TCP not measured here: %s.\n", why)
	} else if len(rows) > 0 && rows[0].kernelNote != "" {
		p("\nKernel: %s.\n", rows[0].kernelNote)
	}
	table := ""
	for _, r := range rows {
		if r.cell.Table != table {
			table = r.cell.Table
			p("\n## %s\n\n| | netemu | p10–p90 | drops | retx | netemu TCP | p10–p90 | drops | retx | kernel | p10–p90 | drops | retx | Δ netemu | Δ netemu TCP | model | loss bound |\n", table)
			p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		spread := func(s experiment.Spread) string {
			if s.Runs == 0 {
				return "— | | | "
			}
			return fmt.Sprintf("%.1f ms | %.1f–%.1f ms | %g | %g", s.MedianMs, s.P10Ms, s.P90Ms, s.Drops, s.Retransmits)
		}
		d, do := "—", "—"
		if r.kern.Runs > 0 {
			d = fmt.Sprintf("%+.1f %%", (r.emuSame.MedianMs-r.kern.MedianMs)/r.kern.MedianMs*100)
			do = fmt.Sprintf("%+.1f %%", (r.ownSame.MedianMs-r.kern.MedianMs)/r.kern.MedianMs*100)
		}
		lb := "—"
		if r.lossBound > 0 {
			lb = fmt.Sprintf("%.1f ms", r.lossBound)
		}
		label := r.cell.Label
		if r.cell.MinRuns > runs {
			label += fmt.Sprintf(" (%d seeds)", r.cell.MinRuns)
		}
		p("| %s | %s | %s | %s | %s | %s | %.1f ms | %s |\n", label, spread(r.emu), spread(r.own), spread(r.kern), d, do, r.model, strings.TrimSpace(lb))
	}
	p("\n%s", lossyNotes)
}

// lossyNotes says what is known of the differences in the lossy table.
const lossyNotes = `What shapes these figures, and what remains different:

- **Slow-start exit.** A Linux receiver ACKs every segment that lets its window grow (tcp_grow_window), and in slow start that is most of them; the sender's HyStart then sees ACK trains one segment apart and leaves slow start before the queue overflows. The link models it (link/window.go); without it the emulator dropped 58 and 784 packets in the 20- and 50-packet queues, against the kernel's 24 and 6.
- **RACK and tail-loss probes** are on, as on Linux; each host's clock never repeats an instant, because gVisor's RACK orders segments sent at one instant the wrong way round (docs/UPSTREAM.md).
- **gVisor's CUBIC** does not start an epoch when HyStart ends slow start, and drops the fraction of its growth on every ACK (docs/UPSTREAM.md): after slow start its window stays flat where Linux's grows. So the emulator never fills the 50- and 100-packet queues (0 drops where the kernel's medians were 6 to 66 over three measurements), and recovers more slowly from random loss (1 %: +8 % to +13 % over three measurements of five kernel seeds each, the kernel's median moving between 16.4 and 17.0 s). Only gVisor can fix these.
- **keepalive, fresh** at 1 % loss: a lost SYN or SYN-ACK costs a 1 s timeout, so the distribution has modes a second apart, and over five seeds the medians of gVisor and Linux ranged 2505–3226 ms. The cell runs 30 seeds on both sides (workloads.Cell.MinRuns). The same seed does not always pair the same losses: when the server's FIN and the next SYN-ACK leave in the other order, the i-th packet is another one.
- **The real clock** agrees with the virtual one within 3 % on every lossy cell (netemu reproduce --lossy --clock real --runs 5 --kernel-runs 0, against the same seeds on the virtual clock) since the link's timers fire on time (clock.Precise): with Go's timers, deliveries bunched, HyStart saw no ACK train, and the 50-packet queue dropped 465–1512 packets on the real clock where the virtual clock drops none.
`
