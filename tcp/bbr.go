package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// BBR v1 as net/ipv4/tcp_bbr.c of Linux 6.18 runs it (with its later
// fixes: the ACK-aggregation allowance, the quantization budget, the
// departure-time view of what is in the network). BBR keeps a model of
// the path: the bottleneck bandwidth, the largest delivery rate sampled
// over the last ten round trips (rate.go gives a sample per ACK), and
// the round-trip propagation time, the smallest RTT of the last ten
// seconds. It paces at a gain times the bandwidth and caps what is in
// flight at a gain times the bandwidth-delay product; losses and delay
// do not cut the window as they do CUBIC's.
//
// Its modes: STARTUP doubles the rate every round until three rounds in
// a row fail to raise the bandwidth by a quarter; DRAIN then paces below
// it until the queue STARTUP built is gone; PROBE_BW cycles through
// eight phases of a round trip each, one pacing at 5/4 of the bandwidth
// to look for more, the next at 3/4 to drain what that queued, six at
// 1; PROBE_RTT, when the minimum RTT has not been seen again for ten
// seconds, holds the flight at four packets for 200 ms and a round to
// measure it. Beside the model: a long-term bandwidth for a path that
// polices (two intervals of consistent rate and heavy loss), an
// allowance for ACKs that arrive in bursts (extra_acked), and packet
// conservation for the first round of a loss recovery.
//
// Rates are in packets per microsecond scaled by 2^24 (BW_SCALE), gains
// in 256ths (BBR_SCALE), times in microseconds and jiffies as Linux
// keeps each.

// bbrControl is BBR's entry in the registry (ccregistry.go).
var bbrControl = CongestionControl{
	Name:  "bbr",
	About: "BBR: paces at its model of the bottleneck's rate and round-trip time (tcp_bbr.c)",
	Needs: CongestionNeeds{Pacing: true, RateSamples: true},
	fresh: func() congestion { return &bbr{} },
}

// Scales of BBR's fixed-point numbers.
const (
	bwScale  = 24 // BW_SCALE: a rate is packets/µs << 24
	bwUnit   = 1 << bwScale
	bbrScale = 8 // BBR_SCALE: a gain is in 256ths
	bbrUnit  = 1 << bbrScale
)

// BBR's parameters, tcp_bbr.c's constants.
const (
	bbrCycleLen       = 8                     // CYCLE_LEN: phases of PROBE_BW's gain cycle
	bbrBWRounds       = bbrCycleLen + 2       // bbr_bw_rtts: the bandwidth filter's window, in rounds
	bbrMinRTTWin      = 10                    // bbr_min_rtt_win_sec: the min-RTT filter's window, seconds
	bbrProbeRTTTime   = 200                   // bbr_probe_rtt_mode_ms: PROBE_RTT's least duration, ms
	bbrMinTSORate     = 1200000               // bbr_min_tso_rate, bits/s: below it, GSO packets of one segment
	bbrPacingMargin   = 1                     // bbr_pacing_margin_percent: pace 1 % below the rate
	bbrHighGain       = bbrUnit*2885/1000 + 1 // bbr_high_gain: 2/ln 2, STARTUP's gain
	bbrDrainGain      = bbrUnit * 1000 / 2885 // bbr_drain_gain: its inverse, DRAIN's
	bbrCwndGain       = bbrUnit * 2           // bbr_cwnd_gain: PROBE_BW's window, two BDPs
	bbrCycleRand      = 7                     // bbr_cycle_rand: PROBE_BW starts in one of 7 phases
	bbrCwndMinTarget  = 4                     // bbr_cwnd_min_target: the least window, packets
	bbrFullBWThresh   = bbrUnit * 5 / 4       // bbr_full_bw_thresh: a quarter more is growth
	bbrFullBWCount    = 3                     // bbr_full_bw_cnt: rounds without growth that fill the pipe
	bbrLTMinRounds    = 4                     // bbr_lt_intvl_min_rtts: a long-term interval's least rounds
	bbrLTLossThresh   = 50                    // bbr_lt_loss_thresh: 50/256 (~20 %) lost is lossy
	bbrLTBWRatio      = bbrUnit / 8           // bbr_lt_bw_ratio: rates within 1/8 are consistent
	bbrLTBWDiff       = 4000 / 8              // bbr_lt_bw_diff: or within 4 kbit/s, in bytes/s
	bbrLTBWMaxRounds  = 48                    // bbr_lt_bw_max_rtts: rounds the long-term rate is used
	bbrExtraAckedGain = bbrUnit               // bbr_extra_acked_gain
	bbrExtraAckedWin  = 5                     // bbr_extra_acked_win_rtts: rounds per extra_acked slot
	bbrAckEpochLimit  = 1 << 20               // bbr_ack_epoch_acked_reset_thresh
	bbrExtraAckedMax  = 100 * 1000            // bbr_extra_acked_max_us: the allowance is at most 100 ms of rate
)

