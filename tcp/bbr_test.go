package tcp

import (
	"testing"
	"time"
)

// fixedRand is a randSource that always draws v (below n).
type fixedRand uint32

func (f fixedRand) randBelow(n uint32) uint32 { return uint32(f) % n }

// bbrRig drives one BBR instance with delivery-rate samples made by
// hand, on a path of a fixed minimum RTT: each ack is one ACK, each
// round one ACK that starts a round (its sampled packet was sent after
// the last round began).
type bbrRig struct {
	t *testing.T
	b *bbr
	c ccConn
}

// newBBRRig is BBR just initialised on a connection whose handshake
// measured rtt, in slow start with the initial window.
func newBBRRig(t *testing.T, rtt time.Duration, draw uint32) *bbrRig {
	r := &bbrRig{t: t, b: &bbr{}, c: newTestConn(250)}
	r.c.srtt, r.c.minRTT = rtt, rtt
	r.c.cwndClamp = ^uint32(0) >> 1
	r.c.rng = fixedRand(draw)
	r.c.inFlight = 0
	r.b.init(&r.c)
	return r
}

// sample is one ACK: interval after the one before, it delivers n
// packets, the last with an RTT of rtt; its delivery-rate sample is n
// over over (rtt when 0).
type sample struct {
	n        uint32
	interval time.Duration
	over     time.Duration
	rtt      time.Duration
	losses   uint32
	appLimit bool
	inFlight uint32 // what is in flight after the ACK
	newRound bool
}

// ack hands BBR one ACK's sample at interval after the previous ACK.
func (r *bbrRig) ack(s sample) {
	prior := r.c.delivered
	if !s.newRound && prior > 0 {
		prior = r.b.nextRTTDelivered - 1 // sent before the round began
	}
	r.c.now += s.interval
	r.c.delivered += s.n
	r.c.lost += s.losses
	r.c.deliveredStamp = r.c.now
	priorInFlight := r.c.inFlight
	r.c.inFlight = s.inFlight
	over := s.over
	if over == 0 {
		over = s.rtt
	}
	rs := rateSample{
		priorDelivered: prior,
		delivered:      int32(s.n),
		intervalUS:     int64(over / time.Microsecond),
		rttUS:          int64(s.rtt / time.Microsecond),
		ackedSacked:    s.n,
		losses:         s.losses,
		priorInFlight:  priorInFlight,
		isAppLimited:   s.appLimit,
	}
	if s.rtt == 0 {
		rs.rttUS = -1
	}
	r.b.congControl(&r.c, &rs)
}

// round is one round trip delivering n packets over rtt, the window
// full.
func (r *bbrRig) round(n uint32, rtt time.Duration) {
	r.ack(sample{n: n, interval: rtt, rtt: rtt, inFlight: r.c.cwnd, newRound: true})
}

// bwOf is a rate of n packets per d as BBR keeps it.
func bwOf(n uint32, d time.Duration) uint32 {
	return uint32(uint64(n) * bwUnit / uint64(d/time.Microsecond))
}

// bbr_init: STARTUP, ssthresh infinite, the min RTT from the handshake,
// the pacing rate STARTUP's gain over the window per srtt (1 % below),
// and the socket paced.
func TestBBRInit(t *testing.T) {
	r := newBBRRig(t, 50*time.Millisecond, 0)
	b, c := r.b, &r.c
	if b.mode != bbrStartup || c.ssthresh != infiniteSsthresh || !c.pacingNeeded || !b.hasSeenRTT {
		t.Fatalf("after init: mode %v, ssthresh %d, pacing %v, has_seen_rtt %v; want STARTUP, infinite, true, true", b.mode, c.ssthresh, c.pacingNeeded, b.hasSeenRTT)
	}
	if b.minRTTUS != 50000 {
		t.Errorf("min_rtt_us %d; want the handshake's 50000", b.minRTTUS)
	}
	// 2.885 × 10 × 1448 B / 50 ms × 0.99 ≈ 827 kB/s.
	want := 2.885 * 10 * 1448 / 0.05 * 0.99
	if got := float64(c.pacingRate); got < want*0.995 || got > want*1.005 {
		t.Errorf("initial pacing rate %v B/s; want about %.0f", got, want)
	}
	// Without an RTT sample: a nominal millisecond, until srtt comes.
	r2 := &bbrRig{t: t, b: &bbr{}, c: newTestConn(250)}
	r2.c.rng = fixedRand(0)
	r2.b.init(&r2.c)
	if r2.b.minRTTUS != ^uint32(0) || r2.b.hasSeenRTT || r2.b.bdp(bwOf(10, time.Millisecond), bbrUnit) != initialCwnd {
		t.Errorf("init without an RTT: min_rtt %d, has_seen_rtt %v, bdp %d; want ~0, false, the initial window", r2.b.minRTTUS, r2.b.hasSeenRTT, r2.b.bdp(bwOf(10, time.Millisecond), bbrUnit))
	}
	r2.c.srtt = 50 * time.Millisecond
	r2.b.setPacingRate(&r2.c, 0, bbrHighGain)
	if !r2.b.hasSeenRTT || float64(r2.c.pacingRate) > want*1.005 {
		t.Errorf("the first srtt: has_seen_rtt %v, pacing %d; want the rate taken again from srtt (about %.0f)", r2.b.hasSeenRTT, r2.c.pacingRate, want)
	}
}

