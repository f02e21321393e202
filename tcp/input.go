package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"
)

const (
	synFlag = header.TCPFlagSyn
	ackFlag = header.TCPFlagAck
	finFlag = header.TCPFlagFin
	rstFlag = header.TCPFlagRst
	pshFlag = header.TCPFlagPsh
)

// handle processes a segment for this endpoint. It returns false when the
// endpoint does not take it (closed meanwhile), and the protocol answers
// with a reset.
func (e *endpoint) handle(id stack.TransportEndpointID, s *segment) bool {
	e.mu.Lock()
	defer e.unlock()
	e.stampNow()
	switch e.state {
	case stateListen:
		return e.handleListen(id, s)
	case stateSynSent:
		e.handleSynSent(s)
	case stateClosed, 0:
		return false
	case stateTimeWait:
		e.handleTimeWait(s)
	default:
		e.handleSynchronized(s)
	}
	e.probe()
	return true
}

// handleListen answers a SYN with a new connection in SYN-RECV
// (tcp_conn_request). Anything else to a listener is reset, but a reset.
func (e *endpoint) handleListen(id stack.TransportEndpointID, s *segment) bool {
	if s.has(rstFlag) {
		return true
	}
	if s.has(ackFlag) {
		return false // an ACK for no connection: reset
	}
	if !s.has(synFlag) {
		return true
	}
	if len(e.acceptQ)+e.pending >= e.backlog {
		return true // the queues are full: drop the SYN, the peer retries
	}
	r, err := e.p.st.FindRoute(0, id.LocalAddress, id.RemoteAddress, header.IPv4ProtocolNumber, false)
	if err != nil {
		return true
	}
	c := newEndpoint(e.p, &waiter.Queue{})
	c.ops.SetKeepAlive(e.ops.GetKeepAlive()) // these lock c.mu
	c.ops.SetDelayOption(e.ops.GetDelayOption())
	// The one place a listener holds a child's mu under its own: c is
	// locked before p.conns makes it findable, so nobody holds c.mu
	// waiting for e.mu (see endpoint's lock order).
	c.mu.Lock()
	defer c.unlock()
	c.localAddr, c.localPort = id.LocalAddress, id.LocalPort
	c.remoteAddr, c.remotePort = id.RemoteAddress, id.RemotePort
	c.route = r
	c.parent = e
	c.state = stateSynRecv
	p := e.p
	p.mu.Lock()
	if p.conns[c.key()] != nil {
		p.mu.Unlock()
		r.Release()
		return true
	}
	p.conns[c.key()] = c
	c.keyed = true
	p.bound[c.localPort]++
	c.bound = true
	p.mu.Unlock()
	e.pending++ // c.place is childPending

	c.tsOff = p.tsOffset()
	c.acceptSyn(s)
	c.snd.start(p.isn())
	c.rcv.startWindow()
	if !c.rcv.wsOK {
		c.rcv.wscale = 0
	}
	c.snd.sendSynAck()
	return true
}

// acceptSyn takes the peer's SYN options (tcp_parse_options,
// tcp_openreq_init).
func (e *endpoint) acceptSyn(s *segment) {
	e.rcv.irs = s.seq
	e.rcv.nxt = s.seq + 1
	e.rcv.copied = e.rcv.nxt
	e.rcv.wup = e.rcv.nxt
	e.snd.peerMSS = s.mss
	if s.mss == 0 {
		e.snd.peerMSS = 536 // RFC 9293 section 3.7.1
	}
	e.rcv.wsOK = s.ws >= 0
	if e.rcv.wsOK {
		e.snd.wscale = uint8(s.ws)
	}
	e.sackOK = s.sackPerm
	e.tsOK = s.hasTS
	if s.hasTS {
		e.tsRecent, e.tsRecentStamp = s.tsVal, e.now()
	}
	e.snd.wnd = uint32(s.wnd) // a SYN's window is never scaled
	e.snd.wl1 = s.seq
}

