package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// Delivery-rate sampling as net/ipv4/tcp_rate.c of Linux 6.18 does it.
// Every ACK that acknowledges or SACKs data yields one sample: the
// packets delivered between the transmission of the most recently sent
// packet it covers and now, over the longer of two intervals, the time
// the flight of packets took to send (from the first packet of the
// flight to that packet) and the time their ACKs took to come back (from
// the delivery that preceded the flight's first packet to now). Taking
// the longer keeps a burst of ACKs that the network or the receiver
// compressed from reading as a rate faster than the path's.
//
// A sample is application-limited when the sender ran out of data at
// some point while its packets were in flight: the rate it shows is the
// application's, not the path's. The sender marks the moment
// (tcp_rate_check_app_limited, in write); packets sent before the
// packets in flight at that moment are delivered carry the mark.
//
// Times are microseconds as Linux keeps them (tcp_clock_us): each
// instant is truncated to the microsecond before it is subtracted.

// rateSample is one ACK's delivery-rate sample, Linux's struct
// rate_sample. A sender keeps the sample of the ACK it is processing
// (sender.rs); congestion control reads it (rateController).
type rateSample struct {
	priorStamp     time.Duration // prior_mstamp: delivered_mstamp when the sampled packet was sent
	hasPrior       bool          // a packet with delivery state was (S)ACKed: prior_mstamp != 0
	priorDelivered uint32        // prior_delivered: tp->delivered when the sampled packet was sent
	lastEndSeq     seqnum.Value  // last_end_seq: the end of the sampled packet
	priorInFlight  uint32        // prior_in_flight: packets in flight before the ACK

	delivered     int32  // delivered: packets delivered over the interval; -1: no sample
	intervalUS    int64  // interval_us: the sample's interval; -1: no sample
	sndIntervalUS int64  // snd_interval_us: the send phase
	rcvIntervalUS int64  // rcv_interval_us: the ACK phase
	rttUS         int64  // rtt_us: the RTT of the last packet (S)ACKed; -1: none
	ackedSacked   uint32 // acked_sacked: packets newly ACKed or SACKed
	losses        uint32 // losses: packets newly marked lost

	isAppLimited bool // is_app_limited: the sampled packet was sent while application-limited
	isRetrans    bool // is_retrans: the sampled packet was retransmitted
	isAckDelayed bool // is_ack_delayed: the ACK may have been delayed (FLAG_ACK_MAYBE_DELAYED)
}

// stampUS is an instant on the microsecond clock (tcp_clock_us).
func stampUS(t time.Duration) int64 { return int64(t / time.Microsecond) }

// usSince is tcp_stamp_us_delta: microseconds from t0 to t1, never
// negative.
func usSince(t1, t0 time.Duration) int64 { return max(stampUS(t1)-stampUS(t0), 0) }

// sentAfter is tcp_skb_sent_after: a packet sent at t1 (µs) ending at
// seq1 left after one sent at t2 ending at seq2, the sequence numbers
// breaking a tie.
func sentAfter(t1, t2 int64, seq1, seq2 seqnum.Value) bool {
	return t1 > t2 || (t1 == t2 && after(seq1, seq2))
}

// rateSkbSent is tcp_rate_skb_sent: a segment just (re)transmitted
// takes the connection's delivery state. A transmission with nothing
// else in flight (packets_out counted without a fresh segment) starts a
// new flight: its send time is where the next samples' intervals start.
func (s *sender) rateSkbSent(t *txSeg, fresh bool) {
	out := s.packetsOut
	if fresh {
		out-- // appendSeg counted it; Linux counts it after the transmit
	}
	if out == 0 {
		s.firstTxStamp = t.sentAt
		s.deliveredStamp = t.sentAt
	}
	t.txFirstTx = s.firstTxStamp
	t.txDeliveredStamp = s.deliveredStamp
	t.txDelivered = s.delivered
	t.txAppLimited = s.cc.appLimited != 0
	t.flags |= segRateStamped
}

