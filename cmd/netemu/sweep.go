package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/workloads"
)

// cmdSweep runs every combination of the comma-separated values of the
// list flags (the cells), each with every seed of --seeds.
func cmdSweep(ctx context.Context, args []string, w, stderr io.Writer) error {
	s, err := planSweep(args)
	if err != nil {
		return err
	}
	if !s.o.set["shard"] {
		i, n, ok, err := shardFromEnv()
		if err != nil {
			return err
		}
		if ok {
			s.Shard, s.Shards = i, n
			fmt.Fprintf(stderr, "netemu: shard %d/%d, from JOB_COMPLETION_INDEX and JOB_COMPLETIONS\n", i, n)
		}
	}
	s.o.printNotes(stderr)
	defer s.o.announce(stderr)
	return s.run(ctx, w, stderr)
}

// A sweep is the plan of netemu sweep: the cells (one case each), the
// seeds each cell runs with, and how to run them.
type sweep struct {
	experiment.Sweep
	o     *options
	b     experiment.Backend
	multi bool // --seeds given: each cell ends with a summary of its seeds
	jobs  int  // worker processes
	args  []string
}

// planSweep parses sweep's arguments into its plan.
func planSweep(args []string) (*sweep, error) {
	args, study, studyHash, err := withStudy(args)
	if err != nil {
		return nil, err
	}
	o, cases, err := parseCases("sweep", args, true)
	if err != nil {
		if study != "" {
			return nil, usagef("--spec %s: %v", study, err)
		}
		return nil, err
	}
	o.study, o.studyHash = study, studyHash
	s := &sweep{o: o, args: args, jobs: availableCPUs(), Sweep: experiment.Sweep{Cases: cases, Seeds: []uint64{o.seed},
		Shards: 1, Results: o.out, Resume: o.resume, Study: experiment.StudyID{Args: studyArgs(args), Study: study, StudySHA256: studyHash, Inputs: o.inputHashes()}}}
	if o.set["seeds"] {
		if o.set["seed"] {
			return nil, usagef("sweep: --seed %d and --seeds %s both pick the seed; give --seeds alone (like --seeds 1-20) or --seed alone", o.seed, o.seedsFlag)
		}
		if s.Seeds, err = parseSeeds(o.seedsFlag); err != nil {
			return nil, err
		}
		s.multi = true
	}
	if runs := len(s.Cases) * len(s.Seeds); runs > maxRuns {
		return nil, usagef("sweep: %d cells × %d seeds is %d runs; want at most %d per sweep: fewer seeds or values, or split the study (--shard)", len(s.Cases), len(s.Seeds), runs, maxRuns)
	}
	if s.b, err = o.newBackend(o.backend); err != nil {
		return nil, err
	}
	if o.set["jobs"] {
		if o.jobs < 1 {
			return nil, usagef("--jobs %d: want the number of worker processes, 1 or more, like --jobs 4 (without it, one per CPU: %d here)", o.jobs, availableCPUs())
		}
		s.jobs = o.jobs
	}
	if o.set["shard"] {
		if s.Shard, s.Shards, err = parseShard(o.shardFlag); err != nil {
			return nil, err
		}
	}
	if o.resume && o.out == "" {
		return nil, usagef("sweep: --continue goes on from the results file of --out; give --out FILE too")
	}
	if o.out != "" {
		if err := checkDir("out", o.out); err != nil {
			return nil, err
		}
	}
	if o.clock != "virtual" || s.b.Name() != (experiment.Emulated{}).Name() {
		// Real-time runs measure the machine: side by side they would
		// slow each other down.
		if o.set["jobs"] && o.jobs > 1 {
			return nil, usagef("--jobs %d: runs in real time (--clock real, --backend kernel) would share the CPU and slow each other; they run one at a time: drop --jobs", o.jobs)
		}
		s.jobs = 1
	}
	return s, nil
}

// withStudy replaces --spec in args, when given, by the arguments of its
// study file, and returns those with the file's name and SHA-256 (both
// "" without --spec). The rest of args may only say how the sweep runs
// and prints.
func withStudy(args []string) (_ []string, study, hash string, err error) {
	path, rest, ok := specFlag(args)
	if !ok {
		return args, "", "", nil
	}
	specArgs, study, hash, err := readSpec(path)
	if err != nil {
		return nil, "", "", err
	}
	if extra := studyArgs(rest); len(extra) > 0 {
		return nil, "", "", usagef("sweep --spec %s: %q belongs in the study file; the command line gives only how it runs and prints (--jobs, --out, --continue, --shard, --json, --plot)", path, strings.Join(extra, " "))
	}
	return append(specArgs, rest...), study, hash, nil
}

// maxSeeds bounds --seeds: a typo like 1-1000000 should not start a
// week of runs.
const maxSeeds = 100_000

// maxCells bounds the cells of a sweep (the product of its lists' lengths
// and the workload's variants), and maxRuns its runs (cells × seeds), for
// the same reason; both are checked before anything is built.
const (
	maxCells = 100_000
	maxRuns  = 1_000_000
)

