package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/waiter"
)

// What an ACK did, Linux's FLAG_* of tcp_input.c.
const (
	flagData           = 1 << iota // it carried data
	flagWinUpdate                  // it updated the window
	flagDataAcked                  // new data acknowledged
	flagRetransAcked               // a retransmitted segment acknowledged
	flagSynAcked                   // our SYN acknowledged
	flagDataSacked                 // new SACK information
	flagSndUnaAdvanced             // snd_una moved
	flagDSACK                      // it carried a D-SACK
	flagSetXmitTimer               // set the TLP or RTO timer
	flagLostRetrans                // a retransmission was lost
	flagOrigSackAcked              // never-retransmitted data below high_seq delivered
	flagDSACKTLP                   // the D-SACK covers the TLP retransmission

	flagAcked           = flagDataAcked | flagSynAcked
	flagNotDup          = flagData | flagWinUpdate | flagAcked
	flagForwardProgress = flagAcked | flagDataSacked
)

// sackState collects what SACK processing found (tcp_sacktag_state).
type sackState struct {
	reord                 seqnum.Value
	hasReord              bool
	firstSackt, lastSackt time.Duration
	hasSackt              bool
	delivered             uint32
	flag                  int
}

// onAck processes the acknowledgement of seg (tcp_ack). It returns false
// for an ACK of data never sent, which the caller drops.
func (s *sender) onAck(seg *segment, flag int) bool {
	e := s.e
	ack := seg.ack
	if after(ack, s.nxt) {
		return false // tcp_ack: an ACK of unsent data
	}
	priorUna := s.una
	priorInFlight := s.inFlight()
	priorDelivered := s.delivered
	priorLost := s.lost
	priorSacked := s.sackedOut
	var st sackState
	st.reord = s.nxt
	s.rs = rateSample{priorInFlight: priorInFlight, rttUS: -1}

	if ack.LessThan(priorUna) {
		// An old ACK (tcp_ack's old_ack): only its SACK blocks count.
		if seg.nSACK > 0 && e.sackOK {
			s.sacktag(seg, priorUna, &st)
			flag |= st.flag
			if flag&flagDataSacked != 0 || s.ca != caOpen {
				s.fastretransAlert(priorUna, &flag, 0, 0)
				s.xmitRecovery()
			}
		}
		return true
	}

	// Window update (tcp_ack_update_window, RFC 9293 section 3.10.7.4);
	// a SYN's window is never scaled (RFC 7323 section 2.2).
	nwin := uint32(seg.wnd)
	if !seg.has(synFlag) {
		nwin <<= s.wscale
	}
	if s.una.LessThan(ack) || s.wl1.LessThan(seg.seq) || (seg.seq == s.wl1 && nwin > s.wnd) {
		if s.wnd != nwin {
			flag |= flagWinUpdate
			s.wnd = nwin
			s.maxWnd = max(s.maxWnd, nwin)
		}
		s.wl1 = seg.seq
	}
	if after(ack, priorUna) {
		flag |= flagSndUnaAdvanced
		s.retransmits = 0
	}
	// tcp_ack's prior_fack: the highest SACKed sequence, or una, before
	// this ACK moves either.
	priorFack := s.highestSacked()
	if seg.nSACK > 0 && e.sackOK {
		s.sacktag(seg, priorUna, &st)
		flag |= st.flag
	}
	priorPackets := s.packetsOut
	s.una = ack

	flag |= s.cleanRtxQueue(priorUna, priorFack, &st, seg)
	s.initPendingCC()
	s.ackProbe(priorPackets)
	if flag&flagAcked != 0 || flag&flagDataSacked != 0 {
		e.kaSent = 0
	}
	if s.tlpHigh {
		s.processTLPAck(ack, flag)
	}
	delivered := s.delivered - priorDelivered
	lostBefore := s.lost
	if s.dubious(flag) {
		// tcp_ack: an ACK that moves nothing is a duplicate, which
		// without SACK stands for a segment delivered.
		dupack := 0
		if flag&(flagSndUnaAdvanced|flagNotDup|flagDSACK) == 0 {
			dupack = 1
		}
		s.fastretransAlert(priorUna, &flag, priorSacked, dupack)
	}
	if flag&flagSetXmitTimer != 0 {
		s.setXmitTimer()
	}
	// The ACK's delivery-rate sample, from what it delivered in all
	// (tcp_newly_delivered, after the duplicate ACKs counted above) and
	// what it found lost (tcp_rate_gen).
	s.rateGen(e.now(), s.delivered-priorDelivered, s.lost-priorLost)
	if s.ctl == nil {
		s.congControl(ack, delivered, flag, s.lost-lostBefore, priorInFlight)
	} else if priorPackets > 0 && flag&flagSynAcked == 0 {
		// tcp_cong_control with .cong_control: the algorithm does it
		// all. Not for an ACK with nothing in flight before it (tcp_ack's
		// no_queue), nor for the handshake's: Linux runs it on an active
		// open's SYN-ACK before the algorithm's init, which then starts
		// it afresh, and a passive open's child has nothing queued.
		s.refreshCC()
		s.ctl.congControl(&s.cc, &s.rs)
	}
	s.xmitRecovery()
	if s.packetsOut == 0 && e.tm.xmitKind != xmitProbe {
		e.tm.xmit.stop()
	}
	// Room in the send buffer wakes a blocked writer (tcp_check_space);
	// the buffer follows the window (tcp_sndbuf_expand).
	if flag&flagSndUnaAdvanced != 0 {
		if s.shouldExpandSndbuf() {
			s.limit = max(s.limit, s.sndbufLimit())
		}
		if s.writable() {
			s.noSpace = false
			e.notify |= waiter.WritableEvents
		}
	}
	return true
}

