package main

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
)

// TestDrawDumbbells: a seed names one set of dumbbells; each lies in the
// ranges the report states and is a command line netemu compare takes.
func TestDrawDumbbells(t *testing.T) {
	a, b := drawDumbbells(40, 3), drawDumbbells(40, 3)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two draws with seed 3 differ")
	}
	if reflect.DeepEqual(a, drawDumbbells(40, 4)) {
		t.Fatal("seeds 3 and 4 draw the same dumbbells")
	}
	fq := 0
	for _, d := range a {
		if d.Flows < dbMinFlows || d.Flows > dbMaxFlows || len(d.RTTs) != d.Flows {
			t.Errorf("dumbbell %d: %d flows, %d RTTs", d.N, d.Flows, len(d.RTTs))
		}
		if d.Rate < dbMinRate*0.95 || d.Rate > dbMaxRate*1.01 {
			t.Errorf("dumbbell %d: rate %v", d.N, d.Rate)
		}
		if d.RTT > slices.Min(d.RTTs) || d.RTT <= 0 {
			t.Errorf("dumbbell %d: bottleneck RTT %v, flows' %v", d.N, d.RTT, d.RTTs)
		}
		if d.Qdisc == "fq_codel" {
			fq++
		}
		if _, cases, err := cli.ParseCases(context.Background(), &cli.CompareCommand, d.args()); err != nil || len(cases) != 1 {
			t.Errorf("dumbbell %d: %v (%d cases) from %q", d.N, err, len(cases), d.args())
		}
	}
	if fq == 0 || fq == len(a) {
		t.Errorf("%d of %d dumbbells with fq_codel; want about a quarter", fq, len(a))
	}
}

// TestDumbbellTargets: the report counts a flow, an index and a drop
// count against their targets, on rows made by hand.
func TestDumbbellTargets(t *testing.T) {
	side := func(g [][]float64, jain, drops float64) dbSide {
		return dbSide{goodput: g, jain: []float64{jain}, drops: []float64{drops}, late: []experiment.Record{{}}}
	}
	rows := []dbRow{
		{D: dumbbell{N: 1, Flows: 2, RTTs: []time.Duration{10 * ms, 20 * ms}, RTT: 5 * ms, Rate: 10e6, Queue: 20, Qdisc: "fifo"},
			Emulated: side([][]float64{{5.2e6}, {4.8e6}}, 0.99, 100), Kernel: side([][]float64{{5e6}, {5e6}}, 1, 70)},
		{D: dumbbell{N: 2, Flows: 2, RTTs: []time.Duration{10 * ms, 20 * ms}, RTT: 5 * ms, Rate: 10e6, Queue: 20, Qdisc: "fifo"},
			Emulated: side([][]float64{{6e6}, {4e6}}, 0.90, 100), Kernel: side([][]float64{{5e6}, {5e6}}, 1, 60)},
	}
	var b bytes.Buffer
	dumbbellMarkdown(&b, rows, dbReport{Seed: 9, N: 2, Runs: 1, KernelRuns: 1, NoiseFlag: "none", Noise: "no time at all (exact)"})
	for _, want := range []string{
		"`go run ./bench/accuracy -dumbbells 2 -dumbbell-seed 9 -dumbbell-runs 1 -dumbbell-kernel-runs 1 -dumbbell-noise none`",
		"The emulated hosts and routers take each packet in after no time at all (exact).",
		"| each flow's goodput within 5 % of the kernel's | 2 of 4 (50 %) flows",
		"| Jain's index within 0.05 | 1 of 2 (50 %) dumbbells",
		"| drops within 1.5× | 1 of 2 (50 %) dumbbells",
		"| 2 | 2 | 10mbit, 5ms | 10, 20 ms | 20 | +20.0 % |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

// TestDumbbellsWithoutKernel: one dumbbell on the emulator alone; the
// report says the kernel was not measured, and why. The nodes' noise
// given reaches the emulated runs: none, the default and a slow node
// give three different drawings.
func TestDumbbellsWithoutKernel(t *testing.T) {
	d := drawDumbbells(1, 7)
	rows, err := measureDumbbells(context.Background(), d, 1, 1, link.Noise{}, false, false, "auto", false, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || len(rows[0].Emulated.goodput) != d[0].Flows {
		t.Fatalf("rows %+v", rows)
	}
	var b bytes.Buffer
	dumbbellMarkdown(&b, rows, dbReport{Seed: 7, N: 1, Runs: 1, KernelRuns: 1, NoiseFlag: "default"})
	if !strings.Contains(b.String(), "Kernel TCP not measured: -kernel=false") {
		t.Errorf("report:\n%s", b.String())
	}
	figures := map[string]bool{fmt.Sprint(rows[0].Emulated.goodput): true}
	for _, c := range []struct {
		noise link.Noise
		exact bool
	}{{link.Noise{}, true}, {link.Noise{Base: 400 * time.Microsecond, Spread: 400 * time.Microsecond}, false}} {
		r, err := measureDumbbells(context.Background(), d, 1, 1, c.noise, c.exact, false, "auto", false, func(int, string) {})
		if err != nil {
			t.Fatal(err)
		}
		figures[fmt.Sprint(r[0].Emulated.goodput)] = true
	}
	if len(figures) != 3 {
		t.Errorf("default, exact and slow nodes gave %d different drawings; want 3: %v", len(figures), figures)
	}
}

const ms = time.Millisecond

// fitNoise gives a model whose 10th percentile and mean are the
// traversals': on link.DefaultNoise's own draws it gives it back.
func TestFitNoise(t *testing.T) {
	got := fitNoise(noiseSample(link.DefaultNoise))
	near := func(a, b time.Duration) bool { return (a - b).Abs() <= time.Microsecond }
	if !near(got.Base, link.DefaultNoise.Base) || !near(got.Spread, link.DefaultNoise.Spread) {
		t.Errorf("fitNoise of %v's draws: %v; want it back within 1 µs", link.DefaultNoise, got)
	}
	// A 10th percentile under ln(10/9) of the mean would need a negative
	// fixed part: the fit is then an exponential alone, of that mean.
	if got, want := fitNoise([]float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 100}), (link.Noise{Spread: 10 * time.Microsecond}); got != want {
		t.Errorf("fitNoise of nine 0s and a 100: %v; want %v", got, want)
	}
}

// As root, each dumbbell's emulated nodes take the time its own kernel
// runs' routers took: a noise fitted to them, not the default, and the
// report's column says which.
func TestDumbbellsMeasuredNoise(t *testing.T) {
	d := drawDumbbells(1, 7)
	rows, err := measureDumbbells(context.Background(), d, 1, 1, link.Noise{}, false, true, "auto", true, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].KernelWhy != "" {
		t.Skipf("kernel mode not here: %s", rows[0].KernelWhy)
	}
	r := rows[0]
	if r.Noise.IsZero() || r.Noise == link.DefaultNoise || r.Nodes != r.Noise.String() {
		t.Errorf("emulated nodes %v (%q); want a noise fitted to the kernel run's routers, named in the report", r.Noise, r.Nodes)
	}
	if r.Noise.Base+r.Noise.Spread < 5*time.Microsecond || r.Noise.Base+r.Noise.Spread > 5*time.Millisecond {
		t.Errorf("fitted node time %v on average; want a kernel router's, tens to hundreds of microseconds", r.Noise.Base+r.Noise.Spread)
	}
}
