package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
)

var sweepCmd = command{Command: cli.Command{Name: "sweep", Lists: true, Rules: cli.Rules{Groups: cli.Groups, Refuse: map[string]string{
	"waterfall": "sweep draws no waterfall; use netemu run, which draws one per case"}}},
	synopsis: "<workload> [flags]", about: "run every combination of comma-separated list flags (--rtt, --rate, --queue, --delack, --loss, ...)", example: "netemu sweep page --rtt 10ms,100ms,200ms --rate 2mbit,10mbit", run: cmdSweep}

// cmdSweep runs every combination of the comma-separated values of the
// list flags (the cells), each with every seed of --seeds.
func cmdSweep(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	s, err := planSweep(ctx, cmd, args)
	if err != nil {
		return err
	}
	if !s.o.Given("shard") {
		i, n, ok, err := cli.ShardFromEnv()
		if err != nil {
			return err
		}
		if ok {
			s.Shard, s.Shards = i, n
			fmt.Fprintf(stderr, "netemu: shard %d/%d, from JOB_COMPLETION_INDEX and JOB_COMPLETIONS\n", i, n)
		}
	}
	s.o.PrintNotes(stderr)
	defer s.o.Announce(stderr)
	return s.run(ctx, w, stderr)
}

// A sweep is the plan of netemu sweep: the cells (one case each), the
// seeds each cell runs with, and how to run them.
type sweep struct {
	experiment.Sweep
	o     *cli.Options
	cmd   *cli.Command // sweep's, which its workers run
	b     experiment.Backend
	multi bool // --seeds given: each cell ends with a summary of its seeds
	jobs  int  // worker processes
	args  []string
	// fault, if set, may fail a unit before it runs (tests of failures).
	fault func(experiment.Unit) error
}

// planSweep parses sweep's arguments into its plan.
func planSweep(ctx context.Context, cmd *cli.Command, args []string) (*sweep, error) {
	args, study, studyHash, err := cli.WithStudy(cmd, args)
	if err != nil {
		return nil, err
	}
	o, cases, err := cli.ParseCases(ctx, cmd, args)
	if err != nil {
		if study != "" {
			return nil, usagef("--spec %s: %v", study, err)
		}
		return nil, err
	}
	o.Study, o.StudyHash = study, studyHash
	s := &sweep{o: o, cmd: cmd, args: args, jobs: availableCPUs(), Sweep: experiment.Sweep{Cases: cases, Seeds: []uint64{o.Seed},
		Shards: 1, Results: o.Out, Resume: o.Resume, Study: experiment.StudyID{Args: cli.StudyArgs(args), Study: study, StudySHA256: studyHash, Inputs: o.InputHashes()}}}
	if o.Given("seeds") {
		if o.Given("seed") {
			return nil, usagef("sweep: --seed %d and --seeds %s both pick the seed; give --seeds alone (like --seeds 1-20) or --seed alone", o.Seed, o.SeedsFlag)
		}
		if s.Seeds, err = experiment.ParseSeeds(o.SeedsFlag); err != nil {
			return nil, usagef("--seeds %v", err)
		}
		s.multi = true
	}
	if runs := len(s.Cases) * len(s.Seeds); runs > experiment.MaxRuns {
		return nil, usagef("sweep: %d cells × %d seeds is %d runs; want at most %d per sweep: fewer seeds or values, or split the study (--shard)", len(s.Cases), len(s.Seeds), runs, experiment.MaxRuns)
	}
	if s.b, err = o.NewBackend(o.Backend); err != nil {
		return nil, err
	}
	if o.Given("jobs") {
		if o.Jobs < 1 {
			return nil, usagef("--jobs %d: want the number of worker processes, 1 or more, like --jobs 4 (without it, one per CPU: %d here)", o.Jobs, availableCPUs())
		}
		s.jobs = o.Jobs
	}
	if o.Given("shard") {
		if s.Shard, s.Shards, err = cli.ParseShard(o.ShardFlag); err != nil {
			return nil, err
		}
	}
	if o.Resume && o.Out == "" {
		return nil, usagef("sweep: --continue goes on from the results file of --out; give --out FILE too")
	}
	if o.Out != "" {
		if err := cli.CheckDir("out", o.Out); err != nil {
			return nil, err
		}
	}
	if o.Clock != "virtual" || s.b.Name() != (experiment.Emulated{}).Name() {
		// Real-time runs measure the machine: side by side they would
		// slow each other down.
		if o.Given("jobs") && o.Jobs > 1 {
			return nil, usagef("--jobs %d: runs in real time (--clock real, --backend kernel) would share the CPU and slow each other; they run one at a time: drop --jobs", o.Jobs)
		}
		s.jobs = 1
	}
	return s, nil
}