// bbrCycleGains is bbr_pacing_gain: PROBE_BW's pacing gain in each phase.
var bbrCycleGains = [bbrCycleLen]uint32{
	bbrUnit * 5 / 4,                                      // probe for more bandwidth
	bbrUnit * 3 / 4,                                      // drain what probing queued, leave room for others
	bbrUnit, bbrUnit, bbrUnit, bbrUnit, bbrUnit, bbrUnit, // cruise
}

// bbrMode is enum bbr_mode.
type bbrMode uint8

const (
	bbrStartup  bbrMode = iota // BBR_STARTUP
	bbrDrain                   // BBR_DRAIN
	bbrProbeBW                 // BBR_PROBE_BW
	bbrProbeRTT                // BBR_PROBE_RTT
)

var bbrModeNames = [...]string{"STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"}

func (m bbrMode) String() string { return bbrModeNames[m] }

// bbr is struct bbr: one connection's BBR state.
type bbr struct {
	minRTTUS          uint32    // min_rtt_us: the min-RTT filter; ^0 before a sample
	minRTTStamp       uint32    // min_rtt_stamp: jiffies when it was last set
	probeRTTDoneStamp uint32    // probe_rtt_done_stamp: jiffies PROBE_RTT may end; 0 until the flight is down
	bw                maxFilter // bw: the bandwidth filter, over rounds
	rttCnt            uint32    // rtt_cnt: rounds so far
	nextRTTDelivered  uint32    // next_rtt_delivered: tp->delivered that ends the round
	cycleStamp        int64     // cycle_mstamp: µs the gain-cycle phase began

	mode               bbrMode
	prevCAState        caState // prev_ca_state: the CA state of the last ACK
	packetConservation bool    // packet_conservation: the first round of a recovery
	roundStart         bool    // round_start: this ACK began a round
	idleRestart        bool    // idle_restart: sending again after application-limited idle
	probeRTTRoundDone  bool    // probe_rtt_round_done: a round passed at the PROBE_RTT floor

	ltIsSampling    bool   // lt_is_sampling: a long-term interval is being measured
	ltRTTCnt        uint8  // lt_rtt_cnt: its rounds
	ltUseBW         bool   // lt_use_bw: the long-term rate is the estimate
	ltBW            uint32 // lt_bw: the long-term rate
	ltLastDelivered uint32 // lt_last_delivered: tp->delivered when the interval began
	ltLastStamp     uint32 // lt_last_stamp: delivered_mstamp then, in ms
	ltLastLost      uint32 // lt_last_lost: tp->lost then

	pacingGain    uint32 // pacing_gain
	cwndGain      uint32 // cwnd_gain
	fullBWReached bool   // full_bw_reached: STARTUP filled the pipe
	fullBWCnt     uint8  // full_bw_cnt: rounds without growth
	cycleIdx      uint8  // cycle_idx: the gain cycle's phase
	hasSeenRTT    bool   // has_seen_rtt: the pacing rate came from an RTT sample
	priorCwnd     uint32 // prior_cwnd: cwnd before a recovery or PROBE_RTT
	fullBW        uint32 // full_bw: the bandwidth the growth test compares with

	ackEpochStamp   int64     // ack_epoch_mstamp: µs the ACK-aggregation epoch began
	extraAcked      [2]uint16 // extra_acked: the largest excess delivered, per slot of 5 rounds
	ackEpochAcked   uint32    // ack_epoch_acked: packets delivered in the epoch (20 bits)
	extraAckedRTTs  uint8     // extra_acked_win_rtts: the current slot's age in rounds
	extraAckedIndex uint8     // extra_acked_win_idx: the current slot
}

func (*bbr) name() string { return "bbr" }

// maxFilter is lib/win_minmax.c's windowed maximum (minmax_running_max):
// the largest of the values seen within the last win units of time, kept
// as the best, second and third best of the window's thirds, so a value
// leaves the filter when it ages out even though no larger one came.
type maxFilter struct {
	s [3]struct{ t, v uint32 }
}

func (m *maxFilter) get() uint32 { return m.s[0].v }

// reset forgets every value but v at t (minmax_reset).
func (m *maxFilter) reset(t, v uint32) {
	for i := range m.s {
		m.s[i].t, m.s[i].v = t, v
	}
}

