package experiment

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// A seeded sweep's output from outcomes alone: a row per cell with the
// median of the runs that succeeded, the failed run told with its cell
// and seed, and a Summary per cell in JSON that counts it.
func TestSweepOutput(t *testing.T) {
	ms := time.Millisecond
	s := &Sweep{Seeds: []uint64{1, 2, 3}, Study: StudyID{Study: "s.yaml", StudySHA256: "ab"}}
	for _, d := range []time.Duration{5 * ms, 25 * ms} {
		s.Cases = append(s.Cases, Case{Workload: workloads.Bulk{Size: 1 << 20}, Link: link.Config{Delay: d, Rate: 10e6}})
	}
	var ocs []UnitOutcome
	for _, u := range s.Units() {
		oc := UnitOutcome{Unit: u, Workload: "bulk", Headline: time.Duration(u.Cell*100+int(u.Seed)) * ms, ModelHead: 100 * ms,
			Conns: 1, Record: json.RawMessage(`{"workload":"bulk","rtt_ms":10,"seed":1}`)}
		if u.Cell == 1 && u.Seed == 2 {
			oc = UnitOutcome{Unit: u, Err: "injected"}
		}
		ocs = append(ocs, oc)
	}
	var table, lines strings.Builder
	var failed []string
	out := s.NewOutput(&table, SweepOutputOptions{Seeded: true, Failed: func(run string, oc UnitOutcome) { failed = append(failed, run+": "+oc.Err) }})
	js := s.NewOutput(&lines, SweepOutputOptions{JSON: true, Seeded: true})
	for _, oc := range ocs {
		if err := out.Add(oc); err != nil {
			t.Fatal(err)
		}
		if err := js.Add(oc); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(table.String(), "\n")
	if len(rows) != 6 || !strings.Contains(rows[1], "2.0 ms") || !strings.Contains(rows[2], "101.0 ms") || !strings.Contains(rows[4], "over seeds 1–3") {
		t.Errorf("table:\n%s\nwant a header, the medians 2 ms and 101 ms, and the note on seeds 1–3", table.String())
	}
	if f, n := out.Failures(); f != 1 || n != 6 || len(failed) != 1 || !strings.HasPrefix(failed[0], "bulk, rtt 50.0 ms, rate 10mbit, seed 2: injected") {
		t.Errorf("failures %d of %d, told %q; want 1 of 6, told with its cell and seed", f, n, failed)
	}
	recs := strings.Split(strings.TrimSpace(lines.String()), "\n")
	var sum Summary
	if len(recs) != 7 || json.Unmarshal([]byte(recs[6]), &sum) != nil || !sum.Summary || sum.Failed != 1 || sum.Runs != 2 || sum.Seeds != "1-3" || sum.Study != "s.yaml" || sum.Seed != nil {
		t.Errorf("JSON lines:\n%s\nwant 3 records and a summary, then 2 and a summary of 2 runs, 1 failed, seeds 1-3, of s.yaml", lines.String())
	}
	if _, ok := out.Figure("emulated"); !ok {
		t.Errorf("no figure of 2 cells")
	}
}
