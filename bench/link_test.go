package bench

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/netemu/netemu/clock/clocktest"
	"github.com/netemu/netemu/link"
)

// tcpPacket builds an IPv4 packet with a TCP header and payload bytes of
// payload. Checksums are left zero: the link does not read them.
func tcpPacket(src, dst [4]byte, sport, dport uint16, seq, ack uint32, flags byte, payload int) []byte {
	p := make([]byte, 40+payload)
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:4], uint16(len(p)))
	p[8] = 64
	p[9] = 6 // TCP
	copy(p[12:16], src[:])
	copy(p[16:20], dst[:])
	t := p[20:]
	binary.BigEndian.PutUint16(t[0:2], sport)
	binary.BigEndian.PutUint16(t[2:4], dport)
	binary.BigEndian.PutUint32(t[4:8], seq)
	binary.BigEndian.PutUint32(t[8:12], ack)
	t[12] = 5 << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:16], 65535)
	return p
}

const (
	flagSYN = 0x02
	flagACK = 0x10
	mss     = 1460
)

var (
	ipA = [4]byte{198, 18, 0, 1}
	ipB = [4]byte{198, 18, 0, 2}
)

// BenchmarkLinkPacket measures the link's own per-packet path — delayed-ACK
// classification, rate, queue, delay, delivery and buffer reuse — on a
// hand-driven clock, so that every allocation counted is the link's. An
// operation is one full-sized data packet from A to B and its ACK back;
// the metrics are per packet. The target is 0 allocs/pkt.
func BenchmarkLinkPacket(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  link.Config
	}{
		{"unshaped", link.Config{}},
		{"shaped", link.Config{Rate: 1e9, Delay: time.Millisecond, DelayedACK: link.LinuxDelayedACK}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			clk := &clocktest.Manual{}
			delivered := 0
			l, err := link.New(bc.cfg, clk, func(link.Dir, []byte) { delivered++ })
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			const iss, irs = 1000, 5000
			l.Send(link.AtoB, tcpPacket(ipA, ipB, 40000, 80, iss, 0, flagSYN, 0))
			l.Send(link.BtoA, tcpPacket(ipB, ipA, 80, 40000, irs, iss+1, flagSYN|flagACK, 0))
			clk.Advance(time.Second)
			// One data packet and its ACK per operation.
			data := tcpPacket(ipA, ipB, 40000, 80, iss+1, irs+1, flagACK, mss)
			ack := tcpPacket(ipB, ipA, 80, 40000, irs+1, iss+1, flagACK, 0)
			seq := uint32(iss + 1)
			op := func() {
				binary.BigEndian.PutUint32(data[24:28], seq)
				l.Send(link.AtoB, data)
				seq += mss
				binary.BigEndian.PutUint32(ack[28:32], seq)
				l.Send(link.BtoA, ack)
				clk.Advance(2 * time.Millisecond)
			}
			for range 100 { // warm the buffers and the ring
				op()
			}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			b.ResetTimer()
			for b.Loop() {
				op()
			}
			b.StopTimer()
			runtime.ReadMemStats(&m1)
			pkts := float64(2 * b.N)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/pkts, "allocs/pkt")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/pkts, "B/pkt")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pkts, "ns/pkt")
			if st := l.Stats(); st[link.AtoB].Packets < uint64(b.N) || st[link.AtoB].Drops.Total() > 0 {
				b.Fatalf("delivered %d of %d data packets, %d dropped", st[link.AtoB].Packets, b.N, st[link.AtoB].Drops.Total())
			}
		})
	}
}
