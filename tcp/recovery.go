package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// Loss recovery as Linux's tcp_fastretrans_alert with RACK-TLP
// (net.ipv4.tcp_recovery 1, tcp_early_retrans 3): losses are found by
// RACK's time rule (RFC 8985), the window is reduced once per episode by
// PRR (RFC 6937), a tail loss is probed (RFC 8985 section 7), and a
// reduction is undone when D-SACKs or timestamps prove the
// retransmissions spurious.

// setState changes the congestion-avoidance state (tcp_set_ca_state).
func (s *sender) setState(st caState) {
	if s.ca == st {
		return
	}
	s.refreshCC()
	s.ops.setState(&s.cc, st)
	s.ca = st
}

// fastretransAlert is tcp_fastretrans_alert: the state machine of loss
// recovery, run on every dubious ACK. It updates the ACK's flags: RACK
// clears flagSetXmitTimer when it arms its reordering timer, which the
// caller must then leave in place.
func (s *sender) fastretransAlert(priorUna seqnum.Value, ackFlag *int, priorSacked uint32, dupacks int) {
	flag := *ackFlag
	defer func() { *ackFlag = flag }()
	if s.packetsOut == 0 && s.sackedOut > 0 {
		s.sackedOut = 0
	}
	// D. Leave CWR or Recovery once high_seq is acknowledged.
	if s.ca == caOpen {
		s.retransStamp = 0
	} else if !s.una.LessThan(s.highSeq) {
		switch s.ca {
		case caCWR:
			if s.una != s.highSeq {
				s.endCwndReduction()
				s.setState(caOpen)
			}
		case caRecovery:
			if !s.e.sackOK {
				s.sackedOut = 0 // tcp_reset_reno_sack
			}
			if s.tryUndoRecovery() {
				return
			}
			s.endCwndReduction()
		}
	}
	// E. Process the state.
	switch s.ca {
	case caRecovery:
		if flag&flagSndUnaAdvanced == 0 {
			if !s.e.sackOK {
				s.addRenoSack(dupacks)
			}
		} else if s.tryUndoPartial(priorUna) {
			return
		}
		if s.tryUndoDSACK() {
			s.tryToOpen()
		}
		flag = s.identifyPacketLoss(flag)
		if s.ca != caRecovery {
			if !s.timeToRecover() {
				return
			}
			s.enterRecovery()
		}
	case caLoss:
		s.processLoss(flag, dupacks)
		flag = s.identifyPacketLoss(flag)
		if !(s.ca == caOpen || flag&flagLostRetrans != 0) {
			return
		}
		fallthrough
	default:
		if !s.e.sackOK {
			if flag&flagSndUnaAdvanced != 0 {
				s.sackedOut = 0
			}
			s.addRenoSack(dupacks)
		}
		if s.ca <= caDisorder {
			s.tryUndoDSACK()
		}
		flag = s.identifyPacketLoss(flag)
		if !s.timeToRecover() {
			s.tryToOpen()
			return
		}
		s.enterRecovery()
	}
	s.rexmitLost = true
}

// timeToRecover is tcp_time_to_recover with RACK: a loss is proven.
func (s *sender) timeToRecover() bool { return s.lostOut > 0 }

// identifyPacketLoss runs RACK (tcp_identify_packet_loss).
func (s *sender) identifyPacketLoss(flag int) int {
	if s.qn == 0 {
		return flag
	}
	if !s.e.sackOK {
		s.newrenoMarkLost(flag&flagSndUnaAdvanced != 0)
		return flag
	}
	prior := s.retransOut
	if s.rackMarkLost() {
		flag &^= flagSetXmitTimer
	}
	if prior > s.retransOut {
		flag |= flagLostRetrans
	}
	return flag
}

// tryToOpen is tcp_try_to_open: back to Open, or Disorder while SACKed
// or retransmitted data is outstanding.
func (s *sender) tryToOpen() {
	if !s.anyRetransDone() {
		s.retransStamp = 0
	}
	if s.ca != caCWR {
		s.tryKeepOpen()
	}
}