// update takes v at time t, for a window of win.
func (m *maxFilter) update(win, t, v uint32) {
	if v >= m.s[0].v || t-m.s[2].t > win {
		m.reset(t, v) // a new maximum, or the window held nothing
		return
	}
	switch {
	case v >= m.s[1].v:
		m.s[1].t, m.s[1].v = t, v
		m.s[2] = m.s[1]
	case v >= m.s[2].v:
		m.s[2].t, m.s[2].v = t, v
	}
	// Age the choices (minmax_subwin_update).
	dt := t - m.s[0].t
	switch {
	case dt > win:
		// The best is out of the window: the second moves up, and
		// again if it is out too.
		m.s[0], m.s[1] = m.s[1], m.s[2]
		m.s[2].t, m.s[2].v = t, v
		if t-m.s[0].t > win {
			m.s[0], m.s[1] = m.s[1], m.s[2]
			m.s[2].t, m.s[2].v = t, v
		}
	case m.s[1].t == m.s[0].t && dt > win/4:
		// A quarter of the window without a second choice: take one.
		m.s[1].t, m.s[1].v = t, v
		m.s[2] = m.s[1]
	case m.s[2].t == m.s[1].t && dt > win/2:
		// Half of it without a third.
		m.s[2].t, m.s[2].v = t, v
	}
}

// usSinceStamp is tcp_stamp_us_delta from a stamp already in µs.
func usSinceStamp(t1 time.Duration, t0US int64) int64 { return max(stampUS(t1)-t0US, 0) }

// jiffies is tcp_jiffies32 at the connection's now.
func (*bbr) jiffies(c *ccConn) uint32 { return jiffiesAt(c.now, hzOf(c)) }

// maxBW is bbr_max_bw: the filter's bandwidth.
func (b *bbr) maxBW() uint32 { return b.bw.get() }

// bandwidth is bbr_bw: the long-term rate while BBR believes a policer
// sets it, else the filter's.
func (b *bbr) bandwidth() uint32 {
	if b.ltUseBW {
		return b.ltBW
	}
	return b.maxBW()
}

// extraAckedMax is bbr_extra_acked: the allowance of the last 5 to 10
// rounds.
func (b *bbr) extraAckedMax() uint32 {
	return uint32(max(b.extraAcked[0], b.extraAcked[1]))
}

// rateBytes is bbr_rate_bytes_per_sec: rate (packets/µs << 24) times
// gain (256ths) in bytes per second, 1 % below it (the pacing margin).
// The order of the steps keeps a rate of terabits in 64 bits.
func rateBytes(c *ccConn, rate uint64, gain uint32) uint64 {
	rate *= uint64(c.mss)
	rate *= uint64(gain)
	rate >>= bbrScale
	rate *= 1000000 / 100 * (100 - bbrPacingMargin)
	return rate >> bwScale
}

// pacingRateOf is bbr_bw_to_pacing_rate (sk_max_pacing_rate is
// unlimited).
func pacingRateOf(c *ccConn, bw uint32, gain uint32) uint64 {
	return rateBytes(c, uint64(bw), gain)
}

// initPacingRate is bbr_init_pacing_rate_from_rtt: STARTUP's gain over
// the window per smoothed RTT, or per a nominal millisecond before the
// first RTT sample.
func (b *bbr) initPacingRate(c *ccConn) {
	rttUS := uint64(1000)
	if c.srtt > 0 {
		rttUS = max(uint64(c.srtt/time.Microsecond), 1)
		b.hasSeenRTT = true
	}
	bw := uint64(c.cwnd) * bwUnit / rttUS
	c.pacingRate = pacingRateOf(c, uint32(bw), bbrHighGain)
}

// setPacingRate is bbr_set_pacing_rate: the rate is bw times gain, but
// until STARTUP has filled the pipe it only ever rises.
func (b *bbr) setPacingRate(c *ccConn, bw, gain uint32) {
	rate := pacingRateOf(c, bw, gain)
	if !b.hasSeenRTT && c.srtt > 0 {
		b.initPacingRate(c)
	}
	if b.fullBWReached || rate > c.pacingRate {
		c.pacingRate = rate
	}
}

// minTSOSegs is bbr_min_tso_segs (.min_tso_segs): GSO packets of a
// single segment below 1.2 Mbit/s, else at least two.
func (b *bbr) minTSOSegs(c *ccConn) int {
	if c.pacingRate < bbrMinTSORate>>3 {
		return 1
	}
	return 2
}

// tsoSegsGoal is bbr_tso_segs_goal: the segments of a GSO packet at the
// pacing rate (a millisecond of it, sk_pacing_shift 10), ignoring the
// device's GSO limit but not the legacy one, at most 127.
func (b *bbr) tsoSegsGoal(c *ccConn) uint32 {
	const maxTCPHeader = 320 // MAX_TCP_HEADER on x86-64
	bytes := min(c.pacingRate>>pacingShift, gsoMaxSize-1-maxTCPHeader)
	segs := max(uint32(bytes/uint64(c.mss)), uint32(b.minTSOSegs(c)))
	return min(segs, 0x7f)
}

