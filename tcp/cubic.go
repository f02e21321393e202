package tcp

import (
	"math/bits"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// CUBIC as net/ipv4/tcp_cubic.c of Linux 6.x has it (module version 2.3),
// with the module parameters at their defaults: the window follows
// W(t) = C·(t-K)³ + W_max after a reduction (RFC 9438 §4.2), but never grows
// slower than an AIMD estimate of Reno (tcp_friendliness, RFC 9438 §4.3),
// and slow start ends early when HyStart sees an ACK train or a rising delay.
//
// Linux keeps the cubic epoch in jiffies (tcp_jiffies32) and HyStart in
// microseconds (tcp_mstamp); both are derived here from ccConn.now, jiffies
// at ccConn.hz, so the rounding of time to jiffies is Linux's too.

// Constants of tcp_cubic.c, module parameters at their defaults.
const (
	bictcpBetaScale  = 1024 // BICTCP_BETA_SCALE
	bictcpHZ         = 10   // BICTCP_HZ: the cubic's time unit is 2^-10 s
	cubicBeta        = 717  // beta: 717/1024 ≈ 0.7 (RFC 9438 §4.6 β_cubic)
	cubicBicScale    = 41   // bic_scale: C = 41·10/1024 ≈ 0.4 (RFC 9438 §4.2)
	fastConvergence  = true // fast_convergence
	tcpFriendliness  = true // tcp_friendliness
	hystartAckTrain  = true // hystart_detect & HYSTART_ACK_TRAIN
	hystartDelay     = true // hystart_detect & HYSTART_DELAY
	hystartLowWindow = 16   // hystart_low_window, packets
	hystartAckDelta  = 2000 // hystart_ack_delta_us: ACKs at most this far apart form a train

	hystartMinSamples = 8     // HYSTART_MIN_SAMPLES
	hystartDelayMin   = 4000  // HYSTART_DELAY_MIN, µs
	hystartDelayMax   = 16000 // HYSTART_DELAY_MAX, µs
)

// Scale factors cubictcp_register computes once.
const (
	// beta_scale: 8·(1024+β)/3/(1024-β) = 15, that is 8/α_cubic with
	// α_cubic = 3(1-β)/(1+β) (RFC 9438 §4.3): the Reno estimate gains a
	// packet per cwnd·beta_scale/8 packets acked.
	cubicBetaScale = 8 * (bictcpBetaScale + cubicBeta) / 3 / (bictcpBetaScale - cubicBeta)
	// cube_rtt_scale: C in units of 2^-10, i.e. bic_scale·10.
	cubeRTTScale = cubicBicScale * 10
	// cube_factor: 2^(10+3·BICTCP_HZ) / (bic_scale·10), so that
	// cubicRoot(cubeFactor·ΔW) is K = ∛(ΔW/C) in units of 2^-10 s.
	cubeFactor uint64 = (1 << (10 + 3*bictcpHZ)) / (cubicBicScale * 10)
)

// cubicControl is CUBIC's entry in the registry (ccregistry.go).
var cubicControl = CongestionControl{
	Name:  "cubic",
	About: "CUBIC with HyStart, Linux's default: the window follows a cubic of the time since the last loss (RFC 9438)",
	fresh: func() congestion { return &cubic{} },
}

// cubic is struct bictcp with the HyStart fields, plus priorCwnd.
type cubic struct {
	// Cleared by bictcp_reset (everything up to bictcp.unused).
	cnt            uint32 // ACKed packets per segment the window grows
	lastMaxCwnd    uint32 // W_max: cwnd before the last reduction
	lastCwnd       uint32 // cwnd at the last recomputation
	lastTime       uint32 // jiffies of the last recomputation
	bicOriginPoint uint32 // the cubic's plateau, packets
	bicK           uint32 // K, 2^-10 s from the epoch start to the plateau
	delayMin       uint32 // smallest RTT seen, µs
	epochStart     uint32 // jiffies when the epoch began; 0: no epoch
	ackCnt         uint32 // packets acked, for the Reno estimate
	tcpCwnd        uint32 // the Reno estimate W_est, packets

	// HyStart (bictcp_hystart_reset sets all but found).
	sampleCnt  uint8        // RTT samples taken this round
	found      bool         // slow start's exit was found; cleared by bictcp_reset
	roundStart uint32       // µs clock at the round's start
	endSeq     seqnum.Value // the round ends when snd_una passes this
	lastAck    uint32       // µs clock of the last ACK of the current train
	currRTT    uint32       // smallest RTT of this round, µs

	// priorCwnd stands for tcp_sock.prior_cwnd, read by tcp_reno_undo_cwnd,
	// which CUBIC uses as .undo_cwnd. Linux sets it just before each
	// .ssthresh call, so ssthresh records it; not CUBIC state, so
	// bictcp_reset leaves it.
	priorCwnd uint32
}

func (*cubic) name() string { return "cubic" }

// hz is ccConn.hz, or defaultHZ when the connection left it 0.
func hzOf(c *ccConn) uint32 {
	if c.hz <= 0 {
		return defaultHZ
	}
	return uint32(c.hz)
}

// jiffiesAt is tcp_jiffies32 at time d: d counted in 1/HZ s ticks, rounded
// down, from INITIAL_JIFFIES (include/linux/jiffies.h: -300·HZ as 32 bits,
// so the counter wraps 300 s after the origin, as a booted kernel's does,
// and the origin itself is not jiffy 0, which bictcp reads as "no epoch").
func jiffiesAt(d time.Duration, hz uint32) uint32 {
	return uint32(jiffies64(d, int(hz)))
}

// clockUS is bictcp_clock_us: the µs clock (tcp_mstamp) as 32 bits.
func clockUS(c *ccConn) uint32 {
	return uint32(c.now / time.Microsecond)
}

// usecsToJiffies is usecs_to_jiffies (include/linux/jiffies.h): rounded up.
func usecsToJiffies(us uint32, hz uint32) uint64 {
	return (uint64(us)*uint64(hz) + 999999) / 1000000
}

// cubicRoot returns ⌊∛a⌋ by Newton's iteration on integers.
//
// Linux's cubic_root (tcp_cubic.c) takes its first estimate from a 64-entry
// table indexed by the top bits of a and then one Newton step; its comment
// gives the result an average error of 0.195%. This root is exact, so a K
// computed here can differ from Linux's by that fraction of a percent (a few
// milliseconds of a K of seconds); it is not the same to within 1.
func cubicRoot(a uint64) uint32 {
	if a == 0 {
		return 0
	}
	// Start above the root: 2^⌈len/3⌉ > ∛a. From above, Newton's step
	// x ← (2x + a/x²)/3 decreases monotonically to ⌊∛a⌋ (the AM-GM
	// inequality keeps every iterate ≥ ⌊∛a⌋); stop when it stops falling.
	x := uint64(1) << ((bits.Len64(a) + 2) / 3)
	for {
		y := (2*x + a/(x*x)) / 3
		if y >= x {
			return uint32(x)
		}
		x = y
	}
}

// reset is bictcp_reset: the cubic state and HyStart's found, not the rest
// of HyStart's round.
func (ca *cubic) reset() {
	ca.cnt = 0
	ca.lastMaxCwnd = 0
	ca.lastCwnd = 0
	ca.lastTime = 0
	ca.bicOriginPoint = 0
	ca.bicK = 0
	ca.delayMin = 0
	ca.epochStart = 0
	ca.ackCnt = 0
	ca.tcpCwnd = 0
	ca.found = false
}

// hystartReset is bictcp_hystart_reset: a new round starts now and ends when
// everything sent so far (snd_nxt) is acked.
func (ca *cubic) hystartReset(c *ccConn) {
	now := clockUS(c)
	ca.roundStart = now
	ca.lastAck = now
	ca.endSeq = c.sndNxt
	ca.currRTT = ^uint32(0)
	ca.sampleCnt = 0
}

// init is cubictcp_init with hystart on (initial_ssthresh is then unused).
// It reads c.now and c.sndNxt for the first HyStart round.
func (ca *cubic) init(c *ccConn) {
	*ca = cubic{}
	ca.reset()
	ca.hystartReset(c)
}

// cwndEvent is cubictcp_cwnd_event. Only CA_EVENT_TX_START matters: after
// an idle period (application limited) the epoch start moves forward by the
// idle time, so the cubic resumes where it stopped rather than jumping ahead
// by the time it spent idle; never past now.
func (ca *cubic) cwndEvent(c *ccConn, ev caEvent) {
	if ev != caEventTxStart {
		return
	}
	hz := hzOf(c)
	now := jiffiesAt(c.now, hz)
	delta := int32(now - jiffiesAt(c.lsndtime, hz))
	if ca.epochStart != 0 && delta > 0 {
		ca.epochStart += uint32(delta)
		if int32(ca.epochStart-now) > 0 { // after(epoch_start, now)
			ca.epochStart = now
		}
	}
}

// update is bictcp_update: recompute cnt, the packets to ack per cwnd
// increment, so that cwnd reaches the cubic's value one delay_min from now.
func (ca *cubic) update(c *ccConn, cwnd, acked uint32) {
	hz := hzOf(c)
	now := jiffiesAt(c.now, hz)

	ca.ackCnt += acked

	// Recompute at most every HZ/32 jiffies while cwnd stands still.
	if ca.lastCwnd == cwnd && int32(now-ca.lastTime) <= int32(hz/32) {
		return
	}

	// cnt is worked out again only when the jiffy has moved on, or
	// after a window cut, which zeroed epochStart. The Reno estimate
	// counts the ACKs either way.
	if ca.epochStart == 0 || now != ca.lastTime {
		ca.lastCwnd = cwnd
		ca.lastTime = now

		if ca.epochStart == 0 {
			ca.epochStart = now // the epoch begins
			ca.ackCnt = acked
			ca.tcpCwnd = cwnd // W_est starts at cwnd (RFC 9438 §4.3)
			if ca.lastMaxCwnd <= cwnd {
				ca.bicK = 0
				ca.bicOriginPoint = cwnd
			} else {
				// K = ∛((W_max - cwnd)/C), RFC 9438 §4.2 eq. 2.
				ca.bicK = cubicRoot(cubeFactor * uint64(ca.lastMaxCwnd-cwnd))
				ca.bicOriginPoint = ca.lastMaxCwnd
			}
		}

		// t: time since the epoch began plus delay_min (the window for
		// one RTT ahead), in 2^-10 s. Linux converts the signed jiffy
		// difference to u64; the same here.
		t := uint64(int64(int32(now - ca.epochStart)))
		t += usecsToJiffies(ca.delayMin, hz)
		t <<= bictcpHZ
		t /= uint64(hz)

		var offs uint64 // |t - K|
		if t < uint64(ca.bicK) {
			offs = uint64(ca.bicK) - t
		} else {
			offs = t - uint64(ca.bicK)
		}
		// C·(t-K)³ in packets: cube_rtt_scale·offs³ >> (10+3·BICTCP_HZ).
		delta := uint32((cubeRTTScale * offs * offs * offs) >> (10 + 3*bictcpHZ))
		var target uint32
		if t < uint64(ca.bicK) {
			target = ca.bicOriginPoint - delta // concave: below the plateau
		} else {
			target = ca.bicOriginPoint + delta // convex: above it
		}

		if target > cwnd {
			ca.cnt = cwnd / (target - cwnd)
		} else {
			ca.cnt = 100 * cwnd // very small increment
		}

		// Without a W_max yet (no reduction so far) grow at least 5% per RTT.
		if ca.lastMaxCwnd == 0 && ca.cnt > 20 {
			ca.cnt = 20
		}
	}

	if tcpFriendliness {
		// W_est gains one packet per cwnd·beta_scale/8 packets acked,
		// i.e. α_cubic = 3(1-β)/(1+β) per window (RFC 9438 §4.3). Linux
		// loops subtracting; the quotient below takes the same steps
		// (while ackCnt > d: ackCnt -= d) at once.
		if d := (cwnd * cubicBetaScale) >> 3; d > 0 && ca.ackCnt > d {
			n := (ca.ackCnt - 1) / d
			ca.ackCnt -= n * d
			ca.tcpCwnd += n
		}
		if ca.tcpCwnd > cwnd { // the cubic is slower than Reno would be
			maxCnt := cwnd / (ca.tcpCwnd - cwnd)
			if ca.cnt > maxCnt {
				ca.cnt = maxCnt
			}
		}
	}

	// cnt is at least 2: the window grows by half a segment per segment
	// ACKed at most, so by half of itself per round trip.
	ca.cnt = max(ca.cnt, 2)
}

// congAvoid is cubictcp_cong_avoid: slow start below ssthresh, the acks left
// over after it go to the cubic increase.
func (ca *cubic) congAvoid(c *ccConn, _ seqnum.Value, acked uint32) {
	if !c.cwndLimited {
		return
	}
	if inSlowStart(c) {
		acked = tcpSlowStart(c, acked)
		if acked == 0 {
			return
		}
	}
	ca.update(c, c.cwnd, acked)
	tcpCongAvoidAI(c, ca.cnt, acked)
}

// ssthresh is cubictcp_recalc_ssthresh: the epoch ends; W_max is cwnd, or,
// when cwnd did not even reach the previous W_max, (1+β)/2 of cwnd to leave
// room for new flows (fast convergence, RFC 9438 §4.7); the new ssthresh is
// β·cwnd, at least 2 (RFC 9438 §4.6).
func (ca *cubic) ssthresh(c *ccConn) uint32 {
	ca.priorCwnd = c.cwnd
	ca.epochStart = 0
	if fastConvergence && c.cwnd < ca.lastMaxCwnd {
		ca.lastMaxCwnd = (c.cwnd * (bictcpBetaScale + cubicBeta)) / (2 * bictcpBetaScale)
	} else {
		ca.lastMaxCwnd = c.cwnd
	}
	return max((c.cwnd*cubicBeta)/bictcpBetaScale, 2)
}

// setState is cubictcp_state: entering Loss (an RTO) forgets the cubic and
// HyStart's exit and starts a new HyStart round (RFC 9438 §4.8).
func (ca *cubic) setState(c *ccConn, s caState) {
	if s == caLoss {
		ca.reset()
		ca.hystartReset(c)
	}
}

// undoCwnd is tcp_reno_undo_cwnd, CUBIC's .undo_cwnd in Linux 6.x.
func (ca *cubic) undoCwnd(c *ccConn) uint32 {
	return max(c.cwnd, ca.priorCwnd)
}

// pktsAcked is cubictcp_acked: keep delay_min, the smallest RTT (µs), and
// run HyStart in slow start (its detectors from hystart_low_window packets on).
func (ca *cubic) pktsAcked(c *ccConn, _ uint32, rtt time.Duration) {
	if rtt < 0 {
		return // no RTT sample on this ACK
	}
	hz := hzOf(c)
	// No delay sample counts in the first second of an epoch: the
	// queue a window cut has just drained would make it look too short.
	if ca.epochStart != 0 && int32(jiffiesAt(c.now, hz)-ca.epochStart) < int32(hz) {
		return
	}
	delay := uint32(rtt / time.Microsecond)
	if delay == 0 {
		delay = 1
	}
	if ca.delayMin == 0 || ca.delayMin > delay {
		ca.delayMin = delay
	}
	if !ca.found && inSlowStart(c) {
		ca.hystartUpdate(c, delay)
	}
}

// gsoMaxSize is sk_gso_max_size of a socket on a Linux device at its
// default GSO limit (GSO_LEGACY_MAX_SIZE, a device's gso_ipv4_max_size).
const gsoMaxSize = 65536

// hystartAckDelay is hystart_ack_delay: the time a GSO-sized burst takes
// at a quarter of the pacing rate, at most a millisecond; 0 before the
// connection has a rate (Linux's ~0UL rounds to 0 there). It allows for
// ACKs that GRO, TSO or a qdisc hold back.
func hystartAckDelay(c *ccConn) uint32 {
	if c.pacingRate == 0 {
		return 0
	}
	return uint32(min(1000, gsoMaxSize*4*1000000/c.pacingRate))
}

// hystartUpdate is hystart_update. Either detector ends slow start by
// setting ssthresh to the current cwnd.
func (ca *cubic) hystartUpdate(c *ccConn, delay uint32) {
	// A round ends when snd_una passes the snd_nxt of the round's start.
	if ca.endSeq.LessThan(c.sndUna) {
		ca.hystartReset(c)
	}
	// Rounds are counted from the first ACK, so that they start where a
	// flight's ACKs start; the detectors wait for hystart_low_window
	// (Linux 6.14, "tcp_cubic: fix incorrect HyStart round start
	// detection": before it, the first round began mid-flight at the ACK
	// that brought cwnd to 16, and every later one with it).
	if c.cwnd < hystartLowWindow {
		return
	}

	if hystartAckTrain {
		// ACKs closely spaced since the round began, spanning more than
		// half the minimum RTT plus the ACK-delay cushion, mean the pipe
		// is full. The threshold is halved because the socket does not
		// pace (SK_PACING_NONE).
		now := clockUS(c)
		if int32(now-ca.lastAck) <= hystartAckDelta {
			ca.lastAck = now
			threshold := (ca.delayMin + hystartAckDelay(c)) >> 1
			// Linux compares the signed difference with an unsigned
			// threshold, so C's conversions make it unsigned.
			if now-ca.roundStart > threshold {
				ca.found = true
				c.ssthresh = c.cwnd
			}
		}
	}

	if hystartDelay {
		// The round's smallest RTT, after HYSTART_MIN_SAMPLES samples,
		// above delay_min by more than delay_min/8 clamped to 4..16 ms.
		if ca.currRTT > delay {
			ca.currRTT = delay
		}
		if ca.sampleCnt < hystartMinSamples {
			ca.sampleCnt++
		} else {
			thresh := min(max(ca.delayMin>>3, hystartDelayMin), hystartDelayMax)
			if ca.currRTT > ca.delayMin+thresh {
				ca.found = true
				c.ssthresh = c.cwnd
			}
		}
	}
}
