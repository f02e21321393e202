package tcpstack

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// rackTransfer moves 1 MiB from b to a over 20 mbit / 20 ms with an
// 8-packet queue, and returns the virtual time it took and the segments
// sent beyond the first copy of each (retransmissions).
func rackTransfer(t *testing.T, ties bool) (time.Duration, int) {
	p := newPair(t, link.Config{Rate: 20e6, Delay: 10 * time.Millisecond, Qdisc: link.Qdisc{Limit: 8}, DelayedACK: link.LinuxDelayedACK}, TCPConfig{Impl: GVisor})
	p.a.clk.ties.Store(ties)
	p.b.clk.ties.Store(ties)
	const size = 1 << 20
	ln, err := p.b.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(bytes.Repeat([]byte("x"), size))
	}()
	done := make(chan time.Duration, 1)
	p.clk.Wake(func() {
		go func() {
			start := p.clk.Now()
			c, err := p.a.Dial(t.Context(), p.b.AddrPort(80))
			if err != nil {
				t.Error(err)
				done <- 0
				return
			}
			defer c.Close()
			if _, err := io.CopyN(io.Discard, c, size); err != nil {
				t.Error(err)
			}
			done <- p.clk.Now().Sub(start)
		}()
	})
	elapsed := <-done
	seen := map[uint32]bool{}
	retx := 0
	p.mu.Lock()
	for _, pkt := range p.pkts {
		s := segmentOf(pkt)
		if s.src != 80 || s.payload == 0 {
			continue
		}
		if seen[s.seq] {
			retx++
		}
		seen[s.seq] = true
	}
	p.mu.Unlock()
	return elapsed, retx
}

// gVisor's RACK (rack.go, detectLoss) takes a segment sent at the same
// instant as the RACK segment but after it in sequence for one sent
// before it, the opposite of RFC 8985 (docs/UPSTREAM.md). On the virtual
// clock a burst is sent at one instant, so with equal send times RACK
// marks the rest of a burst lost; the host's clock keeps send times
// distinct, which restores RFC 8985's order. This test shows both: with
// ties (gVisor's behaviour with any clock that repeats an instant) the
// transfer retransmits segments that arrived and takes far longer.
func TestRACKTieBreak(t *testing.T) {
	fixed, fixedRetx := rackTransfer(t, false)
	tied, tiedRetx := rackTransfer(t, true)
	t.Logf("distinct send times: %v, %d retransmitted; tied: %v, %d retransmitted", fixed, fixedRetx, tied, tiedRetx)
	if tied < 2*fixed || tiedRetx < 2*fixedRetx {
		t.Errorf("distinct send times %v (%d retransmitted), tied %v (%d): want ties to cost at least twice as much", fixed, fixedRetx, tied, tiedRetx)
	}
}

// tcpSeg is what rackTransfer reads of a packet.
type tcpSeg struct {
	src     uint16
	seq     uint32
	payload int
}

func segmentOf(pkt []byte) tcpSeg {
	ihl := int(pkt[0]&0x0f) * 4
	total := int(pkt[2])<<8 | int(pkt[3])
	tcp := pkt[ihl:]
	thl := int(tcp[12]>>4) * 4
	return tcpSeg{
		src:     uint16(tcp[0])<<8 | uint16(tcp[1]),
		seq:     uint32(tcp[4])<<24 | uint32(tcp[5])<<16 | uint32(tcp[6])<<8 | uint32(tcp[7]),
		payload: total - ihl - thl,
	}
}
