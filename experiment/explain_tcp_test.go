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
	// tests run it on dithered ones (Case.Exact).
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
// 49 ACKs at the same instants; only whose timer held them differs, and
// how long. netemu's TCP runs its 40 ms timer on Linux's timer wheel, so
// at RTT 0, where every hold starts on a tick, each lasts 44 ms (the
// eleventh 4 ms tick, as kernel TCP's does at HZ 250); the link's stage
// holds an ACK for the time it is given, here 44 ms.
func TestNetemuDelayedACKsAreTheLinks(t *testing.T) {
	nagle := workloads.Nagle{}
	_, tcp := explainTCPCase(t, Case{Workload: nagle, TCP: tcpstack.TCPConfig{Impl: tcpstack.Netemu}, Seed: 1}, nil)
	_, lk := explainTCPCase(t, Case{Workload: nagle, Link: link.Config{DelayedACK: 44 * ms}, Seed: 1}, nil)
	if tcp.HeldACKs != 49 || tcp.TCPHeldACKs != 49 || tcp.HeldBy != explain.ByTCP || tcp.HeldTime != 49*44*ms || tcp.Time[explain.DelayedACK] != 49*44*ms {
		t.Errorf("netemu's TCP: %d ACKs held (%d by the TCP, sources %b), %v in all, %v of delayed-ACK holds; want 49, 49, by the TCP, 2.156s, 2.156s",
			tcp.HeldACKs, tcp.TCPHeldACKs, tcp.HeldBy, tcp.HeldTime, tcp.Time[explain.DelayedACK])
	}
	if lk.HeldBy != explain.ByLink || lk.TCPHeldACKs != 0 || lk.HeldACKs != tcp.HeldACKs || lk.HeldTime != tcp.HeldTime || lk.Time != tcp.Time {
		t.Errorf("gVisor's TCP behind the link's stage: %d held by %b, %v in all, times %v; want what netemu's TCP gives, by the link: %d, %v, %v",
			lk.HeldACKs, lk.HeldBy, lk.HeldTime, lk.Time, tcp.HeldACKs, tcp.HeldTime, tcp.Time)
	}
	strip := func(hs []explain.Hold) []explain.Hold {
		out := slices.Clone(hs)
		for i := range out {
			out[i].By = 0
		}
		return out
	}
	if !slices.Equal(strip(tcp.Holds), strip(lk.Holds)) {
		t.Errorf("holds differ:\nnetemu's TCP %v\nthe link     %v", tcp.Holds, lk.Holds)
	}
	if a := tcp.ACKs; !a.Counted || a.DelayedACKs != 49 || a.DelayedACKTime != 49*44*ms || a.QuickACKs != 10 || a.DelayedACKLost != 0 {
		t.Errorf("netemu's TCP's ACK counts %+v; want 49 delayed (2.156s), 10 quick, none lost", a)
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