// STARTUP grows while the bandwidth grows a quarter a round; three
// rounds without that growth fill the pipe: DRAIN, with ssthresh at the
// BDP's inflight; DRAIN ends when what will be in the network is down to
// it: PROBE_BW, at a phase drawn at random (never the draining one).
func TestBBRStartupDrainProbeBW(t *testing.T) {
	const rtt = 40 * time.Millisecond
	for _, tc := range []struct {
		draw  uint32
		phase uint8
	}{{0, 0}, {1, 7}, {6, 2}} {
		r := newBBRRig(t, rtt, tc.draw)
		b, c := r.b, &r.c
		for i, n := range []uint32{10, 20, 40, 80} {
			r.round(n, rtt)
			if b.mode != bbrStartup || b.fullBWCnt != 0 || b.pacingGain != bbrHighGain || b.cwndGain != bbrHighGain {
				t.Fatalf("round %d, doubling: mode %v, full_bw_cnt %d, gains %d/%d; want STARTUP, 0, high gain", i, b.mode, b.fullBWCnt, b.pacingGain, b.cwndGain)
			}
		}
		if b.maxBW() != bwOf(80, rtt) {
			t.Fatalf("max bw %d; want the largest sample, %d", b.maxBW(), bwOf(80, rtt))
		}
		r.round(90, rtt) // +12.5 %: no growth
		r.round(95, rtt)
		if b.mode != bbrStartup || b.fullBWCnt != 2 {
			t.Fatalf("two rounds without growth: mode %v, full_bw_cnt %d; want STARTUP, 2", b.mode, b.fullBWCnt)
		}
		r.ack(sample{n: 95, interval: rtt, rtt: rtt, inFlight: 200, newRound: true})
		if bdp := b.bdp(b.maxBW(), bbrUnit); !b.fullBWReached || b.mode != bbrDrain || c.ssthresh < bdp || c.ssthresh > bdp+50 || b.pacingGain != bbrDrainGain || b.cwndGain != bbrHighGain {
			t.Fatalf("third round without growth: full %v, mode %v, ssthresh %d (BDP %d), gains %d/%d; want DRAIN at 1/2.885, window gain 2.885, ssthresh the BDP's inflight",
				b.fullBWReached, b.mode, c.ssthresh, bdp, b.pacingGain, b.cwndGain)
		}
		target := b.inflight(c, b.maxBW(), bbrUnit)
		r.ack(sample{n: 10, interval: time.Millisecond, rtt: rtt, inFlight: target + 1})
		if b.mode != bbrDrain {
			t.Fatalf("in flight above the BDP's %d: mode %v; want DRAIN still", target, b.mode)
		}
		r.ack(sample{n: 10, interval: time.Millisecond, rtt: rtt, inFlight: target})
		if b.mode != bbrProbeBW || b.cycleIdx != tc.phase || b.cwndGain != bbrCwndGain {
			t.Errorf("draw %d, in flight down to the BDP: mode %v, phase %d, cwnd gain %d; want PROBE_BW, phase %d, 2",
				tc.draw, b.mode, b.cycleIdx, b.cwndGain, tc.phase)
		}
		if want := bbrCycleGains[tc.phase]; b.pacingGain != want {
			t.Errorf("draw %d: pacing gain %d; want phase %d's, %d", tc.draw, b.pacingGain, tc.phase, want)
		}
	}
}

// probeBW brings a rig to PROBE_BW at phase 0 with a steady bandwidth.
func probeBW(t *testing.T, rtt time.Duration, n uint32) *bbrRig {
	r := newBBRRig(t, rtt, 0)
	for range 4 {
		r.round(n, rtt)
	}
	r.ack(sample{n: 1, interval: time.Millisecond, rtt: rtt, inFlight: 1})
	if r.b.mode != bbrProbeBW || r.b.cycleIdx != 0 {
		t.Fatalf("setup: mode %v, phase %d; want PROBE_BW, phase 0", r.b.mode, r.b.cycleIdx)
	}
	return r
}

