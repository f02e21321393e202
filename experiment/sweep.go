package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/workloads"
)

// A Sweep is a study of many runs: every case (a cell) with every seed,
// or the share of them that one shard runs. Run runs it with an
// Executor, in this process or in worker processes, and hands each run's
// UnitOutcome to the caller in the order Units lists them, whatever the
// order in which they end; with Results set, each outcome is also kept
// in a results file that an interrupted sweep goes on from.
type Sweep struct {
	Cases []Case   // the cells, in the order the output lists them
	Seeds []uint64 // each cell runs once with each; at least one
	// Shard of Shards: the sweep runs every Shards-th cell from cell
	// Shard. Shards 0 means 1: the whole sweep.
	Shard, Shards int
	// Results names the results file (results.go); empty keeps none.
	// Resume goes on from the runs an existing file holds; without it an
	// existing file is refused.
	Results string
	Resume  bool
	// Study is what the results file's header says the sweep measures.
	Study StudyID
}

// A Unit is one run of a sweep: a cell with one seed.
type Unit struct {
	Cell int    `json:"cell"`
	Seed uint64 `json:"seed"`
}

// A UnitOutcome is what a sweep's output needs of one run: its JSON
// record and its table row's figures, or why it failed. Worker processes
// and results files carry outcomes as JSON lines.
type UnitOutcome struct {
	Unit
	Err         string          `json:"error,omitempty"` // the run failed: the cell's other runs go on
	Fatal       bool            `json:"fatal,omitempty"` // Err is bad input that stops the sweep
	Record      json.RawMessage `json:"record,omitempty"`
	Workload    string          `json:"workload,omitempty"`
	Elapsed     time.Duration   `json:"elapsed_ns,omitempty"`
	Model       time.Duration   `json:"model_ns,omitempty"`
	Headline    time.Duration   `json:"headline_ns,omitempty"`
	ModelHead   time.Duration   `json:"model_headline_ns,omitempty"`
	Conns       int             `json:"conns,omitempty"`
	Drops       *uint64         `json:"drops,omitempty"`
	Retransmits *int            `json:"retransmits,omitempty"`
	Summary     string          `json:"summary,omitempty"` // the workload's own figures, for the table
}

// OutcomeOf describes a measured run.
func OutcomeOf(u Unit, r workloads.Result, rec Record) (UnitOutcome, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return UnitOutcome{}, err
	}
	got, model := r.Headline()
	return UnitOutcome{Unit: u, Record: raw, Workload: r.Workload, Elapsed: r.Elapsed, Model: r.Model.Elapsed,
		Headline: got, ModelHead: model, Conns: r.Conns, Drops: rec.Drops, Retransmits: rec.Retransmits,
		Summary: r.Detail.Summary()}, nil
}

// An InputError is bad input to a sweep (a results file that is not one,
// or of another study; a worker asked for a unit its sweep lacks): it
// stops the sweep, and a command reports it as the user's to mend.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{fmt.Sprintf(format, args...)}
}

// shards is the number of shards, 1 when unset.
func (s *Sweep) shards() int { return max(s.Shards, 1) }

// Units lists the runs of the sweep's shard in output order: cell by
// cell (every shards-th, so that each shard gets its share of short and
// long cells), each cell's seeds in order.
func (s *Sweep) Units() []Unit {
	var us []Unit
	for c := s.Shard; c < len(s.Cases); c += s.shards() {
		for _, seed := range s.Seeds {
			us = append(us, Unit{c, seed})
		}
	}
	return us
}

// AllUnits lists the runs of every shard, in output order.
func (s *Sweep) AllUnits() []Unit {
	whole := *s
	whole.Shard, whole.Shards = 0, 1
	return whole.Units()
}

// An Executor runs a sweep's units and hands each outcome to emit in the
// units' order. A run that fails is an outcome like any other; an error
// returned stops the sweep, and nothing the executor started outlives
// Execute.
type Executor interface {
	Execute(ctx context.Context, us []Unit, p Progress, emit func(UnitOutcome) error) error
}

// Progress follows a sweep: Begin once its results file is open, with
// the number of runs left to do; Start and Finish around each run, in
// output order, as the output waits for it.
type Progress interface {
	Begin(runs int)
	Start(Unit)
	Finish()
}

// RunFunc runs one unit. A run that fails is an outcome with its error;
// the error returned stops the sweep (bad input, an interruption).
type RunFunc func(ctx context.Context, u Unit) (UnitOutcome, error)

// InProcess runs the units one after another in this process.
type InProcess struct{ Run RunFunc }

// Execute implements Executor.
func (x InProcess) Execute(ctx context.Context, us []Unit, p Progress, emit func(UnitOutcome) error) error {
	for _, u := range us {
		p.Start(u)
		oc, err := x.Run(ctx, u)
		p.Finish()
		if err != nil {
			return err
		}
		if err := emit(oc); err != nil {
			return err
		}
	}
	return nil
}

// Run runs the sweep's units with x, the outcomes a results file already
// holds first (Resume), and hands each outcome to emit in output order.
func (s *Sweep) Run(ctx context.Context, x Executor, p Progress, emit func(UnitOutcome) error) error {
	if len(s.Seeds) == 0 {
		return errors.New("sweep: no seeds")
	}
	us := s.Units()
	if s.Results != "" {
		rf, done, err := openResults(ctx, s.Results, s.Resume, s.header(len(us)), us)
		if err != nil {
			return err
		}
		defer rf.close()
		for _, oc := range done {
			if err := emit(oc); err != nil {
				return err
			}
		}
		us = us[len(done):]
		inner := emit
		emit = func(oc UnitOutcome) error {
			if err := rf.write(oc); err != nil {
				return err
			}
			return inner(oc)
		}
	}
	p.Begin(len(us))
	return x.Execute(ctx, us, p, emit)
}

// ParseSeeds reads a list of seeds: a range "1-20", or a count "20"
// (seeds 1 to 20). It returns at least one seed and at most MaxSeeds, in
// increasing order, or an *InputError that begins with v quoted.
func ParseSeeds(v string) ([]uint64, error) {
	bad := inputErrorf("%q: want a count like 20 (seeds 1 to 20) or a range like 1-100", v)
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
	if hi-lo >= MaxSeeds {
		return nil, inputErrorf("%q is %d seeds; want at most %d per sweep", v, hi-lo+1, MaxSeeds)
	}
	var seeds []uint64
	for s := lo; s <= hi; s++ {
		seeds = append(seeds, s)
	}
	return seeds, nil
}

// SeedsLabel names the sweep's seeds as records and notes write them:
// "7" for one seed, "1-20" for several (the first and the last: the
// seeds ParseSeeds makes are a range).
func (s *Sweep) SeedsLabel() string {
	if len(s.Seeds) == 1 {
		return strconv.FormatUint(s.Seeds[0], 10)
	}
	return fmt.Sprintf("%d-%d", s.Seeds[0], s.Seeds[len(s.Seeds)-1])
}
