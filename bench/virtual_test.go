package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/workloads"
)

// reference returns the reference cell with the given table and label.
func reference(b *testing.B, table, label string) workloads.Reference {
	for _, r := range workloads.References() {
		if r.Table == table && r.Label == label {
			return r
		}
	}
	b.Fatalf("no reference %q / %q", table, label)
	return workloads.Reference{}
}

// runEmulated runs c on the emulated network and returns the network's
// own statistics (the scheduler's events included), which a Record leaves
// out.
func runEmulated(c experiment.Case) (workloads.Result, emu.Stats, error) {
	n, err := emu.New(emu.Config{Link: c.Link, Clock: c.Clock, Seed: c.Seed})
	if err != nil {
		return workloads.Result{}, emu.Stats{}, err
	}
	defer n.Close()
	var r workloads.Result
	err = n.Run(context.Background(), func(ctx context.Context) error {
		r, err = workloads.Run(ctx, c.Workload, n, c.Path())
		return err
	})
	return r, n.Stats(), err
}

// BenchmarkVirtualBulk is the bulk reference case — 5 MiB over HTTP at
// 5 mbit with a 50 ms RTT, about 8.8 s simulated — on the virtual clock.
// It reports simulated seconds per wall second (target: 100 or more), the
// scheduler's events per wall second, and allocations per packet through
// the whole run (both stacks, the link and the scheduler).
func BenchmarkVirtualBulk(b *testing.B) {
	c := experiment.ReferenceCase(reference(b, "bulk, RTT 50 ms", "5mbit"), 1)
	var sim time.Duration
	var events, pkts uint64
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		r, st, err := runEmulated(c)
		if err != nil {
			b.Fatal(err)
		}
		sim += r.Elapsed
		events += st.Events
		pkts += st.Link[0].Packets + st.Link[1].Packets
	}
	runtime.ReadMemStats(&m1)
	wall := b.Elapsed().Seconds()
	b.ReportMetric(sim.Seconds()/float64(b.N), "sim-s/op")
	b.ReportMetric(sim.Seconds()/wall, "speedup")
	b.ReportMetric(float64(events)/wall, "events/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(pkts), "allocs/pkt")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(pkts), "B/pkt")
}

// BenchmarkReproduceSuite runs every reference case on the virtual clock,
// as netemu reproduce does, once per operation. It reports the wall time
// of the whole suite (target: under 3 s), simulated seconds per wall
// second, and scheduler events per wall second.
func BenchmarkReproduceSuite(b *testing.B) {
	var sim time.Duration
	var events uint64
	for b.Loop() {
		for _, ref := range workloads.References() {
			r, st, err := runEmulated(experiment.ReferenceCase(ref, 1))
			if err != nil {
				b.Fatal(err)
			}
			sim += r.Elapsed
			events += st.Events
		}
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(wall/float64(b.N), "wall-s/op")
	b.ReportMetric(sim.Seconds()/float64(b.N), "sim-s/op")
	b.ReportMetric(sim.Seconds()/wall, "speedup")
	b.ReportMetric(float64(events)/wall, "events/s")
}

// BenchmarkSchedulerEvents measures the virtual clock alone: a timer that
// re-arms itself 1 ms ahead, with nothing else running. Each operation is
// one event: wait for the process to settle, pop the timer, run it.
func BenchmarkSchedulerEvents(b *testing.B) {
	v := clock.NewVirtual(0, nil)
	defer v.Close()
	done := make(chan struct{})
	left := 0
	var t clock.Timer
	t = v.AfterFunc(time.Hour, func() {
		left--
		if left <= 0 {
			close(done)
			return
		}
		t.Reset(time.Millisecond)
	})
	t.Stop()
	b.ReportAllocs()
	b.ResetTimer()
	left = b.N
	t.Reset(time.Millisecond)
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEventsInRun is BenchmarkSchedulerEvents with a run around it:
// two idle hosts and their stacks' goroutines, so that the idle check
// sees the goroutines of a real network.
func BenchmarkEventsInRun(b *testing.B) {
	n, err := emu.New(emu.Config{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		b.ResetTimer()
		for range b.N {
			if err := n.Sleep(ctx, time.Millisecond); err != nil {
				return err
			}
		}
		b.StopTimer()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkVirtualTimers measures the virtual clock's own bookkeeping,
// without running events: re-arming one of 1,000 pending timers (the
// timer heap; gVisor re-arms its retransmission and delayed-ACK timers
// all the time), and reading the time.
func BenchmarkVirtualTimers(b *testing.B) {
	v := clock.NewVirtual(0, nil)
	defer v.Close()
	const pending = 1000
	timers := make([]clock.Timer, pending)
	for i := range timers {
		timers[i] = v.AfterFunc(time.Hour+time.Duration(i)*time.Millisecond, func() {})
	}
	b.Run("Reset", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// Deterministic spread over the next hours, like timeouts.
			timers[i%pending].Reset(time.Hour + time.Duration(i*7919%pending)*time.Millisecond)
			i++
		}
	})
	b.Run("Now", func(b *testing.B) {
		b.ReportAllocs()
		var t time.Time
		for b.Loop() {
			t = v.Now()
		}
		_ = t
	})
	for _, t := range timers {
		t.Stop()
	}
}