// maxCells bounds a sweep's cells (experiment.MaxCells), counted before
// any is built.
const maxCells = experiment.MaxCells

// runUnit runs one unit. A run that fails is an outcome with its error;
// the error returned stops the sweep: bad input (a file that cannot be
// written) or an interruption.
func (s *sweep) runUnit(ctx context.Context, u experiment.Unit) (experiment.UnitOutcome, error) {
	if s.fault != nil {
		if err := s.fault(u); err != nil {
			return experiment.UnitOutcome{Unit: u, Err: err.Error()}, nil
		}
	}
	c := s.Cases[u.Cell]
	c.Seed = u.Seed
	variant := s.o.Grid().Variant(c)
	if len(s.Seeds) > 1 {
		variant = strings.TrimPrefix(variant+"-seed"+strconv.FormatUint(u.Seed, 10), "-")
	}
	r, rec, _, err := s.o.Measure(ctx, s.b, c, variant, false)
	var ue *cli.UsageError
	switch {
	case ctx.Err() != nil:
		return experiment.UnitOutcome{}, context.Cause(ctx)
	case errors.As(err, &ue):
		return experiment.UnitOutcome{}, err
	case err != nil:
		return experiment.UnitOutcome{Unit: u, Err: err.Error()}, nil
	}
	rec.Study, rec.StudySHA256 = s.o.Study, s.o.StudyHash
	return experiment.OutcomeOf(u, r, rec)
}

// run runs the sweep's cells and writes the output.
func (s *sweep) run(ctx context.Context, w, stderr io.Writer) error {
	out := s.newOutput(w, stderr)
	// An interrupted sweep without --out loses its finished runs: say
	// how to keep them, once the bar is gone.
	defer func() {
		var se *signalError
		if errors.As(context.Cause(ctx), &se) && s.o.Out == "" {
			fmt.Fprintf(stderr, "netemu: sweep: the runs that finished are not kept without --out; run it with --out FILE to write each run as it ends, and again with --out FILE --continue to go on from them\n")
		}
	}()
	p := &sweepProgress{s: s, stderr: stderr}
	defer p.close()
	if err := s.Run(ctx, s.executor(ctx, stderr), p, out.Add); err != nil {
		return err
	}
	return s.finish(out)
}

// sweepProgress shows a sweep's progress bar, from the moment its
// results file is open.
type sweepProgress struct {
	s      *sweep
	stderr io.Writer
	bar    *cli.Progress
}

func (p *sweepProgress) Begin(runs int) {
	if p.s.o.Out != "" {
		p.s.o.Wrote("out", p.s.o.Out)
	}
	p.bar = cli.NewProgress(p.stderr, runs, true)
}

func (p *sweepProgress) Start(u experiment.Unit) { p.bar.Start(p.s.unitLabel(u)) }
func (p *sweepProgress) Finish()                 { p.bar.Finish() }

func (p *sweepProgress) close() {
	if p.bar != nil {
		p.bar.Close()
	}
}

// unitLabel names a unit for the progress bar.
func (s *sweep) unitLabel(u experiment.Unit) string {
	l := cli.CaseLabel(s.Cases[u.Cell])
	if s.multi {
		l += fmt.Sprintf(" seed %d", u.Seed)
	}
	return l
}

// newOutput is the sweep's output: its table or JSON lines on w, each
// failed run on stderr.
func (s *sweep) newOutput(w, stderr io.Writer) *experiment.SweepOutput {
	return s.NewOutput(w, experiment.SweepOutputOptions{JSON: s.o.JSON, Seeded: s.multi, CaseName: s.o.Grid().CaseName,
		Failed: func(run string, oc experiment.UnitOutcome) { fmt.Fprintf(stderr, "netemu: %s: %s\n", run, oc.Err) }})
}

// finish ends the output: the table's last lines, the figure, and an
// error if runs failed.
func (s *sweep) finish(out *experiment.SweepOutput) error {
	if err := out.Close(); err != nil {
		return err
	}
	if s.o.Plot != "" {
		if fig, ok := out.Figure(s.o.Backend); ok {
			if err := fig.Save(s.o.Plot); err != nil {
				return err
			}
			s.o.Wrote("plot", s.o.Plot)
		}
	}
	if failed, runs := out.Failures(); failed > 0 {
		return fmt.Errorf("%d of %d runs failed; each is reported above with its cell's parameters", failed, runs)
	}
	return nil
}