// handleSynSent is tcp_rcv_synsent_state_process.
func (e *endpoint) handleSynSent(s *segment) {
	snd := &e.snd
	if s.has(ackFlag) && (!after(s.ack, snd.iss) || after(s.ack, snd.nxt)) {
		if !s.has(rstFlag) {
			e.p.writeSegment(e.route, e.localPort, e.remotePort, s.ack, 0, rstFlag, 0, nil, payload{})
		}
		return
	}
	if s.has(rstFlag) {
		if s.has(ackFlag) {
			e.done(&tcpip.ErrConnectionRefused{})
		}
		return
	}
	if !s.has(synFlag) {
		return
	}
	if !s.has(ackFlag) {
		return // simultaneous open is not supported: the peer retries
	}
	e.acceptSyn(s)
	if !e.rcv.wsOK {
		e.rcv.wscale = 0
		snd.wscale = 0
	}
	snd.wl2 = s.ack
	// The SYN is acknowledged: take it off the queue, with an RTT
	// sample if it was sent once (or by its timestamp).
	e.rcv.lastTSEcr = 0
	if s.hasTS && e.tsOK {
		e.rcv.lastTSEcr = s.tsEcr
	}
	snd.onAck(s, 0)
	snd.maxWnd = snd.wnd // the SYN-ACK's window, unscaled (tcp_ack_update_window)
	e.state = stateEstablished
	snd.established()
	e.rcv.established()
	e.tm.xmit.stop()
	e.tm.resetKeepalive()
	e.rcv.lrcvtime = e.now()
	// tcp_rcv_synsent_state_process ACKs at once.
	e.rcv.sendAck()
	e.notify |= waiter.WritableEvents
	snd.push()
}

// handleTimeWait is tcp_timewait_state_process: a retransmitted FIN is
// ACKed again and restarts the wait; a reset ends it (RFC 1337 aside, as
// Linux's tcp_rfc1337 0).
func (e *endpoint) handleTimeWait(s *segment) {
	if s.has(rstFlag) {
		e.done(nil)
		return
	}
	if s.has(finFlag) || len(s.payload) > 0 || s.has(synFlag) {
		e.sendAckNow()
		e.tm.life.set(timeWaitLen)
	}
}

// invalidRateLimit is net.ipv4.tcp_invalid_ratelimit: at most one ACK
// per this long answers invalid segments.
const invalidRateLimit = 500 * time.Millisecond

// oowRateLimited is tcp_oow_rate_limited: whether the ACK that answers an
// out-of-window or PAWS-failed segment must be skipped, as one went less
// than tcp_invalid_ratelimit ago. A segment with data and no SYN is always
// answered: two hosts answering each other's ACKs loop only on segments
// without data.
func (e *endpoint) oowRateLimited(s *segment) bool {
	if len(s.payload) > 0 && !s.has(synFlag) {
		return false
	}
	return e.oowLimited()
}

// oowLimited is __tcp_oow_rate_limited.
func (e *endpoint) oowLimited() bool {
	now := e.now()
	if e.oowAckSent && now-e.lastOOWAck < invalidRateLimit {
		return true
	}
	e.oowAckSent, e.lastOOWAck = true, now
	return false
}

// challengeAck is tcp_send_challenge_ack (RFC 5961 section 7): rate
// limited per connection (the host-wide tcp_challenge_ack_limit is
// unlimited by default).
func (e *endpoint) challengeAck() {
	if !e.oowLimited() {
		e.sendAckNow()
	}
}

// pawsDiscard is tcp_paws_discard (RFC 7323 section 5): a timestamp
// older than ts_recent by more than TCP_PAWS_WINDOW (1) marks an old
// duplicate, unless ts_recent is 0 or was taken 24 days ago or more
// (tcp_paws_check), or the segment is a disordered ACK.
func (e *endpoint) pawsDiscard(s *segment) bool {
	if !e.tsOK || !s.hasTS || e.tsRecent == 0 || int32(e.tsRecent-s.tsVal) <= 1 || e.now()-e.tsRecentStamp >= 24*24*time.Hour {
		return false
	}
	return !e.disorderedACK(s)
}

// disorderedACK is tcp_disordered_ack: a pure ACK at rcv_nxt that
// acknowledges nothing new and updates no window (tcp_may_update_window),
// with a timestamp within one RTO of ts_recent (icsk_rto·1024/HZ in the
// timestamp clock's ticks: its milliseconds, here) is taken as reordered,
// not old.
func (e *endpoint) disorderedACK(s *segment) bool {
	snd := &e.snd
	nwin := uint32(s.wnd) << snd.wscale
	mayUpdate := after(s.ack, snd.una) || after(s.seq, snd.wl1) || (s.seq == snd.wl1 && nwin > snd.wnd)
	return s.has(ackFlag) && s.length() == 0 && s.seq == e.rcv.nxt && s.ack == snd.una && !mayUpdate &&
		int64(int32(e.tsRecent-s.tsVal)) <= int64(snd.rto*1024/time.Second)
}

