package emu

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
)

// BenchmarkSoak1GiB moves 1 GiB through the link in one virtual run
// (1 Gbit/s, 10 ms RTT, Linux delayed ACKs) and checks that memory stays
// flat (see soak). It reports the peak heap seen, sampled every MiB read,
// and the live heap at the first and last checkpoint. Too slow for the
// normal run; use
//
//	go test -run XXX -bench Soak1GiB -benchtime 1x ./emu/
func BenchmarkSoak1GiB(b *testing.B) {
	for b.Loop() {
		soak(b, 1<<30)
	}
}

// TestSoakShort proves that moving bytes does not grow the live heap: over
// 4 MiB, the live heap after a collection, read whenever the connection
// has gone quiet, stays within soakSlack of its level after the first
// quarter. A link that kept one packet in four would add about a quarter
// of the bytes moved.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	soak(t, 4<<20)
}

const (
	// soakCheckpoints is how many pieces a soak moves its bytes in; after
	// each the connection goes quiet and the live heap is read.
	soakCheckpoints = 8
	// soakWarm is the checkpoint whose live heap is the baseline: by then
	// the link's ring and free list and the stacks' buffers have grown to
	// the size the transfer needs.
	soakWarm = soakCheckpoints / 4
	// soakSlack is how far above the baseline the live heap may be at a
	// later checkpoint. At quiet points the figure repeats to within a few
	// KiB, while a link keeping every fourth packet adds about 150 KiB a
	// checkpoint in TestSoakShort.
	soakSlack = 256 << 10
	// soakQuiet is the virtual time a soak waits after each piece, for
	// the last segments and delayed ACKs to cross, so that no packet is in
	// flight and no buffer holds data when the heap is read.
	soakQuiet = time.Second
)

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

// liveHeap collects and returns the bytes the collection marked live. It
// collects twice, so that the first collection's sync.Pool victims are
// freed too. It runs as an event of clk, so that on the virtual clock
// nothing else of the run moves while it collects; the event waits only
// for the collector, never for a goroutine of the run.
func (m *memSampler) liveHeap(clk clock.Clock) uint64 {
	done := make(chan uint64, 1)
	clk.Wake(func() {
		runtime.GC()
		runtime.GC()
		_, live, _ := m.read()
		done <- live
	})
	return <-done
}

// soak downloads size bytes over one connection (1 Gbit/s, 10 ms RTT,
// Linux delayed ACKs) in soakCheckpoints equal pieces. After each piece
// the connection goes quiet for soakQuiet and the live heap is read after
// a collection. It fails if the live heap at a checkpoint after soakWarm
// exceeds the one at soakWarm by more than soakSlack: memory must stay
// flat however many bytes move.
func soak(tb testing.TB, size int64) {
	if size%soakCheckpoints != 0 {
		tb.Fatalf("soak of %d bytes; want a multiple of %d", size, soakCheckpoints)
	}
	piece := size / soakCheckpoints
	n, err := New(Config{Link: link.Config{Delay: 5 * time.Millisecond, Rate: 1e9, DelayedACK: link.LinuxDelayedACK}, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	defer n.Close()
	runtime.GC()
	mem := newMemSampler()
	var peakHeap, peakTotal uint64
	var liveAt [soakCheckpoints]uint64 // live heap after each piece
	var elapsed time.Duration
	wall := time.Now()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(9)
		if err != nil {
			return err
		}
		defer ln.Close()
		sent := make(chan error, 1)
		more := make(chan struct{}, soakCheckpoints) // the reader asks for the next piece
		n.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				sent <- err
				return
			}
			defer c.Close()
			buf := make([]byte, 64<<10)
			for k := range soakCheckpoints {
				if k > 0 {
					<-more
				}
				for left := piece; left > 0; left -= int64(len(buf)) {
					if _, err := c.Write(buf[:min(int64(len(buf)), left)]); err != nil {
						sent <- err
						return
					}
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
		for k := range soakCheckpoints {
			for end := int64(k+1) * piece; got < end; {
				m, err := c.Read(buf[:min(int64(len(buf)), end-got)])
				got += int64(m)
				if err == io.EOF {
					return fmt.Errorf("received %d of %d bytes", got, size)
				}
				if err != nil {
					return err
				}
				if got >= nextSample {
					nextSample += 1 << 20
					heap, _, total := mem.read()
					peakHeap, peakTotal = max(peakHeap, heap), max(peakTotal, total)
				}
			}
			if err := n.Sleep(ctx, soakQuiet); err != nil {
				return err
			}
			liveAt[k] = mem.liveHeap(n.Clock())
			more <- struct{}{}
		}
		elapsed = n.Now().Sub(start) - soakCheckpoints*soakQuiet
		return <-sent
	})
	if err != nil {
		tb.Fatal(err)
	}
	st := n.Stats()
	live := ""
	for _, b := range liveAt {
		live += fmt.Sprintf(" %.2f", mib(b))
	}
	tb.Logf("%d MiB in %v virtual without the pauses (%.0f Mbit/s), %.1fs wall; peak heap %.1f MiB, peak runtime total %.1f MiB; live heap after each piece%s MiB; drops %d, ACKs held %d",
		size>>20, elapsed, float64(size)*8/elapsed.Seconds()/1e6, time.Since(wall).Seconds(),
		mib(peakHeap), mib(peakTotal), live,
		st.Link[link.BtoA].Drops.Total(), st.Link[link.AtoB].ACKsHeld)
	base := liveAt[soakWarm-1]
	for k := soakWarm; k < soakCheckpoints; k++ {
		if liveAt[k] > base+soakSlack {
			tb.Errorf("live heap after %.1f of %.1f MiB is %.2f MiB; want at most %.2f MiB (%.2f MiB after %.1f MiB, plus %.2f MiB): memory is not flat",
				mib(uint64(int64(k+1)*piece)), mib(uint64(size)), mib(liveAt[k]),
				mib(base+soakSlack), mib(base), mib(uint64(soakWarm*piece)), mib(soakSlack))
			break
		}
	}
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(mib(peakHeap), "peak-heap-MiB")
		b.ReportMetric(mib(peakTotal), "peak-total-MiB")
		b.ReportMetric(mib(liveAt[0]), "live-first-MiB")
		b.ReportMetric(mib(liveAt[soakCheckpoints-1]), "live-last-MiB")
		b.ReportMetric(elapsed.Seconds(), "virtual-s")
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