// tryKeepOpen is tcp_try_keep_open.
func (s *sender) tryKeepOpen() {
	st := caOpen
	if s.sackedOut+s.lostOut > 0 || s.anyRetransDone() {
		st = caDisorder
	}
	if s.ca != st {
		s.setState(st)
		s.highSeq = s.nxt
	}
}

// anyRetransDone is tcp_any_retrans_done.
func (s *sender) anyRetransDone() bool {
	if s.retransOut > 0 {
		return true
	}
	return s.qn > 0 && s.seg(0).flags&segEverRetrans != 0
}

// initUndo is tcp_init_undo: from now on, a proof that every
// retransmission was spurious undoes the reduction.
func (s *sender) initUndo() {
	s.undoMarker, s.undoValid = s.una, true
	s.undoRetrans = int(s.retransOut)
	if s.tlpHigh && s.tlpRetrans {
		s.undoRetrans++
	}
	if s.undoRetrans == 0 {
		s.undoRetrans = -1
	}
}

// initCwndReduction is tcp_init_cwnd_reduction: the window will come
// down to ssthresh over the next round (PRR).
func (s *sender) initCwndReduction() {
	s.highSeq = s.nxt
	s.tlpHigh = false
	s.cc.cwndCnt = 0
	s.priorCwnd = s.cc.cwnd
	s.prrDelivered, s.prrOut = 0, 0
	s.refreshCC()
	s.cc.ssthresh = s.ops.ssthresh(&s.cc)
}

// endCwndReduction is tcp_end_cwnd_reduction: the window comes down to
// ssthresh, except for a rate controller, which sets it itself.
func (s *sender) endCwndReduction() {
	if s.ctl != nil {
		return
	}
	if s.cc.ssthresh < infiniteSsthresh && (s.ca == caCWR || s.ca == caRecovery) {
		s.cc.cwnd = s.cc.ssthresh
		s.cwndStamp = s.e.now()
	}
	s.refreshCC()
	s.ops.cwndEvent(&s.cc, caEventCompleteCWR)
}

// enterRecovery is tcp_enter_recovery.
func (s *sender) enterRecovery() {
	s.priorSsthresh = 0
	s.initUndo()
	if !s.inCwndReduction() {
		s.priorSsthresh = s.currentSsthresh()
		s.initCwndReduction()
	}
	s.setState(caRecovery)
}

// mayUndo is tcp_may_undo: every retransmission was D-SACKed, or the
// timestamps show the original arrived.
func (s *sender) mayUndo() bool {
	return s.undoValid && (s.undoRetrans == 0 || s.packetDelayed())
}

// packetDelayed is tcp_packet_delayed: the ACK echoes a timestamp from
// before the first retransmission, or nothing has been retransmitted
// yet, so what it acknowledges was only delayed (Linux's "tcp: fix to
// allow timestamp undo if no retransmits were sent", 2024). A zero stamp
// does not say that where it is cleared after a retransmission: a
// connection without SACK at high_seq (tryUndoRecovery), or an answered
// SYN ("tcp: fix tcp_packet_delayed() for
// tcp_is_non_sack_preventing_reopen() behavior", 2025).
func (s *sender) packetDelayed() bool {
	e := s.e
	if s.retransStamp != 0 {
		return e.tsOK && e.rcv.lastTSEcr != 0 && int32(e.rcv.lastTSEcr-s.retransStamp) < 0
	}
	if !e.sackOK && !s.una.LessThan(s.highSeq) {
		return false
	}
	return e.state != stateSynSent
}

// undoCwndReduction is tcp_undo_cwnd_reduction.
func (s *sender) undoCwndReduction(unmarkLoss bool) {
	if unmarkLoss {
		for i := 0; i < s.qn; i++ {
			t := s.seg(i)
			if t.flags&segLost != 0 {
				t.flags &^= segLost
			}
		}
		s.lostOut = 0
	}
	if s.priorSsthresh != 0 {
		s.refreshCC()
		s.cc.cwnd = s.ops.undoCwnd(&s.cc)
		if s.priorSsthresh > s.cc.ssthresh {
			s.cc.ssthresh = s.priorSsthresh
		}
	}
	s.cwndStamp = s.e.now()
	s.undoValid = false
	s.rack.advanced = true
}