// sendDupAck is tcp_send_dupack: the answer to a segment that failed
// PAWS or the window test. When it carried data (or a SYN or FIN)
// starting below rcv_nxt, the peer sent again what had arrived, so an
// ACK was likely lost: counted (LINUX_MIB_DELAYEDACKLOST), quick-ACK
// mode entered, and the old part D-SACKed (RFC 2883).
func (e *endpoint) sendDupAck(s *segment) {
	r := &e.rcv
	if s.length() > 0 && s.seq.LessThan(r.nxt) {
		r.delayedACKLost++
		r.enterQuickAck()
		end := s.seq.Add(s.length())
		if after(end, r.nxt) {
			end = r.nxt
		}
		r.setDSACK(s.seq, end)
	}
	e.sendAckNow()
}

// sendAckNow sends a pure ACK whatever the state.
func (e *endpoint) sendAckNow() {
	if e.route == nil {
		return
	}
	e.output(e.snd.nxt, ackFlag, payload{})
}

// acceptable is tcp_sequence (RFC 9293 section 3.10.7.4): the segment
// overlaps the receive window.
func (e *endpoint) acceptable(s *segment) bool {
	r := &e.rcv
	end := s.seq.Add(s.length())
	wndEnd := r.nxt.Add(seqnum.Size(r.window()))
	return !end.LessThan(r.wup) && !after(s.seq, wndEnd)
}

// handleSynchronized processes a segment in SYN-RECV and every state
// after it (tcp_rcv_state_process, tcp_rcv_established, tcp_validate_incoming).
func (e *endpoint) handleSynchronized(s *segment) {
	r := &e.rcv
	snd := &e.snd
	if !s.has(rstFlag) && e.pawsDiscard(s) {
		if !e.oowRateLimited(s) {
			e.sendDupAck(s)
		}
		return
	}
	if !e.acceptable(s) {
		switch {
		case s.has(rstFlag):
		case s.has(synFlag):
			e.challengeAck()
		case !e.oowRateLimited(s):
			e.sendDupAck(s)
		}
		return
	}
	if s.has(rstFlag) {
		// RFC 5961 section 3.2: only an exact reset ends the connection;
		// another in the window gets a challenge ACK.
		if s.seq == r.nxt || (e.state == stateSynRecv) {
			e.onReset()
		} else {
			e.challengeAck()
		}
		return
	}
	// ts_recent (RFC 7323 section 4.3): from a segment at or below the
	// last ACK sent.
	if e.tsOK && s.hasTS && !after(s.seq, r.wup) && int32(s.tsVal-e.tsRecent) >= 0 {
		e.tsRecent, e.tsRecentStamp = s.tsVal, e.now()
	}
	if s.has(synFlag) {
		if e.state == stateSynRecv && s.seq == r.irs {
			snd.sendSynAck() // the SYN again: our SYN-ACK was lost
			return
		}
		e.challengeAck() // RFC 5961 section 4
		return
	}
	if !s.has(ackFlag) {
		return
	}
	r.lastTSEcr = 0
	if e.tsOK && s.hasTS {
		r.lastTSEcr = s.tsEcr
	}
	if e.state == stateSynRecv {
		if !after(s.ack, snd.iss) || after(s.ack, snd.nxt) {
			e.p.writeSegment(e.route, e.localPort, e.remotePort, s.ack, 0, rstFlag, 0, nil, payload{})
			return
		}
		e.completeHandshake(s)
		if e.state == stateClosed {
			return // its listener had closed
		}
	}
	flag := 0
	if len(s.payload) > 0 {
		flag |= flagData
	}
	if !snd.onAck(s, flag) {
		return // an ACK of data never sent
	}
	e.afterAck()
	if e.state == stateClosed {
		return
	}
	r.rttMeasureTS(s)
	switch e.state {
	case stateEstablished, stateFinWait1, stateFinWait2:
		if len(s.payload) > 0 || s.has(finFlag) {
			if e.shutRead && !e.opened && len(s.payload) > 0 {
				// Data for a closed socket: reset (tcp_rcv_state_process).
				e.sendReset()
				e.done(&tcpip.ErrConnectionReset{})
				return
			}
			if r.data(s) {
				e.notify |= waiter.ReadableEvents
			}
		}
	}
	if e.state == stateClosed || e.state == stateTimeWait {
		return
	}
	snd.push()
	r.ackSndCheck(true)
	if e.state == stateEstablished || e.state == stateCloseWait {
		e.tm.resetKeepalive()
	}
}