// PROBE_BW's gain cycle: the probing phase (5/4) lasts a min RTT and
// until the flight reaches 5/4 of the BDP (or a loss); the draining
// phase (3/4) ends after a min RTT or as soon as the flight is down to
// the BDP; the six cruising phases last a min RTT each.
func TestBBRGainCycle(t *testing.T) {
	const rtt = 20 * time.Millisecond
	r := probeBW(t, rtt, 100)
	b, c := r.b, &r.c
	bw := b.maxBW()
	// While probing, the flight counts the next GSO packet too
	// (bbr_packets_in_net_at_edt).
	high := b.inflight(c, bw, bbrUnit*5/4) - b.tsoSegsGoal(c)
	r.ack(sample{n: 10, interval: rtt + time.Millisecond, rtt: rtt, inFlight: high - 1})
	r.ack(sample{n: 10, interval: time.Millisecond, rtt: rtt, inFlight: high})
	if b.cycleIdx != 0 {
		t.Fatalf("a min RTT into probing, the flight short of 5/4 BDP (prior in flight %d, %d needed): phase %d; want 0 still", high-1, high, b.cycleIdx)
	}
	r.ack(sample{n: 10, interval: time.Millisecond, rtt: rtt, inFlight: high})
	if b.cycleIdx != 1 || b.pacingGain != bbrUnit*3/4 {
		t.Fatalf("the flight at 5/4 BDP: phase %d, gain %d; want 1, 3/4", b.cycleIdx, b.pacingGain)
	}
	bdp := b.inflight(c, bw, bbrUnit)
	r.ack(sample{n: 10, interval: time.Millisecond, rtt: rtt, inFlight: bdp})
	r.ack(sample{n: 10, interval: time.Millisecond, rtt: rtt, inFlight: bdp})
	if b.cycleIdx != 2 || b.pacingGain != bbrUnit {
		t.Fatalf("draining, the flight down to the BDP before a min RTT: phase %d, gain %d; want 2, 1", b.cycleIdx, b.pacingGain)
	}
	for want := uint8(3); want != 1; want = (want + 1) % bbrCycleLen {
		r.ack(sample{n: 10, interval: rtt / 2, rtt: rtt, inFlight: bdp})
		if b.cycleIdx == want {
			t.Fatalf("phase %d ended after half a min RTT", want-1)
		}
		r.ack(sample{n: 10, interval: rtt/2 + time.Millisecond, rtt: rtt, inFlight: bdp})
		if b.cycleIdx != want {
			t.Fatalf("a min RTT into phase %d: phase %d; want %d", (want+7)%8, b.cycleIdx, want)
		}
	}
	// Probing ends at a loss once a min RTT has passed.
	r.ack(sample{n: 10, interval: rtt + time.Millisecond, rtt: rtt, inFlight: bdp, losses: 1})
	if b.cycleIdx != 1 {
		t.Errorf("probing, a loss after a min RTT: phase %d; want 1", b.cycleIdx)
	}
}

// The bandwidth filter is a windowed maximum over 10 rounds: a larger
// sample takes over at once, a smaller one only once the larger has aged
// out; an application-limited sample counts only if it is no smaller.
func TestBBRBandwidthFilter(t *testing.T) {
	var m maxFilter
	m.reset(0, 0)
	m.update(10, 1, 100)
	m.update(10, 2, 50)
	m.update(10, 6, 70)
	if m.get() != 100 {
		t.Fatalf("max %d; want 100", m.get())
	}
	m.update(10, 11, 40)
	if m.get() != 100 {
		t.Fatalf("round 11, the max from round 1: %d; want 100 still (10 rounds)", m.get())
	}
	m.update(10, 12, 40)
	if m.get() != 70 {
		t.Fatalf("round 12: max %d; want 70, the best of the rounds left", m.get())
	}
	m.update(10, 30, 10)
	if m.get() != 10 {
		t.Errorf("round 30, nothing else in the window: %d; want 10", m.get())
	}

	r := newBBRRig(t, 10*time.Millisecond, 0)
	r.round(50, 10*time.Millisecond)
	r.ack(sample{n: 10, interval: 10 * time.Millisecond, rtt: 10 * time.Millisecond, appLimit: true, newRound: true, inFlight: 10})
	if r.b.maxBW() != bwOf(50, 10*time.Millisecond) {
		t.Errorf("a slower app-limited sample: max bw %d; want %d kept", r.b.maxBW(), bwOf(50, 10*time.Millisecond))
	}
	r.ack(sample{n: 60, interval: 10 * time.Millisecond, rtt: 10 * time.Millisecond, appLimit: true, newRound: true, inFlight: 10})
	if r.b.maxBW() != bwOf(60, 10*time.Millisecond) {
		t.Errorf("a faster app-limited sample: max bw %d; want %d", r.b.maxBW(), bwOf(60, 10*time.Millisecond))
	}
}