// tryUndoRecovery is tcp_try_undo_recovery, when high_seq is acked.
// Without SACK, recovery lasts until an ACK passes high_seq: ending it
// at high_seq itself would let duplicate ACKs of the old window start a
// needless fast retransmit (RFC 6582 section 3.2).
func (s *sender) tryUndoRecovery() bool {
	if s.mayUndo() {
		s.undoCwndReduction(false)
	}
	if s.una == s.highSeq && !s.e.sackOK {
		if !s.anyRetransDone() {
			s.retransStamp = 0
		}
		return true
	}
	s.setState(caOpen)
	return false
}

// tryUndoDSACK is tcp_try_undo_dsack.
func (s *sender) tryUndoDSACK() bool {
	if s.undoValid && s.undoRetrans == 0 {
		s.rackUpdateReoWnd()
		s.undoCwndReduction(false)
		return true
	}
	return false
}

// tryUndoPartial is tcp_try_undo_partial: a hole filled by the original
// rather than the retransmission.
func (s *sender) tryUndoPartial(priorUna seqnum.Value) bool {
	if s.undoValid && s.packetDelayed() {
		s.checkSackReordering(priorUna)
		if s.retransOut > 0 {
			return true
		}
		if !s.anyRetransDone() {
			s.retransStamp = 0
		}
		s.undoCwndReduction(true)
		s.tryKeepOpen()
		return true
	}
	return false
}

// tryUndoLoss is tcp_try_undo_loss: an RTO proven spurious.
func (s *sender) tryUndoLoss(frtoUndo bool) bool {
	if frtoUndo || s.mayUndo() {
		s.undoCwndReduction(true)
		if frtoUndo || !s.anyRetransDone() {
			s.retransStamp = 0
		}
		if frtoUndo || s.e.sackOK {
			s.setState(caOpen)
		}
		return true
	}
	return false
}

// processLoss is tcp_process_loss, with F-RTO (RFC 5682, tcp_frto 2).
func (s *sender) processLoss(flag, dupacks int) {
	recovered := !s.una.LessThan(s.highSeq)
	if flag&flagSndUnaAdvanced != 0 && s.tryUndoLoss(false) {
		return
	}
	if s.frto {
		// F-RTO RFC 5682 section 3.1 (SACK version): new data
		// delivered after the RTO's retransmission means it was
		// spurious; an ACK that is not a duplicate first sends new data.
		if flag&flagOrigSackAcked != 0 && s.tryUndoLoss(true) {
			return
		}
		if after(s.nxt, s.highSeq) {
			// Step 3.a: a SACK or a duplicate ACK after the new data
			// means the loss was real.
			if flag&flagDataSacked != 0 || dupacks > 0 {
				s.frto = false
			}
		} else if flag&flagSndUnaAdvanced != 0 && !recovered {
			s.highSeq = s.nxt
			if s.unsent() > 0 && after(s.wndEnd(), s.nxt) {
				s.rexmitNew = true
				return
			}
			s.frto = false
		}
	}
	if recovered {
		s.tryUndoRecovery()
		return
	}
	if !s.e.sackOK {
		// A duplicate ACK after F-RTO's new data: it was delivered,
		// which lowers what is in flight.
		if after(s.nxt, s.highSeq) && dupacks > 0 {
			s.addRenoSack(dupacks)
		} else if flag&flagSndUnaAdvanced != 0 {
			s.sackedOut = 0
		}
	}
	s.rexmitLost = true
}

// markLost is tcp_mark_skb_lost.
func (s *sender) markLost(t *txSeg) {
	if t.flags&segSacked != 0 {
		return
	}
	if t.flags&segLost != 0 {
		if t.flags&segRetrans != 0 {
			// A retransmission lost again.
			t.flags &^= segRetrans
			s.retransOut--
		}
		return
	}
	t.flags |= segLost
	s.lostOut++
	s.lost++
}

