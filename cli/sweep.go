package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/netemu/netemu/experiment"
)

// netemu sweep: its plan, its run in this process or in worker processes
// (this binary again), and the merge of a sharded sweep's files.

// RunSweep runs the sweep command c with args: every combination of the
// comma-separated values of the list flags (the cells), each with every
// seed of --seeds; the shard from --shard or, in a pod of a Kubernetes
// Indexed Job or a task of a SLURM job array, from its environment
// (ShardFromEnviron), which a line on stderr names.
func RunSweep(ctx context.Context, c *Command, args []string, w, stderr io.Writer) error {
	s, err := PlanSweep(ctx, c, args)
	if err != nil {
		return err
	}
	if !s.o.Given("shard") {
		i, n, from, err := ShardFromEnviron(os.LookupEnv)
		if err != nil {
			return err
		}
		if from != "" {
			s.Shard, s.Shards = i, n
			fmt.Fprintf(stderr, "netemu: shard %d/%d, from %s\n", i, n, from)
		}
	}
	s.o.PrintNotes(stderr)
	defer s.o.Announce(stderr)
	if !s.o.JSON {
		for _, n := range s.o.TableNotes() {
			fmt.Fprintln(w, "note: "+n)
		}
	}
	return s.run(ctx, w, stderr)
}

// Merge writes the output of the sweep command c run in shards, from the
// results files (--out) of its shards: the table, the JSON records
// (asJSON) and the figure (plot, "" for none), the same bytes as the
// sweep run whole with the same --json and --plot. Parts of different
// studies, a part missing, given twice or unfinished are refused.
func Merge(ctx context.Context, c *Command, files []string, asJSON bool, plot string, w, stderr io.Writer) error {
	h, ocs, err := experiment.MergeResults(ctx, files)
	var mismatch *experiment.StudyMismatchError
	var ie *experiment.InputError
	switch {
	case errors.As(err, &mismatch):
		return Usagef("merge: %v, %s", err, mismatch.Got.Difference(mismatch.Want, IsSwitch))
	case errors.As(err, &ie):
		return Usagef("merge: %v", err)
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		return fmt.Errorf("merge: %w", err)
	}
	margs := append([]string{}, h.Args...)
	if asJSON {
		margs = append(margs, "--json")
	}
	if plot != "" {
		margs = append(margs, "--plot", plot)
	}
	s, err := PlanSweep(ctx, c, margs)
	if err != nil {
		return Usagef("merge: the parts' sweep %q: %v", strings.Join(h.Args, " "), err)
	}
	s.Study.Study, s.Study.StudySHA256 = h.Study, h.StudySHA256
	if err := s.CheckMerged(ocs); err != nil {
		return Usagef("merge: %v", err)
	}
	defer s.o.Announce(stderr)
	if !s.o.JSON {
		for _, n := range s.o.TableNotes() {
			fmt.Fprintln(w, "note: "+n)
		}
	}
	out := s.newOutput(w, stderr)
	for _, oc := range ocs {
		if err := out.Add(oc); err != nil {
			return err
		}
	}
	return s.finish(out)
}

// A Sweep is the plan of netemu sweep: the cells (one case each), the
// seeds each cell runs with, and how to run them.
type Sweep struct {
	experiment.Sweep
	o     *Options
	cmd   *Command // sweep's, which its workers run
	b     experiment.Backend
	multi bool // --seeds given: each cell ends with a summary of its seeds
	jobs  int  // worker processes
	args  []string
	// fault, if set, may fail a unit before it runs (tests of failures).
	fault func(experiment.Unit) error
}