// shouldExpandSndbuf is tcp_should_expand_sndbuf: not while the window
// is being reduced, nor when the window is not the limit.
func (s *sender) shouldExpandSndbuf() bool {
	return !s.inCwndReduction() && s.inFlight() < s.cc.cwnd
}

// dubious is tcp_ack_is_dubious: an ACK that may signal trouble.
func (s *sender) dubious(flag int) bool {
	return flag&flagNotDup == 0 || flag&flagDataSacked != 0 || s.ca != caOpen
}

// cleanRtxQueue removes what ack covers, takes the RTT samples and tells
// congestion control (tcp_clean_rtx_queue).
func (s *sender) cleanRtxQueue(priorUna, priorFack seqnum.Value, st *sackState, seg *segment) int {
	e := s.e
	now := e.now()
	flag := 0
	var firstAckt, lastAckt time.Duration
	hasAckt := false
	acked := uint32(0)
	priorSacked := s.sackedOut
	// The lowest segment acknowledged that was neither retransmitted nor
	// SACKed: its own, as tcp_clean_rtx_queue keeps it.
	var reord seqnum.Value
	hasReord := false
	for s.qn > 0 {
		t := s.seg(0)
		if after(t.end, s.una) {
			if t.seq.LessThan(s.una) {
				// A head acknowledged in part: trim it (tcp_trim_head).
				s.trimHead(t)
			}
			break
		}
		f := t.flags
		if f&(segRetrans|segEverRetrans) != 0 {
			if f&segRetrans != 0 {
				s.retransOut--
			}
			flag |= flagRetransAcked
		} else if f&segSacked == 0 {
			lastAckt = t.sentAt
			if !hasAckt {
				firstAckt, hasAckt = lastAckt, true
			}
			if !hasReord || t.seq.LessThan(reord) {
				reord, hasReord = t.seq, true
			}
			if t.end.LessThanEq(s.highSeq) {
				flag |= flagOrigSackAcked
			}
		}
		if f&segSacked != 0 {
			s.sackedOut--
		} else if e.sackOK {
			s.delivered++
			if !(f&segEverRetrans != 0 && s.spuriousRetrans(t)) {
				s.rackAdvance(f, t.end, t.sentAt)
			}
		}
		if f&segLost != 0 {
			s.lostOut--
		}
		s.packetsOut--
		acked++
		if f&segSyn != 0 {
			flag |= flagSynAcked
			s.retransStamp = 0
		} else {
			flag |= flagDataAcked
		}
		s.rateSkbDelivered(t)
		if d := dataLen(t); d > 0 {
			s.n -= d
			s.buf.drop(d)
		}
		s.popSeg()
	}

	// RTT samples (tcp_ack_update_rtt): from the first segment newly
	// acknowledged that was never retransmitted (Karn, RFC 6298 section
	// 3), else from SACKed ones, else from the timestamp echo.
	// The rate sample's RTT (rs->rtt_us) is the congestion-control RTT
	// in microseconds as Linux counts them (tcp_ack_update_rtt).
	seqRTT, caRTT := time.Duration(-1), time.Duration(-1)
	rs := &s.rs
	if hasAckt && flag&flagRetransAcked == 0 {
		seqRTT, caRTT = now-firstAckt, now-lastAckt
		rs.rttUS = usSince(now, lastAckt)
		// A lone small segment's ACK may have waited for the delayed-ACK
		// timer: its RTT is no news of the path (FLAG_ACK_MAYBE_DELAYED).
		rs.isAckDelayed = acked == 1 && priorSacked == 0 && priorUna.Size(s.una) < seqnum.Size(s.cc.mss) &&
			rs.priorDelivered+1 == s.delivered && flag&flagSynAcked == 0
	}
	sackRTT := time.Duration(-1)
	if st.hasSackt {
		sackRTT = now - st.firstSackt
		caRTT = now - st.lastSackt
		rs.rttUS = usSince(now, st.lastSackt)
	}
	if seqRTT < 0 {
		seqRTT = sackRTT
	}
	if seqRTT < 0 && e.tsOK && seg.hasTS && seg.tsEcr != 0 && flag&flagAcked != 0 {
		d := time.Duration(e.tsVal()-seg.tsEcr) * time.Millisecond
		if int32(e.tsVal()-seg.tsEcr) >= 0 {
			seqRTT, caRTT = d, d
			// tcp_rtt_tsopt_us: whole milliseconds, at least one.
			rs.rttUS = max(int64(e.tsVal()-seg.tsEcr), 1) * 1000
		}
	}
	rttUpdated := false
	if seqRTT >= 0 {
		s.minRTT.update(now, max(caRTT, time.Microsecond))
		s.rtt.sample(seqRTT, uint32(s.una), uint32(s.nxt), s.cc.hz)
		s.rto = s.rtt.rto
		s.backoff = 0
		rttUpdated = true
	}
	if flag&flagAcked != 0 {
		flag |= flagSetXmitTimer
		if !e.sackOK {
			s.removeRenoSacks(int(acked))
			// Without SACK marks, progress after a retransmission
			// cannot be credited to an original transmission.
			if flag&flagRetransAcked != 0 {
				flag &^= flagOrigSackAcked
			}
		} else if hasReord && reord.LessThan(priorFack) {
			// A hole filled by data never retransmitted is reordering.
			s.checkSackReordering(reord)
		}
	} else if s.qn > 0 && rttUpdated && sackRTT >= 0 && sackRTT > now-s.seg(0).sentAt {
		flag |= flagSetXmitTimer
	}
	if flag&flagSynAcked != 0 && flag&flagDataAcked == 0 {
		// The handshake's ACK gives congestion control no RTT: a
		// passive open's child socket never queued its SYN-ACK (the
		// sample goes to the estimator alone, tcp_synack_rtt_meas), and
		// an active open's sample comes before the module's init
		// (tcp_init_transfer). CUBIC's delay_min starts from data.
		caRTT = -1
	}
	if acked > 0 || st.delivered > 0 {
		s.refreshCC()
		s.ops.pktsAcked(&s.cc, acked+st.delivered, caRTT)
	}
	return flag
}

