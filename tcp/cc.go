package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// Congestion control, shaped like Linux's struct tcp_congestion_ops
// (include/net/tcp.h): the connection owns a ccConn, keeps its read-only
// fields current, and calls the hooks of one congestion value at the points
// where Linux calls the ops. The algorithms follow net/ipv4/tcp_cong.c (Reno
// and the shared helpers) and net/ipv4/tcp_cubic.c (CUBIC with HyStart) of
// Linux 6.x; each rule names the function it comes from.

// caState is Linux's icsk_ca_state.
type caState uint8

const (
	caOpen caState = iota
	caDisorder
	caCWR
	caRecovery
	caLoss
)

// caEvent is Linux's enum tcp_ca_event (the ones netemu raises).
type caEvent uint8

const (
	caEventTxStart     caEvent = iota // first transmit with nothing in flight (after idle)
	caEventCwndRestart                // cwnd restarted after idle (tcp_cwnd_restart)
	caEventCompleteCWR                // CWR or Recovery ended (tcp_end_cwnd_reduction)
	caEventLoss                       // RTO fired: tcp_enter_loss
)

// ccConn holds the sender fields congestion control reads and writes,
// named after Linux's struct tcp_sock. The connection owns it and keeps
// the read-only fields current before each call.
type ccConn struct {
	cwnd      uint32 // snd_cwnd, in packets (segments)
	cwndCnt   uint32 // snd_cwnd_cnt
	cwndClamp uint32 // snd_cwnd_clamp
	ssthresh  uint32 // snd_ssthresh; initially infiniteSsthresh
	// read-only for congestion control:
	mss         uint32        // mss_cache, bytes
	srtt        time.Duration // smoothed RTT; 0 before the first sample
	minRTT      time.Duration // tcp_min_rtt; 0 before the first sample
	inFlight    uint32        // tcp_packets_in_flight
	cwndLimited bool          // tcp_is_cwnd_limited, computed by the connection
	sndNxt      seqnum.Value  // snd_nxt
	sndUna      seqnum.Value  // snd_una
	now         time.Duration // the connection's clock (tcp_clock_us / tcp_mstamp), any fixed origin
	hz          int           // Linux's HZ for quantities Linux counts in jiffies (default 250)
	// lsndtime is tcp_sock.lsndtime: when data was last sent, on the same
	// clock as now. Linux raises CA_EVENT_TX_START in tcp_event_data_sent
	// before it stamps lsndtime for the new transmit, so at caEventTxStart
	// this is still the time of the last transmit before the idle period;
	// cubictcp_cwnd_event shifts its epoch by now-lsndtime.
	lsndtime time.Duration
	// pacingRate is sk_pacing_rate in bytes per second, as
	// tcp_update_pacing_rate last set it; 0 before the first update
	// (Linux starts at ~0UL, which reads the same where it is used).
	// CUBIC's HyStart reads it (hystart_ack_delay); an algorithm with
	// .cong_control (BBR) sets it, and the sender paces at it when
	// pacingNeeded.
	pacingRate uint64

	// Read-only, for the algorithms that take delivery-rate samples
	// (tcp_rate.c's fields of tcp_sock; rate.go keeps them):
	delivered      uint32        // tp->delivered: packets delivered, ever (SACKed, ACKed, D-SACKed)
	deliveredStamp time.Duration // tp->delivered_mstamp: when delivered last grew
	lost           uint32        // tp->lost: packets marked lost, ever
	caState        caState       // icsk_ca_state
	wstamp         time.Duration // tcp_wstamp_ns: the departure time of the next segment; later than now while pacing holds it
	rng            randSource    // get_random_u32_below: the host's seeded randomness

	// appLimited is tp->app_limited: while nonzero, the delivered count
	// (plus what was in flight) at which the current application-limited
	// stretch ends; samples of packets sent before then are marked
	// app-limited. The sender sets it (tcp_rate_check_app_limited); an
	// algorithm may too (BBR in PROBE_RTT).
	appLimited uint32

	// pacingNeeded is sk_pacing_status == SK_PACING_NEEDED: the sender
	// paces every segment at pacingRate (TCP's internal pacing, Linux's
	// way without the fq qdisc). An algorithm's init sets it (bbr_init);
	// nothing clears it, as nothing clears Linux's.
	pacingNeeded bool
}

// randSource is the randomness an algorithm draws from: the protocol's
// generator, seeded from the host's seed, so a run on the virtual clock
// draws the same numbers every time.
type randSource interface {
	randBelow(n uint32) uint32 // get_random_u32_below: uniform in [0, n)
}

const infiniteSsthresh = 0x7fffffff // TCP_INFINITE_SSTHRESH

// defaultHZ is used when ccConn.hz is 0: CONFIG_HZ=250, the common
// distribution kernel setting and this machine's.
const defaultHZ = 250

// congestion is one algorithm's state for one connection (tcp_congestion_ops + its private ca struct).
type congestion interface {
	name() string                                         // the registry's name: "cubic", "reno"
	init(c *ccConn)                                       // .init
	ssthresh(c *ccConn) uint32                            // .ssthresh: new ssthresh on loss/ECN
	congAvoid(c *ccConn, ack seqnum.Value, acked uint32)  // .cong_avoid: acked = packets newly delivered
	setState(c *ccConn, s caState)                        // .set_state
	cwndEvent(c *ccConn, ev caEvent)                      // .cwnd_event
	pktsAcked(c *ccConn, acked uint32, rtt time.Duration) // .pkts_acked; rtt < 0 when there is no sample
	undoCwnd(c *ccConn) uint32                            // .undo_cwnd
}

