package tcp

import "time"

// Pacing as Linux paces without the fq qdisc: TCP's internal pacing
// (tcp_output.c; the socket's sk_pacing_status is SK_PACING_NEEDED,
// which the congestion control's init sets: ccConn.pacingNeeded). Each
// transmission has a departure time, tcp_wstamp_ns (sender.wstamp):
// a segment may leave once the clock reaches it, and a GSO packet that
// leaves moves it on by the packet's length at the pacing rate. A
// packet that must wait arms the connection's one pacing timer (an
// hrtimer, tp->pacing_timer: timers.pace) for the departure time; when
// it fires the connection sends what the windows allow, as an ACK
// would have it do (tcp_pace_kick, tcp_tsq_write). Nothing else is
// scheduled: no goroutine, no timer per packet.
//
// Without pacingNeeded none of this runs: wstamp is the time of the
// last transmission and every segment departs when it is sent, as
// before.

// pacingStartSegs is how many data segments a connection sends before
// pacing starts: fq does not pace a flow's first ten, and TCP's
// internal pacing follows it (tcp_update_skb_after_send).
const pacingStartSegs = 10

// departure is the departure time of a segment sent now, and makes it
// the connection's (__tcp_transmit_skb: tcp_wstamp_ns = max(tcp_wstamp_ns,
// now)). Without pacing it is now.
func (s *sender) departure() time.Duration {
	now := s.e.now()
	if s.cc.pacingNeeded && s.wstamp > now {
		return s.wstamp
	}
	s.wstamp = now
	return now
}

// pacingCheck is tcp_pacing_check: whether pacing holds the next
// transmission back because its departure time is still to come; if so
// the pacing timer is armed for it, unless it already is.
func (s *sender) pacingCheck() bool {
	if !s.cc.pacingNeeded {
		return false
	}
	now := s.e.now()
	if s.wstamp <= now {
		return false
	}
	if pace := &s.e.tm.pace; !pace.armed {
		pace.arm(now, s.wstamp)
	}
	return true
}

// paceSent is the pacing of tcp_update_skb_after_send, after the GSO
// packet that began at paceFrom and held paceBytes of data: the next
// departure is later by the packet's time at the pacing rate, less the
// lateness of this one (up to half its time: the OS jitter Linux allows
// for). Not before the connection has sent pacingStartSegs data
// segments, nor without a rate.
func (s *sender) paceSent() {
	rate := s.cc.pacingRate
	if !s.cc.pacingNeeded || rate == 0 || s.dataSegsOut < pacingStartSegs {
		return
	}
	t := uint64(s.paceBytes) * uint64(time.Second) / rate
	credit := uint64(s.wstamp - s.paceFrom)
	t -= min(t/2, credit)
	s.wstamp += time.Duration(t)
}

// onPaceTimer is tcp_pace_kick and tcp_tsq_write: the departure time
// has come; in a state that sends data, retransmit what is lost if the
// window has room, then send what the windows allow.
func (e *endpoint) onPaceTimer() {
	switch e.state {
	case stateEstablished, stateFinWait1, stateClosing, stateCloseWait, stateLastAck:
	default:
		return
	}
	s := &e.snd
	if s.lostOut > s.retransOut && s.cc.cwnd > s.inFlight() {
		s.xmitRetransmitQueue()
	}
	s.push()
}
