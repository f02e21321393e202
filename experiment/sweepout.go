package experiment

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/plot"
	"github.com/netemu/netemu/workloads"
)

// A sweep's output: a table with a row per cell, or JSON lines (each
// run's Record, and with seeds summarized each cell's Summary), and a
// figure of the cells' spreads. The same outcomes give the same bytes,
// whether they come from Sweep.Run or from MergeResults.

// TableHeader heads the table of runs, one Row each (WriteRow), written
// through a tabwriter.Writer that aligns right: every cell ends in a tab.
const TableHeader = "workload\trtt\trate\tcase\telapsed\tmodel\tvs model\tconns\tdrops\t"

// seededHeader heads the table of a sweep whose cells are summarized
// over their seeds.
const seededHeader = "workload\trtt\trate\tcase\tmedian\tp10–p90\tmodel\tvs model\tconns\tmedian drops\t"

var fmtDur = link.FormatDuration

// A Row is one run's line of the table TableHeader heads.
type Row struct {
	Case           Case   // its RTT and rate fill their columns
	CaseName       string // the case column: what sets the case apart among the table's
	Workload       string // the result's name for the workload
	Elapsed, Model time.Duration
	Conns          int
	Drops          *uint64 // nil where the backend counts none: "—"
	Summary        string  // the workload's own figures, after the last column
}

// WriteRow writes r as one line of tab-terminated cells. A case of a
// fixed duration (Case.FixedDuration) has "—" for its elapsed time, model
// and deviation: its figures are in the summary.
func WriteRow(w io.Writer, r Row) {
	elapsed, model, vs := fmtDur(r.Elapsed), fmtDur(r.Model), Deviation(Ms(r.Elapsed), Ms(r.Model))
	if r.Case.FixedDuration() {
		elapsed, model, vs = "—", "—", "—"
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t  %s\n", r.Workload, fmtDur(r.Case.RTT()), r.Case.RateLabel(),
		r.CaseName, elapsed, model, vs, r.Conns, drops(r.Drops), r.Summary)
}

