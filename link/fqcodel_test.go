package link

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
	"time"
)

// flowPkt is a UDP packet of size bytes from port sport to dport,
// numbered i.
func flowPkt(sport, dport uint16, i, size int) []byte {
	b := numbered(i, size)
	binary.BigEndian.PutUint16(b[20:], sport)
	binary.BigEndian.PutUint16(b[22:], dport)
	return b
}

func ports(b []byte) uint16 { return binary.BigEndian.Uint16(b[20:]) }

// queued is one packet handed to the serializer.
type queued struct {
	sport     uint16
	size      int
	at, start time.Duration
}

// fqRig is a link whose a>b dequeues are recorded.
func fqRig(t *testing.T, cfg Config) (*rig, *[]queued) {
	r := newRig(t, cfg)
	var q []queued
	r.l.Observe(func(e Event) {
		if e.Kind == EventQueue && e.Dir == AtoB {
			q = append(q, queued{ports(e.Packet), len(e.Packet), e.At, e.Start})
		}
	})
	return r, &q
}

// flood sends n packets of size bytes on flow sport, one every gap from
// start.
func flood(r *rig, sport uint16, start time.Duration, n, size int, gap time.Duration) {
	for i := range n {
		r.at(start+time.Duration(i)*gap, func() { r.l.Send(AtoB, flowPkt(sport, 9, i, size)) })
	}
}

// A sparse flow beside bulk ones: under fq_codel each probe packet
// waits less than the target, since its flow is new each time and new
// flows go first, while under codel the same probe waits behind the bulk
// flows' queue (which an unresponsive flood keeps far past the target).
// Eight bulk flows, so that round robin alone would not do: a probe
// behind one packet of each would wait 8 × 1.2 ms.
func TestFQCoDelIsolatesSparseFlow(t *testing.T) {
	const rate = 10e6
	probe := func(q Qdisc) (worst time.Duration, n int, st DirStats) {
		r, got := fqRig(t, Config{Rate: rate, Qdisc: q})
		for f := range 8 { // 15 Mbit/s offered in all, for 16 s
			flood(r, uint16(1000+f), time.Duration(f)*100*time.Microsecond, 2500, 1500, 6400*time.Microsecond)
		}
		flood(r, 2000, 7*time.Millisecond, 300, 100, 50*time.Millisecond)
		r.run(20 * time.Second)
		for _, p := range *got {
			if p.sport == 2000 && p.at > time.Second { // after the bulk flows' queues have built
				worst = max(worst, p.start-p.at)
				n++
			}
		}
		return worst, n, r.l.Stats()[AtoB]
	}
	worst, n, st := probe(Qdisc{Kind: FQCoDel})
	if n < 250 {
		t.Fatalf("fq_codel: %d probe packets served after the first second; want the probe's 280", n)
	}
	if worst >= DefaultTarget {
		t.Errorf("fq_codel: the probe waited up to %v; want under the target, %v", worst, DefaultTarget)
	}
	if st.Drops[DropCoDel] == 0 {
		t.Errorf("fq_codel: CoDel dropped nothing from flows offering 1.5 times the rate")
	}
	worstCodel, _, _ := probe(Qdisc{Kind: CoDel})
	if worstCodel < DefaultTarget {
		t.Errorf("codel: the probe waited at most %v; the scenario does not load the queue past the target", worstCodel)
	}
	t.Logf("probe's longest wait: fq_codel %v, codel %v", worst, worstCodel)
}

// Deficit round robin shares bytes, not packets: two backlogged flows,
// one of 1500-byte packets, one of 300-byte packets, get the same bytes
// through, at every instant within two quanta and two largest packets
// (each flow's deficit lies between minus a packet and a quantum, and
// one may have had its turn of the round when the other has not).
func TestFQCoDelDRRSharesBytes(t *testing.T) {
	const rate = 10e6
	r, got := fqRig(t, Config{Rate: rate, Qdisc: Qdisc{Kind: FQCoDel}})
	// each flow offers 1.5 times the rate, for 5 s
	flood(r, 1000, 0, 6250, 1500, 800*time.Microsecond)
	flood(r, 2000, 0, 31250, 300, 160*time.Microsecond)
	r.run(10 * time.Second)
	bound := 2 * (DefaultMTU + 1500)
	var a, b, worst int
	for _, p := range *got {
		if p.start > 4900*time.Millisecond {
			break // both flows stop offering at 5 s
		}
		if p.sport == 1000 {
			a += p.size
		} else {
			b += p.size
		}
		worst = max(worst, a-b, b-a)
	}
	if worst > bound {
		t.Errorf("the flows' bytes differed by up to %d; want at most %d", worst, bound)
	}
	if total := a + b; float64(total)*8 < 0.95*rate*4.9 {
		t.Errorf("only %d bytes served in 4.9 s; want the link busy (%.0f)", total, rate*4.9/8)
	}
	t.Logf("bytes: %d and %d, largest difference %d (bound %d)", a, b, worst, bound)
}

