package cli

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/experiment"
)

// FuzzDurationFlag: the parser of --rtt and --delack never panics, accepts
// exactly the durations of 0 or more that time.ParseDuration reads, and
// names the input and the accepted form when it refuses. Seeds:
// testdata/fuzz/FuzzDurationFlag.
func FuzzDurationFlag(f *testing.F) {
	parse := parseDuration("RTT")
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parse(s)
		d, perr := time.ParseDuration(s)
		if (err == nil) != (perr == nil && d >= 0) {
			t.Fatalf("--rtt %q: %v; time.ParseDuration says %v, %v", s, err, d, perr)
		}
		if err != nil && (!strings.Contains(err.Error(), strconv.Quote(s)) || !strings.Contains(err.Error(), "50ms")) {
			t.Fatalf("--rtt %q: message %q does not quote the input and show the accepted form", s, err)
		}
	})
}

// FuzzFlags: any command line for run and sweep either fails with a
// one-line usage error or yields cases whose link configuration is valid.
// Each space-separated word of the input is one argument. Seeds:
// testdata/fuzz/FuzzFlags.
func FuzzFlags(f *testing.F) {
	f.Fuzz(func(t *testing.T, line string, sweep bool) {
		args := strings.Fields(line)
		if len(args) > 24 {
			return
		}
		for _, a := range args {
			if strings.Count(a, ",") > 8 { // a sweep's cases multiply: keep them few
				return
			}
		}
		cmd := testRun
		if sweep {
			cmd = testSweep
		}
		o, err := parseArgs(context.Background(), cmd, args)
		if err == nil {
			var cases []experiment.Case
			cases, err = o.cases()
			for _, c := range cases {
				if verr := c.Link.Validate(); verr != nil || c.Link.Delay < 0 || c.Link.DelayedACK < 0 {
					t.Fatalf("netemu %s %q gave an invalid link %+v: %v", cmd.Name, line, c.Link, verr)
				}
				if verr := c.Workload.Validate(); verr != nil {
					t.Fatalf("netemu %s %q gave an invalid workload %+v: %v", cmd.Name, line, c.Workload, verr)
				}
			}
		}
		if err != nil {
			if _, ok := err.(*UsageError); !ok || strings.Contains(err.Error(), "\n") {
				t.Fatalf("netemu %s %q: %T %q; want a one-line usage error", cmd.Name, line, err, err)
			}
		}
	})
}
