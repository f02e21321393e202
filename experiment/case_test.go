package experiment

import (
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// A row of a workload that runs for a fixed duration has no elapsed
// time, model or deviation to show ("—"): its elapsed time is the
// duration it was given. Others show theirs.
func TestWriteRowFixedDuration(t *testing.T) {
	lc := link.Config{Delay: 25 * time.Millisecond, Rate: 10e6}
	for _, tc := range []struct {
		w    workloads.Workload
		want string
	}{
		{workloads.Share{}, "share  50.0 ms  10mbit  down  —  —  —  2  0    x"},
		{workloads.Loaded{Duration: 2 * time.Second}, "loaded  50.0 ms  10mbit  down  —  —  —  2  0    x"},
		{workloads.Bulk{}, "bulk  50.0 ms  10mbit    2150.3 ms  2100.0 ms  +2.4%  2  0    x"},
	} {
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		c := Case{Workload: tc.w, Link: lc}
		WriteRow(tw, Row{Case: c, CaseName: tc.w.Variant(), Workload: tc.w.Name(), Elapsed: 2150300 * time.Microsecond,
			Model: 2100 * time.Millisecond, Conns: 2, Drops: ptr(uint64(0)), Summary: "x"})
		tw.Flush()
		if got := strings.TrimSpace(b.String()); got != tc.want {
			t.Errorf("%s: row %q; want %q", tc.w.Name(), got, tc.want)
		}
	}
}
