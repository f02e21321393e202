package link

import (
	"testing"
	"time"
)

// arrivals feeds w segments of mss bytes at a steady rate: per RTT, n
// segments evenly spread; it returns how many made the window grow.
func feed(w *window, start time.Duration, rtt time.Duration, n, mss int) (grew int, end time.Duration) {
	gap := rtt / time.Duration(n)
	t := start
	for range n {
		if w.grew(mss, mss, rtt, t) {
			grew++
		}
		t += gap
	}
	return grew, t
}

// In slow start the receive buffer's autotuning keeps the window clamp
// ahead of rcv_ssthresh, so most segments make the window grow (Linux
// ACKs each of those at once): the clamp grows by about three times what
// the last RTT brought, rcv_ssthresh by two segments' worth per segment.
// At a steady rate rcv_ssthresh catches up within a few RTTs and the
// growth, and the quick ACKs, stop.
func TestWindowGrowsThroughSlowStartThenSettles(t *testing.T) {
	const (
		mss = 1448
		rtt = 50 * time.Millisecond
	)
	var w window
	now := time.Duration(0)
	// The first segment finds a little room under the initial clamp
	// (64 KiB × ½ of 128 KiB, less the initial window of 45 segments).
	if !w.grew(mss, mss, rtt, now) {
		t.Fatal("the first segment did not grow the window")
	}
	if w.rcvSsthresh != w.clamp || w.clamp != winFromSpace(rmemDefault) {
		t.Fatalf("after the first segment: rcv_ssthresh %d, clamp %d; want both %d", w.rcvSsthresh, w.clamp, winFromSpace(rmemDefault))
	}
	now += rtt
	for k, n := range []int{20, 40, 80, 160} { // cwnd doubling per RTT
		g, end := feed(&w, now, rtt, n, mss)
		now = end
		if k > 0 && 4*g < 3*n {
			t.Errorf("slow-start round %d: %d of %d segments grew the window; want three quarters or more", k, g, n)
		}
	}
	// A steady rate: the clamp stops moving and rcv_ssthresh reaches it.
	steady := 0
	for range 10 {
		g, end := feed(&w, now, rtt, 160, mss)
		now = end
		steady = g
	}
	if steady != 0 || w.rcvSsthresh != w.clamp {
		t.Errorf("at a steady rate: %d segments still grow the window in the last RTT, rcv_ssthresh %d, clamp %d; want none and equal", steady, w.rcvSsthresh, w.clamp)
	}
	if w.clamp > winFromSpace(rmemMax) {
		t.Errorf("clamp %d above the ceiling %d", w.clamp, winFromSpace(rmemMax))
	}
}

// The receiver's RTT estimate takes a lower sample at once and moves an
// eighth of the way towards a higher one (tcp_rcv_rtt_update).
func TestWindowRTTEstimate(t *testing.T) {
	var w window
	w.sampleRTT(80 * time.Millisecond)
	w.sampleRTT(40 * time.Millisecond)
	w.sampleRTT(120 * time.Millisecond)
	if want := 40*time.Millisecond + 10*time.Millisecond; w.rtt != want {
		t.Errorf("estimate %v; want %v", w.rtt, want)
	}
}
