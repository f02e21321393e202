package tcp

import (
	"slices"
	"testing"
	"time"
)

// growWindow runs rounds of 100 ms in which the peer acknowledges all
// the host sent, the host sending only what rounds-1 rounds of slow
// start from the initial window let out (10, 20, 40, ... segments), and
// returns once all is acknowledged: the window is then 10 << rounds.
func growWindow(t *testing.T, c *conn, rounds int) {
	t.Helper()
	h := c.h
	total := 0
	for r := range rounds {
		total += 10 << r
	}
	rest := c.writeAll(fill(total * 1448))
	for range rounds {
		o := h.take()
		c.saw(o...)
		h.advance(100 * time.Millisecond)
		c.ackUpTo(c.seen)
		if len(rest) > 0 {
			rest = c.writeAll(rest)
		}
	}
	c.saw(h.take()...)
	if in := c.ep.(*endpoint).TCPInfo(); in.Unacked != 0 || in.SndCwnd != 10<<rounds || len(rest) > 0 {
		t.Fatalf("after %d rounds of slow start: cwnd %d, %d segments unacknowledged, %d bytes unwritten; want cwnd %d, all sent and acknowledged", rounds, in.SndCwnd, in.Unacked, len(rest), 10<<rounds)
	}
}

// A sender idle for longer than an RTO starts again from a window
// halved for each RTO of the idle time past the first, down to the
// initial window (tcp_slow_start_after_idle_check, tcp_cwnd_restart;
// RFC 5681 section 4.1); idle for less than an RTO, it keeps its window.
// Idle counts from the last data sent (lsndtime), not from its ACK. The
// window shows as the data the host sends at once when it writes again.
func TestRestartAfterIdle(t *testing.T) {
	for _, c := range []struct {
		idle float64 // in RTOs
		want int     // segments sent at once
	}{{0.9, 40}, {1.5, 20}, {2.5, 10}, {6, 10}} {
		h := newHarness(t, Options{})
		cn := h.acceptAfter(linuxPeer, 100*time.Millisecond)
		growWindow(t, cn, 2)
		rto := cn.ep.(*endpoint).TCPInfo().RTO
		// growWindow's last send was one round, 100 ms, ago.
		h.advance(time.Duration(c.idle*float64(rto)) - 100*time.Millisecond)
		cn.writeAll(fill(60 * 1448))
		if got := len(dataOuts(h.take())); got != c.want {
			t.Errorf("idle %.1f RTOs of %v with a window of 40: the host sent %d segments at once; want %d", c.idle, rto, got, c.want)
		}
	}
}

// A sender that does not fill its window for an RTO has the window cut
// to the mean of it and what it used, at least the initial window
// (tcp_cwnd_validate, tcp_cwnd_application_limited; RFC 7661). The RTO
// counts from the last ACK that could raise the window: tcp_cong_avoid
// stamps snd_cwnd_stamp on each, whether or not the window grew. So an
// application that writes two segments per 100 ms round trip, each
// acknowledged, keeps its window of 40; when the ACKs stop while it goes
// on writing, its send 300 ms (the RTO) after the last ACK cuts the
// window to (40 + max(8 used, 10)) / 2 = 25, before the retransmission
// timer (armed by the first unacknowledged send) fires.
func TestCwndValidationApplicationLimited(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	growWindow(t, c, 2)
	e := c.ep.(*endpoint)
	if rto := e.TCPInfo().RTO; rto != 300*time.Millisecond {
		t.Fatalf("RTO %v; the test needs 300 ms", rto)
	}
	write := func() uint32 {
		t.Helper()
		c.writeAll(fill(2 * 1448))
		o := dataOuts(h.take())
		if len(o) != 2 {
			t.Fatalf("at %v the host sent %d segments; want the 2 written", h.now(), len(o))
		}
		c.saw(o...)
		return e.TCPInfo().SndCwnd
	}
	var got []uint32
	for range 6 {
		got = append(got, write())
		h.advance(100 * time.Millisecond)
		c.ackUpTo(c.seen)
	}
	if want := []uint32{40, 40, 40, 40, 40, 40}; !slices.Equal(got, want) {
		t.Errorf("acknowledged every round, the window after each send: %v; want %v", got, want)
	}
	got = got[:0]
	for _, wait := range []time.Duration{150, 100, 49, 1} {
		h.advance(wait * time.Millisecond)
		got = append(got, write())
	}
	if want := []uint32{40, 40, 40, 25}; !slices.Equal(got, want) {
		t.Errorf("with no ACK since, the window after the sends 150, 250, 299 and 300 ms after the last ACK: %v; want %v", got, want)
	}
}
