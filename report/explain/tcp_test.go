package explain

import (
	"slices"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// The holds a TCP reports join the link's: each ACK its timer sent, from
// the counts of consecutive samples of one connection end; a connection
// that takes the addresses of an ended one starts its counts afresh; the
// last sample of each end is its state, in tcp_info's units; gVisor's
// samples (no tcp_info, no counts) leave nothing.
func TestTCPHoldsAndState(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &Analyzer{}
	a.Observe(link.Event{Kind: link.EventSend, At: 0, Time: zero, Packet: tcpSeg(client, server, 0, 0, flagSYN, 0, nil)})
	sample := func(at time.Duration, from bool, delayed int, held time.Duration, quick int) tcpstack.Sample {
		s := tcpstack.Sample{At: zero.Add(at), Local: client, Remote: server, CAState: "Open", MSS: 1000, Cwnd: 10_000, Ssthresh: 7_000,
			ACKsCounted: true, DelayedACKs: delayed, DelayedACKTime: held, QuickACKs: quick}
		if from {
			s.Local, s.Remote, s.Ssthresh = server, client, 1<<62
		}
		return s
	}
	a.TCP(tcpstack.Sample{At: zero.Add(10 * ms), Local: client, Remote: server, Cwnd: 10_000, MSS: 1000}) // gVisor's: nothing
	a.TCP(sample(50*ms, true, 0, 0, 1))
	a.TCP(sample(100*ms, false, 1, 40*ms, 2)) // the timer's ACK at 100 ms, held from 60 ms
	a.TCP(sample(150*ms, false, 1, 40*ms, 3)) // no new one
	a.Observe(link.Event{Kind: link.EventRelease, At: 200 * ms, Time: zero.Add(200 * ms), Held: 40 * ms, Packet: tcpSeg(server, client, 1, 1, flagACK, 0, nil)})
	a.TCP(sample(300*ms, false, 2, 70*ms, 3)) // held 30 ms
	a.TCP(sample(400*ms, false, 1, 10*ms, 0)) // a new connection on the same addresses, held 10 ms
	a.TCP(sample(450*ms, false, 1, 10*ms, 1)) // its last sample
	b := a.Breakdown(0, 500*ms)
	want := []Hold{
		{At: 60 * ms, Held: 40 * ms, From: client, By: ByTCP},
		{At: 160 * ms, Held: 40 * ms, From: server, By: ByLink},
		{At: 270 * ms, Held: 30 * ms, From: client, By: ByTCP},
		{At: 390 * ms, Held: 10 * ms, From: client, By: ByTCP},
	}
	if !slices.Equal(b.Holds, want) || b.HeldACKs != 4 || b.TCPHeldACKs != 3 || b.HeldBy != ByLink|ByTCP || b.HeldTime != 120*ms || b.Time[DelayedACK] != 120*ms {
		t.Errorf("holds %v: %d (%d by the TCP, sources %b), %v in all, %v of delayed-ACK holds\nwant %v: 4 (3), both, 120ms, 120ms",
			b.Holds, b.HeldACKs, b.TCPHeldACKs, b.HeldBy, b.HeldTime, b.Time[DelayedACK], want)
	}
	if c := b.ACKs; c != (ACKCounts{Counted: true, DelayedACKs: 3, DelayedACKTime: 80 * ms, QuickACKs: 5}) {
		t.Errorf("ACK counts %+v; want the ended connection's 2 (70 ms, 3 quick) and the last's 1 (10 ms, 1 quick), the server's 1 quick", c)
	}
	wantState := []TCPState{
		{At: 450 * ms, Local: client, Remote: server, CAState: "Open", Cwnd: 10, Ssthresh: 7},
		{At: 50 * ms, Local: server, Remote: client, CAState: "Open", Cwnd: 10, Ssthresh: 0},
	}
	if !slices.Equal(b.TCP, wantState) {
		t.Errorf("TCP states %+v\nwant %+v", b.TCP, wantState)
	}
	if in := a.Breakdown(0, 250*ms); in.HeldACKs != 2 || in.TCPHeldACKs != 1 || in.HeldTime != 80*ms {
		t.Errorf("up to 250 ms: %d held (%d by the TCP), %v; want 2 (1), 80ms", in.HeldACKs, in.TCPHeldACKs, in.HeldTime)
	}

	var g Analyzer // gVisor's TCP behind the link: its holds are the link's
	g.Observe(link.Event{Kind: link.EventSend, At: 0, Time: zero, Packet: tcpSeg(client, server, 0, 0, flagSYN, 0, nil)})
	g.TCP(tcpstack.Sample{At: zero.Add(10 * ms), Local: client, Remote: server, Cwnd: 10_000, MSS: 1000})
	if gb := g.Breakdown(0, time.Second); gb.HeldBy != ByLink || gb.ACKs.Counted || len(gb.TCP) != 0 {
		t.Errorf("gVisor's TCP: sources %b, counts %+v, states %v; want the link's, none, none", gb.HeldBy, gb.ACKs, gb.TCP)
	}
}