// The min-RTT filter takes a sample at or below it; above it, only once
// its ten seconds are up, and not from an ACK that may have been delayed.
func TestBBRMinRTTFilter(t *testing.T) {
	r := newBBRRig(t, 50*time.Millisecond, 0)
	b := r.b
	r.ack(sample{n: 1, interval: time.Millisecond, rtt: 60 * time.Millisecond, inFlight: 5})
	if b.minRTTUS != 50000 {
		t.Fatalf("a larger sample: min_rtt %d; want 50000 kept", b.minRTTUS)
	}
	r.ack(sample{n: 1, interval: time.Millisecond, rtt: 45 * time.Millisecond, inFlight: 5})
	if b.minRTTUS != 45000 {
		t.Fatalf("a smaller sample: min_rtt %d; want 45000", b.minRTTUS)
	}
	stamp := b.minRTTStamp
	r.c.now += 10*time.Second + 10*time.Millisecond
	rs := rateSample{delivered: 1, intervalUS: 1000, rttUS: 70000, ackedSacked: 1, isAckDelayed: true}
	b.updateMinRTT(&r.c, &rs)
	if b.minRTTUS != 45000 || b.minRTTStamp != stamp {
		t.Fatalf("expired filter, a larger sample from a delayed ACK: min_rtt %d; want 45000 kept", b.minRTTUS)
	}
	rs.isAckDelayed = false
	b.updateMinRTT(&r.c, &rs)
	if b.minRTTUS != 70000 || b.minRTTStamp == stamp {
		t.Errorf("expired filter, a larger sample: min_rtt %d; want 70000 taken", b.minRTTUS)
	}
}

// PROBE_RTT: ten seconds without a new min RTT (not just after idle)
// cap the window at 4 and mark samples app-limited; once the flight is
// down to 4, 200 ms and a round later the window comes back and
// PROBE_BW resumes with the filter restarted.
func TestBBRProbeRTT(t *testing.T) {
	const rtt = 20 * time.Millisecond
	r := probeBW(t, rtt, 100)
	b, c := r.b, &r.c
	for range 21 {
		r.ack(sample{n: 100, interval: 500 * time.Millisecond, rtt: rtt + 5*time.Millisecond, inFlight: 100, newRound: true})
	}
	if b.mode != bbrProbeRTT {
		t.Fatalf("ten seconds without a new min RTT: mode %v; want PROBE_RTT", b.mode)
	}
	saved := b.priorCwnd
	if c.cwnd != bbrCwndMinTarget || b.pacingGain != bbrUnit || b.cwndGain != bbrUnit || c.appLimited == 0 || saved < 10 {
		t.Fatalf("in PROBE_RTT: cwnd %d, gains %d/%d, app_limited %d, prior_cwnd %d; want 4, 1/1, marked, the window saved",
			c.cwnd, b.pacingGain, b.cwndGain, c.appLimited, saved)
	}
	r.ack(sample{n: 90, interval: rtt, rtt: rtt + time.Millisecond, inFlight: 10})
	if b.probeRTTDoneStamp != 0 {
		t.Fatal("the PROBE_RTT timer started with 10 in flight; want it to wait for 4")
	}
	r.ack(sample{n: 6, interval: rtt, rtt: rtt, inFlight: 4})
	if b.probeRTTDoneStamp == 0 {
		t.Fatal("the flight at 4: the PROBE_RTT timer did not start")
	}
	r.ack(sample{n: 2, interval: 250 * time.Millisecond, rtt: rtt, inFlight: 4})
	if b.mode != bbrProbeRTT {
		t.Fatalf("250 ms at the floor but no round: mode %v; want PROBE_RTT still", b.mode)
	}
	r.ack(sample{n: 2, interval: time.Millisecond, rtt: rtt, inFlight: 4, newRound: true})
	if b.mode != bbrProbeBW || c.cwnd+2 < saved || b.minRTTStamp != b.jiffies(c) {
		t.Errorf("200 ms and then a round at the floor: mode %v, cwnd %d (saved %d), filter stamp %d (now %d); want PROBE_BW, the window back, the filter restarted",
			b.mode, c.cwnd, saved, b.minRTTStamp, b.jiffies(c))
	}

	// A round at the floor, then the 200 ms: PROBE_RTT ends with the
	// time, and in STARTUP (the pipe never found full) goes back to it.
	r = newBBRRig(t, rtt, 0)
	r.round(10, rtt)
	r.c.now += 10 * time.Second
	r.ack(sample{n: 10, interval: rtt, rtt: 2 * rtt, inFlight: 4, newRound: true}) // expired: PROBE_RTT, the floor reached
	r.ack(sample{n: 2, interval: rtt, rtt: 2 * rtt, inFlight: 4, newRound: true})  // a round
	if r.b.mode != bbrProbeRTT || !r.b.probeRTTRoundDone {
		t.Fatalf("a round at the floor: mode %v, round done %v; want PROBE_RTT, true", r.b.mode, r.b.probeRTTRoundDone)
	}
	r.ack(sample{n: 2, interval: 200 * time.Millisecond, rtt: 2 * rtt, inFlight: 4})
	if r.b.mode != bbrStartup {
		t.Errorf("PROBE_RTT over before the pipe was full: mode %v; want STARTUP", r.b.mode)
	}

	// Just after idle (idle_restart) the expired filter does not start
	// PROBE_RTT; a sample with deliveries ends the restart.
	r = probeBW(t, rtt, 100)
	r.c.appLimited = 5
	r.b.cwndEvent(&r.c, caEventTxStart)
	if !r.b.idleRestart {
		t.Fatal("TX_START while app-limited: idle_restart not set")
	}
	r.c.now += 11 * time.Second
	rs := rateSample{delivered: 0, intervalUS: -1, rttUS: -1}
	r.b.updateMinRTT(&r.c, &rs)
	if r.b.mode == bbrProbeRTT {
		t.Error("expired filter while restarting from idle: PROBE_RTT; want it deferred")
	}
}