// enterLoss is tcp_enter_loss, on an RTO: everything outstanding not
// SACKed is lost (except what RACK says may still arrive), the window
// drops to one more than what is in flight, and recovery starts over.
func (s *sender) enterLoss() {
	newRecovery := s.ca < caRecovery
	// tcp_timeout_mark_lost
	if !s.e.sackOK {
		s.sackedOut = 0
	}
	for i := 0; i < s.qn; i++ {
		t := s.seg(i)
		if i > 0 && s.rackSegTimeout(t, 0) > 0 {
			continue
		}
		s.markLost(t)
	}
	if s.ca <= caDisorder || !after(s.highSeq, s.una) || (s.ca == caLoss && s.retransmits == 0) {
		s.priorSsthresh = s.currentSsthresh()
		s.priorCwnd = s.cc.cwnd
		s.refreshCC()
		s.cc.ssthresh = s.ops.ssthresh(&s.cc)
		s.ops.cwndEvent(&s.cc, caEventLoss)
		s.initUndo()
	}
	s.cc.cwnd = s.inFlight() + 1
	s.cc.cwndCnt = 0
	s.cwndStamp = s.e.now()
	if s.ca <= caDisorder && s.sackedOut >= 3 {
		s.reordering = min(s.reordering, 3)
	}
	s.setState(caLoss)
	s.highSeq = s.nxt
	// The timeout ends a tail-loss probe's episode, after initUndo has
	// counted its retransmission: the next flight may be probed again
	// (tcp_enter_loss clears tlp_high_seq).
	s.tlpHigh = false
	s.frto = newRecovery || s.retransmits > 0
}

// retransmitTimer is tcp_retransmit_timer: the RTO fired.
func (s *sender) retransmitTimer() {
	e := s.e
	if s.qn == 0 {
		return
	}
	head := s.seg(0)
	if e.state == stateSynSent || e.state == stateSynRecv {
		// A SYN-SENT connection may retransmit tcp_syn_retries times
		// plus the linear ones (tcp_write_timeout), its timeout
		// doubling only after those (tcp_retransmit_timer). A SYN-RECV
		// request retransmits its SYN-ACK tcp_synack_retries times,
		// doubling from the first, and the timer after the last drops
		// it without a reset (reqsk_timer_handler).
		limit, linear := synRetries+synLinearTimeouts, synLinearTimeouts
		if e.state == stateSynRecv {
			limit, linear = synackRetries, 0
		}
		if s.retransmits >= limit {
			e.done(errTimeout)
			return
		}
		s.retransmits++
		s.totalRTO++
		s.totalRetrans++
		head.flags |= segEverRetrans
		s.transmit(head, false)
		if s.totalRTO > linear {
			s.rto = min(2*s.rto, rtoMax)
		}
		e.tm.setXmit(xmitRTO, s.rto)
		return
	}
	if s.writeTimeout() {
		return
	}
	s.enterLoss()
	s.retransmits++
	s.totalRTO++
	s.retransmit(head)
	s.backoff++
	s.rto = min(2*s.rto, rtoMax)
	e.tm.setXmit(xmitRTO, s.clampToUserTimeout(s.rto))
}

// writeTimeout is tcp_write_timeout: give up after tcp_retries2 RTOs'
// worth of time (retransmits_timed_out) or TCP_USER_TIMEOUT, with
// ETIMEDOUT and without a reset (tcp_write_err).
func (s *sender) writeTimeout() bool {
	e := s.e
	if s.retransmits == 0 {
		s.firstTx = s.seg(0).sentAt
	}
	elapsed := e.now() - s.firstTx
	var limit time.Duration
	if e.userTimeout > 0 {
		limit = e.userTimeout
	} else {
		limit = backoffTotal(rtoMin, retries2)
	}
	if s.retransmits >= retries2 || (s.retransmits > 0 && elapsed >= limit) {
		e.done(errTimeout)
		return true
	}
	return false
}

// backoffTotal is the time boundaries of retransmits_timed_out: RTOs
// from base doubling up to TCP_RTO_MAX, summed over n retransmissions.
func backoffTotal(base time.Duration, n int) time.Duration {
	var t time.Duration
	rto := base
	for range n + 1 {
		t += rto
		rto = min(2*rto, rtoMax)
	}
	return t
}