// Over its limit fq_codel drops from the head of the flow with the most
// bytes, half its backlog but at most DropBatch packets at a time,
// counted as overlimit; a thin flow loses nothing. Over the memory limit
// the drops count as overmemory.
//
// 60 packets of 1000 bytes on a fat flow (0 to 59), then 5 on a thin
// one, at once: packet 0 goes to the serializer; 1 to 40 fill the limit
// of 40; 41 is one over, and the fat flow holds 41000 bytes, so its head
// goes until 20500 bytes are gone: 21 packets (1 to 21). 42 to 59 and
// the thin flow's first two make 40 again; its third is one over, and
// the fat flow's 38 packets lose 19 (22 to 40). With DropBatch 8, the
// first overflow drops 8.
func TestFQCoDelDropsFromFattestFlow(t *testing.T) {
	for _, c := range []struct {
		name    string
		q       Qdisc
		why     DropReason
		batches []int
		dropped []int
	}{
		{"limit", Qdisc{Kind: FQCoDel, Limit: 40}, DropOverlimit, []int{21, 19}, seq(1, 41)},
		{"memory", Qdisc{Kind: FQCoDel, Params: FQCoDelParams{MemoryLimit: 40 * 1000}}, DropOverMemory, []int{21, 19}, seq(1, 41)},
		{"batch", Qdisc{Kind: FQCoDel, Limit: 40, Params: FQCoDelParams{DropBatch: 8}}, DropOverlimit, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, Config{Rate: 1e6, Qdisc: c.q})
			var dropped, batches []int
			r.l.Observe(func(e Event) {
				if e.Kind == EventDrop {
					if e.Reason != c.why || ports(e.Packet) != 1000 {
						t.Errorf("dropped flow %d's packet for %v; want only flow 1000's, for %v", ports(e.Packet), e.Reason, c.why)
					}
					dropped = append(dropped, number(e.Packet))
				}
			})
			send := func(p []byte) {
				n := len(dropped)
				r.l.Send(AtoB, p)
				if len(dropped) > n {
					batches = append(batches, len(dropped)-n)
				}
			}
			r.at(0, func() {
				for i := range 60 {
					send(flowPkt(1000, 9, i, 1000))
				}
				for i := range 5 {
					send(flowPkt(2000, 9, i, 1000))
				}
			})
			r.run(10 * time.Millisecond)
			if c.name == "batch" {
				if len(batches) == 0 || batches[0] != 8 || dropped[0] != 1 {
					t.Errorf("drops in batches of %v, first %v; want 8 first, from packet 1", batches, dropped[:min(1, len(dropped))])
				}
				return
			}
			if !slices.Equal(batches, c.batches) || !slices.Equal(dropped, c.dropped) {
				t.Errorf("dropped %v in batches of %v; want %v in batches of %v", dropped, batches, c.dropped, c.batches)
			}
			// and the fat flow's CoDel counts them, to drop harder
			f := r.l.dirs[AtoB].qd.(*fqCoDel)
			if n := f.flows[f.classify(flowPkt(1000, 9, 0, 1000))].cv.count; n != uint32(len(c.dropped)) {
				t.Errorf("the fat flow's CoDel count is %d; want the %d drops", n, len(c.dropped))
			}
		})
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// Same seed, same run: 5 runs of several flows through fq_codel with
// jitter and loss give the same events, byte for byte; another seed
// hashes the flows into other buckets.
func TestFQCoDelDeterministic(t *testing.T) {
	cfg := Config{Rate: 10e6, Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Loss: RandomLoss(0.01, 0), Seed: 42,
		Qdisc: Qdisc{Kind: FQCoDel, Limit: 200, Params: FQCoDelParams{Flows: 16}}}
	run := func(cfg Config) string {
		r := newRig(t, cfg)
		h := fnv.New64a()
		r.l.Observe(func(e Event) {
			fmt.Fprintf(h, "%v %v %v %v %v %v %x\n", e.Kind, e.Dir, e.At, e.Start, e.Due, e.Reason, e.Packet)
		})
		for f := range 8 {
			flood(r, uint16(1000+f), time.Duration(f)*time.Millisecond, 400, 200+150*f, time.Duration(1+f)*time.Millisecond)
		}
		r.run(10 * time.Second)
		st := r.l.Stats()[AtoB]
		if st.Drops[DropCoDel] == 0 || st.Drops[DropLoss] == 0 {
			t.Fatalf("the scenario drops %d by CoDel, %d by loss; want both at work", st.Drops[DropCoDel], st.Drops[DropLoss])
		}
		return fmt.Sprintf("%x", h.Sum64())
	}
	want := run(cfg)
	for i := range 4 {
		if got := run(cfg); got != want {
			t.Fatalf("run %d: events hash %s; the first run's %s", i+2, got, want)
		}
	}
	buckets := func(seed uint64) []int32 {
		f := newFQCoDel(&Link{cfg: Config{MTU: DefaultMTU}}, &direction{cfg: Config{Seed: seed}}, Qdisc{Kind: FQCoDel}.withDefaults(DefaultMTU))
		var b []int32
		for p := range 16 {
			b = append(b, f.classify(flowPkt(uint16(1000+p), 9, 0, 100)))
		}
		return b
	}
	if slices.Equal(buckets(1), buckets(2)) {
		t.Error("seeds 1 and 2 hash 16 flows into the same buckets; the seed does not perturb the hash")
	}
	if !slices.Equal(buckets(1), buckets(1)) {
		t.Error("seed 1 hashes the same flows into different buckets")
	}
}