// saveCwnd is bbr_save_cwnd: remember the window to come back to after
// a recovery or PROBE_RTT; one they have already cut does not count.
func (b *bbr) saveCwnd(c *ccConn) {
	if b.prevCAState < caRecovery && b.mode != bbrProbeRTT {
		b.priorCwnd = c.cwnd
	} else {
		b.priorCwnd = max(b.priorCwnd, c.cwnd)
	}
}

// cwndEvent is bbr_cwnd_event: sending again after an application-
// limited pause restarts the ACK-aggregation epoch and, in PROBE_BW,
// paces at the bandwidth itself (no need to hurry); in PROBE_RTT it may
// end the probe.
func (b *bbr) cwndEvent(c *ccConn, ev caEvent) {
	if ev != caEventTxStart || c.appLimited == 0 {
		return
	}
	b.idleRestart = true
	b.ackEpochStamp = stampUS(c.now)
	b.ackEpochAcked = 0
	switch b.mode {
	case bbrProbeBW:
		b.setPacingRate(c, b.bandwidth(), bbrUnit)
	case bbrProbeRTT:
		b.checkProbeRTTDone(c)
	}
}

// bdp is bbr_bdp: bw times the minimum RTT times gain, in packets,
// rounded up; the initial window before any RTT sample.
func (b *bbr) bdp(bw, gain uint32) uint32 {
	if b.minRTTUS == ^uint32(0) {
		return initialCwnd
	}
	w := uint64(bw) * uint64(b.minRTTUS)
	return uint32(((w*uint64(gain))>>bbrScale + bwUnit - 1) / bwUnit)
}

// quantizationBudget is bbr_quantization_budget: room for three GSO
// packets more (one in the sender's qdisc, one in its device, one in
// the receiver's GRO or delayed ACK), the window rounded up to even, and
// two packets more in PROBE_BW's probing phase so that even a small BDP
// is probed above.
func (b *bbr) quantizationBudget(c *ccConn, cwnd uint32) uint32 {
	cwnd += 3 * b.tsoSegsGoal(c)
	cwnd = (cwnd + 1) &^ 1
	if b.mode == bbrProbeBW && b.cycleIdx == 0 {
		cwnd += 2
	}
	return cwnd
}

// inflight is bbr_inflight: the flight a gain of the BDP calls for.
func (b *bbr) inflight(c *ccConn, bw, gain uint32) uint32 {
	return b.quantizationBudget(c, b.bdp(bw, gain))
}

// inNetAtEDT is bbr_packets_in_net_at_edt: of inflightNow, what will
// still be in the network when the next packet departs (wstamp), at the
// estimated bandwidth; while probing upward, counting that packet's GSO
// packet too.
func (b *bbr) inNetAtEDT(c *ccConn, inflightNow uint32) uint32 {
	edt := max(c.wstamp, c.now)
	intervalUS := uint64((edt - c.now) / time.Microsecond)
	delivered := uint32(uint64(b.bandwidth()) * intervalUS >> bwScale)
	atEDT := inflightNow
	if b.pacingGain > bbrUnit {
		atEDT += b.tsoSegsGoal(c)
	}
	if delivered >= atEDT {
		return 0
	}
	return atEDT - delivered
}

// ackAggregationCwnd is bbr_ack_aggregation_cwnd: once STARTUP is over,
// the window allows for the largest recent burst of ACKs beyond the
// bandwidth, up to 100 ms of it.
func (b *bbr) ackAggregationCwnd() uint32 {
	if bbrExtraAckedGain == 0 || !b.fullBWReached {
		return 0
	}
	most := uint32(uint64(b.bandwidth()) * bbrExtraAckedMax / bwUnit)
	return min((bbrExtraAckedGain*b.extraAckedMax())>>bbrScale, most)
}

// recoverOrRestore is bbr_set_cwnd_to_recover_or_restore: packets lost
// come off the window; the first round of a recovery sends one packet
// per packet delivered (packet conservation), after which the window
// slow-starts back; leaving recovery restores the window from before
// it. It reports whether conservation sets the window.
func (b *bbr) recoverOrRestore(c *ccConn, rs *rateSample, acked uint32) (uint32, bool) {
	prev, state := b.prevCAState, c.caState
	cwnd := c.cwnd
	if rs.losses > 0 {
		cwnd = uint32(max(int32(cwnd-rs.losses), 1))
	}
	switch {
	case state == caRecovery && prev != caRecovery:
		b.packetConservation = true
		b.nextRTTDelivered = c.delivered // the round starts now
		cwnd = c.inFlight + acked        // what the application, TSQ or deferral left unused goes
	case prev >= caRecovery && state < caRecovery:
		cwnd = max(cwnd, b.priorCwnd)
		b.packetConservation = false
	}
	b.prevCAState = state
	if b.packetConservation {
		return max(cwnd, c.inFlight+acked), true
	}
	return cwnd, false
}