// PlanSweep parses sweep's arguments into its plan.
func PlanSweep(ctx context.Context, cmd *Command, args []string) (*Sweep, error) {
	args, study, studyHash, err := WithStudy(cmd, args)
	if err != nil {
		return nil, err
	}
	o, cases, err := ParseCases(ctx, cmd, args)
	if err != nil {
		if study != "" {
			return nil, Usagef("--spec %s: %v", study, err)
		}
		return nil, err
	}
	o.Study, o.StudyHash = study, studyHash
	s := &Sweep{o: o, cmd: cmd, args: args, jobs: AvailableCPUs(), Sweep: experiment.Sweep{Cases: cases, Seeds: []uint64{o.Seed},
		Shards: 1, Results: o.Out, Resume: o.Resume, Study: experiment.StudyID{Args: StudyArgs(args), Study: study, StudySHA256: studyHash, Inputs: o.InputHashes()}}}
	if o.Given("seeds") {
		if o.Given("seed") {
			return nil, Usagef("sweep: --seed %d and --seeds %s both pick the seed; give --seeds alone (like --seeds 1-20) or --seed alone", o.Seed, o.SeedsFlag)
		}
		if s.Seeds, err = experiment.ParseSeeds(o.SeedsFlag); err != nil {
			return nil, Usagef("--seeds %v", err)
		}
		s.multi = true
	}
	if runs := len(s.Cases) * len(s.Seeds); runs > experiment.MaxRuns {
		return nil, Usagef("sweep: %d cells × %d seeds is %d runs; want at most %d per sweep: fewer seeds or values, or split the study (--shard)", len(s.Cases), len(s.Seeds), runs, experiment.MaxRuns)
	}
	if s.b, err = o.NewBackend(o.Backend); err != nil {
		return nil, err
	}
	if o.Given("jobs") {
		if o.Jobs < 1 {
			return nil, Usagef("--jobs %d: want the number of worker processes, 1 or more, like --jobs 4 (without it, one per CPU: %d here)", o.Jobs, AvailableCPUs())
		}
		s.jobs = o.Jobs
	}
	if o.Given("shard") {
		if s.Shard, s.Shards, err = ParseShard(o.ShardFlag); err != nil {
			return nil, err
		}
	}
	if o.Resume && o.Out == "" {
		return nil, Usagef("sweep: --continue goes on from the results file of --out; give --out FILE too")
	}
	if o.Out != "" {
		if err := CheckDir("out", o.Out); err != nil {
			return nil, err
		}
	}
	if o.Clock != "virtual" || s.b.Name() != (experiment.Emulated{}).Name() {
		// Real-time runs measure the machine: side by side they would
		// slow each other down.
		if o.Given("jobs") && o.Jobs > 1 {
			return nil, Usagef("--jobs %d: runs in real time (--clock real, --backend kernel) would share the CPU and slow each other; they run one at a time: drop --jobs", o.Jobs)
		}
		s.jobs = 1
	}
	return s, nil
}

