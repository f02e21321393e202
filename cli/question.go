package cli

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/internal/english"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/plot"
	"github.com/netemu/netemu/stats"
	"github.com/netemu/netemu/workloads"
)

// A question is one of the shared-bottleneck questions people argue
// about, measured by one command, netemu reproduce NAME: a few cells,
// each a command line as netemu run takes it, run on the emulator over
// seeds and on kernel TCP over the same links; for each cell the
// figures the question is about, medians over the runs, both backends
// side by side, beside a published figure or model where one exists;
// and a picture. Each question lives in a file of its own
// (question_*.go) and is listed once, in questions.
type question struct {
	name  string // "rtt-fairness"
	about string // one line, for help
	// source is the published work the question follows, said under
	// its table; differs, what differs from that work's setup.
	source, differs string
	cells           []qCell
	figures         []qFigure
	// plot lists the figures drawn, one chart each, over the cells' x,
	// whose name and unit are xName and xUnit.
	plot  []int
	xName string
	xUnit plot.Unit
	// refName names the reference column (qCell.ref): a published
	// figure or a model's.
	refName string
}

// qCell is one cell of a question: a command line of netemu compare
// (without "compare"), its label in the table, its place on the picture's x
// axis and its series there, and reference figures by figure name.
type qCell struct {
	label  string
	series string
	x      float64
	args   []string
	ref    map[string]float64
}

// qFigure is one figure of a run: its column's name, its unit as the
// table prints it, its value (NaN where a run has none) and how many
// decimals the table shows.
type qFigure struct {
	name     string
	unit     string
	of       func(r qRun) float64
	decimals int
}

// qRun is one run's result, as the figures read it: each flow's, and
// the busiest direction of the link named bottleneck.
type qRun struct {
	flows []qFlow
	link  *experiment.LinkResult // nil on two hosts
	drops float64
}

// qFlow is one flow of a run.
type qFlow struct {
	name, cc, workload string
	goodput            float64 // bits per second
	result             workloads.Result
}

// questions are netemu reproduce's named questions, in help's order.
var questions = []*question{rttFairness, flowsSharing, homeLink, parkingLot, bbrVsCubic, bbrVsCubicDumbbell}

// questionFiles are the topology files the questions run on.
//
//go:embed questions/*.yaml
var questionFiles embed.FS

// QuestionNames lists the questions netemu reproduce takes by name.
func QuestionNames() []string {
	var names []string
	for _, q := range questions {
		names = append(names, q.name)
	}
	return names
}

// QuestionHelp is a line per question: its name and what it asks.
func QuestionHelp() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, q := range questions {
		fmt.Fprintf(tw, "  %s\t%s\n", q.name, q.about)
	}
	tw.Flush()
	return b.String()
}

// QuestionOptions are how netemu reproduce NAME runs: seeds 1 to Runs on
// the emulator, KernelRuns runs on kernel TCP where kernel mode works
// here (0: none), a JSON line per run and per cell's summary instead of
// the table, and the picture's file ("" for none).
type QuestionOptions struct {
	Runs, KernelRuns int
	JSON             bool
	Plot             string
	// HostNoise, if set, is the emulated nodes' time to take a packet in
	// instead of link.DefaultNoise (--host-noise).
	HostNoise link.Noise
}

// Reproduce runs the question named name and writes its table, or its
// JSON lines, on w, and its picture to o.Plot.
func Reproduce(ctx context.Context, name string, o QuestionOptions, w, stderr io.Writer) error {
	i := slices.IndexFunc(questions, func(q *question) bool { return q.name == name })
	if i < 0 {
		return Usagef("reproduce: unknown question %q; want %s, or nothing for the reference tables", name, english.Or(QuestionNames()...))
	}
	if o.Runs < 1 || o.KernelRuns < 0 {
		return Usagef("reproduce %s: --runs %d, --kernel-runs %d: want --runs 1 or more and --kernel-runs 0 or more", name, o.Runs, o.KernelRuns)
	}
	if o.Plot != "" {
		if err := checkFigurePath(o.Plot); err != nil {
			return err
		}
	}
	return questions[i].run(ctx, o, w, stderr)
}

// checkFigurePath refuses a picture's path that cannot be written
// before anything runs.
func checkFigurePath(path string) error {
	o := Options{Plot: path}
	if err := o.checkFigures(); err != nil {
		return err
	}
	return CheckDir("plot", path)
}

