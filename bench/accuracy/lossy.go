package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/netemu/netemu/experiment"
)

// lossyMarkdown writes the lossy section of the report.
func lossyMarkdown(w io.Writer, rows []experiment.LossyRow, runs, kernelRuns int, why string) {
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
	} else if len(rows) > 0 && rows[0].KernelFacts != nil {
		p("\nKernel: %s.\n", rows[0].KernelFacts)
	}
	table := ""
	for _, r := range rows {
		if r.Cell.Table != table {
			table = r.Cell.Table
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
		k := r.Kernel
		if k.Runs > 0 {
			d = fmt.Sprintf("%+.1f %%", (r.Same[0].MedianMs-k.MedianMs)/k.MedianMs*100)
			do = fmt.Sprintf("%+.1f %%", (r.Same[1].MedianMs-k.MedianMs)/k.MedianMs*100)
		}
		lb := "—"
		if r.LossBound > 0 {
			lb = fmt.Sprintf("%.1f ms", experiment.Ms(r.LossBound))
		}
		label := r.Cell.Label
		if r.Cell.MinRuns > runs {
			label += fmt.Sprintf(" (%d seeds)", r.Cell.MinRuns)
		}
		p("| %s | %s | %s | %s | %s | %s | %.1f ms | %s |\n", label, spread(r.Emulated[0]), spread(r.Emulated[1]), spread(k), d, do, experiment.Ms(r.Model), strings.TrimSpace(lb))
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