// trimHead drops the acknowledged front of a partly acknowledged head
// segment.
func (s *sender) trimHead(t *txSeg) {
	cut := int(t.seq.Size(s.una))
	if t.flags&segSyn != 0 {
		t.flags &^= segSyn
		cut--
	}
	if cut > 0 {
		s.n -= cut
		s.buf.drop(cut)
	}
	t.seq = s.una
}

// spuriousRetrans is tcp_skb_spurious_retrans: a retransmitted segment
// whose ACK echoes a timestamp from before its latest transmission
// (tcp_tsopt_ecr_before), so the original was what arrived.
func (s *sender) spuriousRetrans(t *txSeg) bool {
	e := s.e
	ecr := e.rcv.lastTSEcr
	if t.flags&(segRetrans|segEverRetrans) == 0 || !e.tsOK || ecr == 0 {
		return false
	}
	sent := uint32(t.sentAt/time.Millisecond) + e.tsOff // tsVal at sentAt
	return int32(ecr-sent) < 0
}

// highestSacked is tcp_highest_sack_seq: the end of the highest SACKed
// segment, or una when nothing is SACKed.
func (s *sender) highestSacked() seqnum.Value {
	if s.sackedOut == 0 || !after(s.fack, s.una) {
		return s.una
	}
	return s.fack
}

