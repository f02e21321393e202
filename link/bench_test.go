package link

import (
	"context"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
)

// BenchmarkLinkPacket measures the link's own per-packet path (delayed-ACK
// classification, rate, queue, delay, delivery) on the virtual clock.
// Allocations must be zero once buffers are warm.
func BenchmarkLinkPacket(b *testing.B) {
	clk := clock.NewVirtual(0, nil)
	defer clk.Close()
	delivered := 0
	l, err := New(Config{Rate: 1e9, Delay: time.Millisecond, DelayedACK: LinuxDelayedACK}, clk, func(Dir, []byte) { delivered++ })
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	data := dataAB(iss+1, mss)
	const burst = 64
	send := func() {
		for range burst {
			l.Send(AtoB, data)
		}
	}
	// Warm the buffers and ring.
	clk.AfterFunc(0, send)
	clock.Sleep(context.Background(), clk, time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += burst {
		clk.AfterFunc(0, send)
		clock.Sleep(context.Background(), clk, 10*time.Millisecond)
	}
	b.StopTimer()
	if delivered < b.N {
		b.Fatalf("delivered %d of %d", delivered, b.N)
	}
}

// TestLinkPathAllocatesNothing pins the per-packet path at zero allocations
// in steady state: classification, queue, delivery and buffer reuse.
func TestLinkPathAllocatesNothing(t *testing.T) {
	clk := clock.NewVirtual(0, nil)
	defer clk.Close()
	l, err := New(Config{DelayedACK: LinuxDelayedACK, Qdisc: Qdisc{Limit: 4}}, clk, func(Dir, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Events run on the scheduler too; driving the link by hand here only
	// makes the packets' path run on this goroutine, where it is counted.
	step := func() {
		l.deliverNext(&l.dirs[AtoB])
		l.deliverNext(&l.dirs[BtoA])
	}
	l.Send(AtoB, tcpPkt(ipA, ipB, aPort, bPort, iss, 0, flagSYN, 0))
	l.Send(BtoA, tcpPkt(ipB, ipA, bPort, aPort, irs, iss+1, flagSYN|flagACK, 0))
	step()
	data := dataAB(iss+1, mss)
	ack := ackBA(iss + 1 + mss)
	allocs := testing.AllocsPerRun(1000, func() {
		l.Send(AtoB, data)
		l.Send(BtoA, ack)
		step()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per packet pair; want 0", allocs)
	}
	if st := l.Stats(); st[AtoB].Packets < 1000 || st[BtoA].Packets < 1000 {
		t.Errorf("packets delivered: %d, %d; want 1000 or more each way", st[AtoB].Packets, st[BtoA].Packets)
	}
}

// stageConfigs are the link's stages one at a time, and all at once, for
// the per-stage benchmark and the allocation test.
var stageConfigs = []struct {
	name string
	cfg  Config
}{
	{"plain", Config{Rate: 1e9, Delay: time.Millisecond}},
	{"delack", Config{Rate: 1e9, Delay: time.Millisecond, DelayedACK: LinuxDelayedACK}},
	{"loss", Config{Rate: 1e9, Delay: time.Millisecond, Loss: RandomLoss(0.01, 0.25)}},
	{"gemodel", Config{Rate: 1e9, Delay: time.Millisecond, Loss: GELoss(0.01, 0.3)}},
	{"duplicate", Config{Rate: 1e9, Delay: time.Millisecond, Duplicate: Chance{P: 0.01}}},
	{"corrupt", Config{Rate: 1e9, Delay: time.Millisecond, Corrupt: Chance{P: 0.01}}},
	{"reorder", Config{Rate: 1e9, Delay: time.Millisecond, Reorder: Chance{P: 0.1}}},
	{"jitter", Config{Rate: 1e9, Delay: time.Millisecond, Jitter: 200 * time.Microsecond, Distribution: Normal}},
	{"overhead", Config{Rate: 1e9, Delay: time.Millisecond, PacketOverhead: 14, CellSize: 48, CellOverhead: 5}},
	// The queue disciplines at 1 Gbit/s, where the bursts never wait long
	// enough for CoDel to act, and at 60 Mbit/s, under the bursts' 76.8
	// Mbit/s: a standing queue, with tail drops (fifo), CoDel's drops
	// (codel, fq_codel) and, for fq_codel, its flow lists at work.
	{"codel", Config{Rate: 1e9, Delay: time.Millisecond, Qdisc: Qdisc{Kind: CoDel}}},
	{"fq_codel", Config{Rate: 1e9, Delay: time.Millisecond, Qdisc: Qdisc{Kind: FQCoDel}}},
	{"fifo-overload", Config{Rate: 60e6, Delay: time.Millisecond}},
	{"codel-overload", Config{Rate: 60e6, Delay: time.Millisecond, Qdisc: Qdisc{Kind: CoDel}}},
	{"fq_codel-overload", Config{Rate: 60e6, Delay: time.Millisecond, Qdisc: Qdisc{Kind: FQCoDel}}},
	{"all", Config{Rate: 1e9, Delay: time.Millisecond, DelayedACK: LinuxDelayedACK, Loss: RandomLoss(0.01, 0.25), Duplicate: Chance{P: 0.01},
		Corrupt: Chance{P: 0.01}, Reorder: Chance{P: 0.1}, Jitter: 200 * time.Microsecond, Distribution: Normal, PacketOverhead: 14}},
}

// stageBurst is how many full-sized data segments stageLink's step sends
// at one instant.
const stageBurst = 64

// stageLink makes a link with cfg on the virtual clock, warmed, and
// returns a step that sends a burst of stageBurst full-sized data
// segments through it and waits until they have all arrived. The test's
// cleanup closes both.
func stageLink(tb testing.TB, cfg Config) (step func()) {
	clk := clock.NewVirtual(0, nil)
	tb.Cleanup(clk.Close)
	l, err := New(cfg, clk, func(Dir, []byte) {})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	data := dataAB(iss+1, mss)
	send := func() {
		for range stageBurst {
			l.Send(AtoB, data)
		}
	}
	step = func() {
		clk.AfterFunc(0, send)
		clock.Sleep(context.Background(), clk, 10*time.Millisecond)
	}
	for range 20 { // warm the buffers, rings and heaps
		step()
	}
	return step
}

// benchStage sends bursts of full-sized data segments through a link
// with cfg on the virtual clock.
func benchStage(b *testing.B, cfg Config) {
	step := stageLink(b, cfg)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += stageBurst {
		step()
	}
}

// BenchmarkLinkStage is the link's per-packet cost with each stage on
// alone, and with all of them (docs/PERFORMANCE.md).
func BenchmarkLinkStage(b *testing.B) {
	for _, s := range stageConfigs {
		b.Run(s.name, func(b *testing.B) { benchStage(b, s.cfg) })
	}
}

// Every stage, and all of them together, keep the per-packet path free
// of allocations once warm: over 100 bursts of 64 packets, fewer than one
// allocation per packet, counted as BenchmarkLinkStage's allocs/op (per
// packet, rounded down). The step's own clock timers allocate a few
// times per burst.
func TestStagesAllocateNothing(t *testing.T) {
	for _, s := range stageConfigs {
		if a := int(testing.AllocsPerRun(100, stageLink(t, s.cfg))) / stageBurst; a != 0 {
			t.Errorf("%s: %d allocations per packet; want 0", s.name, a)
		}
	}
}