// After idle, sending again in PROBE_BW paces at the bandwidth itself,
// and restarts the ACK-aggregation epoch.
func TestBBRIdleRestart(t *testing.T) {
	r := probeBW(t, 20*time.Millisecond, 100)
	b, c := r.b, &r.c
	b.cwndEvent(c, caEventTxStart)
	if b.idleRestart {
		t.Fatal("TX_START without app_limited: idle_restart set")
	}
	c.appLimited = 1
	c.now += time.Second
	b.cwndEvent(c, caEventTxStart)
	if want := pacingRateOf(c, b.bandwidth(), bbrUnit); c.pacingRate != want || b.ackEpochStamp != stampUS(c.now) || b.ackEpochAcked != 0 {
		t.Errorf("TX_START after idle in PROBE_BW: pacing %d (want %d at gain 1), epoch %d (want %d)", c.pacingRate, want, b.ackEpochStamp, stampUS(c.now))
	}
}

// ACK aggregation: what ACKs deliver beyond the bandwidth since the
// epoch began is kept, the largest per slot of 5 rounds over 2 slots,
// and, once STARTUP is over, widens the window's target (at most 100 ms
// of the bandwidth).
func TestBBRAckAggregation(t *testing.T) {
	const rtt = 20 * time.Millisecond
	r := probeBW(t, rtt, 100) // 5 packets a millisecond
	b, c := r.b, &r.c
	c.cwnd = 1000
	b.extraAcked, b.ackEpochAcked = [2]uint16{}, 0                                 // no allowance yet
	r.ack(sample{n: 5, interval: 10 * time.Millisecond, rtt: rtt, inFlight: 50})   // behind the rate: a new epoch
	r.ack(sample{n: 40, interval: 500 * time.Microsecond, rtt: rtt, inFlight: 50}) // 2 expected, 45 delivered
	if got := b.extraAckedMax(); got != 43 {
		t.Fatalf("45 delivered in an epoch where the bandwidth gives 2: extra_acked %d; want 43", got)
	}
	before := b.quantizationBudget(c, b.bdp(b.bandwidth(), bbrCwndGain))
	target := b.quantizationBudget(c, b.bdp(b.bandwidth(), bbrCwndGain)+b.ackAggregationCwnd())
	if b.ackAggregationCwnd() != 43 || target <= before {
		t.Errorf("the window's target with the allowance: %d (without %d), allowance %d; want 43 more", target, before, b.ackAggregationCwnd())
	}
	// Ten rounds later, ACKs no faster than the bandwidth, both slots
	// have been started afresh.
	for range 12 {
		r.ack(sample{n: 5, interval: 5 * time.Millisecond, rtt: rtt, inFlight: 50, newRound: true})
	}
	if got := b.extraAckedMax(); got >= 43 {
		t.Errorf("10 rounds later: extra_acked %d; want the burst forgotten", got)
	}
}

