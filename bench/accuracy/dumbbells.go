package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/stats"
	"github.com/netemu/netemu/workloads"
)

// Random dumbbells: shared bottlenecks nobody chose, on which every
// flow's goodput on the emulator is measured against kernel TCP's on
// the same topology. Drawn log-uniformly, as the two-host grid draws
// its links:
const (
	dbMinFlows, dbMaxFlows = 2, 8
	dbMinRate, dbMaxRate   = 2e6, 50e6 // the bottleneck, bits per second
	// Each flow's round trip; the bottleneck's own is drawn up to the
	// shortest of them, the rest is the flow's access link.
	dbMinRTT, dbMaxRTT = 4 * time.Millisecond, 200 * time.Millisecond
	dbMinBDP, dbMaxBDP = 0.25, 4.0 // queue, in BDPs of the median flow's RTT
	dbDuration         = 15 * time.Second
	// Targets, from the issue that asked for the grid: each flow's
	// median goodput within 5 % of the kernel's, Jain's index within
	// 0.05, drops within 1.5×.
	dbGoodputTarget, dbJainTarget, dbDropsTarget = 5.0, 0.05, 1.5
	dbDefaultRuns, dbDefaultKernelRuns           = 5, 3
	// dbDefaultNoise is -dumbbell-noise's default: each dumbbell's
	// emulated nodes take the time its kernel runs' routers took.
	dbDefaultNoise = "measured"
)

// dumbbell is one drawn dumbbell, as the command line of netemu compare
// that runs it.
type dumbbell struct {
	N     int // its number, from 1
	Flows int
	RTT   time.Duration   // the bottleneck's round trip
	RTTs  []time.Duration // each flow's, bottleneck included
	Rate  float64
	Queue int // packets
	Qdisc string
}

// args is the dumbbell as netemu compare takes it.
func (d dumbbell) args() []string {
	var access []string
	for _, r := range d.RTTs {
		access = append(access, (r - d.RTT).String())
	}
	a := []string{"share", "--topology", fmt.Sprintf("dumbbell:%d", d.Flows), "--rtt", d.RTT.String(), "--access-rtt", strings.Join(access, ","),
		"--rate", tc.FormatRate(d.Rate), "--qdisc", d.Qdisc, "--duration", dbDuration.String()}
	if d.Qdisc == "fifo" {
		a = append(a, "--queue", fmt.Sprint(d.Queue))
	}
	return a
}

// drawDumbbells draws n dumbbells from seed; one in four queues with
// fq_codel (at its own limit), the rest with a FIFO.
func drawDumbbells(n int, seed uint64) []dumbbell {
	r := rand.New(rand.NewPCG(seed, 0x64756d62))
	logU := func(lo, hi float64) float64 { return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo))) }
	var out []dumbbell
	for i := range n {
		d := dumbbell{N: i + 1, Flows: dbMinFlows + r.IntN(dbMaxFlows-dbMinFlows+1), Qdisc: "fifo"}
		d.Rate = math.Round(logU(dbMinRate, dbMaxRate)/1e5) * 1e5
		for range d.Flows {
			d.RTTs = append(d.RTTs, time.Duration(logU(float64(dbMinRTT), float64(dbMaxRTT))).Round(time.Millisecond))
		}
		shortest := slices.Min(d.RTTs)
		d.RTT = time.Duration(logU(float64(2*time.Millisecond), float64(shortest))).Round(time.Millisecond)
		med := stats.Median(stats.Sorted(slices.Clone(d.RTTs)))
		bdp := d.Rate * med.Seconds() / 8 / float64(link.DefaultMTU)
		d.Queue = max(4, int(math.Round(bdp*logU(dbMinBDP, dbMaxBDP))))
		if r.IntN(4) == 0 {
			d.Qdisc = "fq_codel"
		}
		out = append(out, d)
	}
	return out
}

// pickDumbbells keeps the dumbbells list names (-dumbbell-cells), all
// of them when it is empty.
func pickDumbbells(ds []dumbbell, list string) ([]dumbbell, error) {
	return pickNumbered(ds, list, "-dumbbell-cells", "one of the dumbbells drawn", "3,13")
}

// dbSide is one backend's runs of a dumbbell: each flow's goodput per
// run, Jain's index and the drops per run.
type dbSide struct {
	goodput [][]float64 // [flow][run], bits per second
	jain    []float64
	drops   []float64
	late    []experiment.Record
}

