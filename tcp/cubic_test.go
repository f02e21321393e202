package tcp

import (
	"math"
	"math/bits"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// ackClock drives one congestion control value the way a connection with a
// full pipe would: an ACK for one packet every rtt/cwnd, each followed by a
// new packet, pktsAcked before congAvoid for every ACK as tcp_ack calls
// them (tcp_clean_rtx_queue, then tcp_cong_control).
type ackClock struct {
	cc  congestion
	c   ccConn
	rtt time.Duration
}

func newAckClock(t *testing.T, name string, hz int, rtt time.Duration) *ackClock {
	t.Helper()
	cc, err := newCongestion(name)
	if err != nil {
		t.Fatal(err)
	}
	a := &ackClock{cc: cc, c: newTestConn(hz), rtt: rtt}
	cc.init(&a.c)
	return a
}

// ack delivers one ACK for one packet, rtt after its transmission.
func (a *ackClock) ack() {
	a.c.now += a.rtt / time.Duration(a.c.cwnd)
	a.c.sndUna++
	a.c.srtt, a.c.minRTT = a.rtt, a.rtt
	a.cc.pktsAcked(&a.c, 1, a.rtt)
	a.cc.congAvoid(&a.c, a.c.sndUna, 1)
	a.c.sndNxt = a.c.sndUna.Add(seqnum.Size(a.c.cwnd))
	a.c.inFlight = a.c.cwnd
	a.c.lsndtime = a.c.now
}

// run acks until d has passed.
func (a *ackClock) run(d time.Duration) {
	end := a.c.now + d
	for a.c.now < end {
		a.ack()
	}
}

// reduce is a loss at the current cwnd as the connection handles it:
// ssthresh from the algorithm, the window cut to it when recovery ends
// (tcp_end_cwnd_reduction), back to Open.
func (a *ackClock) reduce() {
	a.cc.setState(&a.c, caRecovery)
	a.c.ssthresh = a.cc.ssthresh(&a.c)
	a.c.cwnd = a.c.ssthresh
	a.c.cwndCnt = 0
	a.cc.cwndEvent(&a.c, caEventCompleteCWR)
	a.cc.setState(&a.c, caOpen)
}

// RFC 9438 §4.2 with β = 0.7, C = 0.4.
func cubicW(wmax, t float64) float64 {
	k := math.Cbrt(wmax * (1 - 0.7) / 0.4)
	return 0.4*math.Pow(t-k, 3) + wmax
}

// bictcp_update (RFC 9438 §4.2): after a loss at W_max = 1000 packets the
// window follows W(t) = C(t-K)³ + W_max, K = ∛(W_max(1-β)/C) ≈ 9.09 s:
// concave up to W_max, a plateau around K, convex beyond. RTT 100 ms keeps
// the Reno estimate (≈ 700 + 5 packets/s) below the cubic throughout.
func TestCubicWindowCurve(t *testing.T) {
	const wmax = 1000
	k := math.Cbrt(wmax * (1 - 0.7) / 0.4)
	for _, hz := range []int{100, 250, 1000} {
		a := newAckClock(t, "cubic", hz, 100*time.Millisecond)
		a.c.cwnd = wmax
		a.reduce()
		if a.c.cwnd != 700 {
			t.Fatalf("HZ %d: cwnd after the loss at 1000 = %d, want 1000·717/1024 = 700", hz, a.c.cwnd)
		}
		start := a.c.now
		at := func(s float64) uint32 {
			a.run(start + time.Duration(s*float64(time.Second)) - a.c.now)
			return a.c.cwnd
		}
		// Concave: the increase per second falls on the way to W_max.
		prev, prevGain := uint32(700), uint32(math.MaxUint32)
		for s := 1.0; s <= 5; s++ {
			got := at(s)
			if want := cubicW(wmax, s); math.Abs(float64(got)-want) > 2 {
				t.Errorf("HZ %d: cwnd %.0f s after the loss = %d, want W(t) = %.1f ± 2", hz, s, got, want)
			}
			if gain := got - prev; gain >= prevGain {
				t.Errorf("HZ %d: +%d in second %.0f after +%d the second before: not concave", hz, gain, s, prevGain)
			}
			prev, prevGain = got, got-prev
		}
		// A plateau: within a packet or two of W_max from K-1 to K+1 s.
		for _, s := range []float64{k - 1, k - 0.5, k, k + 0.5, k + 1} {
			got := at(s)
			if want := cubicW(wmax, s); math.Abs(float64(got)-want) > 2 || got+2 < wmax || got > wmax+2 {
				t.Errorf("HZ %d: cwnd at K%+.1f s = %d, want W(t) = %.1f, the plateau at %d ± 2", hz, s-k, got, want, wmax)
			}
		}
		// Convex: the increase per second grows beyond K.
		prev, prevGain = at(k+1), 0
		for s := k + 2; s <= k+6; s++ {
			got := at(s)
			if want := cubicW(wmax, s); math.Abs(float64(got)-want) > 2 {
				t.Errorf("HZ %d: cwnd at K+%.0f s = %d, want W(t) = %.1f ± 2", hz, s-k, got, want)
			}
			if gain := got - prev; gain <= prevGain {
				t.Errorf("HZ %d: +%d in the second to K+%.0f after +%d the second before: not convex", hz, gain, s-k, prevGain)
			}
			prev, prevGain = got, got-prev
		}
	}
}

// bictcp_update's tcp_friendliness (RFC 9438 §4.3): with a small RTT and a
// small window Reno would outgrow the cubic, so CUBIC grows at least like
// the AIMD estimate W_est += α·acked/cwnd, α = 3(1-β)/(1+β). It may trail
// W_est by what its own rules delay: cnt is refreshed at most every HZ/32
// jiffies while cwnd stands still, and cwnd takes one RTT to follow a step of
// Linux's estimate; so by α·(1 + (HZ/32 jiffies)/RTT) packets, plus one for
// whole packets.
func TestCubicRenoFriendly(t *testing.T) {
	const alpha = 3 * (1 - 0.7) / (1 + 0.7)
	const rtt = 10 * time.Millisecond
	for _, hz := range []int{100, 250, 1000} {
		a := newAckClock(t, "cubic", hz, rtt)
		a.c.cwnd = 20
		a.reduce()
		limit := time.Duration(hz/32) * time.Second / time.Duration(hz)
		lag := alpha*(1+float64(limit)/float64(rtt)) + 1
		west := float64(a.c.cwnd)
		start := a.c.now
		for a.c.now-start < 2*time.Second {
			cwnd := a.c.cwnd
			a.ack()
			west += alpha / float64(cwnd)
			if float64(a.c.cwnd) < west-lag {
				t.Fatalf("HZ %d, %v after the loss at 20: cwnd %d, below the Reno estimate %.1f by more than %.1f",
					hz, a.c.now-start, a.c.cwnd, west, lag)
			}
		}
		// The cubic alone would be far below: the test is in the Reno-friendly region.
		if cub := cubicW(20, (a.c.now - start).Seconds()); cub > west/2 {
			t.Fatalf("the cubic alone (%.1f) is near the Reno estimate (%.1f); the test no longer tells them apart", cub, west)
		}
	}
}

// cubictcp_cwnd_event, CA_EVENT_TX_START: an idle period shifts the epoch
// by its length, so the window resumes the cubic where it paused instead of
// jumping ahead by the idle time.
func TestCubicTxStartShiftsEpoch(t *testing.T) {
	const wmax = 1000
	a := newAckClock(t, "cubic", 250, 100*time.Millisecond)
	a.c.cwnd = wmax
	a.reduce()
	start := a.c.now
	a.run(3 * time.Second)
	before := a.c.cwnd
	a.run(a.rtt)
	lastRTT := a.c.cwnd - before // growth in the last RTT before the pause

	ca := a.cc.(*cubic)
	epoch := ca.epochStart
	const idle = 5 * time.Second
	a.c.now += idle // nothing sent or acked; lsndtime stays at the last transmit
	a.c.inFlight = 0
	a.cc.cwndEvent(&a.c, caEventTxStart)
	hz := hzOf(&a.c)
	shift := jiffiesAt(a.c.now, hz) - jiffiesAt(a.c.lsndtime, hz)
	if ca.epochStart != epoch+shift {
		t.Fatalf("epoch start after %v idle = %d, want %d + %d jiffies", idle, ca.epochStart, epoch, shift)
	}

	paused := a.c.cwnd
	a.run(a.rtt)
	if grew := a.c.cwnd - paused; grew > lastRTT+1 {
		t.Errorf("first RTT after %v idle: cwnd %d → %d (+%d), want no more than the +%d of the RTT before", idle, paused, a.c.cwnd, grew, lastRTT)
	}
	// Later on the window is on the curve delayed by the idle time.
	a.run(2 * time.Second)
	s := (a.c.now - start - idle).Seconds()
	if want := cubicW(wmax, s); math.Abs(float64(a.c.cwnd)-want) > 2 {
		t.Errorf("%.1f s of sending after the pause: cwnd %d, want W(%.1f) = %.1f ± 2", s, a.c.cwnd, s, want)
	}

	// The other events leave the epoch alone.
	epoch = ca.epochStart
	a.c.now += idle
	for _, ev := range []caEvent{caEventCwndRestart, caEventCompleteCWR, caEventLoss} {
		a.cc.cwndEvent(&a.c, ev)
		if ca.epochStart != epoch {
			t.Errorf("event %d moved the epoch start from %d to %d", ev, epoch, ca.epochStart)
		}
	}
}

// bictcp_update: while cwnd stands still the cubic is recomputed at most
// every HZ/32 jiffies, and never twice in one jiffy; the Reno estimate
// counts every ack regardless.
func TestCubicUpdateRateLimit(t *testing.T) {
	a := newAckClock(t, "cubic", 250, 100*time.Millisecond)
	a.c.cwnd = 1000
	a.reduce()
	a.run(time.Second)
	ca := a.cc.(*cubic)
	jiffy := time.Second / 250

	a.c.now += 100 * time.Millisecond // past any limit: recomputes
	ca.update(&a.c, a.c.cwnd, 1)
	last, acks := ca.lastTime, ca.ackCnt
	a.c.now += 250 / 32 * jiffy // HZ/32 = 7 jiffies: not yet
	ca.update(&a.c, a.c.cwnd, 1)
	if ca.lastTime != last || ca.ackCnt != acks+1 {
		t.Fatalf("HZ/32 jiffies later, same cwnd: last_time %d → %d, ack_cnt %d → %d; want no recomputation, one ack counted",
			last, ca.lastTime, acks, ca.ackCnt)
	}
	a.c.now += jiffy
	ca.update(&a.c, a.c.cwnd, 1)
	if ca.lastTime == last {
		t.Fatalf("HZ/32+1 jiffies later: last_time still %d, want a recomputation", last)
	}

	last = ca.lastTime
	ca.update(&a.c, a.c.cwnd+1, 1) // cwnd changed, same jiffy
	if ca.lastTime != last || ca.lastCwnd != a.c.cwnd {
		t.Fatalf("same jiffy, new cwnd: recomputed (last_cwnd %d, want %d)", ca.lastCwnd, a.c.cwnd)
	}
}

// bictcp_update: before any reduction (W_max unknown, e.g. after HyStart
// ended slow start) cnt is at most 20, so cwnd grows by at least 5% per RTT.
func TestCubicGrowthWithoutWmax(t *testing.T) {
	a := newAckClock(t, "cubic", 250, 100*time.Millisecond)
	a.c.cwnd, a.c.ssthresh = 100, 100 // slow start's end, no loss yet
	for rtt := 1; rtt <= 10; rtt++ {
		before := a.c.cwnd
		a.run(a.rtt)
		if want := before + before/20 - 1; a.c.cwnd < want {
			t.Fatalf("RTT %d without W_max: cwnd %d → %d, want at least +5%% (%d)", rtt, before, a.c.cwnd, want)
		}
	}
}

// cubictcp_acked: delay_min is the smallest RTT sample, but samples in the
// first second of an epoch (right after a reduction) and ACKs without a
// sample are ignored.
func TestCubicDelaySamples(t *testing.T) {
	a := newAckClock(t, "cubic", 250, 100*time.Millisecond)
	a.c.cwnd = 1000
	a.reduce()
	a.ack() // delay_min 100 ms, and the epoch begins
	ca := a.cc.(*cubic)
	epoch := a.c.now
	if ca.delayMin != 100000 || ca.epochStart == 0 {
		t.Fatalf("delay_min %d µs, epoch %d; want 100000 and an epoch", ca.delayMin, ca.epochStart)
	}
	a.c.now = epoch + 900*time.Millisecond
	a.cc.pktsAcked(&a.c, 1, 50*time.Millisecond)
	if ca.delayMin != 100000 {
		t.Errorf("a 50 ms sample 0.9 s into the epoch set delay_min to %d µs; want it discarded", ca.delayMin)
	}
	a.c.now = epoch + 1100*time.Millisecond
	a.cc.pktsAcked(&a.c, 1, -1)
	if ca.delayMin != 100000 {
		t.Errorf("an ACK without an RTT sample set delay_min to %d µs", ca.delayMin)
	}
	a.cc.pktsAcked(&a.c, 1, 50*time.Millisecond)
	if ca.delayMin != 50000 {
		t.Errorf("a 50 ms sample 1.1 s into the epoch: delay_min %d µs, want 50000", ca.delayMin)
	}
	a.cc.pktsAcked(&a.c, 1, 0)
	if ca.delayMin != 1 {
		t.Errorf("a 0 µs sample: delay_min %d µs, want 1 (Linux counts 0 as 1)", ca.delayMin)
	}
}

// cubictcp_recalc_ssthresh (RFC 9438 §4.6, §4.7): ssthresh = cwnd·717/1024
// (at least 2) and W_max = cwnd, or, with fast convergence, when the window
// did not reach the previous W_max, W_max = cwnd·(1024+717)/2048.
func TestCubicSsthresh(t *testing.T) {
	cc, _ := newCongestion("cubic")
	c := newTestConn(250)
	cc.init(&c)
	ca := cc.(*cubic)
	for _, tc := range []struct {
		cwnd, wantSsthresh, wantWmax uint32
	}{
		{100, 70, 100}, // first loss: W_max = cwnd
		{80, 56, 68},   // below the last W_max: 80·1741/2048 = 68
		{90, 63, 90},   // above it (68): W_max = cwnd
		{90, 63, 90},   // equal: no fast convergence
		{2, 2, 1},      // 2·717/1024 = 1, floored at 2; W_max 2·1741/2048
		{10000, 7001, 10000},
	} {
		c.cwnd = tc.cwnd
		ca.epochStart = 12345
		got := cc.ssthresh(&c)
		if got != tc.wantSsthresh || ca.lastMaxCwnd != tc.wantWmax || ca.epochStart != 0 {
			t.Errorf("ssthresh at cwnd %d = %d, W_max %d, epoch %d; want %d, %d, 0",
				tc.cwnd, got, ca.lastMaxCwnd, ca.epochStart, tc.wantSsthresh, tc.wantWmax)
		}
	}
}

// tcp_reno_undo_cwnd, CUBIC's .undo_cwnd: back to the window before the
// reduction, also after an RTO, whose state change resets CUBIC.
func TestCubicUndo(t *testing.T) {
	a := newAckClock(t, "cubic", 250, 100*time.Millisecond)
	a.c.cwnd = 100
	a.reduce()
	if got := a.cc.undoCwnd(&a.c); got != 100 {
		t.Errorf("undo after 100 → %d = %d, want 100", a.c.cwnd, got)
	}
	a.c.cwnd = 120
	a.c.ssthresh = a.cc.ssthresh(&a.c)
	a.cc.cwndEvent(&a.c, caEventLoss)
	a.cc.setState(&a.c, caLoss)
	a.c.cwnd = 1
	if got := a.cc.undoCwnd(&a.c); got != 120 {
		t.Errorf("undo of an RTO at 120 = %d, want 120", got)
	}
}

// cubictcp_state: entering Loss forgets the cubic (bictcp_reset) and starts
// a HyStart round; the other states change nothing.
func TestCubicLossResets(t *testing.T) {
	a := newAckClock(t, "cubic", 250, 100*time.Millisecond)
	a.c.cwnd = 1000
	a.reduce()
	a.run(2 * time.Second)
	ca := a.cc.(*cubic)
	ca.found = true
	saved := *ca
	for _, s := range []caState{caOpen, caDisorder, caCWR, caRecovery} {
		a.cc.setState(&a.c, s)
		if *ca != saved {
			t.Fatalf("state %d changed CUBIC's state", s)
		}
	}
	a.c.now += time.Second
	a.c.sndNxt += 500
	a.cc.setState(&a.c, caLoss)
	if ca.epochStart != 0 || ca.lastMaxCwnd != 0 || ca.delayMin != 0 || ca.cnt != 0 || ca.tcpCwnd != 0 || ca.found {
		t.Errorf("after Loss: epoch %d W_max %d delay_min %d cnt %d W_est %d found %v; want all cleared",
			ca.epochStart, ca.lastMaxCwnd, ca.delayMin, ca.cnt, ca.tcpCwnd, ca.found)
	}
	if ca.endSeq != a.c.sndNxt || ca.roundStart != clockUS(&a.c) || ca.sampleCnt != 0 || ca.currRTT != ^uint32(0) {
		t.Errorf("after Loss the HyStart round was not restarted at snd_nxt %d", a.c.sndNxt)
	}
}

// hystartRig is a connection in slow start at cwnd 16 (hystart_low_window)
// whose first RTT sample sets delay_min; ACKs are then fed one at a time.
type hystartRig struct {
	t  *testing.T
	cc congestion
	ca *cubic
	c  ccConn
}

func newHystartRig(t *testing.T, cwnd uint32, delayMin time.Duration) *hystartRig {
	r := &hystartRig{t: t}
	r.cc, _ = newCongestion("cubic")
	r.ca = r.cc.(*cubic)
	r.c = newTestConn(250)
	r.c.cwnd = cwnd
	r.c.sndNxt = r.c.sndUna + 100 // a round of 100 packets
	r.cc.init(&r.c)
	r.cc.pktsAcked(&r.c, 1, delayMin) // the first sample: delay_min
	return r
}

// ack is one ACK gap after the previous, acking one packet, with this RTT.
func (r *hystartRig) ack(gap, rtt time.Duration) {
	r.c.now += gap
	r.c.sndUna++
	r.cc.pktsAcked(&r.c, 1, rtt)
}

// hystart_update's ACK train: ACKs at most hystart_ack_delta_us (2 ms)
// apart, spanning more than delay_min/2 since the round began, end slow
// start with ssthresh = cwnd.
func TestHystartAckTrain(t *testing.T) {
	r := newHystartRig(t, 16, 10*time.Millisecond) // threshold 5 ms
	for i := 1; i <= 5; i++ {
		r.ack(time.Millisecond, 10*time.Millisecond)
		if r.ca.found || r.c.ssthresh != infiniteSsthresh {
			t.Fatalf("found the exit after a %d ms train, want only past delay_min/2 = 5 ms", i)
		}
	}
	r.ack(time.Millisecond, 10*time.Millisecond)
	if !r.ca.found || r.c.ssthresh != r.c.cwnd {
		t.Fatalf("6 ms train: found %v, ssthresh %d; want the exit with ssthresh = cwnd %d", r.ca.found, r.c.ssthresh, r.c.cwnd)
	}

	// ACKs more than 2 ms apart are no train.
	r = newHystartRig(t, 16, 10*time.Millisecond)
	for i := 0; i < 20; i++ {
		r.ack(2*time.Millisecond+time.Microsecond, 10*time.Millisecond)
	}
	if r.ca.found {
		t.Error("ACKs 2.001 ms apart ended slow start as a train")
	}
}

// hystart_ack_delay: with a pacing rate the ACK train must also span half
// of a cushion of min(1 ms, GSO_MAX_SIZE·4/rate) — 1 ms up to 262 MB/s, less
// above — so at delay_min 10 ms it ends slow start past 5.5 ms, not 5 ms.
func TestHystartAckDelayCushion(t *testing.T) {
	for _, tc := range []struct {
		rate uint64        // bytes per second
		exit time.Duration // the train's span that ends slow start
	}{
		{rate: 19_300_000, exit: 5600 * time.Microsecond},      // cushion 1 ms: threshold 5.5 ms
		{rate: 524_288_000, exit: 5300 * time.Microsecond},     // cushion 0.5 ms: threshold 5.25 ms
		{rate: 0, exit: 5100 * time.Microsecond},               // no rate yet: threshold 5 ms
		{rate: 1 << 40, exit: 5100 * time.Microsecond},         // cushion rounds to 0
		{rate: 262_144_000 / 2, exit: 5600 * time.Microsecond}, // 2 ms, capped at 1 ms
	} {
		r := newHystartRig(t, 16, 10*time.Millisecond)
		r.c.pacingRate = tc.rate
		var span time.Duration
		for span < 8*time.Millisecond && !r.ca.found {
			r.ack(100*time.Microsecond, 10*time.Millisecond)
			span += 100 * time.Microsecond
		}
		if span != tc.exit {
			t.Errorf("pacing rate %d B/s: slow start ended after a %v train, want %v", tc.rate, span, tc.exit)
		}
	}
}

// tcp_update_pacing_rate: 200 % of mss·max(cwnd, packets_out)/srtt while cwnd
// is under half of ssthresh, 120 % from there on.
func TestPacingRate(t *testing.T) {
	s := &sender{}
	s.cc = ccConn{mss: 1448, cwnd: 10, ssthresh: infiniteSsthresh}
	s.rtt.srtt = 10 * time.Millisecond
	s.updatePacingRate()
	if want := uint64(2 * 1448 * 10 * 100); s.cc.pacingRate != want { // 2·14480 B per 10 ms
		t.Errorf("slow start: pacing rate %d, want %d", s.cc.pacingRate, want)
	}
	s.cc.ssthresh = 20 // cwnd 10 is half of it: no longer under
	s.packetsOut = 15  // more out than cwnd (after a reduction)
	s.updatePacingRate()
	if want := uint64(1448 * 15 * 100 * 12 / 10); s.cc.pacingRate != want {
		t.Errorf("congestion avoidance, 15 out: pacing rate %d, want %d", s.cc.pacingRate, want)
	}
}

// hystart_update's delay detector: after HYSTART_MIN_SAMPLES samples in a
// round, a round minimum above delay_min + clamp(delay_min/8, 4 ms, 16 ms)
// ends slow start with ssthresh = cwnd.
func TestHystartDelayIncrease(t *testing.T) {
	const gap = 3 * time.Millisecond // no ACK train
	for _, tc := range []struct {
		name          string
		delayMin, rtt time.Duration
		found         bool
	}{
		{"8 ms over 20 ms", 20 * time.Millisecond, 28 * time.Millisecond, true},
		{"at the 4 ms floor", 20 * time.Millisecond, 24 * time.Millisecond, false},
		{"over the floor", 20 * time.Millisecond, 24*time.Millisecond + time.Microsecond, true},
		{"under the floor, over delay_min/8", 20 * time.Millisecond, 23 * time.Millisecond, false},
		{"delay_min/8 between the bounds", 80 * time.Millisecond, 90*time.Millisecond + time.Microsecond, true},
		{"at delay_min/8", 80 * time.Millisecond, 90 * time.Millisecond, false},
		{"at the 16 ms ceiling", 200 * time.Millisecond, 216 * time.Millisecond, false},
		{"over the ceiling", 200 * time.Millisecond, 216*time.Millisecond + time.Microsecond, true},
	} {
		r := newHystartRig(t, 16, tc.delayMin)
		// The rig's first sample opened the round; a new round begins once
		// snd_una passes its end.
		r.c.sndUna = r.ca.endSeq
		r.c.sndNxt = r.c.sndUna + 100
		r.ack(gap, tc.rtt) // passes end_seq: new round, its first sample
		for i := 2; i <= hystartMinSamples; i++ {
			r.ack(gap, tc.rtt)
		}
		if r.ca.found {
			t.Fatalf("%s: found after %d samples, want a decision only after %d", tc.name, hystartMinSamples, hystartMinSamples)
		}
		r.ack(gap, tc.rtt)
		if r.ca.found != tc.found || (tc.found && r.c.ssthresh != r.c.cwnd) || (!tc.found && r.c.ssthresh != infiniteSsthresh) {
			t.Errorf("%s: delay_min %v, RTT %v: found %v ssthresh %d; want found %v", tc.name, tc.delayMin, tc.rtt, r.ca.found, r.c.ssthresh, tc.found)
		}
	}
}

// cubictcp_acked: HyStart runs only in slow start from hystart_low_window
// (16) packets on.
func TestHystartOnlyInSlowStartFrom16(t *testing.T) {
	for _, tc := range []struct {
		name           string
		cwnd, ssthresh uint32
	}{
		{"cwnd 15", 15, infiniteSsthresh},
		{"cwnd at ssthresh", 20, 20},
	} {
		r := newHystartRig(t, tc.cwnd, 10*time.Millisecond)
		r.c.ssthresh = tc.ssthresh
		for i := 0; i < 20; i++ {
			r.ack(time.Millisecond, 10*time.Millisecond) // a train
		}
		for i := 0; i < 20; i++ {
			r.ack(3*time.Millisecond, 40*time.Millisecond) // a delay increase
		}
		if r.ca.found || r.c.ssthresh != tc.ssthresh {
			t.Errorf("%s: HyStart fired (ssthresh %d)", tc.name, r.c.ssthresh)
		}
	}
}

// bictcp_hystart_reset from hystart_update: a round ends when snd_una passes
// the snd_nxt recorded at its start; the next round starts there and then.
func TestHystartRound(t *testing.T) {
	r := newHystartRig(t, 16, 10*time.Millisecond)
	end := r.ca.endSeq
	start := r.ca.roundStart
	r.c.sndNxt = end + 300
	r.c.sndUna = end - 1
	r.ack(3*time.Millisecond, 10*time.Millisecond) // snd_una == end_seq: same round
	if r.ca.roundStart != start || r.ca.endSeq != end {
		t.Fatalf("snd_una at end_seq started a new round")
	}
	r.ack(3*time.Millisecond, 10*time.Millisecond) // past it
	if r.ca.roundStart != clockUS(&r.c) || r.ca.endSeq != end+300 || r.ca.sampleCnt != 1 || r.ca.currRTT != 10000 {
		t.Fatalf("snd_una past end_seq: round start %d end %d samples %d; want a new round at %d ending at snd_nxt %d, one sample",
			r.ca.roundStart, r.ca.endSeq, r.ca.sampleCnt, clockUS(&r.c), end+300)
	}

	// A train of 1 ms ACKs never spans 5 ms of one round if every round
	// is 4 packets long.
	r = newHystartRig(t, 16, 10*time.Millisecond)
	r.c.sndUna = r.ca.endSeq // the next ACK ends the rig's long first round
	for i := 0; i < 40; i++ {
		if r.ca.endSeq.LessThan(r.c.sndUna + 1) {
			r.c.sndNxt = r.c.sndUna + 4
		}
		r.ack(time.Millisecond, 10*time.Millisecond)
	}
	if r.ca.found {
		t.Error("a train across rounds of 4 ms each ended slow start; each round should start the train anew")
	}
}

// Rounds are counted from the first ACK of the connection, below
// hystart_low_window too (Linux 6.14, "tcp_cubic: fix incorrect HyStart
// round start detection"): a round that ends while cwnd is 10 starts the
// next one there, and only the detectors wait for cwnd 16.
func TestHystartRoundsBelowLowWindow(t *testing.T) {
	r := newHystartRig(t, 10, 10*time.Millisecond)
	if r.ca.sampleCnt != 0 {
		t.Fatalf("a sample at cwnd 10 was counted (%d): the detectors start at 16", r.ca.sampleCnt)
	}
	end := r.ca.endSeq
	r.c.sndUna = end
	r.c.sndNxt = end + 20
	r.ack(time.Millisecond, 10*time.Millisecond) // past end_seq at cwnd 10
	if r.ca.endSeq != end+20 || r.ca.roundStart != clockUS(&r.c) {
		t.Fatalf("snd_una past end_seq at cwnd 10: round ends at %d from %d; want a new round ending at snd_nxt %d from now %d",
			r.ca.endSeq, r.ca.roundStart, end+20, clockUS(&r.c))
	}
	// cwnd reaches 16 within the round: the round goes on, the
	// detectors start counting.
	r.c.cwnd = 16
	start := r.ca.roundStart
	r.ack(time.Millisecond, 10*time.Millisecond)
	if r.ca.roundStart != start || r.ca.sampleCnt != 1 {
		t.Errorf("cwnd 16 mid-round: round start %d (was %d), samples %d; want the same round with its first sample", r.ca.roundStart, start, r.ca.sampleCnt)
	}
}

// cubic_root: ⌊∛a⌋ for every size of a.
func TestCubicRoot(t *testing.T) {
	check := func(a uint64) {
		x := uint64(cubicRoot(a))
		hi, lo := bits.Mul64(x*x, x)
		if hi != 0 || lo > a {
			t.Fatalf("cubicRoot(%d) = %d: its cube exceeds a", a, x)
		}
		y := x + 1
		hi, lo = bits.Mul64(y*y, y)
		if hi == 0 && lo <= a {
			t.Fatalf("cubicRoot(%d) = %d: %d³ ≤ a too", a, x, y)
		}
	}
	for a := uint64(0); a < 100000; a++ {
		check(a)
	}
	for x := uint64(2); x < 1<<21+3; x = x*5/4 + 1 {
		c := x * x * x
		check(c - 1)
		check(c)
		check(c + 1)
	}
	for d := uint64(1); d < 1<<20; d = d*3 + 1 {
		check(cubeFactor * d)
	}
	check(^uint64(0))
	// K for ΔW = 300 in 2^-10 s is ∛(300/C) s; C = 410/1024 is 0.4 to 0.1%.
	k := float64(cubicRoot(cubeFactor*300)) / 1024
	if want := math.Cbrt(300 / 0.4); math.Abs(k-want) > 0.001*want {
		t.Errorf("K for ΔW = 300 = %.4f s, want ∛(300/0.4) = %.4f s", k, want)
	}
}

// congAvoid and pktsAcked run on every ACK: no allocation.
func TestCubicNoAllocs(t *testing.T) {
	for _, name := range []string{"cubic", "reno"} {
		a := newAckClock(t, name, 250, 50*time.Millisecond)
		a.c.cwnd = 200
		a.reduce()
		if n := testing.AllocsPerRun(1000, a.ack); n != 0 {
			t.Errorf("%s: %.1f allocations per ACK, want 0", name, n)
		}
	}
}

// CUBIC's delay_min starts from data: the handshake's ACK gives
// congestion control no RTT sample, on either side. A passive open's
// child never queued its SYN-ACK (tcp_synack_rtt_meas feeds only the RTT
// estimator); an active open's SYN sample comes before the module's
// init (tcp_init_transfer, bictcp_init). On a slow link the first data
// ACK's RTT includes a packet's serialization, which the handshake's
// does not: a delay_min from the handshake would end slow start early.
func TestDelayMinStartsFromData(t *testing.T) {
	delayMin := func(c *conn) uint32 {
		e := c.ep.(*endpoint)
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.snd.ops.(*cubic).delayMin
	}
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	if d := delayMin(c); d != 0 {
		t.Errorf("passive open, after the handshake: delay_min %d µs; want none (0)", d)
	}
	c.write(fill(2 * 1448))
	c.saw(h.take()...)
	h.advance(112 * time.Millisecond)
	c.ackUpTo(c.seen)
	if d := delayMin(c); d != 112000 {
		t.Errorf("passive open, after the first data ACK 112 ms on: delay_min %d µs; want 112000", d)
	}

	h = newHarness(t, Options{})
	c, _ = h.dial(linuxPeer)
	if d := delayMin(c); d != 0 {
		t.Errorf("active open, after the handshake: delay_min %d µs; want none (0)", d)
	}
}