// Long-term bandwidth: two sampling intervals of 4+ rounds, each ending
// at a loss with over 20 % lost, at consistent rates, mean a policer:
// the estimate is their mean, paced at gain 1; after 48 rounds PROBE_BW
// starts over without it.
func TestBBRLongTermPolicer(t *testing.T) {
	const rtt = 20 * time.Millisecond
	r := probeBW(t, rtt, 100)
	b := r.b
	// A loss starts an interval; a loss ends it once 4 rounds have
	// passed with over 20 % lost: a round of 20 delivered and 5 lost.
	lossy := func() { r.ack(sample{n: 20, interval: rtt, rtt: rtt, inFlight: 40, newRound: true, losses: 5}) }
	for range 4 {
		lossy()
	}
	if b.ltUseBW || b.ltBW != bwOf(60, 3*rtt) {
		t.Fatalf("one lossy interval: lt_use_bw %v, lt_bw %d; want its rate kept (%d), not yet used", b.ltUseBW, b.ltBW, bwOf(60, 3*rtt))
	}
	for range 3 {
		lossy()
	}
	if b.ltUseBW {
		t.Fatal("three rounds into the second interval: the long-term rate used already")
	}
	lossy()
	if !b.ltUseBW || b.pacingGain != bbrUnit || b.bandwidth() != b.ltBW {
		t.Fatalf("two consistent lossy intervals: lt_use_bw %v, gain %d, bw %d (lt_bw %d); want the long-term rate used at gain 1",
			b.ltUseBW, b.pacingGain, b.bandwidth(), b.ltBW)
	}
	for range bbrLTBWMaxRounds - 1 {
		r.ack(sample{n: 20, interval: rtt, rtt: rtt, inFlight: 40, newRound: true})
	}
	if !b.ltUseBW {
		t.Fatal("47 rounds on: the long-term rate dropped early")
	}
	r.ack(sample{n: 20, interval: rtt, rtt: rtt, inFlight: 40, newRound: true})
	if b.ltUseBW || b.mode != bbrProbeBW {
		t.Errorf("48 rounds on: lt_use_bw %v, mode %v; want the long-term rate dropped, PROBE_BW", b.ltUseBW, b.mode)
	}

	// An application-limited sample ends the interval unmeasured.
	r = probeBW(t, rtt, 100)
	r.ack(sample{n: 20, interval: rtt, rtt: rtt, inFlight: 40, newRound: true, losses: 5})
	if !r.b.ltIsSampling {
		t.Fatal("a loss did not start long-term sampling")
	}
	r.ack(sample{n: 20, interval: rtt, rtt: rtt, inFlight: 40, newRound: true, appLimit: true})
	if r.b.ltIsSampling {
		t.Error("an app-limited sample left long-term sampling on")
	}
}

// Packet conservation: the first round of a recovery sends what is
// delivered (cwnd = in flight + acked, less what was lost); the next
// round grows again; leaving recovery restores the window from before.
func TestBBRPacketConservation(t *testing.T) {
	const rtt = 20 * time.Millisecond
	r := probeBW(t, rtt, 100)
	b, c := r.b, &r.c
	c.cwnd = 100
	c.inFlight = 100
	c.ssthresh = b.ssthresh(c) // tcp_init_cwnd_reduction: bbr_ssthresh saves the window
	if b.priorCwnd != 100 {
		t.Fatalf("entering recovery: prior_cwnd %d; want 100", b.priorCwnd)
	}
	c.caState = caRecovery
	r.ack(sample{n: 2, interval: time.Millisecond, rtt: rtt, inFlight: 60, losses: 3})
	if !b.packetConservation || c.cwnd != 62 {
		t.Fatalf("recovery's first ACK: conservation %v, cwnd %d; want true, in flight 60 + 2 acked", b.packetConservation, c.cwnd)
	}
	r.ack(sample{n: 3, interval: time.Millisecond, rtt: rtt, inFlight: 59, losses: 2})
	if c.cwnd != 62 {
		t.Errorf("conserving, 3 delivered, 2 lost, 59 in flight: cwnd %d; want max(62-2, 59+3) = 62", c.cwnd)
	}
	r.ack(sample{n: 4, interval: time.Millisecond, rtt: rtt, inFlight: 58, newRound: true})
	if b.packetConservation || c.cwnd != 66 {
		t.Errorf("a new round in recovery: conservation %v, cwnd %d; want false, slow start 62+4", b.packetConservation, c.cwnd)
	}
	c.caState = caOpen
	r.ack(sample{n: 4, interval: time.Millisecond, rtt: rtt, inFlight: 58})
	if c.cwnd < 100 {
		t.Errorf("recovery over: cwnd %d; want at least the 100 from before it", c.cwnd)
	}
}