// dbRow is a dumbbell measured on both backends.
type dbRow struct {
	D                dumbbell
	Emulated, Kernel dbSide
	KernelWhy        string
	Facts            string
	// Noise is the emulated nodes' time its runs took (the zero Noise:
	// link.DefaultNoise, or none when exact); Nodes says which.
	Noise link.Noise
	Nodes string
}

// add reads one run into s.
func (s *dbSide) add(r workloads.Result) error {
	d, ok := r.Detail.(experiment.ShapeDetail)
	if !ok {
		return fmt.Errorf("a dumbbell's run has no shape detail (%T)", r.Detail)
	}
	if s.goodput == nil {
		s.goodput = make([][]float64, len(d.Flows))
	}
	var drops float64
	for _, l := range d.Links {
		drops += float64(l.Dropped)
	}
	for i, f := range d.Flows {
		s.goodput[i] = append(s.goodput[i], f.Goodput)
	}
	s.jain = append(s.jain, d.Jain)
	s.drops = append(s.drops, drops)
	return nil
}

// med is the median of v.
func med(v []float64) float64 { return stats.Median(stats.Sorted(slices.Clone(v))) }

// measureDumbbells runs each dumbbell on the emulator with seeds 1 to
// runs and on kernel TCP kernelRuns times.
// The emulated runs take noise as their nodes' time (link.Config.Noise;
// the zero Noise leaves link.DefaultNoise, exact runs the nodes without),
// or, with measure, the time the routers of the dumbbell's own kernel
// runs took (fitNoise), which then run first.
func measureDumbbells(ctx context.Context, ds []dumbbell, runs, kernelRuns int, noise link.Noise, exact, measure bool, via kernel.Via, kern bool, progress func(n int, what string)) ([]dbRow, error) {
	var rows []dbRow
	why := ""
	if !kern {
		why = "-kernel=false"
	}
	for _, d := range ds {
		row := dbRow{D: d, KernelWhy: why}
		o, cases, err := cli.ParseCases(ctx, &cli.CompareCommand, append(d.args(), "--link", string(via)))
		if err != nil {
			return rows, fmt.Errorf("dumbbell %d: %w", d.N, err)
		}
		c := cases[0]
		row.Noise = noise
		if why == "" {
			kern, err := o.NewBackend(experiment.Kernel{}.Name())
			if err != nil {
				return rows, err
			}
			var m *noiseMeter
			var routers []string
			var fit nodeFit
			kc := c
			if measure {
				t, _ := c.Shape.Build(c.Link)
				m, routers = newNoiseMeter(t), t.Routers
				kc.ObserveLink = m.observer
			}
			progress(d.N, "kernel")
			_, _, _, err = experiment.Repeat(ctx, kern, kc, kernelRuns, func(r workloads.Result, rec experiment.Record) error {
				row.Kernel.late = append(row.Kernel.late, rec)
				if rec.Kernel != nil {
					row.Facts = rec.Kernel.String()
				}
				if m != nil {
					fit.take(m, routers, rec)
				}
				return row.Kernel.add(r)
			})
			switch {
			case errors.Is(err, kernel.ErrUnsupported):
				why, row.Kernel = err.Error(), dbSide{}
			case err != nil:
				return rows, fmt.Errorf("dumbbell %d, kernel: %w", d.N, err)
			}
			row.KernelWhy = why
			if t := fit.traversals(); measure && len(t) > 0 {
				row.Noise = fitNoise(t)
			}
		}
		progress(d.N, "emulated")
		emulated, err := o.NewBackend(experiment.Emulated{}.Name())
		if err != nil {
			return rows, err
		}
		ec := c
		ec.Clock = emu.Virtual
		ec.Link.Noise, ec.Exact = row.Noise, exact
		switch {
		case exact:
			row.Nodes = "none"
		case row.Noise.IsZero():
			row.Nodes = link.DefaultNoise.String()
		default:
			row.Nodes = row.Noise.String()
		}
		if _, _, _, err := experiment.Repeat(ctx, emulated, ec, runs, func(r workloads.Result, _ experiment.Record) error {
			return row.Emulated.add(r)
		}); err != nil {
			return rows, fmt.Errorf("dumbbell %d: %w", d.N, err)
		}
		rows = append(rows, row)
		progress(d.N, row.summary())
	}
	return rows, nil
}

// flowDeltas are each flow's median goodput on the emulator against
// the kernel's, in per cent; nil without kernel runs.
func (r dbRow) flowDeltas() []float64 {
	if r.Kernel.goodput == nil {
		return nil
	}
	var out []float64
	for i := range r.Emulated.goodput {
		k := med(r.Kernel.goodput[i])
		if k == 0 {
			out = append(out, math.Inf(1))
			continue
		}
		out = append(out, (med(r.Emulated.goodput[i])/k-1)*100)
	}
	return out
}