// runUnit runs one unit. A run that fails is an outcome with its error;
// the error returned stops the sweep: bad input (a file that cannot be
// written) or an interruption.
func (s *Sweep) runUnit(ctx context.Context, u experiment.Unit) (experiment.UnitOutcome, error) {
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
	var ue *UsageError
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
func (s *Sweep) run(ctx context.Context, w, stderr io.Writer) error {
	out := s.newOutput(w, stderr)
	// An interrupted sweep without --out loses its finished runs: say
	// how to keep them, once the bar is gone.
	defer func() {
		var se *SignalError
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
	s      *Sweep
	stderr io.Writer
	bar    *Progress
}

func (p *sweepProgress) Begin(runs int) {
	if p.s.o.Out != "" {
		p.s.o.Wrote("out", p.s.o.Out)
	}
	p.bar = NewProgress(p.stderr, runs, true)
}

func (p *sweepProgress) Start(u experiment.Unit) { p.bar.Start(p.s.unitLabel(u)) }

func (p *sweepProgress) Finish() { p.bar.Finish() }

func (p *sweepProgress) close() {
	if p.bar != nil {
		p.bar.Close()
	}
}

// unitLabel names a unit for the progress bar.
func (s *Sweep) unitLabel(u experiment.Unit) string {
	l := CaseLabel(s.Cases[u.Cell])
	if s.multi {
		l += fmt.Sprintf(" seed %d", u.Seed)
	}
	return l
}

// newOutput is the sweep's output: its table or JSON lines on w, each
// failed run on stderr.
func (s *Sweep) newOutput(w, stderr io.Writer) *experiment.SweepOutput {
	return s.NewOutput(w, experiment.SweepOutputOptions{JSON: s.o.JSON, Seeded: s.multi, CaseName: s.o.Grid().CaseName,
		Failed: func(run string, oc experiment.UnitOutcome) { fmt.Fprintf(stderr, "netemu: %s: %s\n", run, oc.Err) }})
}

// finish ends the output: the table's last lines, the figure, and an
// error if runs failed.
func (s *Sweep) finish(out *experiment.SweepOutput) error {
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

// workerEnv, set to 1, makes the process a sweep worker; studyEnv and
// studyHashEnv name the study file its sweep read, for the records.
const (
	workerEnv    = "NETEMU_SWEEP_WORKER"
	studyEnv     = "NETEMU_SWEEP_STUDY"
	studyHashEnv = "NETEMU_SWEEP_STUDY_SHA256"
)

// IsWorker reports whether this process is a sweep worker.
func IsWorker() bool { return os.Getenv(workerEnv) == "1" }

// WorkerMain is a worker's whole life; it returns the exit status. fault,
// if not nil, may fail a unit before it runs (tests of failures).
func WorkerMain(c *Command, args []string, stdin io.Reader, stdout, stderr io.Writer, fault func(experiment.Unit) error) int {
	if len(args) == 0 || args[0] != c.Name {
		fmt.Fprintf(stderr, "netemu: %s=1 is set by netemu sweep for its worker processes; unset it\n", workerEnv)
		return 2
	}
	s, err := PlanSweep(context.Background(), c, args[1:]) // its traces are files the sweep read
	if err != nil {
		fmt.Fprintf(stderr, "netemu worker: %v\n", err)
		return 2
	}
	// A worker runs one run at a time, on the virtual clock, which runs one
	// event at a time: a second processor only hands the run's goroutines
	// from thread to thread (docs/PERFORMANCE.md, "Sweeps on several
	// cores": a worker with two took 1.4 times as long).
	runtime.GOMAXPROCS(1)
	// The study file was read by the sweep, which passes its arguments.
	s.o.Study, s.o.StudyHash = os.Getenv(studyEnv), os.Getenv(studyHashEnv)
	s.fault = fault
	err = experiment.ServeUnits(stdin, stdout, len(s.Cases), s.runUnit)
	var ie *experiment.InputError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "netemu worker: %v\n", err)
		return 2
	default:
		return 1 // the sweep is gone
	}
}

// A SweepTrace is told of a sweep's worker processes, as an
// httptrace.ClientTrace is of a request's connections: carried by the
// context, so that a test can watch a sweep it runs through the whole
// command. A run has none.
type SweepTrace struct {
	WorkerStarted func(pid int) // each worker's process ID, once started
}

type sweepTraceKey struct{}

// WithSweepTrace returns ctx carrying t.
func WithSweepTrace(ctx context.Context, t *SweepTrace) context.Context {
	return context.WithValue(ctx, sweepTraceKey{}, t)
}

// workerStarted is the hook of ctx's SweepTrace, nil without one.
func workerStarted(ctx context.Context) func(pid int) {
	if t, ok := ctx.Value(sweepTraceKey{}).(*SweepTrace); ok {
		return t.WorkerStarted
	}
	return nil
}

// executor runs the sweep's units: in worker processes when more than one
// job and one run are asked for, else in this process.
func (s *Sweep) executor(ctx context.Context, stderr io.Writer) experiment.Executor {
	if s.jobs <= 1 || len(s.Units()) <= 1 {
		return experiment.InProcess{Run: s.runUnit}
	}
	return experiment.Workers{Jobs: s.jobs, Stderr: &LockedWriter{w: stderr}, Started: workerStarted(ctx),
		Command: func(ctx context.Context) (*exec.Cmd, error) {
			self, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("--jobs %d: finding this program to start its workers: %w", s.jobs, err)
			}
			cmd := exec.CommandContext(ctx, self, append([]string{s.cmd.Name}, s.args...)...)
			cmd.Env = append(os.Environ(), workerEnv+"=1", studyEnv+"="+s.o.Study, studyHashEnv+"="+s.o.StudyHash)
			return cmd, nil
		}}
}

// LockedWriter serializes writes from several goroutines: the proxy's
// connections' failure lines, the sweep workers' stderr.
type LockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLockedWriter returns a writer that passes writes to w one at a
// time.
func NewLockedWriter(w io.Writer) *LockedWriter { return &LockedWriter{w: w} }

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
