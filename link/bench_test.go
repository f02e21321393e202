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
	l, err := New(Config{DelayedACK: LinuxDelayedACK, QueuePackets: 4}, clk, func(Dir, []byte) {})
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
