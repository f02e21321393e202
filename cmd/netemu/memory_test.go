package main

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// peakHeap runs f while sampling the heap's live objects every few
// milliseconds, and returns the largest sample.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
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
	}()
	f()
	close(stop)
	wg.Wait()
	return peak
}

// A plain run's memory is bounded by the work in flight, not the bytes
// moved: 128 MiB at 1 gbit keeps the heap under 48 MiB. (Recording every
// link event for explain, which only explain reads, took about 100 bytes
// per event: hundreds of MiB here.)
func TestRunMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 128 MiB")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory says nothing about the heap; run without -race")
	}
	const limit = 48 << 20
	var code int
	var errOut string
	peak := peakHeap(func() {
		code, _, errOut = runCmd("run", "bulk", "--size", "128MiB", "--rate", "1gbit", "--rtt", "10ms")
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Logf("peak live heap %.1f MiB", float64(peak)/(1<<20))
	if peak > limit {
		t.Errorf("peak live heap %.1f MiB moving 128 MiB; want under %d MiB", float64(peak)/(1<<20), limit>>20)
	}
}