// sacktag marks the segments the SACK blocks of seg cover
// (tcp_sacktag_write_queue, tcp_sacktag_one), detecting a D-SACK (RFC
// 2883) in the first block. The blocks are walked in sequence order, as
// tcp_sacktag_write_queue sorts them: a receiver lists its newest block
// first, and data tagged in the order listed would look delivered below
// data tagged just before it — reordering that never happened.
func (s *sender) sacktag(seg *segment, priorUna seqnum.Value, st *sackState) {
	type block struct {
		sackBlock
		dsack bool
	}
	var blocks [maxSACKBlocks]block
	n := 0
	for i := 0; i < seg.nSACK; i++ {
		b := seg.sacks[i]
		if !b.start.LessThan(b.end) {
			continue
		}
		dsack := false
		if i == 0 {
			// tcp_check_dsack: the first block below the ACK, or inside
			// the second, reports a duplicate, unless it is dubious. A
			// duplicate of data already acknowledged has no segment left
			// to tag: it counts against the episode's retransmissions
			// here.
			if b.start.LessThan(seg.ack) || (seg.nSACK > 1 && b.end.LessThanEq(seg.sacks[1].end) && !b.start.LessThan(seg.sacks[1].start)) {
				if dups := s.dsackSeen(b, st); dups > 0 {
					dsack = true
					if s.undoValid && s.undoRetrans > 0 && !after(b.end, priorUna) && after(b.end, s.undoMarker) {
						s.undoRetrans = max(0, s.undoRetrans-int(dups))
					}
				}
			}
		}
		if !dsack && (after(b.end, s.nxt) || !after(b.end, priorUna)) {
			continue
		}
		// Insert in order of start.
		k := n
		for k > 0 && after(blocks[k-1].start, b.start) {
			blocks[k] = blocks[k-1]
			k--
		}
		blocks[k] = block{b, dsack}
		n++
	}
	for _, b := range blocks[:n] {
		for j := 0; j < s.qn; j++ {
			t := s.seg(j)
			if t.end.LessThanEq(b.start) {
				continue
			}
			if !t.seq.LessThan(b.end) {
				break
			}
			if !(b.start.LessThanEq(t.seq) && t.end.LessThanEq(b.end)) {
				continue // only whole segments are tagged
			}
			s.tagOne(t, b.dsack, st)
		}
	}
	// tcp_sacktag_write_queue: a segment never retransmitted, SACKed
	// below the highest SACKed one, arrived out of order (unless the
	// connection is recovering from a timeout with nothing to undo).
	if st.hasReord && (s.ca != caLoss || s.undoValid) {
		s.checkSackReordering(st.reord)
	}
}

