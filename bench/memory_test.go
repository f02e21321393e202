package bench

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// peakHeap runs f while sampling the live heap (as the last collection
// found it, so garbage not yet collected does not count) every few
// milliseconds, and returns the largest sample.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return peak
}

// bigRun is a bulk transfer of size at 1 gbit with a 10 ms RTT.
func bigRun(size int) experiment.Case {
	return experiment.Case{Workload: workloads.Bulk{Size: size},
		Link: link.Config{Delay: 5 * time.Millisecond, Rate: 1e9, DelayedACK: link.LinuxDelayedACK}, Seed: 1}
}

// watching is a way to watch a big run.
type watching struct {
	name string
	in   experiment.Instruments
}

// watched are the instruments a big run is measured with: none, the
// files (written as the run goes), and explain's analysis.
func watched(dir string) []watching {
	return []watching{
		{"plain", experiment.Instruments{}},
		{"pcap+timeline", experiment.Instruments{Pcap: dir + "/x.pcap", Timeline: dir + "/x.csv"}},
		{"explain", experiment.Instruments{Explain: true}},
	}
}

// A run's memory is bounded by the work in flight, not the bytes moved:
// 128 MiB at 1 gbit keeps the live heap under 24 MiB, also while it
// writes a pcap and a timeline, and while explain analyses it. (Keeping
// every link event for explain took about 100 bytes per event, every
// timeline row about 400 until the end of the run: tens of MiB here, and
// gigabytes for gigabytes moved.)
func TestRunMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 128 MiB three times")
	}
	if race.Enabled {
		t.Skip("the race detector's shadow memory says nothing about the heap; run without -race")
	}
	const limit = 24 << 20
	for _, w := range watched(t.TempDir()) {
		var err error
		peak := peakHeap(func() {
			_, _, _, err = experiment.Measure(context.Background(), experiment.Emulated{}, bigRun(128<<20), w.in)
		})
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		t.Logf("%s: peak live heap %.1f MiB", w.name, float64(peak)/(1<<20))
		if peak > limit {
			t.Errorf("%s: peak live heap %.1f MiB moving 128 MiB; want under %d MiB", w.name, float64(peak)/(1<<20), limit>>20)
		}
	}
}

// BenchmarkRunMemory moves 512 MiB at 1 gbit with a 10 ms RTT, plain,
// with a pcap and a timeline, and under explain, and reports the peak
// live heap in MiB.
func BenchmarkRunMemory(b *testing.B) {
	for _, w := range watched(b.TempDir()) {
		b.Run(w.name, func(b *testing.B) {
			var peak uint64
			for b.Loop() {
				var err error
				peak = max(peak, peakHeap(func() {
					_, _, _, err = experiment.Measure(context.Background(), experiment.Emulated{}, bigRun(512<<20), w.in)
				}))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-live-MiB")
		})
	}
}