// qSummary is one cell's figures on one backend: the median of each
// over the runs, with the 10th and 90th percentiles, as a JSON line.
type qSummary struct {
	Question string             `json:"question"`
	Cell     string             `json:"cell"`
	Backend  string             `json:"backend"`
	Runs     int                `json:"runs"`
	Median   map[string]float64 `json:"median"`
	P10      map[string]float64 `json:"p10"`
	P90      map[string]float64 `json:"p90"`
	Ref      map[string]float64 `json:"reference,omitempty"`
	Late     string             `json:"bridge_late,omitempty"`
	Command  string             `json:"command"`
}

// qMeasured is one cell measured: each figure's values over the runs,
// per backend.
type qMeasured struct {
	emulated, kernel [][]float64 // [figure][run]; kernel nil when not measured
	late             string      // why a kernel run's bridge was late, if one was
	// why the kernel could not run this cell where it ran others (a
	// congestion control it lacks); "" otherwise.
	why string
}

// run measures every cell of q and writes the table (or JSON lines) and
// the picture.
func (q *question) run(ctx context.Context, o QuestionOptions, w, stderr io.Writer) error {
	enc := json.NewEncoder(w)
	steps := 1
	if o.KernelRuns > 0 {
		steps = 2
	}
	bar := NewProgress(stderr, len(q.cells)*steps, true)
	defer bar.Close()
	var got []qMeasured
	var facts *kernel.Facts
	kernelWhy := ""
	if o.KernelRuns == 0 {
		kernelWhy = "--kernel-runs 0"
	}
	for _, cell := range q.cells {
		if err := writeFailed(w); err != nil {
			return err
		}
		m, f, why, err := q.measure(ctx, cell, o, kernelWhy, bar, enc)
		if err != nil {
			return fmt.Errorf("reproduce %s, %s: %w", q.name, cell.label, err)
		}
		kernelWhy = why
		if f != nil {
			facts = f
		}
		got = append(got, m)
		if o.JSON {
			for _, s := range q.summaries(cell, m) {
				if err := enc.Encode(s); err != nil {
					return err
				}
			}
		}
	}
	bar.Close()
	if !o.JSON {
		if err := q.table(w, got, o, facts, kernelWhy); err != nil {
			return err
		}
	}
	if o.Plot != "" {
		if err := q.figure(got, o).Save(o.Plot); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", o.Plot)
	}
	return nil
}

// measure runs cell on the emulator with seeds 1 to o.Runs and on
// kernel TCP o.KernelRuns times, unless kernelWhy already says why
// kernel mode does not run here; it returns the figures, the kernel's
// facts, and why kernel TCP was not measured ("" when it was).
func (q *question) measure(ctx context.Context, cell qCell, o QuestionOptions, kernelWhy string, bar *Progress, enc *json.Encoder) (qMeasured, *kernel.Facts, string, error) {
	var m qMeasured
	opts, cases, err := parseArgsCases(ctx, cell.args)
	if err != nil {
		return m, nil, kernelWhy, err
	}
	c := cases[0]
	record := func(rec experiment.Record) error {
		if !o.JSON {
			return nil
		}
		rec.Table = q.name + ", " + cell.label
		return enc.Encode(rec)
	}
	emulated, err := opts.NewBackend(experiment.Emulated{}.Name())
	if err != nil {
		return m, nil, kernelWhy, err
	}
	m.emulated = make([][]float64, len(q.figures))
	bar.Start(cell.label)
	ec := c
	ec.Clock = emu.Virtual
	if !o.HostNoise.IsZero() {
		ec.Link.Noise = o.HostNoise
	}
	_, _, _, err = experiment.Repeat(ctx, emulated, ec, o.Runs, func(r workloads.Result, rec experiment.Record) error {
		q.add(m.emulated, r, rec)
		return record(rec)
	})
	bar.Finish()
	if err != nil || kernelWhy != "" {
		return m, nil, kernelWhy, err
	}
	kern, err := opts.NewBackend(experiment.Kernel{}.Name())
	if err != nil {
		return m, nil, kernelWhy, err
	}
	var facts *kernel.Facts
	m.kernel = make([][]float64, len(q.figures))
	bar.Start(cell.label + " kernel")
	_, _, _, err = experiment.Repeat(ctx, kern, c, o.KernelRuns, func(r workloads.Result, rec experiment.Record) error {
		q.add(m.kernel, r, rec)
		facts = rec.Kernel
		if rec.BridgeLate != "" && m.late == "" {
			m.late = rec.BridgeLate
		}
		return record(rec)
	})
	bar.Finish()
	switch {
	case errors.Is(err, kernel.ErrUnsupported):
		m.kernel = nil
		return m, nil, err.Error(), nil
	case errors.Is(err, errors.ErrUnsupported):
		// This kernel lacks the cell's congestion control: the other
		// cells may still run.
		m.kernel, m.why = nil, err.Error()
		return m, nil, "", nil
	case err != nil:
		return m, nil, kernelWhy, fmt.Errorf("kernel: %w", err)
	}
	return m, facts, "", nil
}