// setCwnd is bbr_set_cwnd: the window grows by what was delivered
// towards the target (gain BDPs, the aggregation allowance and the
// quantization budget), and once STARTUP has filled the pipe comes down
// to it; never below 4, and at 4 in PROBE_RTT.
func (b *bbr) setCwnd(c *ccConn, rs *rateSample, acked, bw, gain uint32) {
	cwnd := c.cwnd
	if acked > 0 {
		var conserving bool
		cwnd, conserving = b.recoverOrRestore(c, rs, acked)
		if !conserving {
			target := b.bdp(bw, gain)
			target += b.ackAggregationCwnd()
			target = b.quantizationBudget(c, target)
			switch {
			case b.fullBWReached:
				cwnd = min(cwnd+acked, target)
			case cwnd < target || c.delivered < initialCwnd:
				cwnd += acked
			}
			cwnd = max(cwnd, bbrCwndMinTarget)
		}
	}
	c.cwnd = min(cwnd, c.cwndClamp)
	if b.mode == bbrProbeRTT {
		c.cwnd = min(c.cwnd, bbrCwndMinTarget)
	}
}

// isNextCyclePhase is bbr_is_next_cycle_phase: a phase lasts a minimum
// RTT of deliveries; the probing phase longer, until the flight reaches
// its gain's target or a loss says it will not; the draining phase
// shorter, if the flight is down to the BDP already.
func (b *bbr) isNextCyclePhase(c *ccConn, rs *rateSample) bool {
	fullLength := usSinceStamp(c.deliveredStamp, b.cycleStamp) > int64(b.minRTTUS)
	if b.pacingGain == bbrUnit {
		return fullLength
	}
	inflight := b.inNetAtEDT(c, rs.priorInFlight)
	bw := b.maxBW()
	if b.pacingGain > bbrUnit {
		return fullLength && (rs.losses > 0 || inflight >= b.inflight(c, bw, b.pacingGain))
	}
	return fullLength || inflight <= b.inflight(c, bw, bbrUnit)
}

// advanceCyclePhase is bbr_advance_cycle_phase.
func (b *bbr) advanceCyclePhase(c *ccConn) {
	b.cycleIdx = (b.cycleIdx + 1) & (bbrCycleLen - 1)
	b.cycleStamp = stampUS(c.deliveredStamp)
}

// updateCyclePhase is bbr_update_cycle_phase.
func (b *bbr) updateCyclePhase(c *ccConn, rs *rateSample) {
	if b.mode == bbrProbeBW && b.isNextCyclePhase(c, rs) {
		b.advanceCyclePhase(c)
	}
}

// resetProbeBW is bbr_reset_probe_bw_mode: PROBE_BW begins at a phase
// drawn at random, never the draining one, so that flows that enter
// together do not probe together.
func (b *bbr) resetProbeBW(c *ccConn) {
	b.mode = bbrProbeBW
	b.cycleIdx = uint8(bbrCycleLen - 1 - c.rng.randBelow(bbrCycleRand))
	b.advanceCyclePhase(c)
}

// resetMode is bbr_reset_mode: back to STARTUP unless the pipe was
// found full, else to PROBE_BW.
func (b *bbr) resetMode(c *ccConn) {
	if !b.fullBWReached {
		b.mode = bbrStartup
		return
	}
	b.resetProbeBW(c)
}

// resetLTInterval is bbr_reset_lt_bw_sampling_interval.
func (b *bbr) resetLTInterval(c *ccConn) {
	b.ltLastStamp = uint32(stampUS(c.deliveredStamp) / 1000)
	b.ltLastDelivered = c.delivered
	b.ltLastLost = c.lost
	b.ltRTTCnt = 0
}

// resetLT is bbr_reset_lt_bw_sampling: no long-term rate.
func (b *bbr) resetLT(c *ccConn) {
	b.ltBW = 0
	b.ltUseBW = false
	b.ltIsSampling = false
	b.resetLTInterval(c)
}