// clampToUserTimeout is tcp_clamp_rto_to_user_timeout.
func (s *sender) clampToUserTimeout(rto time.Duration) time.Duration {
	e := s.e
	if e.userTimeout == 0 {
		return rto
	}
	left := e.userTimeout - (e.now() - s.firstTx)
	return max(min(rto, left), jiffy(s.cc.hz))
}

// xmitRecovery is tcp_xmit_recovery: after an ACK, retransmit what is
// lost, or with F-RTO send new data first.
func (s *sender) xmitRecovery() {
	if s.rexmitNew {
		s.rexmitNew = false
		s.rexmitLost = false
		s.writeXmit(true, 0)
		if after(s.nxt, s.highSeq) {
			return
		}
		s.frto = false
		s.xmitRetransmitQueue()
		return
	}
	if !s.rexmitLost {
		return
	}
	s.rexmitLost = false
	s.xmitRetransmitQueue()
}

// ---- RACK ----

// rackSentAfter is tcp_rack_sent_after: t1 was sent after t2, the
// sequence numbers breaking ties.
func rackSentAfter(t1, t2 time.Duration, seq1, seq2 seqnum.Value) bool {
	return t1 > t2 || (t1 == t2 && after(seq1, seq2))
}

// rackAdvance is tcp_rack_advance: the most recently sent segment known
// delivered, and its RTT.
func (s *sender) rackAdvance(flags uint8, end seqnum.Value, sentAt time.Duration) {
	rtt := s.e.now() - sentAt
	if rtt < s.minRTT.get() && flags&(segRetrans|segEverRetrans) != 0 {
		// Which transmission was delivered is ambiguous: ignore it.
		return
	}
	s.rack.advanced = true
	s.rack.rtt = rtt
	if rackSentAfter(sentAt, s.rack.mstamp, end, s.rack.endSeq) {
		s.rack.mstamp = sentAt
		s.rack.endSeq = end
	}
}

// reoWnd is tcp_rack_reo_wnd: no reordering window until reordering has
// been seen, while in recovery or once enough is SACKed; otherwise a
// quarter of the minimum RTT per step, at most srtt.
func (s *sender) reoWnd() time.Duration {
	if s.reordSeen == 0 {
		if s.ca >= caRecovery {
			return 0
		}
		if s.sackedOut >= s.reordering {
			return 0
		}
	}
	return min(s.minRTT.get()/4*time.Duration(s.rack.reoWndSteps), s.rtt.srtt)
}

// rackSegTimeout is tcp_rack_skb_timeout: how long until t is overdue.
func (s *sender) rackSegTimeout(t *txSeg, reo time.Duration) time.Duration {
	return s.rack.rtt + reo - (s.e.now() - t.sentAt)
}

// rackDetectLoss is tcp_rack_detect_loss: every segment sent before the
// most recently delivered one, and overdue by more than the reordering
// window, is lost. It returns how long until the next segment would be.
func (s *sender) rackDetectLoss() time.Duration {
	reo := s.reoWnd()
	var wait time.Duration
	pendingRetrans := s.retransOut
	passed := false
	for i := 0; i < s.qn; i++ {
		t := s.seg(i)
		if t.flags&segRetrans != 0 {
			if pendingRetrans > 0 {
				pendingRetrans--
			}
		}
		if t.flags&segSacked != 0 {
			continue
		}
		if t.flags&segLost != 0 && t.flags&segRetrans == 0 {
			continue
		}
		if !rackSentAfter(s.rack.mstamp, t.sentAt, s.rack.endSeq, t.end) {
			// Segments are in send order but for retransmissions, which
			// were sent later still: once past a fresh one sent after
			// the RACK segment, only retransmissions remain to check.
			if t.flags&segEverRetrans == 0 {
				passed = true
			}
			if passed && pendingRetrans == 0 {
				break
			}
			continue
		}
		if left := s.rackSegTimeout(t, reo); left <= 0 {
			s.markLost(t)
		} else {
			wait = max(wait, left)
		}
	}
	return wait
}