// rateController is an algorithm with .cong_control: on every ACK that
// acknowledges or SACKs something it is handed the ACK's delivery-rate
// sample and sets cwnd and the pacing rate itself. The connection then
// runs none of its own window rules for it: no PRR (tcp_cong_control,
// tcp_rack_reo_timeout), no congAvoid, no tcp_update_pacing_rate, no
// cwnd = ssthresh when a reduction ends (tcp_end_cwnd_reduction), no
// restart after idle (tcp_slow_start_after_idle_check) and no cut for an
// application-limited window (tcp_cwnd_validate). congAvoid is never
// called.
type rateController interface {
	congestion
	congControl(c *ccConn, rs *rateSample) // .cong_control
}

// tsoSizer is an algorithm with .min_tso_segs: the fewest segments a
// GSO packet is sized to (tcp_tso_segs), instead of
// net.ipv4.tcp_min_tso_segs.
type tsoSizer interface {
	minTSOSegs(c *ccConn) int
}

// sndbufSizer is an algorithm with .sndbuf_expand: the send buffer
// grows to this many windows of segments (tcp_sndbuf_expand) instead
// of 2.
type sndbufSizer interface {
	sndbufExpand() int
}

// inSlowStart is tcp_in_slow_start (include/net/tcp.h): slow start while
// cwnd is strictly below ssthresh, so a window equal to ssthresh is in
// congestion avoidance (RFC 5681 §3.1 leaves cwnd == ssthresh to the
// implementation).
func inSlowStart(c *ccConn) bool {
	return c.cwnd < c.ssthresh
}

// tcpSlowStart is tcp_slow_start (net/ipv4/tcp_cong.c), RFC 5681 §3.1 with
// every newly delivered packet counted: cwnd grows by acked but not past
// ssthresh, then is clamped to cwndClamp. The acked packets that did not fit
// under ssthresh are returned for congestion avoidance; the clamp does not
// change that leftover, as in Linux, which subtracts before clamping.
func tcpSlowStart(c *ccConn, acked uint32) uint32 {
	cwnd := min(c.cwnd+acked, c.ssthresh)
	acked -= cwnd - c.cwnd
	c.cwnd = min(cwnd, c.cwndClamp)
	return acked
}

// tcpCongAvoidAI is tcp_cong_avoid_ai (net/ipv4/tcp_cong.c): cwnd grows by
// one for every w packets acked, cwndCnt carrying the remainder between
// calls. Credit collected while w was larger (cwndCnt >= w on entry) is paid
// as a single packet first, then the new acks are counted; a stretch ACK of
// several multiples of w adds that many packets at once.
func tcpCongAvoidAI(c *ccConn, w, acked uint32) {
	if c.cwndCnt >= w {
		c.cwndCnt = 0
		c.cwnd++
	}
	c.cwndCnt += acked
	if c.cwndCnt >= w {
		delta := c.cwndCnt / w
		c.cwndCnt -= delta * w
		c.cwnd += delta
	}
	c.cwnd = min(c.cwnd, c.cwndClamp)
}

// renoControl is Reno's entry in the registry (ccregistry.go).
var renoControl = CongestionControl{
	Name:  "reno",
	About: "Reno: slow start, then one packet more per window of ACKs; half the window on loss (RFC 5681)",
	fresh: func() congestion { return &reno{} },
}

// reno is Linux's tcp_reno (net/ipv4/tcp_cong.c), RFC 5681 §3.1: slow start
// to ssthresh, then one packet per window of acks; half the window on loss.
type reno struct {
	// priorCwnd stands for tcp_sock.prior_cwnd, which tcp_reno_undo_cwnd
	// reads. Linux stores it just before every call of .ssthresh
	// (tcp_init_cwnd_reduction, tcp_enter_loss), so ssthresh records it.
	priorCwnd uint32
}

func (*reno) name() string { return "reno" }

func (r *reno) init(*ccConn) { *r = reno{} }

// ssthresh is tcp_reno_ssthresh: max(cwnd/2, 2).
func (r *reno) ssthresh(c *ccConn) uint32 {
	r.priorCwnd = c.cwnd
	return max(c.cwnd>>1, 2)
}

// congAvoid is tcp_reno_cong_avoid: nothing unless cwnd limits the sender;
// slow start first, and the acks slow start had no room for go to
// tcp_cong_avoid_ai with w = cwnd.
func (*reno) congAvoid(c *ccConn, _ seqnum.Value, acked uint32) {
	if !c.cwndLimited {
		return
	}
	if inSlowStart(c) {
		acked = tcpSlowStart(c, acked)
		if acked == 0 {
			return
		}
	}
	tcpCongAvoidAI(c, c.cwnd, acked)
}

func (*reno) setState(*ccConn, caState)                {}
func (*reno) cwndEvent(*ccConn, caEvent)               {}
func (*reno) pktsAcked(*ccConn, uint32, time.Duration) {}

// undoCwnd is tcp_reno_undo_cwnd: the larger of the current window and the
// one before the reduction being undone.
func (r *reno) undoCwnd(c *ccConn) uint32 {
	return max(c.cwnd, r.priorCwnd)
}
