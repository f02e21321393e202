package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/experiment"
)

// A small grid that runs in a blink on the virtual clock, with loss so
// that seeds matter (50KB is enough: seeds 3 to 7 spread the lossy cells'
// times 62–90 ms and 210–409 ms). Many tests sweep it, several times
// each: at 200KB a run took twice the CPU under the race detector.
var smallGrid = []string{"sweep", "bulk", "--size", "50KB", "--rtt", "10ms,50ms", "--rate", "10mbit", "--loss", "0,2%"}

// sweepArgs is smallGrid with extra: a flag of extra that smallGrid
// has takes its place (a flag given twice is refused).
func sweepArgs(extra ...string) []string {
	args := append([]string{}, smallGrid...)
	for i := 0; i+1 < len(extra); i++ {
		if j := slices.Index(args, extra[i]); j > 0 && strings.HasPrefix(extra[i], "--") && j+1 < len(args) {
			args = slices.Delete(args, j, j+2)
		}
	}
	return append(args, extra...)
}

// --seeds runs each cell once per seed: one record per seed, then a
// summary whose median and percentiles are the runs'.
func TestSweepSeedsJSON(t *testing.T) {
	code, out, errOut := runNetemu(sweepArgs("--seeds", "3-7", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs := decode(t, out)
	if len(recs) != 4*6 {
		t.Fatalf("%d records, want 4 cells × (5 seeds + a summary)", len(recs))
	}
	for cell := range 4 {
		runs, sum := recs[cell*6:cell*6+5], recs[cell*6+5]
		var times []time.Duration
		for i, r := range runs {
			if r["summary"] != nil || r["seed"] != float64(3+i) {
				t.Fatalf("cell %d, record %d: seed %v, summary %v; want seed %d", cell, i, r["seed"], r["summary"], 3+i)
			}
			times = append(times, time.Duration(math.Round(r["elapsed_ms"].(float64)*1e6)))
		}
		want := experiment.SpreadOf(times, nil)
		if sum["summary"] != true || sum["seeds"] != "3-7" || sum["runs"] != float64(5) || sum["seed"] != nil ||
			sum["rtt_ms"] != runs[0]["rtt_ms"] || sum["median_ms"] != experiment.Ms(want.Median) ||
			sum["p10_ms"] != experiment.Ms(want.P10) || sum["p90_ms"] != experiment.Ms(want.P90) {
			t.Errorf("cell %d: summary %v; want median %v, p10 %v, p90 %v of seeds 3-7", cell, sum, want.Median, want.P10, want.P90)
		}
	}
	// With loss, the seeds draw different losses: the spread is not nil.
	if last := recs[len(recs)-1]; last["p10_ms"] == last["p90_ms"] {
		t.Errorf("lossy cell: p10 = p90 = %v over 5 seeds", last["p10_ms"])
	}
}

func TestSweepSeedsTable(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "s.svg")
	code, out, errOut := runNetemu(sweepArgs("--seeds", "4", "--plot", plot)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 || !strings.Contains(lines[0], "median") || !strings.Contains(lines[0], "p10–p90") || !strings.Contains(lines[6], "seeds 1–4") {
		t.Fatalf("want a header, 4 rows, a blank line and a note on the seeds:\n%s", out)
	}
	svg, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	// The band: a filled path in a translucent colour.
	if !strings.Contains(string(svg), "fill-opacity") {
		t.Errorf("the figure has no p10–p90 band")
	}
	if !strings.Contains(string(svg), "p10–p90 of 4 seeds") {
		t.Errorf("the figure does not say what the band spans")
	}
}

func TestSweepSeedsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{sweepArgs("--seeds", "0"), `--seeds "0": want a count like 20`},
		{sweepArgs("--seeds", "7-3"), `--seeds "7-3"`},
		{sweepArgs("--seeds", "many"), `--seeds "many"`},
		{sweepArgs("--seeds", "1-1000000"), "at most 100000"},
		{sweepArgs("--seeds", "3", "--seed", "2"), "give --seeds alone"},
		{[]string{"run", "bulk", "--seeds", "3"}, "--seeds does not apply: it is a flag of netemu sweep"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q",
				strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}
