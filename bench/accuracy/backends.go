package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// Measurement is one column's figure for one reference cell: the
// headline figure (the whole run, or the kind's Headline such as nagle's
// median round), and the workload's analytical model of the same figure.
type Measurement struct {
	Time  time.Duration
	Model time.Duration
	// Note says what the figure was measured on, when that is not the
	// same everywhere (the kernel's version and settings); the report
	// lists each column's distinct notes once.
	Note string
}

// ErrNotMeasured marks a cell a column could not measure here.
var ErrNotMeasured = errors.New("not measured")

func notMeasured(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotMeasured, fmt.Sprintf(format, args...))
}

// Column is one backend of package experiment, on one clock, with the
// name and the description the report prints for it. A column whose
// Skip is set is not measured, for that reason.
type Column struct {
	Name    string
	About   string
	Backend experiment.Backend
	Clock   emu.ClockMode // the emulated backend's clock
	TCP     tcpstack.Impl // the emulated hosts' TCP; "" is the default, netemu's
	Seed    uint64
	Runs    int // runs per cell; the median is reported (0 means 1)
	Skip    string

	unavailable error // once the backend has failed to start here, it will not start for the next cell either
}

// measure runs the reference cell's case (netemu's defaults: a
// 1000-packet queue, 40 ms delayed ACK) on the column's backend. A
// backend that names a missing privilege or kernel feature
// (kernel.ErrUnsupported) leaves this cell and every later one not
// measured, with the reason.
func (col *Column) measure(ctx context.Context, ref workloads.Reference) (Measurement, error) {
	switch {
	case col.Skip != "":
		return Measurement{}, notMeasured("%s", col.Skip)
	case col.unavailable != nil:
		return Measurement{}, col.unavailable
	}
	c := experiment.ReferenceCase(ref, col.Seed)
	c.Clock = col.Clock
	c.TCP.Impl = col.TCP
	return median(max(col.Runs, 1), func() (Measurement, error) {
		r, rec, err := col.Backend.Run(ctx, c)
		if errors.Is(err, kernel.ErrUnsupported) {
			col.unavailable = notMeasured("%v", err)
			return Measurement{}, col.unavailable
		}
		if err != nil {
			return Measurement{}, err
		}
		got, model := r.Headline()
		m := Measurement{Time: got, Model: model}
		if rec.Kernel != nil {
			m.Note = rec.Kernel.String()
		}
		return m, nil
	})
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
