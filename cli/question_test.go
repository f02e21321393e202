package cli

import (
	"context"
	"io"
	"math"
	"os"
	"slices"
	"testing"
	"time"
)

// Every cell of every question is one case as netemu compare takes it,
// each label once, and every plotted figure exists.
func TestQuestionCells(t *testing.T) {
	names := map[string]bool{}
	for _, q := range questions {
		if names[q.name] {
			t.Errorf("question %s listed twice", q.name)
		}
		names[q.name] = true
		labels := map[string]bool{}
		for _, c := range q.cells {
			if labels[c.label] {
				t.Errorf("%s: cell %q twice", q.name, c.label)
			}
			labels[c.label] = true
			_, cases, err := parseArgsCases(context.Background(), c.args)
			if err != nil {
				t.Errorf("%s, %s: %v", q.name, c.label, err)
				continue
			}
			// What the backends check before a run, not only the flags.
			if err := cases[0].Validate(); err != nil {
				t.Errorf("%s, %s: %v", q.name, c.label, err)
			}
		}
		for _, i := range q.plot {
			if i < 0 || i >= len(q.figures) {
				t.Errorf("%s plots figure %d of %d", q.name, i, len(q.figures))
			}
		}
	}
}

// The IMC 2019 model's BBR share at the points its equations make easy:
// a buffer of one BDP leaves the loss-based flows nothing (p < 0), so BBR
// has the link but for its PROBE_RTT stalls; a deep buffer leaves it
// about half, less its longer stalls.
func TestIMCModel(t *testing.T) {
	const rate, l, d = 10e6, 0.04, 40.0
	c := rate / 12000
	one := imcBBRShare(1, 1, rate, secs(l), secs(d))
	if want := (d - (c*l/c+0.2+l)*d/10) / d; math.Abs(one-want) > 1e-12 {
		t.Errorf("1 BDP: %v, want %v", one, want)
	}
	q := 64 * c * l
	p := 0.5 - 1/128.0 - 4/q
	deep := imcBBRShare(1, 64, rate, secs(l), secs(d))
	if want := (1 - p) * (d - (q/c+0.2+l)*d/10) / d; math.Abs(deep-want) > 1e-12 {
		t.Errorf("64 BDP: %v, want %v", deep, want)
	}
}

// Each question's first cell runs on kernel TCP (as root), its run cut
// short: the command works on both backends and every figure the
// emulator gives, the kernel gives too. Timings are not checked.
func TestQuestionsOnKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("kernel mode needs root (network namespaces, TUN devices); run the tests as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("kernel mode needs /dev/net/tun: %v", err)
	}
	for _, q := range questions {
		t.Run(q.name, func(t *testing.T) {
			cell := q.cells[0]
			cell.args = slices.Clone(cell.args)
			if i := slices.Index(cell.args, "--duration"); i >= 0 {
				cell.args[i+1] = "2s"
			}
			bar := NewProgress(io.Discard, 2, false)
			m, facts, why, err := q.measure(context.Background(), cell, QuestionOptions{Runs: 1, KernelRuns: 1}, "", bar, nil)
			if err != nil || why != "" || facts == nil {
				t.Fatalf("%s: %v (kernel: %q)", cell.label, err, why)
			}
			for i, f := range q.figures {
				e, k := m.emulated[i][0], m.kernel[i][0]
				if !math.IsNaN(e) && math.IsNaN(k) {
					t.Errorf("%s: %s: emulated %v, kernel none", cell.label, f.name, e)
				}
			}
		})
	}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