// rackMarkLost is tcp_rack_mark_lost: run RACK if something newly
// delivered, and arm the reordering timer for what may yet be lost.
func (s *sender) rackMarkLost() bool {
	if !s.rack.advanced {
		return false
	}
	s.rack.advanced = false
	wait := s.rackDetectLoss()
	if wait > 0 {
		// The floor is 2 ms before rounding to jiffies, not 2 jiffies
		// after (Linux 6.6, "tcp: fix excessive TLP and RACK timeouts
		// from HZ rounding"): 8 ms at HZ 250.
		s.e.tm.setXmit(xmitReo, ticks(wait+timeoutMin, s.cc.hz))
		return true
	}
	return false
}

// reoTimeout is tcp_rack_reo_timeout.
func (s *sender) reoTimeout() {
	prior := s.inFlight()
	lost := s.lost
	s.rackDetectLoss()
	if prior != s.inFlight() {
		if s.ca != caRecovery {
			s.enterRecovery()
			if s.ctl == nil {
				s.cwndReduction(1, int(s.lost-lost), 0)
			}
		}
		s.xmitRetransmitQueue()
	}
	if !s.e.tm.xmit.armed || s.e.tm.xmitKind != xmitRTO {
		s.rearmRTO()
	}
}

// rackUpdateReoWnd is tcp_rack_update_reo_wnd: a D-SACK widens the
// reordering window by a step, for 16 recoveries.
func (s *sender) rackUpdateReoWnd() {
	if s.rack.dsackSeen {
		s.rack.dsackSeen = false
		s.rack.reoWndSteps = min(s.rack.reoWndSteps+1, 0xff)
		s.rack.reoWndPersist = 16
	} else if s.rack.reoWndPersist > 0 {
		s.rack.reoWndPersist--
		if s.rack.reoWndPersist == 0 {
			s.rack.reoWndSteps = 1
		}
	}
}

// ---- timers ----

// rearmRTO is tcp_rearm_rto: the RTO runs from now, or, replacing a
// probe or reordering timer, from when the head was sent.
func (s *sender) rearmRTO() {
	e := s.e
	if s.packetsOut == 0 {
		e.tm.xmit.stop()
		return
	}
	rto := s.rto
	if e.tm.xmit.armed && (e.tm.xmitKind == xmitReo || e.tm.xmitKind == xmitTLP) {
		rto = max(s.rtoDelta(), 1)
	}
	e.tm.setXmit(xmitRTO, s.clampToUserTimeout(rto))
}

// rtoDelta is tcp_rto_delta_us: when the head's RTO falls due.
func (s *sender) rtoDelta() time.Duration {
	if s.qn == 0 {
		return s.rto
	}
	return s.seg(0).sentAt + s.rto - s.e.now()
}

// setXmitTimer is tcp_set_xmit_timer.
func (s *sender) setXmitTimer() {
	if !s.scheduleLossProbe(true) {
		s.rearmRTO()
	}
}

// scheduleLossProbe is tcp_schedule_loss_probe: in Open or CWR with data
// in flight, probe after two RTTs (plus TCP_RTO_MIN for a lone segment,
// whose ACK may be delayed; else TCP_TIMEOUT_MIN), if that comes before
// the RTO.
func (s *sender) scheduleLossProbe(advancing bool) bool {
	e := s.e
	if s.packetsOut == 0 || !e.sackOK || (s.ca != caOpen && s.ca != caCWR) {
		return false
	}
	var timeout time.Duration
	if s.rtt.srtt > 0 {
		d := 2 * s.rtt.srtt
		if s.packetsOut == 1 {
			d += rtoMin
		} else {
			d += timeoutMin
		}
		timeout = ticks(d, s.cc.hz)
	} else {
		timeout = timeoutInit
	}
	delta := s.rtoDelta()
	if advancing {
		delta = s.rto
	}
	if delta > 0 {
		timeout = min(timeout, ticks(delta, s.cc.hz))
	}
	e.tm.setXmit(xmitTLP, timeout)
	return true
}