// dsackSeen is tcp_dsack_seen: how many segments the D-SACK b reports
// received twice (its length in segments of mss, at least one), or 0 for
// one not to be believed: longer than the largest window the peer
// offered, or bringing the duplicates reported in all above the
// retransmissions ever sent. A believed D-SACK counts its segments as
// delivered (a needless retransmission arrived), and widens RACK's
// reordering window at the next update only once reordering has been
// seen and it is not the answer to a tail-loss probe.
func (s *sender) dsackSeen(b sackBlock, st *sackState) uint32 {
	n := uint32(b.start.Size(b.end))
	if n > s.maxWnd {
		return 0
	}
	dups := uint32(1)
	if mss := s.cc.mss; n > mss {
		dups = (n + mss - 1) / mss
	} else if s.tlpHigh && s.tlpHighSeq == b.end {
		st.flag |= flagDSACKTLP
	}
	s.dsackDups += dups
	if s.dsackDups > s.totalRetrans {
		return 0
	}
	if s.reordSeen > 0 && st.flag&flagDSACKTLP == 0 {
		s.rack.dsackSeen = true
	}
	st.flag |= flagDSACK
	s.delivered += dups
	return dups
}

// tagOne is tcp_sacktag_one for one segment.
func (s *sender) tagOne(t *txSeg, dsack bool, st *sackState) {
	f := t.flags
	if dsack && f&(segRetrans|segEverRetrans) != 0 {
		if s.undoValid && s.undoRetrans > 0 && after(t.end, s.undoMarker) {
			s.undoRetrans--
		}
		if f&segSacked != 0 && (!st.hasReord || t.seq.LessThan(st.reord)) {
			st.reord, st.hasReord = t.seq, true
		}
	}
	if t.end.LessThanEq(s.una) {
		return
	}
	if f&segSacked == 0 {
		s.rackAdvance(f, t.end, t.sentAt)
		if f&segRetrans != 0 {
			if f&segLost != 0 {
				f &^= segLost | segRetrans
				s.lostOut--
				s.retransOut--
			}
		} else {
			if f&segEverRetrans == 0 {
				if t.seq.LessThan(s.highestSacked()) && (!st.hasReord || t.seq.LessThan(st.reord)) {
					st.reord, st.hasReord = t.seq, true
				}
				if t.end.LessThanEq(s.highSeq) {
					st.flag |= flagOrigSackAcked
				}
				if !st.hasSackt {
					st.firstSackt, st.hasSackt = t.sentAt, true
				}
				st.lastSackt = t.sentAt
			}
			if f&segLost != 0 {
				f &^= segLost
				s.lostOut--
			}
		}
		f |= segSacked
		if s.sackedOut == 0 || after(t.end, s.fack) {
			s.fack = t.end
		}
		st.flag |= flagDataSacked
		s.sackedOut++
		s.delivered++
		st.delivered++
	}
	if dsack && f&segRetrans != 0 {
		f &^= segRetrans
		s.retransOut--
	}
	t.flags = f
	s.rateSkbDelivered(t) // tcp_sacktag_walk, once the marks are set
}

// checkSackReordering is tcp_check_sack_reordering: data from low on,
// delivered after data above it (up to the highest SACKed), is
// reordering; its distance, in segments rounded up, raises the
// reordering degree, up to tcp_max_reordering.
func (s *sender) checkSackReordering(low seqnum.Value) {
	fack := s.highestSacked()
	if !low.LessThan(fack) {
		return
	}
	mss := max(s.cc.mss, 1)
	if metric := uint32(low.Size(fack)); metric > s.reordering*mss {
		s.reordering = min((metric+mss-1)/mss, 300) // net.ipv4.tcp_max_reordering
	}
	s.reordSeen++
}

// congControl is tcp_cong_control: during a window reduction PRR sets
// the window; otherwise congestion control may raise it.
func (s *sender) congControl(ack seqnum.Value, ackedSacked uint32, flag int, newlyLost uint32, priorInFlight uint32) {
	defer s.updatePacingRate()
	if s.inCwndReduction() {
		s.cwndReduction(int(ackedSacked), int(newlyLost), flag)
		return
	}
	// tcp_may_raise_cwnd
	raise := flag&flagDataAcked != 0
	if s.reordering > 3 {
		raise = flag&flagForwardProgress != 0
	}
	if !raise {
		return
	}
	s.refreshCC()
	s.ops.congAvoid(&s.cc, ack, ackedSacked)
	s.cwndStamp = s.e.now()
}

