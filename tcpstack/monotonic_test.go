package tcpstack

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
)

// readSequence runs traffic that makes the most goroutines (several
// connections at once, both directions, loss, reordering and jitter, so
// that RACK, tail-loss probes and retransmission timers all fire) and
// returns, per host, a hash of its clock reads in order: the scheduler's
// event during which each happened, the function that read, and the value
// returned. 64 KiB each way on each connection is enough for that: the
// hosts retransmit 68 segments, 12 by fast retransmit after SACKs and 6
// after timeouts (256 KiB took four times the CPU).
func readSequence(t *testing.T) [2]string {
	p := newPair(t, link.Config{Rate: 20e6, Delay: 5 * time.Millisecond, Qdisc: link.Qdisc{Limit: 20}, DelayedACK: link.LinuxDelayedACK,
		Loss: link.RandomLoss(0.02, 0), Reorder: link.Chance{P: 0.02}, Jitter: 500 * time.Microsecond, Seed: 4}, TCPConfig{Impl: GVisor})
	var mu sync.Mutex
	var sums [2]hash.Hash
	for i, h := range []*Host{p.a, p.b} {
		sums[i] = sha256.New()
		f := func() {
			ev := p.clk.Events()
			pc, _, _, _ := runtime.Caller(2) // above NowMonotonic
			name := runtime.FuncForPC(pc).Name()
			mu.Lock()
			defer mu.Unlock()
			sums[i].Write(binary.BigEndian.AppendUint64(nil, ev))
			sums[i].Write([]byte(name))
			sums[i].Write(binary.BigEndian.AppendUint64(nil, uint64(h.clk.last.Load())))
		}
		h.clk.onRead.Store(&f)
	}
	const conns, size = 4, 64 << 10
	for i := range conns {
		p.echoServer(t, uint16(7000+i), 0)
	}
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		p.clk.Wake(func() {
			go func() {
				defer wg.Done()
				c, err := p.a.Dial(t.Context(), p.b.AddrPort(uint16(7000+i)))
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				go c.Write(bytes.Repeat([]byte{byte(i)}, size))
				if _, err := io.CopyN(io.Discard, c, size); err != nil {
					t.Error(err)
				}
			}()
		})
	}
	wg.Wait()
	var fast, timeouts uint64
	for _, h := range []*Host{p.a, p.b} {
		h.clk.onRead.Store(nil)
		st := h.Stack().Stats().TCP
		fast, timeouts = fast+st.FastRetransmit.Value(), timeouts+st.Timeouts.Value()
	}
	if fast == 0 || timeouts == 0 {
		t.Fatalf("%d fast retransmits, %d retransmission timeouts; want both, or the reads of loss recovery go unchecked", fast, timeouts)
	}
	mu.Lock()
	defer mu.Unlock()
	return [2]string{string(sums[0].Sum(nil)), string(sums[1].Sum(nil))}
}

// The monotonic clock's tie-breaking offsets (gclock.NowMonotonic) depend
// only on the order of a host's clock reads. The virtual scheduler runs
// one event at a time and settles between events; within an event the
// reads are a chain of hand-offs (the event's goroutine stamps a received
// segment, then wakes the endpoint's processor, which reads on), never two
// goroutines at once. This test checks the consequence directly: the
// sequence of every read (event, reading function, value) is the same in
// every run, at 1, 2 and 4 processors.
//
// Under the race detector each GOMAXPROCS runs 3 times, not 5: its
// runtime shuffles the scheduler's run queues (runtime.randomizeScheduler),
// so reads that two goroutines make at once come in another order within
// a run or two (with a goroutine of its own reading the host's clock as
// each packet arrives, the second run differed).
func TestMonotonicReadsAreOrdered(t *testing.T) {
	runs := 5
	if testing.Short() {
		runs = 2
	}
	if race.Enabled {
		runs = min(runs, 3)
	}
	var first [2]string
	for _, procs := range []int{1, 2, 4} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for i := range runs {
				got := readSequence(t)
				if first[0] == "" {
					first = got
					continue
				}
				if got != first {
					t.Fatalf("GOMAXPROCS=%d run %d: the sequence of clock reads differs from the first run's", procs, i+1)
				}
			}
		}()
	}
}
