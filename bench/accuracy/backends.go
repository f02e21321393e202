package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/emu/kernel"
	"github.com/netemu/netemu/workloads"
)

// Measurement is one backend's figure for one reference cell: the whole
// run, or the median round for nagle (Reference.PerRound), and the
// workload's analytical model of the same figure.
type Measurement struct {
	Time  time.Duration
	Model time.Duration
	// Note says what the figure was measured on, when that is not the
	// same everywhere (the kernel's version and settings); the report
	// lists each column's distinct notes once.
	Note string
}

// A Backend measures one reference cell. When it cannot run on this
// machine it returns an error wrapping ErrNotMeasured that says why; any
// other error stops the report.
type Backend func(ctx context.Context, ref workloads.Reference) (Measurement, error)

// ErrNotMeasured marks a cell a backend could not measure here.
var ErrNotMeasured = errors.New("not measured")

func notMeasured(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotMeasured, fmt.Sprintf(format, args...))
}

// Column is a backend with the name and the description the report
// prints for it.
type Column struct {
	Name    string
	About   string
	Measure Backend
}

type clockMode = emu.ClockMode

const (
	virtualClock = emu.Virtual
	realClock    = emu.Real
)

// Emulated measures the reference cell's case (netemu's defaults: a
// 1000-packet queue, 40 ms delayed ACK) on the emulated hosts with the
// given clock; with runs > 1, the median of that many runs.
func Emulated(clk clockMode, seed uint64, runs int) Backend {
	return func(ctx context.Context, ref workloads.Reference) (Measurement, error) {
		c := ref.Case(seed)
		c.Clock = clk
		return median(runs, func() (Measurement, error) {
			r, _, err := c.Run(ctx)
			if err != nil {
				return Measurement{}, err
			}
			return headline(r), nil
		})
	}
}

// Kernel measures the reference cell's case on kernel TCP in two network
// namespaces (emu/kernel), joined by netemu's link or tc netem (via).
// Kernel TCP delays its own ACKs, so the link's delayed-ACK stage is off.
// Without root, or without a kernel feature it needs, every cell is not
// measured, with the reason.
func Kernel(via string, runs int) Backend {
	var unavailable error // once kernel mode has failed to start, it will not start for the next cell either
	return func(ctx context.Context, ref workloads.Reference) (Measurement, error) {
		if unavailable != nil {
			return Measurement{}, unavailable
		}
		c := ref.Case(1)
		if err := c.Workload.Validate(); err != nil {
			return Measurement{}, err
		}
		return median(runs, func() (Measurement, error) {
			r, kr, err := c.RunKernel(ctx, via)
			if err != nil {
				if errors.Is(err, kernel.ErrUnsupported) {
					unavailable = notMeasured("%v", err)
					return Measurement{}, unavailable
				}
				return Measurement{}, fmt.Errorf("kernel mode: %w", err)
			}
			m := headline(r)
			m.Note = kr.Facts.String()
			return m, nil
		})
	}
}

// skipped is a backend turned off by a flag.
func skipped(why string) Backend {
	return func(context.Context, workloads.Reference) (Measurement, error) {
		return Measurement{}, notMeasured("%s", why)
	}
}

// headline is the figure of r that a reference Time is comparable with.
func headline(r workloads.Result) Measurement {
	got, model := r.Headline()
	return Measurement{Time: got, Model: model}
}

// median runs f n times and returns the run with the median Time.
func median(n int, f func() (Measurement, error)) (Measurement, error) {
	ms := make([]Measurement, 0, n)
	for range n {
		m, err := f()
		if err != nil {
			return Measurement{}, err
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Time < ms[j].Time })
	return ms[(len(ms)-1)/2], nil
}