// Pacing ratios, per cent (net.ipv4.tcp_pacing_ss_ratio, _ca_ratio).
const (
	pacingSSRatio = 200
	pacingCARatio = 120
)

// updatePacingRate is tcp_update_pacing_rate, which tcp_cong_control
// ends with and the passive open's move to ESTABLISHED calls: twice the
// window's rate (mss·max(cwnd, packets_out)/srtt) in slow start while
// cwnd is under half of ssthresh, 1.2 times it otherwise. Linux divides
// by srtt_us, srtt in eighths of a microsecond; the rate keeps Linux's
// integer steps. Not for an algorithm with .cong_control, which sets its
// own; the algorithms that come here are not paced (pacing.go), and the
// rate is read by HyStart and TSO sizing.
func (s *sender) updatePacingRate() {
	c := &s.cc
	rate := uint64(c.mss) * (10000 << 3) // mss · (USEC_PER_SEC/100) << 3
	if c.cwnd < c.ssthresh/2 {
		rate *= pacingSSRatio
	} else {
		rate *= pacingCARatio
	}
	rate *= uint64(max(c.cwnd, s.packetsOut))
	if srtt8 := uint64(s.rtt.srtt * 8 / time.Microsecond); srtt8 > 0 {
		rate /= srtt8
	}
	c.pacingRate = rate
}

// cwndReduction is PRR (RFC 6937) as Linux's tcp_cwnd_reduction: while
// more is in flight than ssthresh, send in proportion to what is
// delivered; below it, grow back towards ssthresh no faster than slow
// start, by one more on an ACK that advances una with nothing newly lost.
func (s *sender) cwndReduction(newlyAckedSacked, newlyLost, flag int) {
	if newlyAckedSacked <= 0 || s.priorCwnd == 0 {
		return
	}
	s.prrDelivered += uint32(newlyAckedSacked)
	inflight := int(s.inFlight())
	delta := int(s.cc.ssthresh) - inflight
	sndcnt := 0
	if delta < 0 {
		dividend := uint64(s.cc.ssthresh)*uint64(s.prrDelivered) + uint64(s.priorCwnd) - 1
		sndcnt = int(dividend/uint64(s.priorCwnd)) - int(s.prrOut)
	} else {
		sndcnt = max(int(s.prrDelivered)-int(s.prrOut), newlyAckedSacked)
		if flag&flagSndUnaAdvanced != 0 && newlyLost == 0 {
			sndcnt++
		}
		sndcnt = min(delta, sndcnt)
	}
	// The reduction's first ACK always lets one segment out: the fast
	// retransmission.
	if s.prrOut == 0 {
		sndcnt = max(sndcnt, 1)
	}
	s.cc.cwnd = uint32(max(inflight+sndcnt, 1))
}

// ackProbe is what tcp_ack does for the zero-window probe: every ACK
// clears the count of unanswered probes (icsk_probes_out), not their
// backoff; with nothing in flight before it, tcp_ack_probe either clears
// the backoff and the timer, once the window takes the next segment, or
// restarts the timer from now.
func (s *sender) ackProbe(priorPackets uint32) {
	s.probesOut = 0
	if priorPackets > 0 || s.unsent() == 0 {
		return
	}
	tm := &s.e.tm
	if next := seqnum.Size(min(s.unsent(), int(s.cc.mss))); !after(s.nxt.Add(next), s.wndEnd()) {
		s.probeBackoff = 0
		if tm.xmitKind == xmitProbe {
			tm.xmit.stop()
		}
		return
	}
	if !tm.xmit.armed || tm.xmitKind == xmitProbe {
		s.resetProbeTimer()
	}
}

// dataLen is the data bytes of a segment, without SYN and FIN.
func dataLen(t *txSeg) int {
	n := int(t.seq.Size(t.end))
	if t.flags&segSyn != 0 {
		n--
	}
	if t.flags&segFin != 0 {
		n--
	}
	return n
}