// sendLossProbe is tcp_send_loss_probe: new data if the window allows,
// else the last segment again; one probe per episode.
func (s *sender) sendLossProbe() {
	e := s.e
	if s.tlpHigh {
		s.rearmRTO()
		return
	}
	s.tlpRetrans = false
	sent := false
	if s.unsent() > 0 && !after(s.nxt.Add(seqnum.Size(min(s.unsent(), int(s.cc.mss)))), s.wndEnd()) {
		before := s.packetsOut
		s.lossProbe = true
		s.writeXmit(true, 1)
		s.lossProbe = false
		sent = s.packetsOut > before
		if !sent {
			s.rearmRTO()
			return
		}
	}
	if !sent {
		if s.qn == 0 {
			return
		}
		// __tcp_retransmit_skb, not tcp_retransmit_skb: the probe
		// neither stamps the episode (retrans_stamp) nor counts
		// towards undo_retrans.
		t := s.seg(s.qn - 1)
		s.transmit(t, false)
		t.flags |= segEverRetrans
		s.totalRetrans++
		s.tlpRetrans = true
	}
	s.tlpHighSeq, s.tlpHigh = s.nxt, true
	e.tm.xmit.stop()
	e.tm.xmitKind = xmitRTO
	s.rearmRTO()
}

// processTLPAck is tcp_process_tlp_ack: whether the probe repaired a
// loss, which costs one window reduction.
func (s *sender) processTLPAck(ack seqnum.Value, flag int) {
	if ack.LessThan(s.tlpHighSeq) {
		return
	}
	switch {
	case !s.tlpRetrans:
		s.tlpHigh = false
	case flag&flagDSACKTLP != 0:
		s.tlpHigh = false
	case after(ack, s.tlpHighSeq):
		s.initCwndReduction()
		s.setState(caCWR)
		s.endCwndReduction()
		s.tryKeepOpen()
	case flag&(flagSndUnaAdvanced|flagNotDup|flagDataSacked) == 0:
		s.tlpHigh = false
	}
}

// ---- without SACK (tcp_is_reno) ----

// Without SACK, sacked_out counts duplicate ACKs: each stands for a
// segment that left the network (RFC 5681, RFC 6582; Linux's
// tcp_add_reno_sack and its kin).

// addRenoSack is tcp_add_reno_sack.
func (s *sender) addRenoSack(dupacks int) {
	if dupacks == 0 {
		return
	}
	prior := s.sackedOut
	s.sackedOut += uint32(dupacks)
	s.checkRenoReordering(0)
	if s.sackedOut > prior {
		s.delivered += s.sackedOut - prior
	}
}

// removeRenoSacks is tcp_remove_reno_sacks: a cumulative ACK fills one
// hole; the rest of what it covers had drawn duplicate ACKs.
func (s *sender) removeRenoSacks(acked int) {
	if acked > 0 {
		s.delivered += uint32(max(acked-int(s.sackedOut), 1))
		if acked-1 >= int(s.sackedOut) {
			s.sackedOut = 0
		} else {
			s.sackedOut -= uint32(acked - 1)
		}
	}
	s.checkRenoReordering(acked)
}

// checkRenoReordering is tcp_check_reno_reordering: more duplicate ACKs
// than holes can explain mean reordering, as deep as what is out.
func (s *sender) checkRenoReordering(addend int) {
	if !s.limitRenoSacked() {
		return
	}
	s.reordering = min(s.packetsOut+uint32(addend), 300) // tcp_max_reordering
	s.reordSeen++
}

// limitRenoSacked is tcp_limit_reno_sacked: at least one hole (or as
// many as are marked lost) stays among the segments out.
func (s *sender) limitRenoSacked() bool {
	holes := min(max(s.lostOut, 1), s.packetsOut)
	if s.sackedOut+holes > s.packetsOut {
		s.sackedOut = s.packetsOut - holes
		return true
	}
	return false
}

// newrenoMarkLost is tcp_newreno_mark_lost: the head is lost once
// tcp_reordering duplicate ACKs arrived, or, in Recovery, on a partial
// ACK (RFC 6582 section 3.2).
func (s *sender) newrenoMarkLost(unaAdvanced bool) {
	if s.qn == 0 {
		return
	}
	if (s.ca < caRecovery && s.sackedOut >= s.reordering) || (s.ca == caRecovery && unaAdvanced) {
		if head := s.seg(0); head.flags&segLost == 0 {
			s.markLost(head)
		}
	}
}
