package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// fixed is a backend that answers from a table keyed by the case's rate
// ("5mbit") or workload variant ("fresh"), with a 2 s model.
type fixed map[string]time.Duration

func (fixed) Name() string { return "fixed" }

func (f fixed) Run(_ context.Context, c experiment.Case) (workloads.Result, experiment.Record, error) {
	t, ok := f[tc.FormatRate(c.Link.Rate)]
	if !ok {
		t, ok = f[c.Workload.Variant()]
	}
	if !ok {
		return workloads.Result{}, experiment.Record{}, fmt.Errorf("no figure for %+v", c)
	}
	rec := experiment.Record{Extra: experiment.Extra{Kernel: &kernel.Facts{Kernel: "fixture"}}}
	return workloads.Result{Elapsed: t, Model: workloads.Model{Elapsed: 2 * time.Second}}, rec, nil
}

// failing is a backend whose every run fails with err.
type failing struct{ err error }

func (failing) Name() string { return "failing" }
func (f failing) Run(context.Context, experiment.Case) (workloads.Result, experiment.Record, error) {
	return workloads.Result{}, experiment.Record{}, f.err
}

func TestReportLayout(t *testing.T) {
	refs := []workloads.Reference{
		{Table: "bulk, RTT 50 ms", Label: "5mbit", Workload: workloads.Bulk{}, RTT: 50 * time.Millisecond, Rate: 5e6, Time: 9 * time.Second},
		{Table: "bulk, RTT 50 ms", Label: "10mbit", Workload: workloads.Bulk{}, RTT: 50 * time.Millisecond, Rate: 10e6, Time: 4 * time.Second},
		{Table: "keepalive, RTT 0 (loopback)", Label: "fresh", Workload: workloads.KeepAlive{Mode: workloads.Fresh}, Time: 2 * time.Millisecond},
	}
	cols := []*Column{
		{Name: "virtual", About: "a", Backend: fixed{"5mbit": 8820 * time.Millisecond, "10mbit": 4400 * time.Millisecond, "fresh": 0}},
		{Name: "kernel", About: "b", Backend: failing{fmt.Errorf("%w: needs root", kernel.ErrUnsupported)}},
	}
	var progress int
	tab, err := Measure(context.Background(), refs, cols, func(workloads.Reference, *Column) { progress++ })
	if err != nil {
		t.Fatal(err)
	}
	if progress != 6 {
		t.Errorf("progress called %d times; want 6", progress)
	}
	var out bytes.Buffer
	if err := tab.Markdown(&out, Environment{Command: "go run ./bench/accuracy", Date: "2000-01-01", Machine: "test"}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"## bulk, RTT 50 ms\n",
		"| | reference | virtual | Δ | kernel | Δ | model | Δ |\n",
		"| 5mbit | 9000.0 ms | 8820.0 ms | -2.0 % | not measured | | 2000.0 ms | -77.8 % |\n",
		"| 10mbit | 4000.0 ms | 4400.0 ms | +10.0 % | not measured | |",
		"| fresh | 2.0 ms | 0 | — | not measured | |",
		"- **kernel**: b. Not measured here: kernel mode unavailable: needs root.\n",
		"- **virtual**: a. Measured on: Linux fixture (HZ 0)",
		"| virtual | 2 | 6.0 % | 10.0 % (bulk, RTT 50 ms, 10mbit) |\n",
		"| kernel | 0 | — | — |\n",
		"| model | 2 | 63.9 % | 77.8 % (bulk, RTT 50 ms, 5mbit) |\n",
		"| virtual vs kernel | 0 | — | — |\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

// A backend failure other than "not measured" stops the report.
func TestBackendErrorStops(t *testing.T) {
	boom := errors.New("boom")
	cols := []*Column{{Name: "x", Backend: failing{boom}}}
	if _, err := Measure(context.Background(), workloads.References()[:1], cols, nil); !errors.Is(err, boom) {
		t.Fatalf("Measure returned %v; want boom", err)
	}
}

// The virtual-clock backend measures a real cell, and the nagle cell per
// round.
func TestEmulatedBackend(t *testing.T) {
	found := false
	for _, ref := range workloads.References() {
		if ref.Table != "nagle, RTT 0 (loopback), median round" || ref.Label != "nagle on" {
			continue
		}
		found = true
		for _, c := range []struct {
			impl tcpstack.Impl
			want time.Duration
		}{
			// The link's delayed-ACK stage holds gVisor's ACKs 40 ms.
			{tcpstack.GVisor, 40 * time.Millisecond},
			// netemu's TCP holds its own for TCP_DELACK_MIN, 40 ms,
			// which the timer wheel rounds up past its next 4 ms tick.
			{tcpstack.Netemu, 44 * time.Millisecond},
		} {
			col := &Column{Backend: experiment.Emulated{}, Clock: emu.Virtual, Seed: 1, TCP: c.impl}
			m, err := col.measure(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if m.Time != c.want || m.Model != 40*time.Millisecond {
				t.Errorf("%s: nagle on, RTT 0: %v per round, model %v; want %v, 40ms", c.impl, m.Time, m.Model, c.want)
			}
		}
	}
	if !found {
		t.Fatal("no nagle-on reference cell")
	}
}

func TestBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-runs", "0"}, &out, &errb); code != 2 {
		t.Errorf("-runs 0: exit %d; want 2", code)
	}
	if code := run(context.Background(), []string{"extra"}, &out, &errb); code != 2 {
		t.Errorf("extra argument: exit %d; want 2", code)
	}
	errb.Reset()
	if code := run(context.Background(), []string{"-grid", "5", "-grid-cells", "2,9"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `"9" is not a cell of the grid; want numbers from 1 to 5`) {
		t.Errorf("-grid 5 -grid-cells 2,9: exit %d, %q; want 2 and what would work", code, errb.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-dumbbells", "4", "-dumbbell-cells", "5"}, `"5" is not one of the dumbbells drawn; want numbers from 1 to 4`},
		{[]string{"-dumbbells", "4", "-dumbbell-noise", "loud"}, `-dumbbell-noise "loud": want measured, default, none or BASE,SPREAD such as 25us,30us (from 0 to 1s each)`},
		{[]string{"-dumbbells", "4", "-kernel=false", "-dumbbell-noise", "measured"}, "-dumbbell-noise measured takes the kernel runs' own"},
		{[]string{"-noise-steepness", "-runs", "3"}, "-noise-steepness takes only -via"},
		{[]string{"-noise-steepness", "-host-noise"}, "-noise-steepness takes only -via"},
	} {
		errb.Reset()
		if code := run(context.Background(), c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want 2 and one line with %q", c.args, code, errb.String(), c.want)
		}
	}
}