// ltIntervalDone is bbr_lt_bw_interval_done: an interval measured bw.
// Two in a row within 1/8 (or 4 kbit/s) of each other mean a policer:
// their mean becomes the rate, paced at a gain of 1.
func (b *bbr) ltIntervalDone(c *ccConn, bw uint32) {
	if b.ltBW != 0 {
		d := int32(bw - b.ltBW) // the kernel's abs() of a u32 difference
		if d < 0 {
			d = -d
		}
		diff := uint32(d)
		if diff*bbrUnit <= bbrLTBWRatio*b.ltBW || rateBytes(c, uint64(diff), bbrUnit) <= bbrLTBWDiff {
			b.ltBW = (bw + b.ltBW) >> 1
			b.ltUseBW = true
			b.pacingGain = bbrUnit
			b.ltRTTCnt = 0
			return
		}
	}
	b.ltBW = bw
	b.resetLTInterval(c)
}

// ltSampling is bbr_lt_bw_sampling: the policer detector. An interval
// starts at a loss (when a policer's tokens have run out), lasts 4 to 16
// rounds, and ends at a loss once at least 20 % of what was delivered
// was lost; application-limited samples end it unmeasured. The
// long-term rate is used for 48 rounds, then PROBE_BW starts over.
func (b *bbr) ltSampling(c *ccConn, rs *rateSample) {
	if b.ltUseBW {
		if b.mode == bbrProbeBW && b.roundStart {
			b.ltRTTCnt++
			if b.ltRTTCnt >= bbrLTBWMaxRounds {
				b.resetLT(c)
				b.resetProbeBW(c)
			}
		}
		return
	}
	if !b.ltIsSampling {
		if rs.losses == 0 {
			return
		}
		b.resetLTInterval(c)
		b.ltIsSampling = true
	}
	if rs.isAppLimited {
		b.resetLT(c)
		return
	}
	if b.roundStart {
		b.ltRTTCnt++
	}
	if b.ltRTTCnt < bbrLTMinRounds {
		return
	}
	if b.ltRTTCnt > 4*bbrLTMinRounds {
		b.resetLT(c) // too long
		return
	}
	if rs.losses == 0 {
		return
	}
	lost := c.lost - b.ltLastLost
	delivered := c.delivered - b.ltLastDelivered
	if delivered == 0 || lost<<bbrScale < bbrLTLossThresh*delivered {
		return
	}
	t := uint32(stampUS(c.deliveredStamp)/1000) - b.ltLastStamp
	if int32(t) < 1 {
		return // under a millisecond: wait
	}
	if t >= ^uint32(0)/1000 {
		b.resetLT(c) // too long to multiply
		return
	}
	t *= 1000
	bw := uint64(delivered) * bwUnit / uint64(t)
	b.ltIntervalDone(c, uint32(bw))
}

// updateBW is bbr_update_bw: count rounds (a round ends when a packet
// sent after the last round ended is delivered), feed the policer
// detector, and put the sample's rate in the filter unless it is
// application-limited and below the filter's.
func (b *bbr) updateBW(c *ccConn, rs *rateSample) {
	b.roundStart = false
	if rs.delivered < 0 || rs.intervalUS <= 0 {
		return // no sample
	}
	if int32(rs.priorDelivered-b.nextRTTDelivered) >= 0 {
		b.nextRTTDelivered = c.delivered
		b.rttCnt++
		b.roundStart = true
		b.packetConservation = false
	}
	b.ltSampling(c, rs)
	bw := uint64(rs.delivered) * bwUnit / uint64(rs.intervalUS)
	if !rs.isAppLimited || bw >= uint64(b.maxBW()) {
		b.bw.update(bbrBWRounds, b.rttCnt, uint32(bw))
	}
}

// updateAckAggregation is bbr_update_ack_aggregation: in an epoch that
// starts whenever ACKs fall behind the bandwidth, what is delivered
// beyond what the bandwidth would have delivered is the aggregation;
// its largest (at most cwnd) is kept per slot of 5 rounds, two slots.
func (b *bbr) updateAckAggregation(c *ccConn, rs *rateSample) {
	if bbrExtraAckedGain == 0 || rs.ackedSacked == 0 || rs.delivered < 0 || rs.intervalUS <= 0 {
		return
	}
	if b.roundStart {
		b.extraAckedRTTs = min(0x1f, b.extraAckedRTTs+1)
		if b.extraAckedRTTs >= bbrExtraAckedWin {
			b.extraAckedRTTs = 0
			b.extraAckedIndex ^= 1
			b.extraAcked[b.extraAckedIndex] = 0
		}
	}
	epochUS := uint32(usSinceStamp(c.deliveredStamp, b.ackEpochStamp))
	expected := uint32(uint64(b.bandwidth()) * uint64(epochUS) / bwUnit)
	if b.ackEpochAcked <= expected || b.ackEpochAcked+rs.ackedSacked >= bbrAckEpochLimit {
		b.ackEpochAcked = 0
		b.ackEpochStamp = stampUS(c.deliveredStamp)
		expected = 0
	}
	b.ackEpochAcked = min(0xfffff, b.ackEpochAcked+rs.ackedSacked)
	extra := min(b.ackEpochAcked-expected, c.cwnd)
	if extra > uint32(b.extraAcked[b.extraAckedIndex]) {
		b.extraAcked[b.extraAckedIndex] = uint16(extra)
	}
}

