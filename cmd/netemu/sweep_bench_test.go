package main

import (
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/netemu/netemu/cli"
)

// BenchmarkSweepJobs runs one sweep of 48 runs (12 cells × 4 seeds of
// the 5 MB bulk transfer, about 2 s on one core) with 1, 2 and, where
// there are more CPUs, more worker processes, and reports the runs per
// wall second. The output is
// the same bytes for every job count (TestJobsSameOutput); only the time
// differs.
//
//	go test -run X -bench SweepJobs -benchtime 3x -count 5 ./cmd/netemu
func BenchmarkSweepJobs(b *testing.B) {
	args := []string{"sweep", "bulk", "--rtt", "10ms,50ms", "--rate", "5mbit,10mbit,50mbit", "--loss", "0,1%", "--seeds", "1-4"}
	const runs = 2 * 3 * 2 * 4
	for _, jobs := range []int{1, 2, 4, 8, 16, 32, 64} {
		if jobs > 2 && jobs > 2*cli.AvailableCPUs() {
			break
		}
		b.Run("jobs="+strconv.Itoa(jobs), func(b *testing.B) {
			for b.Loop() {
				if code := run(context.Background(), append(args, "--jobs", strconv.Itoa(jobs)), io.Discard, io.Discard); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
			b.ReportMetric(float64(runs*b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}
