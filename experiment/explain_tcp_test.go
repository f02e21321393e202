package experiment

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/explain"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// The ACKs netemu's TCP holds itself (issue #23): its receiver reports
// each ACK its delayed-ACK timer sends (tcp's TestACKCounts: a lone
// segment's ACK, held 40 ms on the timer wheel, counted once), and explain takes them as it
// takes the holds of the link's delayed-ACK stage. Virtual-clock figures,
// exact.

// explainTCPCase runs c watched by an Analyzer that also takes the TCPs'
// samples (and by also, if not nil), and returns the breakdown of the
// workload's time.
func explainTCPCase(t *testing.T, c Case, also link.Observer) (workloads.Result, explain.Breakdown) {
	t.Helper()
	a := &explain.Analyzer{}
	c.Observe = func(e link.Event) {
		a.Observe(e)
		if also != nil {
			also(e)
		}
	}
	c.Probe = a.TCP
	// explain's accounting, checked on exact instants; netemu explain's
	// tests run it on noisy ones (Case.Exact).
	c.Exact = true
	r, _, err := Emulated{}.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	from := a.Since(r.Started)
	return r, a.Breakdown(from, from+r.Elapsed)
}

// The Nagle stall on netemu's TCP is the stall gVisor's TCP shows behind
// the link's delayed-ACK stage, which models Linux's receiver: the same
// 49 ACKs, one hold after another; only whose timer held them differs,
// and how long. netemu's TCP runs its 40 ms timer on Linux's timer
// wheel, so it fires on the eleventh 4 ms tick (HZ 250) after the ACK
// was due. The first hold begins where the run's first instant falls in
// its host's tick (tcpstack draws the clocks' phase from the seed), so
// it lasts more than 40 ms and at most 44; at RTT 0 every later one
// begins on a tick and lasts 44 ms, as kernel TCP's does. The link's
// stage holds an ACK for the time it is given, here 44 ms: its holds
// are netemu's, each begun the first hold's shortfall later.
func TestNetemuDelayedACKsAreTheLinks(t *testing.T) {
	nagle := workloads.Nagle{}
	_, tcp := explainTCPCase(t, Case{Workload: nagle, TCP: tcpstack.TCPConfig{Impl: tcpstack.Netemu}, Seed: 1}, nil)
	_, lk := explainTCPCase(t, Case{Workload: nagle, Link: link.Config{DelayedACK: 44 * ms}, TCP: tcpstack.TCPConfig{Impl: tcpstack.GVisor}, Seed: 1}, nil)
	if len(tcp.Holds) != 49 {
		t.Fatalf("netemu's TCP: %d holds; want 49", len(tcp.Holds))
	}
	// Seed 1 puts the hosts' clocks where the first hold lasts 41.689057
	// ms: over 40 ms and at most 44 (the eleventh tick), and under 44
	// because the run does not start on a tick.
	first := tcp.Holds[0].Held
	if first != 41689057*time.Nanosecond {
		t.Errorf("netemu's TCP's first hold %v; want 41.689057ms (over 40 ms, under the eleventh tick's 44 ms)", first)
	}
	want := first + 48*44*ms
	if tcp.HeldACKs != 49 || tcp.TCPHeldACKs != 49 || tcp.HeldBy != explain.ByTCP || tcp.HeldTime != want || tcp.Time[explain.DelayedACK] != want {
		t.Errorf("netemu's TCP: %d ACKs held (%d by the TCP, sources %b), %v in all, %v of delayed-ACK holds; want 49, 49, by the TCP, %v, %v",
			tcp.HeldACKs, tcp.TCPHeldACKs, tcp.HeldBy, tcp.HeldTime, tcp.Time[explain.DelayedACK], want, want)
	}
	if lk.HeldBy != explain.ByLink || lk.TCPHeldACKs != 0 || lk.HeldACKs != 49 || lk.HeldTime != 49*44*ms || lk.Time[explain.DelayedACK] != 49*44*ms {
		t.Errorf("gVisor's TCP behind the link's stage: %d held by %b, %v in all, times %v; want 49, by the link, 2.156s of delayed-ACK holds",
			lk.HeldACKs, lk.HeldBy, lk.HeldTime, lk.Time)
	}
	shifted := slices.Clone(tcp.Holds)
	for i := range shifted {
		shifted[i].By = lk.Holds[0].By
		shifted[i].Held = 44 * ms
		if i > 0 {
			shifted[i].At += 44*ms - first
		}
	}
	if !slices.Equal(shifted, lk.Holds) {
		t.Errorf("holds differ:\nnetemu's TCP %v\nthe link     %v", tcp.Holds, lk.Holds)
	}
	for i, h := range tcp.Holds[1:] {
		if h.Held != 44*ms {
			t.Errorf("netemu's TCP's hold %d: %v; want 44 ms, begun on a tick", i+2, h.Held)
		}
	}
	if a := tcp.ACKs; !a.Counted || a.DelayedACKs != 49 || a.DelayedACKTime != want || a.QuickACKs != 10 || a.DelayedACKLost != 0 {
		t.Errorf("netemu's TCP's ACK counts %+v; want 49 delayed (%v), 10 quick, none lost", a, want)
	}
	if lk.ACKs.Counted || len(lk.TCP) != 0 {
		t.Errorf("gVisor's TCP: ACK counts %+v and %d TCP states; want none", lk.ACKs, len(lk.TCP))
	}
}