// checkFullBW is bbr_check_full_bw_reached: at each round's start, a
// bandwidth a quarter above the last mark is growth; three rounds
// without growth, not application-limited, mean the pipe is full.
func (b *bbr) checkFullBW(rs *rateSample) {
	if b.fullBWReached || !b.roundStart || rs.isAppLimited {
		return
	}
	thresh := uint32(uint64(b.fullBW) * bbrFullBWThresh >> bbrScale)
	if b.maxBW() >= thresh {
		b.fullBW = b.maxBW()
		b.fullBWCnt = 0
		return
	}
	b.fullBWCnt++
	b.fullBWReached = b.fullBWCnt >= bbrFullBWCount
}

// checkDrain is bbr_check_drain: STARTUP ends in DRAIN (ssthresh marks
// the BDP, for tcp_info), and DRAIN ends once what will be in the
// network at the next departure is down to the BDP.
func (b *bbr) checkDrain(c *ccConn) {
	if b.mode == bbrStartup && b.fullBWReached {
		b.mode = bbrDrain
		c.ssthresh = b.inflight(c, b.maxBW(), bbrUnit)
	}
	if b.mode == bbrDrain && b.inNetAtEDT(c, c.inFlight) <= b.inflight(c, b.maxBW(), bbrUnit) {
		b.resetProbeBW(c)
	}
}

// checkProbeRTTDone is bbr_check_probe_rtt_done: once PROBE_RTT's time
// is up, the min-RTT filter restarts its ten seconds, the window comes
// back and the mode is STARTUP or PROBE_BW again.
func (b *bbr) checkProbeRTTDone(c *ccConn) {
	now := b.jiffies(c)
	if b.probeRTTDoneStamp == 0 || int32(now-b.probeRTTDoneStamp) <= 0 {
		return
	}
	b.minRTTStamp = now
	c.cwnd = max(c.cwnd, b.priorCwnd)
	b.resetMode(c)
}

// updateMinRTT is bbr_update_min_rtt: the min-RTT filter takes a
// sample at or below it, or any sample (not from a delayed ACK) once
// ten seconds passed without one; ten seconds without one also starts
// PROBE_RTT (unless sending just restarted from idle). In PROBE_RTT
// samples are marked application-limited; once the flight is down to 4
// packets it lasts 200 ms and at least a round.
func (b *bbr) updateMinRTT(c *ccConn, rs *rateSample) {
	now := b.jiffies(c)
	expired := int32(now-(b.minRTTStamp+bbrMinRTTWin*hzOf(c))) > 0
	if rs.rttUS >= 0 && (rs.rttUS <= int64(b.minRTTUS) || (expired && !rs.isAckDelayed)) {
		b.minRTTUS = uint32(rs.rttUS)
		b.minRTTStamp = now
	}
	if bbrProbeRTTTime > 0 && expired && !b.idleRestart && b.mode != bbrProbeRTT {
		b.mode = bbrProbeRTT
		b.saveCwnd(c)
		b.probeRTTDoneStamp = 0
	}
	if b.mode == bbrProbeRTT {
		c.appLimited = c.delivered + c.inFlight
		if c.appLimited == 0 {
			c.appLimited = 1
		}
		switch {
		case b.probeRTTDoneStamp == 0 && c.inFlight <= bbrCwndMinTarget:
			b.probeRTTDoneStamp = now + uint32((bbrProbeRTTTime*uint64(hzOf(c))+999)/1000) // msecs_to_jiffies
			b.probeRTTRoundDone = false
			b.nextRTTDelivered = c.delivered
		case b.probeRTTDoneStamp != 0:
			if b.roundStart {
				b.probeRTTRoundDone = true
			}
			if b.probeRTTRoundDone {
				b.checkProbeRTTDone(c)
			}
		}
	}
	if rs.delivered > 0 {
		b.idleRestart = false // sending has really restarted
	}
}

// updateGains is bbr_update_gains: each mode's pacing and window gains.
func (b *bbr) updateGains() {
	switch b.mode {
	case bbrStartup:
		b.pacingGain, b.cwndGain = bbrHighGain, bbrHighGain
	case bbrDrain:
		b.pacingGain, b.cwndGain = bbrDrainGain, bbrHighGain
	case bbrProbeBW:
		b.pacingGain = bbrCycleGains[b.cycleIdx]
		if b.ltUseBW {
			b.pacingGain = bbrUnit
		}
		b.cwndGain = bbrCwndGain
	case bbrProbeRTT:
		b.pacingGain, b.cwndGain = bbrUnit, bbrUnit
	}
}

