package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// compare's row of a run of fixed duration judged by its elapsed time
// (share) is "—" throughout: the details under the table are its result.
// loaded's row is its headline, the probe's RTT; bulk's its elapsed time.
func TestCompareCells(t *testing.T) {
	lc := link.Config{Delay: 25 * time.Millisecond, Rate: 10e6}
	run := func(elapsed time.Duration, d workloads.Detail) workloads.Result {
		return workloads.Result{Elapsed: elapsed, Model: workloads.Model{Elapsed: 2100 * time.Millisecond}, Detail: d}
	}
	loaded := func(median time.Duration) workloads.Detail {
		return workloads.LoadedDetail{Loaded: workloads.Spread{Median: median}, ModelRTT: 50200 * time.Microsecond}
	}
	for _, tc := range []struct {
		w                  workloads.Workload
		emulated, kern     workloads.Result
		cols, vs           []string
		kernelCol, modelCl string
	}{
		{workloads.Share{}, run(2150300*time.Microsecond, workloads.ShareDetail{}), run(2152100*time.Microsecond, workloads.ShareDetail{}),
			[]string{"—"}, []string{"—"}, "—", "—"},
		{workloads.Loaded{}, run(3*time.Second, loaded(244800*time.Microsecond)), run(3*time.Second, loaded(248700*time.Microsecond)),
			[]string{"244.8 ms"}, []string{"-1.6%"}, "248.7 ms", "50.2 ms"},
		{workloads.Bulk{}, run(1000*time.Millisecond, nil), run(1100*time.Millisecond, nil),
			[]string{"1000.0 ms"}, []string{"-9.1%"}, "1100.0 ms", "2100.0 ms"},
	} {
		m := comparison{emulated: []workloads.Result{tc.emulated}, kernel: tc.kern}
		cols, kern, model, vs := m.cells(experiment.Case{Workload: tc.w, Link: lc})
		if !slices.Equal(cols, tc.cols) || kern != tc.kernelCol || model != tc.modelCl || !slices.Equal(vs, tc.vs) {
			t.Errorf("%s: cells %q, %q, %q, %q; want %q, %q, %q, %q", tc.w.Name(), cols, kern, model, vs, tc.cols, tc.kernelCol, tc.modelCl, tc.vs)
		}
	}
}

// The footer names the congestion controls the flows ran where they set
// their own (share's --ccs), not the one pinned on the routes.
func TestCompareFooterNamesFlowsCCs(t *testing.T) {
	facts := &kernel.Facts{Kernel: "6.1", HZ: 250, Link: kernel.TUN, CongestionControl: "cubic", PingpongThresh: "1", SlowStartAfterIdle: "1"}
	for _, tc := range []struct {
		detail workloads.Detail
		want   string
	}{
		{workloads.ShareDetail{CCs: []string{"cubic", "reno", "cubic", "reno"}}, "cc cubic and reno (each flow's, from --ccs), "},
		{workloads.ShareDetail{CCs: []string{"reno", "reno"}}, "cc reno (each flow's, from --ccs), "},
		{workloads.ShareDetail{}, "cc cubic, "},
		{nil, "cc cubic, "},
	} {
		m := comparison{kernel: workloads.Result{Detail: tc.detail}, kernelRec: experiment.Record{Extra: experiment.Extra{Kernel: facts}}}
		if got := m.kernelFacts(); !strings.Contains(got, tc.want) {
			t.Errorf("flows' ccs %v: facts %q; want them to say %q", tc.detail, got, tc.want)
		}
	}
	if facts.CongestionControl != "cubic" {
		t.Errorf("the record's facts became %q; want them left alone", facts.CongestionControl)
	}
}

// A kernel figure from a run whose bridge was late is marked, with why,
// and one from a run on time is not.
func TestCompareMarksLateBridge(t *testing.T) {
	for _, c := range []struct {
		p99, max time.Duration
		late     bool
	}{{300 * time.Microsecond, 20 * time.Millisecond, false}, {2 * time.Millisecond, 20 * time.Millisecond, true}, {300 * time.Microsecond, 80 * time.Millisecond, true}} {
		why := experiment.BridgeLateWhy(c.p99, c.max)
		if (why != "") != c.late || c.late && !strings.Contains(why, "run it again on a quieter machine") {
			t.Errorf("p99 %v, max %v: %q; want late %v", c.p99, c.max, why, c.late)
		}
		run := workloads.Result{Elapsed: time.Second}
		m := comparison{emulated: []workloads.Result{run}, kernel: run, kernelRec: experiment.Record{Extra: experiment.Extra{BridgeLate: why}}}
		if _, kern, _, _ := m.cells(experiment.Case{Workload: workloads.Bulk{}}); strings.HasSuffix(kern, "*") != c.late {
			t.Errorf("p99 %v, max %v: the kernel's cell is %q; want a * where the bridge was late", c.p99, c.max, kern)
		}
	}
}