// parseSeeds reads --seeds: a range "1-20", or a count "20" (seeds 1 to 20).
func parseSeeds(v string) ([]uint64, error) {
	bad := usagef("--seeds %q: want a count like 20 (seeds 1 to 20) or a range like 1-100", v)
	lo, hi := uint64(1), uint64(0)
	var err error
	if a, b, ok := strings.Cut(v, "-"); ok {
		if lo, err = strconv.ParseUint(strings.TrimSpace(a), 10, 64); err != nil {
			return nil, bad
		}
		if hi, err = strconv.ParseUint(strings.TrimSpace(b), 10, 64); err != nil {
			return nil, bad
		}
	} else if hi, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64); err != nil {
		return nil, bad
	}
	if hi < lo || hi == 0 {
		return nil, bad
	}
	if hi-lo >= maxSeeds {
		return nil, usagef("--seeds %q is %d seeds; want at most %d per sweep", v, hi-lo+1, maxSeeds)
	}
	var seeds []uint64
	for s := lo; s <= hi; s++ {
		seeds = append(seeds, s)
	}
	return seeds, nil
}

// seedsLabel names the seeds as records and notes write them: "1-20".
func (s *sweep) seedsLabel() string {
	if len(s.Seeds) == 1 {
		return strconv.FormatUint(s.Seeds[0], 10)
	}
	return fmt.Sprintf("%d-%d", s.Seeds[0], s.Seeds[len(s.Seeds)-1])
}

// testFault, if set, may fail a unit before it runs (tests of failures).
var testFault func(experiment.Unit) error

// runUnit runs one unit. A run that fails is an outcome with its error;
// the error returned stops the sweep: bad input (a file that cannot be
// written) or an interruption.
func (s *sweep) runUnit(ctx context.Context, u experiment.Unit) (experiment.UnitOutcome, error) {
	if testFault != nil {
		if err := testFault(u); err != nil {
			return experiment.UnitOutcome{Unit: u, Err: err.Error()}, nil
		}
	}
	c := s.Cases[u.Cell]
	c.Seed = u.Seed
	variant := s.o.caseVariant(c, len(s.Cases) > 1)
	if len(s.Seeds) > 1 {
		variant = strings.TrimPrefix(variant+"-seed"+strconv.FormatUint(u.Seed, 10), "-")
	}
	r, rec, _, err := s.o.measure(ctx, s.b, c, variant, false)
	var ue *usageError
	switch {
	case ctx.Err() != nil:
		return experiment.UnitOutcome{}, context.Cause(ctx)
	case errors.As(err, &ue):
		return experiment.UnitOutcome{}, err
	case err != nil:
		return experiment.UnitOutcome{Unit: u, Err: err.Error()}, nil
	}
	rec.Study, rec.StudySHA256 = s.o.study, s.o.studyHash
	return experiment.OutcomeOf(u, r, rec)
}

// run runs the sweep's cells and writes the output.
func (s *sweep) run(ctx context.Context, w, stderr io.Writer) error {
	out := s.newOutput(w, stderr)
	// An interrupted sweep without --out loses its finished runs: say
	// how to keep them, once the bar is gone.
	defer func() {
		var se *signalError
		if errors.As(context.Cause(ctx), &se) && s.o.out == "" {
			fmt.Fprintf(stderr, "netemu: sweep: the runs that finished are not kept without --out; run it with --out FILE to write each run as it ends, and again with --out FILE --continue to go on from them\n")
		}
	}()
	p := &sweepProgress{s: s, stderr: stderr}
	defer p.close()
	if err := s.Run(ctx, s.executor(stderr), p, out.add); err != nil {
		return err
	}
	return out.close()
}

// sweepProgress shows a sweep's progress bar, from the moment its
// results file is open.
type sweepProgress struct {
	s      *sweep
	stderr io.Writer
	bar    *progress
}

func (p *sweepProgress) Begin(runs int) {
	if p.s.o.out != "" {
		p.s.o.wrote("out", p.s.o.out)
	}
	p.bar = newProgress(p.stderr, runs, true)
}

func (p *sweepProgress) Start(u experiment.Unit) { p.bar.start(p.s.unitLabel(u)) }
func (p *sweepProgress) Finish()                 { p.bar.finish() }

func (p *sweepProgress) close() {
	if p.bar != nil {
		p.bar.close()
	}
}

// unitLabel names a unit for the progress bar.
func (s *sweep) unitLabel(u experiment.Unit) string {
	l := caseLabel(s.Cases[u.Cell])
	if s.multi {
		l += fmt.Sprintf(" seed %d", u.Seed)
	}
	return l
}

// cellParams names a cell by its parameters, for messages.
func (s *sweep) cellParams(cell int) string {
	c := s.Cases[cell]
	p := fmt.Sprintf("%s, rtt %s, rate %s", c.Workload.Name(), fmtDur(c.RTT()), c.RateLabel())
	if n := s.o.caseName(c); n != "" {
		p += ", " + n
	}
	return p
}

