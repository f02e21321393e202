package emu

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// BenchmarkSoak1GiB moves 1 GiB through the link in one virtual run
// (1 Gbit/s, 10 ms RTT, Linux delayed ACKs) and checks that memory stays
// flat: the live heap after the last quarter is no larger than after the
// first (plus slack), whatever the volume. It reports the peak heap seen,
// sampled every MiB read. Too slow for the normal run; use
//
//	go test -run XXX -bench Soak1GiB -benchtime 1x ./emu/
func BenchmarkSoak1GiB(b *testing.B) {
	for b.Loop() {
		soak(b, 1<<30)
	}
}

// TestSoakShort is the soak at 16 MiB, in the normal run.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	soak(t, 16<<20)
}

// memSampler reads heap figures from runtime/metrics, which costs no
// stop-the-world.
type memSampler struct {
	s []metrics.Sample
}

func newMemSampler() *memSampler {
	return &memSampler{s: []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"}, // live and not yet swept
		{Name: "/gc/heap/live:bytes"},                // marked live by the last GC
		{Name: "/memory/classes/total:bytes"},        // mapped by the runtime
	}}
}

func (m *memSampler) read() (heap, live, total uint64) {
	metrics.Read(m.s)
	return m.s[0].Value.Uint64(), m.s[1].Value.Uint64(), m.s[2].Value.Uint64()
}

func soak(tb testing.TB, size int64) {
	n, err := New(Config{Link: link.Config{Delay: 5 * time.Millisecond, Rate: 1e9, DelayedACK: link.LinuxDelayedACK}, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	defer n.Close()
	runtime.GC()
	mem := newMemSampler()
	var peakHeap, peakTotal uint64
	var liveAt [4]uint64 // live heap at the end of each quarter
	var elapsed time.Duration
	wall := time.Now()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(9)
		if err != nil {
			return err
		}
		defer ln.Close()
		sent := make(chan error, 1)
		n.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				sent <- err
				return
			}
			defer c.Close()
			buf := make([]byte, 64<<10)
			for left := size; left > 0; left -= int64(len(buf)) {
				if _, err := c.Write(buf[:min(int64(len(buf)), left)]); err != nil {
					sent <- err
					return
				}
			}
			sent <- nil
		})
		c, err := n.Dial(ctx, 9)
		if err != nil {
			return err
		}
		defer c.Close()
		start := n.Now()
		buf := make([]byte, 64<<10)
		var got, nextSample int64
		for got < size {
			m, err := c.Read(buf)
			got += int64(m)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if got >= nextSample {
				nextSample += 1 << 20
				heap, live, total := mem.read()
				peakHeap, peakTotal = max(peakHeap, heap), max(peakTotal, total)
				liveAt[min(3, got*4/size)] = live
			}
		}
		elapsed = n.Now().Sub(start)
		if got != size {
			return fmt.Errorf("received %d of %d bytes", got, size)
		}
		return <-sent
	})
	if err != nil {
		tb.Fatal(err)
	}
	st := n.Stats()
	tb.Logf("%d MiB in %v virtual (%.0f Mbit/s), %.1fs wall; peak heap %.1f MiB, peak runtime total %.1f MiB; live heap by quarter %.1f %.1f %.1f %.1f MiB; drops %d, ACKs held %d",
		size>>20, elapsed, float64(size)*8/elapsed.Seconds()/1e6, time.Since(wall).Seconds(),
		mib(peakHeap), mib(peakTotal), mib(liveAt[0]), mib(liveAt[1]), mib(liveAt[2]), mib(liveAt[3]),
		st.Link[link.BtoA].Drops.Total(), st.Link[link.AtoB].ACKsHeld)
	if liveAt[3] > liveAt[0]+liveAt[0]/2+8<<20 {
		tb.Errorf("live heap grew from %.1f MiB (first quarter) to %.1f MiB (last): memory is not flat", mib(liveAt[0]), mib(liveAt[3]))
	}
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(mib(peakHeap), "peak-heap-MiB")
		b.ReportMetric(mib(peakTotal), "peak-total-MiB")
		b.ReportMetric(mib(liveAt[0]), "live-q1-MiB")
		b.ReportMetric(mib(liveAt[3]), "live-q4-MiB")
		b.ReportMetric(elapsed.Seconds(), "virtual-s")
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
