package tcp

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// pshAt lists which of the segments carry PSH, counted from 1.
func pshAt(o []out) []int {
	var at []int
	for i, s := range o {
		if s.has(header.TCPFlagPsh) {
			at = append(at, i+1)
		}
	}
	return at
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Linux sends its segments as GSO packets (tcp_write_xmit): each of
// min(tcp_cwnd_test's quota, tcp_tso_segs) segments, where the quota is at
// most half the congestion window and tcp_tso_segs (tcp_tso_autosize) is
// about a millisecond at the pacing rate, at least tcp_min_tso_segs, 2.
// __tcp_transmit_skb sets PSH on every packet of more than one segment,
// and GSO leaves it on the packet's last segment: a Linux receiver sees
// PSH at the end of each packet (and, with a full segment, marks its ACK
// pushed: tcp_measure_rcv_mss). At 100 ms the pacing rate of ten
// segments, twice the window a round trip, is 282 bytes a millisecond:
// packets of two segments.
func TestGSOPacketsEndWithPSH(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	o := c.writeInitialWindow(20)
	if got, want := pshAt(o), []int{2, 4, 6, 8, 10}; !equalInts(got, want) {
		t.Errorf("initial window: PSH on segments %v; want %v (five GSO packets of two):\n%s", got, want, outsString(o))
	}
	c.saw(o...)

	// An ACK of three: slow start makes the window 13 with 7 in flight;
	// the quota, min(13/2, 13-7), is 6: three packets of two.
	h.advance(100 * time.Millisecond)
	c.ackUpTo(o[3].seq)
	r := dataOuts(h.take())
	if len(r) != 6 {
		t.Fatalf("after an ACK of three segments in slow start: %d segments; want 6:\n%s", len(r), outsString(r))
	}
	if got, want := pshAt(r), []int{2, 4, 6}; !equalInts(got, want) {
		t.Errorf("after an ACK of three: PSH on segments %v; want %v:\n%s", got, want, outsString(r))
	}

	// At 1 ms the rate is 28281 bytes a millisecond, and a minimum RTT of
	// 1000 µs adds half the GSO limit (65536 >> (1000 >> tcp_tso_rtt_log
	// 9)): 42 segments; the quota, half the window, makes packets of 5.
	h = newHarness(t, Options{})
	c = h.acceptAfter(linuxPeer, time.Millisecond)
	o = c.writeInitialWindow(20)
	if got, want := pshAt(o), []int{5, 10}; !equalInts(got, want) {
		t.Errorf("initial window at 1 ms: PSH on segments %v; want %v (two GSO packets of five):\n%s", got, want, outsString(o))
	}
}

// tcp_tso_autosize's figures: about a millisecond of the pacing rate
// (sk_pacing_rate >> 10) in segments, plus a share of the GSO limit on a
// path whose minimum RTT is under 32 steps of 512 µs, capped at the GSO
// limit, never under tcp_min_tso_segs; the GSO limit before any rate.
func TestTSOAutosize(t *testing.T) {
	for _, tc := range []struct {
		rate   uint64 // bytes per second
		minRTT time.Duration
		want   int
	}{
		{0, 0, 45},                               // ~0UL: 65536 / 1448
		{289600, 100 * time.Millisecond, 2},      // 282 bytes: tcp_min_tso_segs
		{12_500_000, 20 * time.Millisecond, 8},   // 12207 bytes; 20000 >> 9 = 39: no share
		{12_500_000, 10 * time.Millisecond, 8},   // 10000 >> 9 = 19: 65536 >> 19 = 0
		{12_500_000, 5 * time.Millisecond, 8},    // 5000 >> 9 = 9: + 128 bytes
		{1_250_000, 2 * time.Millisecond, 6},     // 1220 bytes + 65536 >> 3
		{1_250_000, 400 * time.Microsecond, 45},  // + 65536 >> 0: capped
		{125_000_000, 50 * time.Millisecond, 45}, // 122070 bytes: capped
	} {
		h := newHarness(t, Options{})
		c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
		e := c.ep.(*endpoint)
		e.mu.Lock()
		e.snd.cc.pacingRate = tc.rate
		e.snd.minRTT = minRTT{}
		if tc.minRTT > 0 {
			e.snd.minRTT.update(h.now(), tc.minRTT)
		}
		got := e.snd.tsoSegs(1448)
		e.mu.Unlock()
		if got != tc.want {
			t.Errorf("rate %d B/s, min RTT %v: %d segments a GSO packet; want %d", tc.rate, tc.minRTT, got, tc.want)
		}
	}
}

// TSO deferral (tcp_tso_should_defer): with a buffer of more than a
// segment to send, a sender that sent within the last millisecond waits
// for more room than an ACK gives, up to a GSO packet or a third of the
// window, when the oldest segment in flight left long enough ago (half
// an RTT) for an ACK to come soon; more than a millisecond after its
// last send it sends what it has room for. On a 2 ms path a GSO packet
// is 15 segments (tcp_tso_autosize: 9 of pacing, 6 of the small-RTT
// share).
func TestTSODefersSmallRoom(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 2*time.Millisecond)
	o := c.writeInitialWindow(50)
	c.saw(o...)
	h.advance(2 * time.Millisecond)
	// Slow start: each segment ACKed lets two out (cwnd 11, then 12).
	c.ackUpTo(o[1].seq)
	if r := dataOuts(h.take()); len(r) != 2 {
		t.Fatalf("first ACK, nothing sent for 2 ms: %s; want 2 segments at once", outsString(r))
	}
	c.ackUpTo(o[2].seq)
	if r := dataOuts(h.take()); len(r) != 0 {
		t.Fatalf("second ACK, at the instant of the last send: %s; want none (2 segments of room, under a third of cwnd 12)", outsString(r))
	}
	h.advance(2 * time.Millisecond)
	c.ackUpTo(o[3].seq)
	if r := dataOuts(h.take()); len(r) != 4 {
		t.Fatalf("third ACK, 2 ms after the last send: %s; want the 4 segments of room", outsString(r))
	}
}