// dropRatio is the larger median of drops over the smaller (1 when
// both are 0; +Inf when one is).
func (r dbRow) dropRatio() float64 {
	e, k := med(r.Emulated.drops), med(r.Kernel.drops)
	if e == k {
		return 1
	}
	if math.Min(e, k) == 0 {
		return math.Inf(1)
	}
	return math.Max(e, k) / math.Min(e, k)
}

// kernelSpread is the kernel's own spread over its runs: for each flow,
// (largest − smallest) ÷ median, in per cent; its worst over the flows.
func (r dbRow) kernelSpread() float64 {
	worst := 0.0
	for _, g := range r.Kernel.goodput {
		if m := med(g); m > 0 {
			worst = math.Max(worst, (slices.Max(g)-slices.Min(g))/m*100)
		}
	}
	return worst
}

// late is the median over the kernel runs of the bridge's 99th
// percentile lateness, and whether any run's bridge was late enough to
// change its figures.
func (r dbRow) late() (time.Duration, bool) {
	suspect := slices.ContainsFunc(r.Kernel.late, func(rec experiment.Record) bool { return rec.BridgeLate != "" })
	return medianLate(r.Kernel.late, func(rec experiment.Record) *float64 { return rec.LateP99Us }), suspect
}

// summary is a dumbbell's figures in one line, for progress.
func (r dbRow) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d flows %s %s", r.D.Flows, tc.FormatRate(r.D.Rate), r.D.Qdisc)
	if r.Kernel.goodput == nil {
		return b.String() + ": kernel not measured"
	}
	var worst float64
	for _, d := range r.flowDeltas() {
		worst = math.Max(worst, math.Abs(d))
	}
	lp99, _ := r.late()
	fmt.Fprintf(&b, ": worst flow %.1f %%, Jain %.3f / %.3f, drops %.0f / %.0f, bridge p99 %v, emulated nodes %s", worst,
		med(r.Emulated.jain), med(r.Kernel.jain), med(r.Emulated.drops), med(r.Kernel.drops), lp99, r.Nodes)
	return b.String()
}

// dbReport is how the dumbbells were drawn and run, for the report.
type dbReport struct {
	Seed                uint64
	N, Runs, KernelRuns int
	Cells               string // -dumbbell-cells, if given
	NoiseFlag           string // -dumbbell-noise
	Noise               string // the emulated nodes' noise, and where it came from
}