// sweepOutput writes a sweep's output from its outcomes, which arrive
// in unit order: a table row or JSON records per cell, then the figure.
type sweepOutput struct {
	s      *sweep
	w      io.Writer
	stderr io.Writer
	tw     *tabwriter.Writer
	runs   []experiment.UnitOutcome // the current cell's
	failed int                      // runs
	total  int

	plotCases   []experiment.Case
	plotSpreads []experiment.Spread
}

func (s *sweep) newOutput(w, stderr io.Writer) *sweepOutput {
	out := &sweepOutput{s: s, w: w, stderr: stderr}
	if !s.o.json {
		out.tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		if s.multi {
			fmt.Fprintln(out.tw, "workload\trtt\trate\tcase\tmedian\tp10–p90\tmodel\tvs model\tconns\tmedian drops\t")
		} else {
			fmt.Fprintln(out.tw, tableHeader)
		}
	}
	return out
}

const tableHeader = "workload\trtt\trate\tcase\telapsed\tmodel\tvs model\tconns\tdrops\t"

// add takes the next outcome; a cell's output is written once its last
// seed is in.
func (out *sweepOutput) add(oc experiment.UnitOutcome) error {
	out.total++
	if oc.Err != "" {
		out.failed++
		seed := ""
		if out.s.multi {
			seed = fmt.Sprintf(", seed %d", oc.Seed)
		}
		fmt.Fprintf(out.stderr, "netemu: %s%s: %s\n", out.s.cellParams(oc.Cell), seed, oc.Err)
	}
	out.runs = append(out.runs, oc)
	if len(out.runs) < len(out.s.Seeds) {
		return nil
	}
	runs := out.runs
	out.runs = nil
	return out.cell(runs)
}

// cell writes one cell's output.
func (out *sweepOutput) cell(runs []experiment.UnitOutcome) error {
	s := out.s
	c := s.Cases[runs[0].Cell]
	var ok []experiment.UnitOutcome
	for _, r := range runs {
		if r.Err == "" {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	var times []time.Duration
	var recs []experiment.Record
	for _, r := range ok {
		times = append(times, r.Headline)
		rec := experiment.Record{}
		rec.Drops, rec.Retransmits = r.Drops, r.Retransmits
		recs = append(recs, rec)
	}
	sp := experiment.SpreadOf(times, recs)
	out.plotCases, out.plotSpreads = append(out.plotCases, c), append(out.plotSpreads, sp)
	if s.o.json {
		return out.cellJSON(ok, sp, len(runs)-len(ok))
	}
	if !s.multi {
		r := ok[0]
		s.o.writeRow(out.tw, c, r.Workload, r.Elapsed, r.Model, r.Conns, r.Drops, r.Summary)
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
	fmt.Fprintf(out.tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t  %s\n", med.Workload, fmtDur(c.RTT()), c.RateLabel(),
		s.o.caseName(c), fmtDur(sp.Median), spreadRange(sp), fmtDur(med.ModelHead), pct(experiment.Ms(sp.Median), experiment.Ms(med.ModelHead)),
		med.Conns, count(sp.Drops), med.Summary)
	return nil
}

// cellJSON writes a cell's JSON lines: the record of each run that
// succeeded (ok, at least one) and, with --seeds, the summary of their
// spread sp, counting the failed runs.
func (out *sweepOutput) cellJSON(ok []experiment.UnitOutcome, sp experiment.Spread, failed int) error {
	s := out.s
	for _, r := range ok {
		if _, err := fmt.Fprintf(out.w, "%s\n", r.Record); err != nil {
			return err
		}
	}
	if !s.multi {
		return nil
	}
	sum := experiment.Summary{Summary: true, Seeds: s.seedsLabel(), Spread: sp, ModelMs: experiment.Ms(ok[0].ModelHead),
		Failed: failed, Study: s.o.study, StudySHA256: s.o.studyHash}
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

func drops(d *uint64) string {
	if d == nil {
		return "—"
	}
	return fmt.Sprint(*d)
}

// close ends the output: the table's last lines, the figure, and an
// error if runs failed.
func (out *sweepOutput) close() error {
	s := out.s
	if out.tw != nil {
		if err := out.tw.Flush(); err != nil {
			return err
		}
		if s.multi {
			fmt.Fprintf(out.w, "\nmedian and 10th–90th percentiles (nearest rank) of each cell's %s over seeds %s, and the median of its drops; conns and the last column: the median run's.\n",
				headlineName(s.Cases[0]), strings.ReplaceAll(s.seedsLabel(), "-", "–"))
		}
	}
	if s.o.plot != "" && len(out.plotCases) > 0 {
		if err := experiment.SpreadFigure(s.o.backend, out.plotCases, out.plotSpreads).Save(s.o.plot); err != nil {
			return err
		}
		s.o.wrote("plot", s.o.plot)
	}
	if out.failed > 0 {
		return fmt.Errorf("%d of %d runs failed; each is reported above with its cell's parameters", out.failed, out.total)
	}
	return nil
}

// headlineName is what the table's median measures: the workload's
// headline figure, or its elapsed time.
func headlineName(c experiment.Case) string {
	if k, ok := workloads.Lookup(c.Workload.Name()); ok && k.Headline != "" {
		return k.Headline
	}
	return "elapsed time"
}