// congControl is bbr_main (.cong_control): update the model from the
// ACK's sample (bbr_update_model, in Linux's order), then set the
// pacing rate and the window from it.
func (b *bbr) congControl(c *ccConn, rs *rateSample) {
	b.updateBW(c, rs)
	b.updateAckAggregation(c, rs)
	b.updateCyclePhase(c, rs)
	b.checkFullBW(rs)
	b.checkDrain(c)
	b.updateMinRTT(c, rs)
	b.updateGains()

	bw := b.bandwidth()
	b.setPacingRate(c, bw, b.pacingGain)
	b.setCwnd(c, rs, rs.ackedSacked, bw, b.cwndGain)
}

// init is bbr_init: STARTUP, nothing measured but what the handshake
// gave (the min RTT, srtt for the pacing rate), no ssthresh, and the
// socket paced from now on.
func (b *bbr) init(c *ccConn) {
	*b = bbr{}
	c.ssthresh = infiniteSsthresh
	b.prevCAState = caOpen
	b.minRTTUS = ^uint32(0)
	if c.minRTT > 0 {
		b.minRTTUS = uint32(c.minRTT / time.Microsecond)
	}
	b.minRTTStamp = b.jiffies(c)
	b.bw.reset(0, 0)
	b.initPacingRate(c)
	b.resetLT(c)
	b.mode = bbrStartup
	b.ackEpochStamp = stampUS(c.now)
	c.pacingNeeded = true // SK_PACING_NEEDED: no fq here, so TCP paces
}

// sndbufExpand is bbr_sndbuf_expand: three windows of buffer, as BBR
// may slow-start even in recovery.
func (*bbr) sndbufExpand() int { return 3 }

// undoCwnd is bbr_undo_cwnd: an undone reduction was a spurious slow
// down, so the full-pipe test and the policer detector start over; the
// window stays (BBR did not cut it).
func (b *bbr) undoCwnd(c *ccConn) uint32 {
	b.fullBW = 0
	b.fullBWCnt = 0
	b.resetLT(c)
	return c.cwnd
}

// ssthresh is bbr_ssthresh: entering recovery keeps the window to
// restore after it, and leaves ssthresh as it is.
func (b *bbr) ssthresh(c *ccConn) uint32 {
	b.saveCwnd(c)
	return c.ssthresh
}

// setState is bbr_set_state: an RTO ends a round, restarts the
// full-pipe test, and counts as a loss for the policer detector.
func (b *bbr) setState(c *ccConn, s caState) {
	if s != caLoss {
		return
	}
	b.prevCAState = caLoss
	b.fullBW = 0
	b.roundStart = true
	b.ltSampling(c, &rateSample{losses: 1})
}

func (*bbr) congAvoid(*ccConn, seqnum.Value, uint32)  {} // never called: congControl does it all
func (*bbr) pktsAcked(*ccConn, uint32, time.Duration) {}

// BBRInfo is BBR's state as Linux reports it (struct tcp_bbr_info,
// TCP_CC_INFO; ss -ti's bbr:(...)), plus its mode, which Linux keeps to
// itself.
type BBRInfo struct {
	Mode       string        // STARTUP, DRAIN, PROBE_BW or PROBE_RTT; "" for another algorithm
	Bandwidth  uint64        // bbr_bw_lo and _hi: the bandwidth estimate, bytes per second
	MinRTT     time.Duration // bbr_min_rtt; 0 before a sample (Linux reports ~0U µs)
	PacingGain uint32        // bbr_pacing_gain, in 256ths
	CwndGain   uint32        // bbr_cwnd_gain, in 256ths
	LongTerm   bool          // the long-term (policed) rate is the estimate (lt_use_bw)
	CycleIndex int           // PROBE_BW's phase (cycle_idx)
}

// info is bbr_get_info.
func (b *bbr) info(c *ccConn) BBRInfo {
	in := BBRInfo{
		Mode:       b.mode.String(),
		Bandwidth:  uint64(b.bandwidth()) * uint64(c.mss) * 1000000 >> bwScale,
		PacingGain: b.pacingGain,
		CwndGain:   b.cwndGain,
		LongTerm:   b.ltUseBW,
		CycleIndex: int(b.cycleIdx),
	}
	if b.minRTTUS != ^uint32(0) {
		in.MinRTT = time.Duration(b.minRTTUS) * time.Microsecond
	}
	return in
}