// dumbbellMarkdown writes the dumbbells' report: a row per dumbbell,
// then how many flows, indices and drop counts met the targets.
func dumbbellMarkdown(w io.Writer, rows []dbRow, rep dbReport) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	seed, n, runs, kernelRuns := rep.Seed, rep.N, rep.Runs, rep.KernelRuns
	cmd := fmt.Sprintf("go run ./bench/accuracy -dumbbells %d -dumbbell-seed %d", n, seed)
	if runs != dbDefaultRuns {
		cmd += fmt.Sprintf(" -dumbbell-runs %d", runs)
	}
	if kernelRuns != dbDefaultKernelRuns {
		cmd += fmt.Sprintf(" -dumbbell-kernel-runs %d", kernelRuns)
	}
	if rep.NoiseFlag != dbDefaultNoise {
		cmd += " -dumbbell-noise " + rep.NoiseFlag
	}
	if rep.Cells != "" {
		cmd += " -dumbbell-cells " + rep.Cells
	}
	p("# Random dumbbells against Linux\n\n")
	p("%d dumbbells drawn with seed %d (`%s`, as root): %d to %d CUBIC flows, each between its own pair of hosts, "+
		"each with a round trip of %v–%v, through one bottleneck of %s–%s whose queue holds %g–%g BDPs of the median flow's round trip "+
		"(a FIFO; one dumbbell in four fq_codel at its own limit); %v of share. "+
		"Emulated: netemu's TCP on the virtual clock, seeds 1–%d; kernel: Linux TCP in a namespace per host and router, each link netemu's own through TUN devices, %d runs. "+
		"Each flow's figure is its median goodput over the runs. Δ is the emulated median against the kernel's; "+
		"the kernel's spread is its own runs' (largest − smallest) ÷ median, for the flow where it is widest. "+
		"The emulated hosts and routers take each packet in after %s.\n\n",
		n, seed, cmd, dbMinFlows, dbMaxFlows, dbMinRTT, dbMaxRTT, tc.FormatRate(dbMinRate), tc.FormatRate(dbMaxRate), dbMinBDP, dbMaxBDP,
		dbDuration, runs, kernelRuns, rep.Noise)
	p("| # | flows | bottleneck | flows' RTTs | queue | worst flow Δ | kernel's spread | Jain emulated / kernel | drops emulated / kernel | bridge p99 | emulated nodes |\n")
	p("|---:|---:|---|---|---|---:|---:|---|---|---:|---|\n")
	var deltas, kspreads, jains, dropRatios []float64
	late := 0
	for _, r := range rows {
		var rtts []string
		for _, t := range r.D.RTTs {
			rtts = append(rtts, fmt.Sprint(t.Milliseconds()))
		}
		queue := fmt.Sprintf("%d", r.D.Queue)
		if r.D.Qdisc != "fifo" {
			queue = r.D.Qdisc
		}
		if r.Kernel.goodput == nil {
			p("| %d | %d | %s, %v | %s ms | %s | — | — | %.3f / — | %.0f / — | — | %s |\n", r.D.N, r.D.Flows, tc.FormatRate(r.D.Rate), r.D.RTT,
				strings.Join(rtts, ", "), queue, med(r.Emulated.jain), med(r.Emulated.drops), r.Nodes)
			continue
		}
		worst := 0.0
		for _, d := range r.flowDeltas() {
			deltas = append(deltas, math.Abs(d))
			if math.Abs(d) > math.Abs(worst) {
				worst = d
			}
		}
		kspreads = append(kspreads, r.kernelSpread())
		je, jk := med(r.Emulated.jain), med(r.Kernel.jain)
		jains = append(jains, math.Abs(je-jk))
		dropRatios = append(dropRatios, r.dropRatio())
		lp99, suspect := r.late()
		mark := ""
		if suspect {
			mark, late = " *", late+1
		}
		p("| %d | %d | %s, %v | %s ms | %s | %+.1f %% | %.0f %% | %.3f / %.3f | %.0f / %.0f | %v%s | %s |\n", r.D.N, r.D.Flows, tc.FormatRate(r.D.Rate), r.D.RTT,
			strings.Join(rtts, ", "), queue, worst, r.kernelSpread(), je, jk, med(r.Emulated.drops), med(r.Kernel.drops), lp99.Round(time.Microsecond), mark, r.Nodes)
	}
	if len(deltas) == 0 {
		if len(rows) > 0 {
			p("\nKernel TCP not measured: %s.\n", rows[0].KernelWhy)
		}
		return
	}
	share := func(v []float64, ok func(float64) bool) string {
		n := 0
		for _, x := range v {
			if ok(x) {
				n++
			}
		}
		return fmt.Sprintf("%d of %d (%d %%)", n, len(v), n*100/len(v))
	}
	p("\n| target | met by |\n|---|---|\n")
	p("| each flow's goodput within %g %% of the kernel's | %s flows (median \\|Δ\\| %.1f %%, worst %.1f %%) |\n", dbGoodputTarget,
		share(deltas, func(x float64) bool { return x <= dbGoodputTarget }), med(deltas), slices.Max(deltas))
	p("| Jain's index within %g | %s dumbbells (median difference %.3f, worst %.3f) |\n", dbJainTarget,
		share(jains, func(x float64) bool { return x <= dbJainTarget }), med(jains), slices.Max(jains))
	p("| drops within %g× | %s dumbbells |\n", dbDropsTarget, share(dropRatios, func(x float64) bool { return x <= dbDropsTarget }))
	inRange, flows := 0, 0
	for _, r := range rows {
		for i, g := range r.Kernel.goodput {
			flows++
			if e := med(r.Emulated.goodput[i]); e >= slices.Min(g) && e <= slices.Max(g) {
				inRange++
			}
		}
	}
	p("\nThe kernel's own spread over its %d runs, for each dumbbell's widest flow: median %.0f %%, widest %.0f %%; "+
		"the emulator's median lies within the kernel's runs (smallest to largest) for %d of %d flows. ", kernelRuns, med(kspreads), slices.Max(kspreads), inRange, flows)
	if late > 0 {
		p("%d dumbbell(s) marked * had a kernel run whose bridge was late enough to change its figures (p99 ≥ 1 ms or a stall ≥ 50 ms).", late)
	}
	if rows[0].Facts != "" {
		p("\n\nKernel: %s.\n", rows[0].Facts)
	}
}
