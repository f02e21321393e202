package experiment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// Lossy measures the lossy table (workloads.LossyCells): each cell on the
// emulator with each TCP of TCPs, seeds 1 to Runs, and on kernel TCP,
// seeds 1 to KernelRuns, summarized as distributions. netemu reproduce
// --lossy and bench/accuracy print its rows.
type Lossy struct {
	Runs, KernelRuns int             // a cell's own MinRuns raises either
	Clock            emu.ClockMode   // the emulator's
	TCPs             []tcpstack.Impl // the emulator's TCPs; none means the default one
	Emulated, Kernel Backend         // nil: Emulated{}, Kernel{}
	// Run, if set, is given every run's record as it ends.
	Run func(cell workloads.Cell, rec Record) error
	// Start, if set, is told of each cell before it runs.
	Start func(workloads.Cell)
}

// A LossyRow is one lossy cell measured.
type LossyRow struct {
	Cell workloads.Cell
	// Emulated holds the emulator's runs with each TCP of Lossy.TCPs;
	// Same, the same runs over the kernel's seeds alone.
	Emulated, Same []Spread
	Kernel         Spread // Runs 0: not measured
	KernelFacts    *kernel.Facts
	// Model is the workload's model of the headline; LossBound, the
	// model's time at the rate loss allows (0: none).
	Model, LossBound time.Duration
}

// Measure runs every lossy cell, handing each row to row as it is
// complete. KernelRuns 0 leaves the kernel side empty; so does kernel
// mode unavailable here, and notMeasured says why.
func (l Lossy) Measure(ctx context.Context, row func(LossyRow) error) (notMeasured string, err error) {
	emulated, kern := l.Emulated, l.Kernel
	if emulated == nil {
		emulated = Emulated{}
	}
	if kern == nil {
		kern = Kernel{}
	}
	impls := l.TCPs
	if len(impls) == 0 {
		impls = []tcpstack.Impl{""}
	}
	for _, cell := range workloads.LossyCells() {
		if l.Start != nil {
			l.Start(cell)
		}
		each := func(r workloads.Result, rec Record) error {
			if l.Run == nil {
				return nil
			}
			return l.Run(cell, rec)
		}
		r := LossyRow{Cell: cell}
		var timesOf [][]time.Duration
		for _, impl := range impls {
			c := Case{Workload: cell.Workload, Link: cell.Link, Clock: l.Clock}
			c.TCP.Impl = impl
			times, recs, last, err := Repeat(ctx, emulated, c, cell.Runs(l.Runs), each)
			if err != nil {
				if impl != "" {
					return "", fmt.Errorf("%s, %s, %s's TCP: %w", cell.Table, cell.Label, impl, err)
				}
				return "", fmt.Errorf("%s, %s: %w", cell.Table, cell.Label, err)
			}
			r.Emulated = append(r.Emulated, SpreadOf(times, recs))
			timesOf = append(timesOf, times)
			if len(timesOf) == 1 { // the model is the workload's, whatever the TCP
				_, r.Model = last.Headline()
				r.LossBound = last.Model.LossBound
			}
		}
		r.Same = make([]Spread, len(impls))
		if notMeasured == "" && l.KernelRuns > 0 {
			c := Case{Workload: cell.Workload, Link: cell.Link, Clock: l.Clock}
			times, recs, _, err := Repeat(ctx, kern, c, cell.Runs(l.KernelRuns), func(res workloads.Result, rec Record) error {
				if rec.Kernel != nil {
					r.KernelFacts = rec.Kernel
				}
				return each(res, rec)
			})
			switch {
			case errors.Is(err, kernel.ErrUnsupported):
				notMeasured = err.Error()
			case err != nil:
				return "", fmt.Errorf("%s, %s, kernel: %w", cell.Table, cell.Label, err)
			default:
				r.Kernel = SpreadOf(times, recs)
				for i, t := range timesOf {
					r.Same[i] = SpreadOf(t[:min(len(t), len(times))], nil)
				}
			}
		}
		if err := row(r); err != nil {
			return "", err
		}
	}
	return notMeasured, nil
}
