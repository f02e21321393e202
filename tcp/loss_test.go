package tcp

import (
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// An RTO keeps what the peer SACKed: everything else is lost and goes
// again, in order, as the window grows from one segment (tcp_enter_loss,
// tcp_timeout_mark_lost: cwnd = packets in flight + 1), and nothing
// SACKed is sent again. Of the initial window the odd segments arrive
// and are SACKed; the even ones, and then their fast retransmissions,
// are lost, until the retransmission timer fires. From then on the peer
// receives each segment the host sends; a host that forgot the SACKs
// would send the odd segments again among the even.
func TestRTOKeepsSACKState(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	o := c.writeInitialWindow(10)
	c.saw(o...)
	got := make([]bool, len(o)) // what the peer holds, by index
	// ack acknowledges what the peer holds: up to its first hole, with
	// SACK blocks for what lies above it, the three highest first (room
	// for three beside the timestamps).
	ack := func() {
		first := slices.Index(got, false)
		if first < 0 {
			c.rcvNxt = segEnd(o[len(o)-1])
			c.send(header.TCPFlagAck, nil)
			return
		}
		c.rcvNxt = o[first].seq
		var blocks []seqnum.Value
		for i := len(o) - 1; i > first && len(blocks) < 6; i-- {
			if got[i] && (i == len(o)-1 || !got[i+1]) {
				j := i
				for j > first && got[j-1] {
					j--
				}
				blocks = append(blocks, o[j].seq, segEnd(o[i]))
			}
		}
		c.send(header.TCPFlagAck, nil, optSACK(blocks...))
	}
	h.advance(100 * time.Millisecond)
	for i := 1; i < len(o); i += 2 {
		got[i] = true
		ack()
		c.saw(h.take()...) // fast retransmissions, lost
	}
	index := func(s out) int { return slices.IndexFunc(o, func(x out) bool { return x.seq == s.seq }) }
	e := c.ep.(*endpoint)
	r := h.advanceUntilOut(2 * time.Second)
	if in := e.TCPInfo(); in.CAState != "Loss" || in.SndCwnd != 1 {
		t.Fatalf("after the RTO: %s with cwnd %d; want Loss with cwnd 1 (nothing in flight but the SACKed, plus one)", in.CAState, in.SndCwnd)
	}
	var resent []int // which of the ten, by index, went again after the RTO
	for round := 0; len(r) > 0 && round < 20; round++ {
		c.saw(r...) // for the timestamps
		for _, s := range dataOuts(r) {
			i := index(s)
			resent = append(resent, i)
			got[i] = true
		}
		h.advance(100 * time.Millisecond)
		ack()
		r = h.take()
	}
	if want := []int{0, 2, 4, 6, 8}; !slices.Equal(resent, want) {
		t.Errorf("after the RTO the host sent the initial window's segments %v again; want %v, each once, and none SACKed", resent, want)
	}
	if in := e.TCPInfo(); in.Unacked != 0 {
		t.Errorf("%d segments still unacknowledged at the end", in.Unacked)
	}
}

// noTSPeer offers SACK without timestamps, so that only SACK and the
// order of ACKs can show a retransmission spurious (no Eifel echo).
var noTSPeer = peerOpts{mss: 1460, ws: 7, sack: true, window: 64240}

// F-RTO (RFC 5682 section 3, the SACK-enhanced variant; Linux's
// tcp_process_loss with tcp_frto 2): after an RTO, the first ACK that
// advances sends new data rather than retransmissions, and an ACK of
// data that was never retransmitted then shows the timeout spurious and
// undoes it (tcp_try_undo_loss): the window and ssthresh of before come
// back, and the connection is Open. The initial window's segments (and
// the tail-loss probe's new segment before the RTO) were only delayed:
// the peer, without timestamps, ACKs the first (the original or the
// retransmission, it cannot say), then all the rest and the new ones.
func TestFRTOUndoesSpuriousTimeout(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(noTSPeer, 100*time.Millisecond)
	o := c.writeInitialWindow(20)
	e := c.ep.(*endpoint)
	before := e.TCPInfo()
	// First the tail-loss probe, new data; then the RTO.
	probe := dataOuts(h.advanceUntilOut(time.Second))
	if len(probe) != 1 || probe[0].seq != segEnd(o[9]) {
		t.Fatalf("the first timer sent %s; want a loss probe of new data", outsString(probe))
	}
	rto := dataOuts(h.advanceUntilOut(2 * time.Second))
	if len(rto) != 1 || rto[0].seq != o[0].seq {
		t.Fatalf("the RTO sent %s; want the head alone", outsString(rto))
	}
	if in := e.TCPInfo(); in.CAState != "Loss" || in.SndCwnd != 1 {
		t.Fatalf("after the RTO: %s with cwnd %d; want Loss, cwnd 1", in.CAState, in.SndCwnd)
	}
	c.ackUpTo(segEnd(o[0]))
	next := dataOuts(h.take())
	if len(next) == 0 || next[0].seq != segEnd(probe[0]) {
		t.Fatalf("after the first ACK past the RTO: %s; want new data from %d first, not a retransmission", outsString(next), segEnd(probe[0]))
	}
	for _, s := range next {
		if s.seq.LessThan(segEnd(probe[0])) {
			t.Errorf("after the first ACK the host sent %v again", s)
		}
	}
	h.advance(10 * time.Millisecond)
	c.ackUpTo(segEnd(next[len(next)-1]))
	if in := e.TCPInfo(); in.CAState != "Open" || in.SndCwnd < before.SndCwnd || in.SndSsthresh != before.SndSsthresh {
		t.Errorf("after the ACK of data never retransmitted: %s with cwnd %d, ssthresh %d; want the timeout undone: Open, cwnd at least %d, ssthresh %d", in.CAState, in.SndCwnd, in.SndSsthresh, before.SndCwnd, before.SndSsthresh)
	}
}

// A fast retransmission that a D-SACK shows needless is undone
// (tcp_try_undo_dsack: every retransmission of the episode reported
// twice, RFC 2883): the window and ssthresh of before come back and the
// connection leaves recovery. The initial window's first segment was
// only reordered behind three others: the peer SACKs them, then ACKs
// all four when the first arrives, then reports the retransmission as a
// duplicate. Without the D-SACK block, the same ACK undoes nothing.
func TestDSACKUndoesFastRetransmit(t *testing.T) {
	for _, dsack := range []bool{true, false} {
		h := newHarness(t, Options{})
		c := h.acceptAfter(noTSPeer, 100*time.Millisecond)
		o := c.writeInitialWindow(20)
		e := c.ep.(*endpoint)
		before := e.TCPInfo()
		c.saw(o...)
		c.rcvNxt = o[0].seq
		h.advance(100 * time.Millisecond)
		for k := 1; k <= 3; k++ {
			c.send(header.TCPFlagAck, nil, optSACK(o[1].seq, segEnd(o[k])))
			r := dataOuts(h.take())
			if k == 3 && (len(r) == 0 || r[0].seq != o[0].seq) {
				t.Fatalf("the third SACK: %s; want the first segment again", outsString(r))
			}
			h.advance(2 * time.Millisecond)
		}
		if in := e.TCPInfo(); in.CAState != "Recovery" || in.SndSsthresh != 7 {
			t.Fatalf("after three SACKs: %s with ssthresh %d; want Recovery, 7", in.CAState, in.SndSsthresh)
		}
		c.ackUpTo(segEnd(o[3])) // the original first segment arrives
		h.advance(2 * time.Millisecond)
		if dsack {
			c.send(header.TCPFlagAck, nil, optSACK(o[0].seq, segEnd(o[0]))) // and then the retransmission
		} else {
			c.send(header.TCPFlagAck, nil)
		}
		in := e.TCPInfo()
		undone := in.CAState == "Open" && in.SndCwnd >= before.SndCwnd && in.SndSsthresh == before.SndSsthresh
		if undone != dsack {
			t.Errorf("D-SACK %v: %s with cwnd %d, ssthresh %d; want undone (Open, cwnd at least %d, ssthresh %d): %v", dsack, in.CAState, in.SndCwnd, in.SndSsthresh, before.SndCwnd, before.SndSsthresh, dsack)
		}
	}
}

// The largest window the peer offered (max_window, which bounds the size
// goal, tcp_bound_to_half_wnd, and which D-SACKs are believed) starts at
// the handshake: an active open takes the SYN-ACK's window, which is
// never scaled (tcp_ack_update_window), a passive open the scaled window
// of the ACK that completes it (tcp_create_openreq_child).
func TestMaxWindowFromTheHandshake(t *testing.T) {
	h := newHarness(t, Options{})
	acc, _ := h.accept(linuxPeer)
	dia, _ := h.dial(linuxPeer)
	for _, c := range []struct {
		name string
		c    *conn
		want uint32
	}{
		{"passive open", acc, uint32(linuxPeer.window) << linuxPeer.ws},
		{"active open", dia, uint32(linuxPeer.window)},
	} {
		e := c.c.ep.(*endpoint)
		e.mu.Lock()
		wnd, maxWnd := e.snd.wnd, e.snd.maxWnd
		e.mu.Unlock()
		if wnd != c.want || maxWnd != c.want {
			t.Errorf("%s: snd_wnd %d, max_window %d; want both %d", c.name, wnd, maxWnd, c.want)
		}
	}
}

// An RTO ends the tail-loss probe's episode (tcp_enter_loss clears
// tlp_high_seq): the next flight whose tail is lost is probed again.
// The initial window goes unanswered; its probe retransmits the last
// segment (nothing new to send), then the RTO the head. The peer ACKs
// everything, the host sends a second flight, and the peer again answers
// nothing: the first timer must send that flight's probe, leaving the
// connection Open, where a host that still counted the first episode
// open would skip the probe and wait for the RTO, and enter Loss.
func TestRTOEndsTheProbeEpisode(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	o := c.writeInitialWindow(10)
	c.saw(o...)
	e := c.ep.(*endpoint)
	probe := dataOuts(h.advanceUntilOut(time.Second))
	if len(probe) != 1 || probe[0].seq != o[9].seq {
		t.Fatalf("the first timer sent %s; want a probe of the last segment, %d", outsString(probe), o[9].seq)
	}
	rto := dataOuts(h.advanceUntilOut(2 * time.Second))
	if len(rto) != 1 || rto[0].seq != o[0].seq {
		t.Fatalf("the second timer sent %s; want the RTO's retransmission of the head, %d", outsString(rto), o[0].seq)
	}
	c.saw(probe...)
	c.saw(rto...)
	h.advance(100 * time.Millisecond)
	c.ackUpTo(segEnd(o[9]))
	h.advance(100 * time.Millisecond)
	h.take()
	if in := e.TCPInfo(); in.Unacked != 0 || in.CAState != "Open" {
		t.Fatalf("after the ACK of everything: %s with %d unacknowledged; want Open with none", in.CAState, in.Unacked)
	}
	c.write(fill(2 * 1448))
	flight := dataOuts(h.take())
	if len(flight) == 0 {
		t.Fatal("the second write sent nothing")
	}
	c.saw(flight...)
	next := dataOuts(h.advanceUntilOut(2 * time.Second))
	last := flight[len(flight)-1]
	if len(next) != 1 || next[0].seq != last.seq {
		t.Fatalf("the second flight %s: the first timer sent %s; want a probe of its last segment, %d", outsString(flight), outsString(next), last.seq)
	}
	if in := e.TCPInfo(); in.CAState != "Open" {
		t.Errorf("after the second flight's probe: %s; want Open (a probe, not an RTO)", in.CAState)
	}
}

// A tail-loss probe's retransmission is not the episode's first
// retransmission: tcp_send_loss_probe sends it with __tcp_retransmit_skb,
// which sets neither retrans_stamp nor undo_retrans (tcp_retransmit_skb
// does). The last segment alone is lost; the probe repairs it, but the
// peer's ACK of the probe comes after the RTO has retransmitted that
// segment again. The ACK echoes the probe's timestamp, sent before the
// RTO's retransmission, so the timeout was spurious (tcp_packet_delayed
// against the RTO's stamp) and is undone: a host that stamped the
// episode at the probe would keep the timeout's reduction.
func TestProbeDoesNotStampTheEpisode(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	o := c.writeInitialWindow(10)
	e := c.ep.(*endpoint)
	before := e.TCPInfo()
	c.saw(o[:9]...)
	h.advance(100 * time.Millisecond)
	c.ackUpTo(segEnd(o[8]))
	probe := dataOuts(h.advanceUntilOut(time.Second))
	if len(probe) != 1 || probe[0].seq != o[9].seq {
		t.Fatalf("the first timer sent %s; want a probe of the last segment, %d", outsString(probe), o[9].seq)
	}
	rto := dataOuts(h.advanceUntilOut(2 * time.Second))
	if len(rto) != 1 || rto[0].seq != o[9].seq {
		t.Fatalf("the second timer sent %s; want the RTO's retransmission of %d", outsString(rto), o[9].seq)
	}
	if in := e.TCPInfo(); in.CAState != "Loss" {
		t.Fatalf("after the RTO: %s; want Loss", in.CAState)
	}
	c.saw(probe...)
	c.ackUpTo(segEnd(o[9]))
	if in := e.TCPInfo(); in.CAState != "Open" || in.SndCwnd < before.SndCwnd || in.SndSsthresh != before.SndSsthresh {
		t.Errorf("after the ACK echoing the probe: %s with cwnd %d, ssthresh %d; want the timeout undone: Open, cwnd at least %d, ssthresh %d", in.CAState, in.SndCwnd, in.SndSsthresh, before.SndCwnd, before.SndSsthresh)
	}
}

// tcp_packet_delayed with no retransmission stamped: nothing was
// retransmitted yet, so an ACK of the data shows it delayed, not lost,
// and the reduction may be undone; but not where the stamp is cleared
// after retransmissions: without SACK at high_seq, or in SYN-SENT. With
// a stamp, the echoed timestamp decides.
func TestPacketDelayedWithoutStamp(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	c.writeInitialWindow(10)
	e := c.ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	s := &e.snd
	s.highSeq = s.una.Add(1)
	for _, c := range []struct {
		name         string
		stamp, ecr   uint32
		sack, atHigh bool
		state        state
		want         bool
	}{
		{"no stamp, SACK", 0, 0, true, false, stateEstablished, true},
		{"no stamp, SACK, at high_seq", 0, 0, true, true, stateEstablished, true},
		{"no stamp, no SACK, below high_seq", 0, 0, false, false, stateEstablished, true},
		{"no stamp, no SACK, at high_seq", 0, 0, false, true, stateEstablished, false},
		{"no stamp, SYN-SENT", 0, 0, true, false, stateSynSent, false},
		{"stamp, echo before it", 1000, 999, true, false, stateEstablished, true},
		{"stamp, echo of it", 1000, 1000, true, false, stateEstablished, false},
	} {
		s.retransStamp, e.rcv.lastTSEcr, e.sackOK, e.state = c.stamp, c.ecr, c.sack, c.state
		s.highSeq = s.una.Add(1)
		if c.atHigh {
			s.highSeq = s.una
		}
		if got := s.packetDelayed(); got != c.want {
			t.Errorf("%s: packetDelayed %v; want %v", c.name, got, c.want)
		}
	}
	e.state = stateEstablished
}