// Deviation is got's difference from want in percent, signed, with one
// decimal ("+12.5%"); "—" where either is 0.
func Deviation(got, want float64) string {
	if want == 0 || got == 0 {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", (got-want)/want*100)
}

// SpreadRange is s's 10th to 90th percentiles, the unit written once:
// "12.5–20 ms".
func SpreadRange(s Spread) string {
	return strings.ReplaceAll(fmtDur(s.P10), " ms", "") + "–" + fmtDur(s.P90)
}

// MedianCount writes a median of counts (Spread.Drops, .Retransmits):
// "—" for the -1 of a backend that counts none.
func MedianCount(v float64) string {
	if v < 0 {
		return "—"
	}
	return fmt.Sprintf("%g", v)
}

func drops(d *uint64) string {
	if d == nil {
		return "—"
	}
	return fmt.Sprint(*d)
}

// SweepOutputOptions say how a SweepOutput writes.
type SweepOutputOptions struct {
	JSON bool // JSON lines instead of the table
	// Seeded summarizes each cell over its seeds, however many: the
	// table's row is the median and the spread, and the JSON lines of a
	// cell end with its Summary. Without it each cell runs once.
	Seeded bool
	// CaseName fills the table's case column and names a cell in
	// Failed's description; nil leaves the workload's variant.
	CaseName func(Case) string
	// Failed, if not nil, is told of each run that failed as its outcome
	// arrives, with the run named by its cell's parameters ("bulk, rtt
	// 10 ms, rate 10 Mbit/s, loss 2%") and, when Seeded, its seed.
	Failed func(run string, oc UnitOutcome)
}

// A SweepOutput writes a sweep's output from its outcomes, which arrive
// in unit order (Sweep.Units, or Sweep.AllUnits for a merge): a cell's
// table row or JSON lines once its last seed is in. A cell whose runs all
// failed has neither. Close ends the table.
type SweepOutput struct {
	s      *Sweep
	opt    SweepOutputOptions
	w      io.Writer
	tw     *tabwriter.Writer // the table; nil for JSON
	runs   []UnitOutcome     // the current cell's
	failed int               // runs
	total  int

	cases   []Case // the cells written, for the figure
	spreads []Spread
}

// NewOutput returns the output of the sweep's outcomes, written to w.
func (s *Sweep) NewOutput(w io.Writer, opt SweepOutputOptions) *SweepOutput {
	out := &SweepOutput{s: s, opt: opt, w: w}
	if !opt.JSON {
		out.tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		if opt.Seeded {
			fmt.Fprintln(out.tw, seededHeader)
		} else {
			fmt.Fprintln(out.tw, TableHeader)
		}
	}
	return out
}

// Add takes the next outcome; a cell's output is written once its last
// seed is in.
func (out *SweepOutput) Add(oc UnitOutcome) error {
	out.total++
	if oc.Err != "" {
		out.failed++
		if out.opt.Failed != nil {
			run := out.cellParams(oc.Cell)
			if out.opt.Seeded {
				run += fmt.Sprintf(", seed %d", oc.Seed)
			}
			out.opt.Failed(run, oc)
		}
	}
	out.runs = append(out.runs, oc)
	if len(out.runs) < len(out.s.Seeds) {
		return nil
	}
	runs := out.runs
	out.runs = nil
	return out.cell(runs)
}

// caseName is the table's case column for c.
func (out *SweepOutput) caseName(c Case) string {
	if out.opt.CaseName != nil {
		return out.opt.CaseName(c)
	}
	return c.Workload.Variant()
}

// cellParams names a cell by its parameters, for messages.
func (out *SweepOutput) cellParams(cell int) string {
	c := out.s.Cases[cell]
	p := fmt.Sprintf("%s, rtt %s, rate %s", c.Workload.Name(), fmtDur(c.RTT()), c.RateLabel())
	if n := out.caseName(c); n != "" {
		p += ", " + n
	}
	return p
}

// cell writes one cell's output.
func (out *SweepOutput) cell(runs []UnitOutcome) error {
	c := out.s.Cases[runs[0].Cell]
	var ok []UnitOutcome
	for _, r := range runs {
		if r.Err == "" {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	var times []time.Duration
	var recs []Record
	for _, r := range ok {
		times = append(times, r.Headline)
		rec := Record{}
		rec.Drops, rec.Retransmits = r.Drops, r.Retransmits
		recs = append(recs, rec)
	}
	sp := SpreadOf(times, recs)
	out.cases, out.spreads = append(out.cases, c), append(out.spreads, sp)
	if out.opt.JSON {
		return out.cellJSON(ok, sp, len(runs)-len(ok))
	}
	if !out.opt.Seeded {
		r := ok[0]
		WriteRow(out.tw, Row{Case: c, CaseName: out.caseName(c), Workload: r.Workload, Elapsed: r.Elapsed, Model: r.Model,
			Conns: r.Conns, Drops: r.Drops, Summary: r.Summary})
		return nil
	}
	// The run whose headline is the median (nearest rank: one of them)
	// gives the connections and the workload's own figures.
	med := ok[0]
	for _, r := range ok {
		if r.Headline == sp.Median {
			med = r
			break
		}
	}
	median, spread, model, vs := fmtDur(sp.Median), SpreadRange(sp), fmtDur(med.ModelHead), Deviation(Ms(sp.Median), Ms(med.ModelHead))
	if c.TimedByDuration() {
		median, spread, model, vs = "—", "—", "—", "—"
	}
	fmt.Fprintf(out.tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t  %s\n", med.Workload, fmtDur(c.RTT()), c.RateLabel(),
		out.caseName(c), median, spread, model, vs, med.Conns, MedianCount(sp.Drops), med.Summary)
	return nil
}

// cellJSON writes a cell's JSON lines: the record of each run that
// succeeded (ok, at least one) and, when Seeded, the summary of their
// spread sp, counting the failed runs.
func (out *SweepOutput) cellJSON(ok []UnitOutcome, sp Spread, failed int) error {
	for _, r := range ok {
		if _, err := fmt.Fprintf(out.w, "%s\n", r.Record); err != nil {
			return err
		}
	}
	if !out.opt.Seeded {
		return nil
	}
	sum := Summary{Summary: true, Seeds: out.s.SeedsLabel(), Spread: sp, ModelMs: Ms(ok[0].ModelHead),
		Failed: failed, Study: out.s.Study.Study, StudySHA256: out.s.Study.StudySHA256}
	if err := json.Unmarshal(ok[0].Record, &sum.Setup); err != nil {
		return err
	}
	sum.Seed = nil
	b, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out.w, "%s\n", b)
	return err
}

// Close ends the table: its rows, and when Seeded the note on what they
// measure. It writes nothing for JSON. Only the rows' error is returned:
// a writer that failed keeps its error (the command's checks it).
func (out *SweepOutput) Close() error {
	if out.tw == nil {
		return nil
	}
	if err := out.tw.Flush(); err != nil {
		return err
	}
	switch {
	case out.opt.Seeded && out.s.Cases[0].TimedByDuration():
		fmt.Fprintf(out.w, "\neach cell over seeds %s: the median of its drops; conns and the last column: one run's, the median by elapsed time (%s runs for the duration it is given, so its time is no result).\n",
			strings.ReplaceAll(out.s.SeedsLabel(), "-", "–"), out.s.Cases[0].Workload.Name())
	case out.opt.Seeded:
		fmt.Fprintf(out.w, "\nmedian and 10th–90th percentiles (nearest rank) of each cell's %s over seeds %s, and the median of its drops; conns and the last column: the median run's.\n",
			headlineName(out.s.Cases[0]), strings.ReplaceAll(out.s.SeedsLabel(), "-", "–"))
	}
	return nil
}

// Failures counts the runs that failed, of the runs added.
func (out *SweepOutput) Failures() (failed, runs int) { return out.failed, out.total }

// Figure draws the cells written so far (SpreadFigure, for the backend
// named): false when there is none.
func (out *SweepOutput) Figure(backend string) (plot.Figure, bool) {
	if len(out.cases) == 0 {
		return plot.Figure{}, false
	}
	return SpreadFigure(backend, out.cases, out.spreads), true
}

// headlineName is what a seeded table's median measures: the workload's
// headline figure, or its elapsed time.
func headlineName(c Case) string {
	if k, ok := workloads.Lookup(c.Workload.Name()); ok && k.Headline != "" {
		return k.Headline
	}
	return "elapsed time"
}