// A lossless bulk download on netemu's TCP without a rate limit: its
// receiver's delayed-ACK timer sends no ACK. Every flight ends on a GSO
// packet whose last segment carries PSH, and the read that takes it
// sends its ACK (tcp_cleanup_rbuf); the sender holds back a packet
// smaller than the room it waits for (tcp_tso_should_defer), so none
// ends on a lone segment the timer would answer. The link's events say
// the same on their own: the client sends no pure ACK at an instant
// nothing reaches it. (Holds are timed in TestNetemuDelayedACKsAreTheLinks.)
func TestNetemuDelayedACKsInBulk(t *testing.T) {
	var timerACKs, dataIn []time.Duration
	var lastIn time.Duration = -1
	watch := func(e link.Event) {
		p := e.Packet
		if len(p) < 40 {
			return
		}
		ihl := int(p[0]&0x0f) * 4
		tcp := p[ihl:]
		toClient := binary.BigEndian.Uint16(tcp[0:2]) == 80
		payload := int(binary.BigEndian.Uint16(p[2:4])) - ihl - int(tcp[12]>>4)*4
		switch {
		case e.Kind == link.EventDeliver && toClient:
			lastIn = e.At
			if payload > 0 {
				dataIn = append(dataIn, e.At)
			}
		case e.Kind == link.EventSend && !toClient && payload == 0 && tcp[13] == 0x10 && e.At != lastIn:
			timerACKs = append(timerACKs, e.At)
		}
	}
	c := Case{Workload: workloads.Bulk{Size: 1 << 20}, Link: link.Config{Delay: 25 * ms}, TCP: tcpstack.TCPConfig{Impl: tcpstack.Netemu}, Seed: 1}
	_, b := explainTCPCase(t, c, watch)
	var ends []time.Duration
	var held time.Duration
	for _, h := range b.Holds {
		ends = append(ends, h.At+h.Held)
		held += h.Held
		if h.Held <= 40*ms || h.Held > 44*ms || (h.At+h.Held)%(4*ms) != 0 || h.From.Port() == 80 || !slices.Contains(dataIn, h.At) {
			t.Errorf("hold %+v; want more than 40 and at most 44 ms, ending on a 4 ms tick, from the client, from a data segment's arrival", h)
		}
	}
	if b.HeldACKs != 0 || b.TCPHeldACKs != 0 || b.HeldBy != explain.ByTCP || b.HeldTime != held || b.Time[explain.DelayedACK] != 0 {
		t.Errorf("%d ACKs held (%d by the TCP, sources %b), %v in all, %v of delayed-ACK holds; want none, counted by the TCP",
			b.HeldACKs, b.TCPHeldACKs, b.HeldBy, b.HeldTime, b.Time[explain.DelayedACK])
	}
	if !slices.Equal(ends, timerACKs) {
		t.Errorf("holds end at %v; the client sent pure ACKs with nothing arriving at %v", ends, timerACKs)
	}
	if a := b.ACKs; !a.Counted || a.DelayedACKs != 0 || a.DelayedACKTime != 0 || a.QuickACKs != 565 || a.DelayedACKLost != 0 {
		t.Errorf("ACK counts %+v; want none delayed, 565 quick, none lost", a)
	}
	if len(b.TCP) != 2 {
		t.Fatalf("%d TCP states; want the client's and the server's", len(b.TCP))
	}
	// When the client has the last byte, the server has heard of 631
	// segments delivered (the SYN-ACK among them), and 95 ACKs are on
	// their way to it.
	cl, srv := b.TCP[0], b.TCP[1]
	if cl.Local.Port() == 80 || cl.At != 400*ms || cl.Delivered != 2 || cl.RcvWnd != 1660928 || cl.RcvSsthresh != 1660856 ||
		srv.Local.Port() != 80 || srv.At != 375*ms || srv.CAState != "Open" || srv.Cwnd != 640 || srv.Ssthresh != 0 || srv.Delivered != 631 || srv.Unacked != 95 || srv.TotalRetrans != 0 {
		t.Errorf("TCP states %+v\nwant the client's at 400ms (2 delivered, rcv_wnd 1660928, rcv_ssthresh 1660856), then the server's at 375ms (Open, cwnd 640, no ssthresh, 631 delivered, 95 unacked, none retransmitted)", b.TCP)
	}
}