// sourceDir is where questionFiles are in netemu's source tree, from
// its root: the command lines printed name the files there.
const sourceDir = "cli/"

// commandOf is cell's command line as netemu compare takes it, from the
// root of netemu's source tree.
func commandOf(cell qCell) string {
	var args []string
	for _, a := range cell.args {
		if strings.HasPrefix(a, "questions/") {
			a = sourceDir + a
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// parseArgsCases reads a cell's command line into its one case.
func parseArgsCases(ctx context.Context, args []string) (*Options, []experiment.Case, error) {
	o, cases, err := parseCasesIn(ctx, &CompareCommand, args, questionFiles)
	if err != nil {
		return nil, nil, err
	}
	if len(cases) != 1 {
		return nil, nil, fmt.Errorf("%s: %d cases; a question's cell is one", strings.Join(args, " "), len(cases))
	}
	return o, cases, nil
}

// add appends each figure of run r, recorded as rec, to figs.
func (q *question) add(figs [][]float64, r workloads.Result, rec experiment.Record) {
	run := runOf(r, rec)
	for i, f := range q.figures {
		figs[i] = append(figs[i], f.of(run))
	}
}

// runOf reads a run's flows from its result: a topology's, or share's
// on two hosts.
func runOf(r workloads.Result, rec experiment.Record) qRun {
	run := qRun{drops: math.NaN()}
	if rec.Drops != nil {
		run.drops = float64(*rec.Drops)
	}
	switch d := r.Detail.(type) {
	case experiment.ShapeDetail:
		for _, f := range d.Flows {
			cc := ""
			if sd, ok := f.Result.Detail.(workloads.ShareDetail); ok && len(sd.CCs) > 0 {
				cc = sd.CCs[0]
			}
			run.flows = append(run.flows, qFlow{name: f.Name, cc: cc, workload: f.Workload, goodput: f.Goodput, result: f.Result})
		}
		run.drops = 0 // the record counts the first link's drops; a shape's are every link's
		for i, l := range d.Links {
			run.drops += float64(l.Dropped)
			if l.Link == "bottleneck" || l.Link == "access" {
				if run.link == nil || l.Utilisation > run.link.Utilisation {
					run.link = &d.Links[i]
				}
			}
		}
	case workloads.ShareDetail:
		for i, g := range d.FlowGoodput {
			f := qFlow{name: fmt.Sprintf("flow %d", i+1), workload: "share", goodput: g, result: r}
			if len(d.CCs) > i {
				f.cc = d.CCs[i]
			}
			run.flows = append(run.flows, f)
		}
	}
	return run
}

// spread is the median, 10th and 90th percentiles of vs, NaNs left out,
// nearest-rank as experiment.SpreadOf takes them; ok false when nothing
// is left.
func spread(vs []float64) (med, p10, p90 float64, ok bool) {
	var xs []float64
	for _, v := range vs {
		if !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0, 0, 0, false
	}
	xs = stats.Sorted(xs)
	return stats.Quantile(xs, 0.5), stats.Quantile(xs, 0.1), stats.Quantile(xs, 0.9), true
}

// summaries are cell's JSON summary lines, one per backend measured.
func (q *question) summaries(cell qCell, m qMeasured) []qSummary {
	var out []qSummary
	for _, b := range []struct {
		name string
		figs [][]float64
	}{{"emulated", m.emulated}, {"kernel", m.kernel}} {
		if b.figs == nil {
			continue
		}
		s := qSummary{Question: q.name, Cell: cell.label, Backend: b.name, Runs: len(b.figs[0]), Median: map[string]float64{},
			P10: map[string]float64{}, P90: map[string]float64{}, Ref: cell.ref, Command: "netemu compare " + commandOf(cell)}
		if b.name == "kernel" {
			s.Late = m.late
		}
		for i, f := range q.figures {
			if med, lo, hi, ok := spread(b.figs[i]); ok {
				s.Median[f.name], s.P10[f.name], s.P90[f.name] = med, lo, hi
			}
		}
		out = append(out, s)
	}
	return out
}

// table writes the question's table: a row per cell, each figure's
// median on the emulator and on kernel TCP, and the reference's where
// the question has one; then what ran.
func (q *question) table(w io.Writer, got []qMeasured, o QuestionOptions, facts *kernel.Facts, kernelWhy string) error {
	fmt.Fprintf(w, "%s: %s\n\n", q.name, q.about)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	head, sub := []string{""}, []string{"cell"}
	for _, f := range q.figures {
		name := f.name
		if f.unit != "" {
			name += " (" + f.unit + ")"
		}
		cols := []string{"emulated", "kernel"}
		if q.hasRef(f.name) {
			cols = append(cols, q.refName)
		}
		head = append(head, name)
		head = append(head, make([]string, len(cols)-1)...)
		sub = append(sub, cols...)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	fmt.Fprintln(tw, strings.Join(sub, "\t")+"\t")
	var late []string
	for k, cell := range q.cells {
		row := []string{cell.label}
		for i, f := range q.figures {
			row = append(row, f.format(got[k].emulated, i))
			kcol := "—"
			if got[k].kernel != nil {
				kcol = f.format(got[k].kernel, i)
				if got[k].late != "" {
					kcol += "*"
				}
			}
			row = append(row, kcol)
			if q.hasRef(f.name) {
				ref := "—"
				if v, ok := cell.ref[f.name]; ok {
					ref = f.value(v)
				}
				row = append(row, ref)
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		if got[k].late != "" {
			late = append(late, fmt.Sprintf("* %s: %s", cell.label, got[k].late))
		}
		if got[k].why != "" {
			late = append(late, fmt.Sprintf("— %s, kernel: %s", cell.label, got[k].why))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		// The figures' names head two or three columns each: the
		// padding of the cells they leave empty is not output.
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n"))); err != nil {
			return err
		}
	}
	for _, l := range late {
		fmt.Fprintln(w, l)
	}
	kernelAbout := "kernel: Linux TCP over the same links, median of " + plural(o.KernelRuns, "run")
	if facts != nil {
		f := *facts
		if q.setsCC() {
			f.CongestionControl = "each cell's"
		}
		kernelAbout += " (" + f.String() + ")"
	}
	if kernelWhy != "" {
		kernelAbout = "kernel: not measured: " + kernelWhy
	}
	seeds := fmt.Sprintf("median of seeds 1–%d", o.Runs)
	if o.Runs == 1 {
		seeds = "seed 1"
	}
	if !o.HostNoise.IsZero() {
		seeds += ", nodes taking " + o.HostNoise.String() + " a packet (--host-noise)"
	}
	fmt.Fprintf(w, "\nemulated: netemu's TCP on the virtual clock, %s; %s.\n", seeds, kernelAbout)
	if q.source != "" {
		fmt.Fprintf(w, "%s\n", q.source)
	}
	if q.differs != "" {
		fmt.Fprintf(w, "%s\n", q.differs)
	}
	fmt.Fprintf(w, "The first cell (%s) is `netemu compare %s`, from netemu's source tree; --json gives every cell's command, every run's record and each figure's 10th and 90th percentiles.\n",
		q.cells[0].label, commandOf(q.cells[0]))
	return nil
}

// setsCC reports whether the cells pick their congestion controls:
// then the kernel's default is not what ran.
func (q *question) setsCC() bool {
	return slices.ContainsFunc(q.cells, func(c qCell) bool {
		return slices.Contains(c.args, "--cc") || slices.Contains(c.args, "--ccs")
	})
}

// hasRef reports whether any cell has a reference figure for the
// figure named name.
func (q *question) hasRef(name string) bool {
	return slices.ContainsFunc(q.cells, func(c qCell) bool { _, ok := c.ref[name]; return ok })
}

// format is figure i's median over runs in the table; "—" where no run
// has it.
func (f qFigure) format(figs [][]float64, i int) string {
	med, _, _, ok := spread(figs[i])
	if !ok {
		return "—"
	}
	return f.value(med)
}

// value prints v with the figure's decimals.
func (f qFigure) value(v float64) string { return fmt.Sprintf("%.*f", f.decimals, v) }

// figure is the question's picture: a chart per plotted figure, a line
// per series and backend over the cells' x, the emulator's runs' 10th
// to 90th percentiles shaded, the kernel's dashed, the reference's as
// markers.
func (q *question) figure(got []qMeasured, o QuestionOptions) plot.Figure {
	fig := plot.Figure{Title: fmt.Sprintf("netemu reproduce %s: %s", q.name, q.about)}
	var series []string
	for _, c := range q.cells {
		if !slices.Contains(series, c.series) {
			series = append(series, c.series)
		}
	}
	for _, i := range q.plot {
		f := q.figures[i]
		ch := plot.Chart{Title: f.name, XLabel: q.xName, XUnit: q.xUnit, YLabel: f.name, FromZero: true}
		if o.Runs > 1 {
			ch.Band = fmt.Sprintf("emulated, p10–p90 of %d seeds", o.Runs)
		}
		if f.decimals > 0 {
			ch.YUnit = plot.Number
		}
		if f.unit != "" {
			ch.YLabel += " (" + f.unit + ")"
		}
		var refs []plot.Series
		for _, s := range series {
			var em, kr, ref plot.Series
			em = plot.Series{Name: strings.TrimSpace(s + " emulated"), Group: s, Dots: true}
			kr = plot.Series{Name: strings.TrimSpace(s + " kernel"), Group: s, Dots: true, Dashed: true}
			ref = plot.Series{Name: strings.TrimSpace(s + " " + q.refName), Group: s, Points: true}
			for k, c := range q.cells {
				if c.series != s {
					continue
				}
				if med, lo, hi, ok := spread(got[k].emulated[i]); ok {
					em.X, em.Y = append(em.X, c.x), append(em.Y, med)
					if o.Runs > 1 {
						em.Lo, em.Hi = append(em.Lo, lo), append(em.Hi, hi)
					}
				}
				if got[k].kernel != nil {
					if med, _, _, ok := spread(got[k].kernel[i]); ok {
						kr.X, kr.Y = append(kr.X, c.x), append(kr.Y, med)
					}
				}
				if v, ok := c.ref[f.name]; ok {
					ref.X, ref.Y = append(ref.X, c.x), append(ref.Y, v)
				}
			}
			for _, p := range []plot.Series{em, kr} {
				if len(p.X) > 0 {
					ch.Series = append(ch.Series, p)
				}
			}
			if len(ref.X) > 0 {
				refs = append(refs, ref)
			}
		}
		// A reference the same for every series (a model of the x axis
		// alone) is drawn once, in black.
		if len(refs) > 1 && !slices.ContainsFunc(refs[1:], func(r plot.Series) bool {
			return !slices.Equal(r.X, refs[0].X) || !slices.Equal(r.Y, refs[0].Y)
		}) {
			refs = []plot.Series{{Name: q.refName, X: refs[0].X, Y: refs[0].Y, Points: true, Neutral: true}}
		}
		ch.Series = append(ch.Series, refs...)
		fig.Charts = append(fig.Charts, ch)
	}
	fig.SameX = true
	return fig
}

// The figures the questions share.

// mbit is a flow's goodput in Mbit/s, picked by pick from a run's flows.
func mbit(pick func(fs []qFlow) []qFlow) func(r qRun) float64 {
	return func(r qRun) float64 {
		fs := pick(r.flows)
		if len(fs) == 0 {
			return math.NaN()
		}
		sum := 0.0
		for _, f := range fs {
			sum += f.goodput
		}
		return sum / float64(len(fs)) / 1e6
	}
}

// jainOf is Jain's fairness index of a run's flows' goodputs.
func jainOf(r qRun) float64 {
	var g []float64
	for _, f := range r.flows {
		g = append(g, f.goodput)
	}
	if len(g) == 0 {
		return math.NaN()
	}
	return workloads.Jain(g)
}

// queueMs is the bottleneck's queueing delay at quantile p50 (false) or
// p99 (true), in ms.
func queueMs(p99 bool) func(r qRun) float64 {
	return func(r qRun) float64 {
		if r.link == nil {
			return math.NaN()
		}
		d := r.link.QueueDelay50
		if p99 {
			d = r.link.QueueDelay99
		}
		return float64(d) / float64(time.Millisecond)
	}
}

// drops is every drop of the run.
func drops(r qRun) float64 { return r.drops }

// allFlows picks every flow.
func allFlows(fs []qFlow) []qFlow { return fs }

// allBut0 picks every flow but the first.
func allBut0(fs []qFlow) []qFlow {
	if len(fs) < 2 {
		return nil
	}
	return fs[1:]
}

// ratio is a over b, NaN where b has nothing.
func ratio(a, b func(r qRun) float64) func(r qRun) float64 {
	return func(r qRun) float64 {
		d := b(r)
		if d <= 0 || math.IsNaN(d) {
			return math.NaN()
		}
		return a(r) / d
	}
}

// flowAt picks flow i.
func flowAt(i int) func(fs []qFlow) []qFlow {
	return func(fs []qFlow) []qFlow {
		if i >= len(fs) {
			return nil
		}
		return fs[i : i+1]
	}
}
