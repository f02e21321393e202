package emu

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"go.uber.org/goleak"
)

// bulk downloads size bytes from the server over one connection and
// returns the time from dial to last byte on the run's clock.
func bulk(ctx context.Context, n *Net, size int) (time.Duration, error) {
	ln, err := n.Server().Listen(80)
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		for left := size; left > 0; {
			m := min(left, len(buf))
			if _, err := c.Write(buf[:m]); err != nil {
				return
			}
			left -= m
		}
	}()
	start := n.Now()
	c, err := n.Client().Dial(ctx, n.Server().AddrPort(80))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	got, err := io.Copy(io.Discard, c)
	if err != nil {
		return 0, err
	}
	if got != int64(size) {
		return 0, fmt.Errorf("received %d bytes, want %d", got, size)
	}
	return n.Now().Sub(start), nil
}

func runBulk(t testing.TB, cfg Config, size int) (time.Duration, Stats) {
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var elapsed time.Duration
	err = n.Run(context.Background(), func(ctx context.Context) error {
		var err error
		elapsed, err = bulk(ctx, n, size)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return elapsed, n.Stats()
}

func TestBulkGoodputNearRate(t *testing.T) {
	defer goleak.VerifyNone(t)
	const size = 5 << 20
	cfg := Config{Link: link.Config{Delay: 25 * time.Millisecond, Rate: 10e6, DelayedACK: link.LinuxDelayedACK}, Seed: 1}
	elapsed, st := runBulk(t, cfg, size)
	goodput := float64(size*8) / elapsed.Seconds()
	t.Logf("5 MiB at 10 mbit, 50ms RTT: %v, goodput %.2f Mbit/s, drops %v/%v, peak queue %d pkts, ACKs held %d",
		elapsed, goodput/1e6, st.Link[0].Drops, st.Link[1].Drops, st.Link[link.BtoA].PeakQueuePackets, st.Link[link.AtoB].ACKsHeld)
	// Goodput counts payload only: headers (40 of 1500 bytes), the
	// handshake and slow start cost a few percent.
	if goodput < 0.90*10e6 || goodput > 10e6 {
		t.Errorf("goodput %.2f Mbit/s; want within 10%% below the 10 Mbit/s rate", goodput/1e6)
	}
}

// TestDeterminism repeats one run and requires identical traces and times,
// at GOMAXPROCS 1 and 2.
func TestDeterminism(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := Config{Link: link.Config{Delay: 10 * time.Millisecond, Rate: 20e6, DelayedACK: link.LinuxDelayedACK, Qdisc: link.Qdisc{Limit: 8}}, Seed: 42}
	const size = 1 << 20
	runs := 10
	if testing.Short() {
		runs = 5
	}
	runs = race.DeterministicRuns(runs)
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			want, wantSt := runBulk(t, cfg, size)
			for i := 1; i < runs; i++ {
				got, st := runBulk(t, cfg, size)
				if got != want || st.TraceHash != wantSt.TraceHash {
					t.Fatalf("run %d: %v, trace %s; run 0: %v, trace %s", i, got, st.TraceHash[:16], want, wantSt.TraceHash[:16])
				}
			}
			t.Logf("%d runs: %v each, trace %s, %d drops, peak queue %d", runs, want, wantSt.TraceHash[:16], wantSt.Link[1].Drops.Total(), wantSt.Link[1].PeakQueuePackets)
		})
	}
}

// BenchmarkBulkVirtual is 5 MiB over 50 ms RTT at 5 mbit on the virtual
// clock: about 8.8 s simulated. It reports the speedup over real time.
func BenchmarkBulkVirtual(b *testing.B) {
	cfg := Config{Link: link.Config{Delay: 25 * time.Millisecond, Rate: 5e6, DelayedACK: link.LinuxDelayedACK}, Seed: 1}
	var sim time.Duration
	var events uint64
	b.ReportAllocs()
	for b.Loop() {
		el, st := runBulk(b, cfg, 5<<20)
		sim += el
		events += st.Events
	}
	wall := b.Elapsed()
	b.ReportMetric(sim.Seconds()/float64(b.N), "sim-s/op")
	b.ReportMetric(sim.Seconds()/wall.Seconds(), "speedup")
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
}
