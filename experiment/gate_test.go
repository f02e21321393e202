package experiment

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// starShare is share on star:3, the server sending to three hosts: the
// three flows leave one host together once the gate opens.
func starShare(w workloads.Share) Case {
	return Case{Workload: w, Link: link.Config{Delay: 10 * time.Millisecond, Rate: 10e6, Qdisc: link.Qdisc{Limit: 30}}, Seed: 1,
		Shape: &Shape{Name: "star:3", Build: func(lc link.Config) (topo.Topology, []topo.Flow) { return topo.Star(3, lc) }}}
}

// A topology's share flows start together, one after another
// flowStagger apart: each measures a window of the same length, so
// their goodputs add up to no more than the bottleneck carries, and
// the run repeats to the packet at GOMAXPROCS 1, 2 and 4 (the gate
// releases the flows one event at a time, in the order they arrived,
// not as the runtime schedules them).
func TestShapeShareFlowsStartTogether(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	c := starShare(workloads.Share{Duration: 2 * time.Second})
	want := ""
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for i := range race.DeterministicRuns(3) {
			r, rec, err := Emulated{}.Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if want == "" {
				want = rec.TraceHash
				d := r.Detail.(ShapeDetail)
				var sum float64
				var starts []time.Duration
				window := func(f FlowResult) time.Duration {
					return f.Result.Elapsed - f.Result.Detail.(workloads.ShareDetail).LoadStart
				}
				for _, f := range d.Flows {
					sum += f.Goodput
					starts = append(starts, f.Result.Detail.(workloads.ShareDetail).LoadStart)
					if window(f) != window(d.Flows[0]) {
						t.Errorf("flow %s ran %v, flow %s %v; want windows of one length", f.Name, window(f), d.Flows[0].Name, window(d.Flows[0]))
					}
				}
				slices.Sort(starts)
				for k := 1; k < len(starts); k++ {
					if gap := starts[k] - starts[k-1]; gap != flowStagger {
						t.Errorf("flows started at %v; want each %v after the one before", starts, flowStagger)
						break
					}
				}
				if sum > 10e6 {
					t.Errorf("the flows' goodputs add up to %.2f Mbit/s through a 10 mbit bottleneck", sum/1e6)
				}
			} else if rec.TraceHash != want {
				t.Fatalf("GOMAXPROCS %d, run %d: trace %s; want %s", procs, i, rec.TraceHash, want)
			}
		}
	}
}

// On a topology share runs one connection per pair of hosts, and the
// pairs take --ccs's congestion controls in turn.
func TestShapeShareOnePerPair(t *testing.T) {
	r, rec, err := Emulated{}.Run(context.Background(), starShare(workloads.Share{Duration: time.Second, CCs: "cubic,reno"}))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Conns != 3 {
		t.Errorf("%d connections; want one per pair, 3", rec.Conns)
	}
	var got []string
	for _, f := range r.Detail.(ShapeDetail).Flows {
		got = append(got, f.Result.Detail.(workloads.ShareDetail).CCs...)
	}
	if len(got) != 3 || got[0] != "cubic" || got[1] != "reno" || got[2] != "cubic" {
		t.Errorf("the pairs' congestion controls: %v; want cubic, reno, cubic", got)
	}
}

// A topology's pairs may each have a congestion control of their own:
// --ccs is checked against the shape's flows, not share's two
// connections of two hosts, and a list longer than the flows is refused.
func TestShapeShareCCsPerFlow(t *testing.T) {
	r, _, err := Emulated{}.Run(context.Background(), starShare(workloads.Share{Duration: time.Second, CCs: "cubic,reno,bbr"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Detail.(ShapeDetail).Flows {
		got = append(got, f.Result.Detail.(workloads.ShareDetail).CCs...)
	}
	if !slices.Equal(got, []string{"cubic", "reno", "bbr"}) {
		t.Errorf("the pairs' congestion controls: %v; want cubic, reno, bbr", got)
	}
	_, _, err = Emulated{}.Run(context.Background(), starShare(workloads.Share{Duration: time.Second, CCs: "cubic,reno,bbr,cubic"}))
	if err == nil || !strings.Contains(err.Error(), "names 4 congestion controls for 3 flows") {
		t.Errorf("four congestion controls for three pairs: %v; want them refused", err)
	}
}

// A flow with a workload of its own counts apart: the flows that take
// the case's share get its --ccs in turn among themselves, and a flow's
// own share, one pair, may name one congestion control.
func TestShapeShareCCsPerWorkload(t *testing.T) {
	c := starShare(workloads.Share{Duration: time.Second, CCs: "bbr,cubic"})
	c.Shape.Flows = []ShapeFlow{{Workload: workloads.Share{Duration: time.Second, CCs: "reno"}}}
	r, _, err := Emulated{}.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Detail.(ShapeDetail).Flows {
		got = append(got, f.Result.Detail.(workloads.ShareDetail).CCs...)
	}
	if !slices.Equal(got, []string{"reno", "bbr", "cubic"}) {
		t.Errorf("the pairs' congestion controls: %v; want reno (its own), then bbr, cubic (the case's in turn)", got)
	}
	c.Shape.Flows[0].Workload = workloads.Share{Duration: time.Second, CCs: "reno,bbr"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "names 2 congestion controls for 1 flows") {
		t.Errorf("two congestion controls for a flow's own share: %v; want them refused", err)
	}
}