// completeHandshake moves a SYN-RECV child to ESTABLISHED and hands it to
// its listener. If the listener has closed meanwhile, the child is reset
// and ends: Linux drops a request whose listener is gone and answers the
// ACK with a reset (tcp_v4_rcv, TCP_NEW_SYN_RECV).
func (e *endpoint) completeHandshake(s *segment) {
	snd := &e.snd
	e.state = stateEstablished
	e.tm.life.stop()
	snd.wnd = uint32(s.wnd) << snd.wscale
	snd.maxWnd = snd.wnd // tcp_create_openreq_child
	snd.wl1, snd.wl2 = s.seq, s.ack
	snd.established()
	if snd.ctl == nil {
		snd.updatePacingRate() // tcp_rcv_state_process, TCP_SYN_RECV (not for .cong_control)
	}
	e.rcv.established()
	e.rcv.lrcvtime = e.now()
	e.tm.resetKeepalive()
	par := e.parent
	if par == nil {
		return
	}
	par.mu.Lock()
	listening := par.state == stateListen && e.place == childPending
	if listening {
		par.pending--
		par.acceptQ = append(par.acceptQ, e)
		e.place = childQueued
		par.notify |= waiter.ReadableEvents
	} else {
		par.removeChild(e)
	}
	par.unlock()
	if !listening {
		e.parent = nil
		e.opened = false
		e.sendReset()
		e.done(nil)
	}
}

// afterAck moves the closing states on once our FIN is acknowledged.
func (e *endpoint) afterAck() {
	snd := &e.snd
	finAcked := snd.finQueued && snd.qn == 0 && snd.n == 0 && snd.una == snd.nxt
	switch e.state {
	case stateFinWait1:
		if finAcked {
			e.state = stateFinWait2
			if !e.opened {
				e.tm.life.set(timeWaitLen) // tcp_fin_timeout for an orphan
			}
		}
	case stateClosing:
		if finAcked {
			e.enterTimeWait()
		}
	case stateLastAck:
		if finAcked {
			e.done(nil)
		}
	}
}

// onReset ends the connection on a valid reset (tcp_reset): a refused
// connect, or a reset connection.
func (e *endpoint) onReset() {
	switch e.state {
	case stateSynSent:
		e.done(&tcpip.ErrConnectionRefused{})
	case stateCloseWait:
		e.done(&tcpip.ErrConnectionReset{})
	case stateTimeWait, stateClosing, stateLastAck:
		e.done(nil)
	default:
		e.done(&tcpip.ErrConnectionReset{})
	}
}

// output sends one segment of the connection: the ACK and window always,
// timestamps and SACK blocks as negotiated (tcp_transmit_skb,
// tcp_established_options).
func (e *endpoint) output(seq seqnum.Value, flags header.TCPFlags, data payload) {
	if e.route == nil {
		return
	}
	e.snd.departure() // __tcp_transmit_skb: tcp_wstamp_ns, for every segment
	r := &e.rcv
	n := 0
	if e.tsOK {
		n += putTS(e.snd.optBuf[n:], e.tsVal(), e.tsRecent)
	}
	if e.sackOK {
		// As many blocks as fit the options and, beside the payload,
		// the path's MTU: a segment cut before the blocks were due (a
		// retransmission) carries fewer, never a fragment.
		var blocks [maxSACKBlocks]sackBlock
		room := (len(e.snd.optBuf) - n - 4) / 8
		room = min(room, (int(e.route.MTU())-header.TCPMinimumSize-n-data.n-4)/8)
		k := r.sackBlocks(blocks[:max(0, min(room, maxSACKBlocks))])
		if k > 0 {
			n += putSACK(e.snd.optBuf[n:], blocks[:k])
		}
	}
	opts := e.snd.optBuf[:n]
	scheduled := r.pending&ackSched != 0
	wnd := r.selectWindow()
	e.p.writeSegment(e.route, e.localPort, e.remotePort, seq, r.nxt, flags, wnd, opts, data)
	r.ackSent(scheduled)
}