// An RTO (the Loss state) ends a round, restarts the full-pipe test and
// counts as a loss for the policer detector; undo restarts the test too.
func TestBBRLossAndUndo(t *testing.T) {
	r := probeBW(t, 20*time.Millisecond, 100)
	b, c := r.b, &r.c
	b.setState(c, caLoss)
	if !b.roundStart || b.fullBW != 0 || b.prevCAState != caLoss || !b.ltIsSampling {
		t.Errorf("Loss: round_start %v, full_bw %d, prev state %v, lt sampling %v; want true, 0, Loss, true", b.roundStart, b.fullBW, b.prevCAState, b.ltIsSampling)
	}
	b.fullBW, b.fullBWCnt = 7, 2
	if got := b.undoCwnd(c); got != c.cwnd || b.fullBW != 0 || b.fullBWCnt != 0 || b.ltIsSampling {
		t.Errorf("undo: cwnd %d (have %d), full_bw %d, cnt %d, lt sampling %v; want the window kept and the tests restarted", got, c.cwnd, b.fullBW, b.fullBWCnt, b.ltIsSampling)
	}
}

// The window's target: the BDP at the gain plus three GSO packets, even,
// and two more in the probing phase; the GSO packet is a millisecond of
// the pacing rate, single segments below 1.2 Mbit/s, at most 127.
func TestBBRQuantization(t *testing.T) {
	r := newBBRRig(t, 10*time.Millisecond, 0)
	b, c := r.b, &r.c
	c.pacingRate = 100000 // under 150 kB/s
	if b.minTSOSegs(c) != 1 || b.tsoSegsGoal(c) != 1 {
		t.Errorf("at 100 kB/s: min_tso_segs %d, goal %d; want 1, 1", b.minTSOSegs(c), b.tsoSegsGoal(c))
	}
	c.pacingRate = 10_000_000 // 9765 bytes a millisecond: 6 segments
	if b.minTSOSegs(c) != 2 || b.tsoSegsGoal(c) != 6 {
		t.Errorf("at 10 MB/s: min_tso_segs %d, goal %d; want 2, 6", b.minTSOSegs(c), b.tsoSegsGoal(c))
	}
	c.pacingRate = 1 << 40
	if b.tsoSegsGoal(c) != (gsoMaxSize-1-320)/1448 {
		t.Errorf("at a huge rate: goal %d; want the legacy GSO limit's %d", b.tsoSegsGoal(c), (gsoMaxSize-1-320)/1448)
	}
	c.pacingRate = 10_000_000
	if got := b.quantizationBudget(c, 31); got != 50 {
		t.Errorf("budget of 31: %d; want 31 + 3×6 = 49, rounded up to 50", got)
	}
	b.mode, b.cycleIdx = bbrProbeBW, 0
	if got := b.quantizationBudget(c, 31); got != 52 {
		t.Errorf("budget of 31 while probing: %d; want 52", got)
	}
	// bdp: 1000 packets/s × 10 ms = 10 packets, rounded up.
	if got := b.bdp(bwOf(1, time.Millisecond), bbrUnit); got != 10 {
		t.Errorf("bdp of 1 packet/ms over 10 ms: %d; want 10", got)
	}
}