// rateSkbDelivered is tcp_rate_skb_delivered: a segment the ACK
// acknowledges or SACKs. Of those an ACK covers, the most recently sent
// gives the sample's starting point; a segment SACKed gives its state
// once, not again when it is cumulatively acknowledged.
func (s *sender) rateSkbDelivered(t *txSeg) {
	if t.flags&segRateStamped == 0 {
		return
	}
	rs := &s.rs
	sent := stampUS(t.sentAt)
	if rs.priorDelivered == 0 || sentAfter(sent, stampUS(s.firstTxStamp), t.end, rs.lastEndSeq) {
		rs.priorDelivered = t.txDelivered
		rs.priorStamp, rs.hasPrior = t.txDeliveredStamp, true
		rs.isAppLimited = t.txAppLimited
		rs.isRetrans = t.flags&(segRetrans|segEverRetrans) != 0
		rs.lastEndSeq = t.end
		// The send phase: from the flight's first transmission to
		// this one, the most recent delivered.
		s.firstTxStamp = t.sentAt
		rs.intervalUS = usSince(s.firstTxStamp, t.txFirstTx)
	}
	if t.flags&segSacked != 0 {
		t.flags &^= segRateStamped
	}
}

// rateGen is tcp_rate_gen: the ACK's sample, from what it delivered
// and what it found lost, now. A sample is valid (delivered and intervalUS
// not -1) when a segment it covered carried delivery state and its
// interval is at least the minimum RTT: a shorter one means the
// delivery was not timed by this flight (a spurious retransmission, or
// ACKs of packets sent long ago).
func (s *sender) rateGen(now time.Duration, delivered, lost uint32) {
	rs := &s.rs
	// The application-limited stretch ends once what was in flight
	// when it began is delivered.
	if s.cc.appLimited != 0 && int32(s.delivered-s.cc.appLimited) > 0 {
		s.cc.appLimited = 0
	}
	if delivered > 0 {
		s.deliveredStamp = now
	}
	rs.ackedSacked = delivered
	rs.losses = lost
	if !rs.hasPrior {
		rs.delivered, rs.intervalUS = -1, -1
		return
	}
	rs.delivered = int32(s.delivered - rs.priorDelivered)
	snd := rs.intervalUS
	ack := usSince(now, rs.priorStamp)
	rs.intervalUS = max(snd, ack)
	rs.sndIntervalUS, rs.rcvIntervalUS = snd, ack
	if rs.intervalUS < s.minRTTUS() {
		rs.intervalUS = -1
		return
	}
	// Keep the latest sample that is not application-limited, or an
	// application-limited one that shows a higher rate, for tcp_info's
	// delivery rate.
	if !rs.isAppLimited || uint64(rs.delivered)*uint64(s.rateIntervalUS) >= uint64(s.rateDelivered)*uint64(rs.intervalUS) {
		s.rateDelivered = uint32(rs.delivered)
		s.rateIntervalUS = uint32(rs.intervalUS)
		s.rateAppLimited = rs.isAppLimited
	}
}

// minRTTUS is tcp_min_rtt in microseconds: ~0U before the first sample.
func (s *sender) minRTTUS() int64 {
	m := s.minRTT.get()
	if m == 0 {
		return int64(^uint32(0))
	}
	return stampUS(m)
}

// rateCheckAppLimited is tcp_rate_check_app_limited, run when the
// application writes (tcp_sendmsg): the sender is application-limited
// if it has less than a segment unsent, the congestion window is not
// full and every packet marked lost has been retransmitted. (Linux also
// asks that nothing wait in the host's qdisc or device; netemu's
// segments leave at once.)
func (s *sender) rateCheckAppLimited() {
	if s.unsent() >= int(s.cc.mss) || s.inFlight() >= s.cc.cwnd || s.lostOut > s.retransOut {
		return
	}
	s.cc.appLimited = s.delivered + s.inFlight()
	if s.cc.appLimited == 0 {
		s.cc.appLimited = 1
	}
}

// deliveryRate is tcpi_delivery_rate (tcp_compute_delivery_rate): the
// rate of the sample rateGen kept, in bytes per second; 0 before one.
func (s *sender) deliveryRate() uint64 {
	if s.rateDelivered == 0 || s.rateIntervalUS == 0 {
		return 0
	}
	return uint64(s.rateDelivered) * uint64(s.cc.mss) * 1_000_000 / uint64(s.rateIntervalUS)
}