// Deferral waits only for an ACK due within min(1 ms, srtt/2): the next
// ACK is due an srtt after the oldest segment in flight left (Linux
// 6.18, "tcp: fix tcp_tso_should_defer() vs large RTT"). On a 200 ms path
// in congestion avoidance, an ACK that leaves room for one segment, at
// the instant of the last send, 150 ms after the flight left (its ACKs
// 50 ms away), lets that segment out; before 6.18 it waited for the next
// ACK (the oldest segment had left over half an RTT before), then went
// out in a burst with that ACK's.
func TestTSOSendsWhenTheNextACKIsFar(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 200*time.Millisecond)
	e := c.ep.(*endpoint)
	o := c.writeInitialWindow(50)
	c.saw(o...)
	e.mu.Lock()
	e.snd.cc.ssthresh = e.snd.cc.cwnd // congestion avoidance
	e.mu.Unlock()
	h.advance(200 * time.Millisecond)
	c.ackUpTo(o[9].seq.Add(1448))
	f := dataOuts(h.take())
	if len(f) < 10 {
		t.Fatalf("the whole window ACKed: %s; want a window of segments", outsString(f))
	}
	c.saw(f...)
	h.advance(150 * time.Millisecond)
	c.ackUpTo(f[1].seq.Add(1448))
	if r := dataOuts(h.take()); len(r) != 2 {
		t.Fatalf("two segments ACKed 150 ms after the last send: %s; want 2 segments", outsString(r))
	}
	c.ackUpTo(f[2].seq.Add(1448))
	if r := dataOuts(h.take()); len(r) != 1 {
		t.Fatalf("one more ACKed at the same instant, the next ACK 50 ms away: %s; want the segment of room", outsString(r))
	}
}

// The write queue's model keeps one array however long the transfer: a
// bulk sender's queue never empties, and the buffers sent in full are
// dropped from its front.
func TestWriteQueueReusesItsArray(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 10*time.Millisecond)
	e := c.ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	s := &e.snd
	goal := seqnum.Size(s.sizeGoal(int(s.cc.mss)))
	base := s.nxt
	for i := range 10000 {
		from := base.Add(seqnum.Size(i) * goal)
		s.queueWrite(from, from.Add(goal))
		if i >= 3 {
			s.nxt = base.Add(seqnum.Size(i-2) * goal) // three buffers unsent, always
		}
	}
	end, last, ok := s.wqHead()
	if want := base.Add(9998 * goal); !ok || last || end != want {
		t.Fatalf("head buffer ends at %d (last %v, ok %v); want %d", end, last, ok, want)
	}
	if n := len(s.wq) - s.wqh; n != 3 || cap(s.wq) > 16 {
		t.Fatalf("%d buffers in an array of %d; want 3 in a few", n, cap(s.wq))
	}
}