// BBR's pacing, through the sender: segments leave at the pacing rate
// (after the first ten), each held one by the connection's one pacing
// timer, and the window set by BBR rather than slow start.
func TestBBRPacesSegments(t *testing.T) {
	h := newHarness(t, Options{CongestionControl: "bbr"})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	e := c.ep.(*endpoint)
	if !e.snd.cc.pacingNeeded || e.snd.ctl == nil {
		t.Fatal("a bbr connection: not paced, or no rate controller")
	}
	if b := e.snd.ops.(*bbr); b.minRTTUS != 100000 || !b.hasSeenRTT {
		t.Fatalf("a passive open's BBR: min_rtt %d µs, has_seen_rtt %v; want the handshake's 100 ms, true (init after the RTT sample)", b.minRTTUS, b.hasSeenRTT)
	}
	o := c.writeInitialWindow(30)
	c.saw(o...)
	// The first ten go at once (fq's and TCP's pacing spare them); after
	// the ACK of them, what the window allows leaves in GSO packets, one
	// every packet's time at the pacing rate.
	h.advance(100 * time.Millisecond)
	c.ackUpTo(segEnd(o[9]))
	// The ACK's rate sample reached BBR (.cong_control): ten packets
	// over the 100 ms from their departure.
	if b := e.snd.ops.(*bbr); b.maxBW() != bwOf(10, 100*time.Millisecond) || b.rttCnt != 1 {
		t.Fatalf("after the ACK of the initial window: BBR's bandwidth %d, rounds %d; want %d (10 packets per 100 ms), 1", b.maxBW(), b.rttCnt, bwOf(10, 100*time.Millisecond))
	}
	rate := e.snd.cc.pacingRate
	var sent []out
	for range 10 {
		sent = append(sent, dataOuts(h.advanceUntilOut(50*time.Millisecond))...)
	}
	if len(sent) < 10 {
		t.Fatalf("after the ACK: %d segments; want the window's room, paced:\n%s", len(sent), outsString(sent))
	}
	var times []time.Duration
	for _, s := range sent {
		if len(times) == 0 || times[len(times)-1] != s.at {
			times = append(times, s.at)
		}
	}
	if len(times) < 2 {
		t.Fatalf("every segment left at one instant; want them paced:\n%s", outsString(sent))
	}
	segs := e.snd.tsoSegs(1448)
	gap := time.Duration(uint64(segs*1448) * uint64(time.Second) / rate)
	for i := 1; i < len(times); i++ {
		if d := times[i] - times[i-1]; d < gap/2 || d > gap+time.Microsecond {
			t.Errorf("departures %v and %v: %v apart; want a GSO packet's time at %d B/s, %v (less at most half of it for lateness)", times[i-1], times[i], d, rate, gap)
		}
	}
	timer := e.tm.pace.t
	h.advance(100 * time.Millisecond)
	c.saw(h.take()...)
	c.ackUpTo(c.seen)
	h.advance(200 * time.Millisecond)
	if e.tm.pace.t != timer {
		t.Error("the pacing timer was replaced; want one timer per connection, re-armed")
	}
}

// CUBIC and Reno do not pace: a window's room leaves at once.
func TestCubicDoesNotPace(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	e := c.ep.(*endpoint)
	o := c.writeInitialWindow(40)
	c.saw(o...)
	h.advance(100 * time.Millisecond)
	c.ackUpTo(segEnd(o[9]))
	r := dataOuts(h.take())
	if len(r) < 10 || e.snd.cc.pacingNeeded || e.tm.pace.armed {
		t.Errorf("CUBIC after an ACK of the initial window: %d segments at once, pacing %v, pacing timer %v; want the window's room at once, no pacing", len(r), e.snd.cc.pacingNeeded, e.tm.pace.armed)
	}
}

// tcp_info with BBR: the pacing and delivery rates, and BBR's own state
// as TCP_CC_INFO gives it, plus its mode; another algorithm has none.
func TestBBRInfo(t *testing.T) {
	h := newHarness(t, Options{CongestionControl: "bbr"})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	o := c.writeInitialWindow(30)
	c.saw(o...)
	h.advance(100 * time.Millisecond)
	c.ackUpTo(segEnd(o[9]))
	in, ok := InfoOf(c.ep)
	if !ok {
		t.Fatal("InfoOf: not netemu's TCP")
	}
	// 10 segments of 1448 bytes over 100 ms: 144800 B/s, less what the
	// rate's 2^-24 packets/µs steps cut.
	bw := uint64(bwOf(10, 100*time.Millisecond)) * 1448 * 1000000 >> bwScale
	if in.BBR.Mode != "STARTUP" || in.BBR.Bandwidth != bw || bw < 144700 || in.BBR.MinRTT != 100*time.Millisecond || in.BBR.PacingGain != bbrHighGain || in.BBR.CwndGain != bbrHighGain {
		t.Errorf("BBR info %+v; want STARTUP, about 144800 B/s, min RTT 100 ms, gains 2.885", in.BBR)
	}
	if in.DeliveryRate != 144800 || in.PacingRate == 0 {
		t.Errorf("delivery rate %d, pacing rate %d; want 144800 B/s and a rate", in.DeliveryRate, in.PacingRate)
	}
	h = newHarness(t, Options{})
	c = h.acceptAfter(linuxPeer, 100*time.Millisecond)
	if in, _ := InfoOf(c.ep); in.BBR != (BBRInfo{}) {
		t.Errorf("CUBIC's info has BBR state %+v; want none", in.BBR)
	}
}
