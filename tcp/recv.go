package tcp

import (
	"io"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/waiter"
)

// Delayed-ACK constants at HZ jiffies (include/net/tcp.h): TCP_ATO_MIN
// and TCP_DELACK_MIN are HZ/25, TCP_DELACK_MAX HZ/5; TCP_MAX_QUICKACKS.
const (
	maxQuickACKs      = 16
	fastRetransThresh = 3                // TCP_FASTRETRANS_THRESH
	compSACKNr        = 44               // net.ipv4.tcp_comp_sack_nr
	compSACKDelay     = time.Millisecond // tcp_comp_sack_delay_ns
	scaleShift        = 8                // TCP_RMEM_TO_WIN_SCALE
	defaultRatio      = 1 << (scaleShift - 1)
)

func delackMax(hz int) time.Duration  { return ticksOf(hz/5, hz) }
func ticksOf(n, hz int) time.Duration { return time.Duration(n) * time.Second / time.Duration(hz) }

// ACK-pending bits (icsk_ack.pending).
const (
	ackSched   = 1 << iota // an ACK is due
	ackTimer               // the delayed-ACK timer runs
	ackPushed              // ICSK_ACK_PUSHED: a short segment, or a full one with PSH
	ackNow                 // send one at once
	ackPushed2             // ICSK_ACK_PUSHED2: a second short segment before the ACK
)

// receiver is the receiving half of a connection, named after Linux's
// tcp_sock and icsk_ack fields.
type receiver struct {
	e *endpoint

	irs, nxt, wup seqnum.Value
	copied        seqnum.Value // copied_seq: the next byte the application reads
	wnd           uint32       // rcv_wnd: the window last advertised, bytes
	ssthresh      uint32       // rcv_ssthresh
	clamp         uint32       // window_clamp
	wscale        uint8        // our window shift (rcv_wscale)
	wsOK          bool         // both sides scale windows
	rcvbuf        int          // sk_rcvbuf, bytes of memory
	ratio         uint32       // scaling_ratio: window bytes per 256 bytes of memory
	advmss        uint32

	// The ring holds the data from copied on: in order up to nxt, then
	// out-of-order ranges (ofo) at their offsets. It is given back when
	// the application has read all and nothing is out of order
	// (dropIfEmpty), so an idle connection holds none (ring.go).
	buf ring
	ofo []sackBlock // sorted, disjoint, above nxt

	finRcvd bool
	finSeq  seqnum.Value
	finOfo  bool // a FIN arrived above nxt

	// SACK blocks to send (selective_acks, most recent first) and a
	// pending D-SACK.
	sacks   [maxSACKBlocks]sackBlock
	nsacks  int
	dsack   sackBlock
	dsackOn bool

	// Delayed ACK (icsk_ack).
	ato         time.Duration
	quick       int
	pingpong    int
	pending     int
	lrcvtime    time.Duration
	rcvMSS      uint32
	lastSegSize int    // icsk_ack.last_seg_size: the last short segment's size
	ackDue      uint64 // jiffy of the delayed ACK's timeout (icsk_ack.timeout)

	// The ACKs' counts (Info): delackFrom is when the pending ACK's
	// delayed-ACK timer was first armed, the start of its hold.
	delayedACKs    uint32
	delayedACKTime time.Duration
	delayedACKLost uint32
	quickACKs      uint32
	delackFrom     time.Duration

	// SACK compression.
	compressed  int
	compRcvNxt  seqnum.Value
	dupAckCount int

	// Receiver RTT and buffer auto-tuning (tcp_rcv_space_adjust).
	rttEst     time.Duration // rcv_rtt_est.rtt_us, 8x
	lastTSEcr  uint32        // the TS echo of the segment being handled (rcv_tsecr)
	rttLastEcr uint32
	space      uint32
	spaceSeq   seqnum.Value
	spaceTime  time.Duration
}

func (r *receiver) init(e *endpoint) {
	r.e = e
	r.rcvbuf = e.p.opts.ReceiveBuffer
	r.ratio = defaultRatio
}

// winFromSpace is tcp_win_from_space: the window a buffer of space
// bytes of memory holds.
func (r *receiver) winFromSpace(space int) int {
	return int(uint64(max(space, 0)) * uint64(r.ratio) >> scaleShift)
}

// spaceFromWin is tcp_space_from_win.
func (r *receiver) spaceFromWin(win int) int {
	return int(uint64(win) << scaleShift / uint64(r.ratio))
}

// fullSpace is tcp_full_space.
func (r *receiver) fullSpace() int { return r.winFromSpace(r.rcvbuf) }

// space is tcp_space: what the buffer holds beyond what is queued.
// Queued data is charged at the same ratio as the window, so this is
// the full space less the bytes held (in order and out of order).
func (r *receiver) freeSpace() int { return r.fullSpace() - r.held() }

// held is the data bytes in the buffer.
func (r *receiver) held() int {
	n := r.unread()
	for _, b := range r.ofo {
		n += int(b.start.Size(b.end))
	}
	return n
}

// unread is the data ready to read: up to nxt, less a FIN.
func (r *receiver) unread() int {
	n := int(r.copied.Size(r.nxt))
	if r.finRcvd {
		n--
	}
	return n
}

// startWindow picks the window and its scale for the SYN or SYN-ACK
// (tcp_select_initial_window with tcp_full_space): the full space
// rounded down to whole segments, the shift to fit tcp_rmem[2]. The
// segment is the MSS an active open advertises (tcp_connect_init: a new
// connection has no ts_recent_stamp, so nothing is taken off), and for a
// passive open that MSS less the timestamp option when the SYN offered
// timestamps (tcp_openreq_init_rwin): 64240 bytes on one side, 65160 on
// the other, at 1500 bytes of MTU.
func (r *receiver) startWindow() {
	e := r.e
	r.advmss = uint32(e.snd.advMSS())
	seg := r.advmss
	if e.state == stateSynRecv && e.tsOK {
		seg -= tsOptLen
	}
	space := uint32(r.fullSpace())
	if space > seg {
		space -= space % seg
	}
	r.wnd = space
	big := max(uint32(e.p.opts.MaxReceiveBuffer), space, 212992) // net.core.rmem_max
	shift := 0
	for big>>uint(shift+1) != 0 {
		shift++
	}
	r.wscale = uint8(min(max(shift-15, 0), maxWindowShift))
	r.clamp = 65535 << r.wscale
	r.ssthresh = r.wnd
	r.rcvMSS = min(r.advmss, 536) // tcp_initialize_rcv_mss
}

// established sets the buffer up once the handshake is done
// (tcp_init_buffer_space).
func (r *receiver) established() {
	if !r.wsOK {
		r.wscale = 0
		r.clamp = min(r.clamp, 65535)
	}
	if r.e.tsOK {
		// With timestamps every segment carries 12 bytes of options:
		// tp->advmss loses TCPOLEN_TSTAMP_ALIGNED on both sides before
		// the buffer is set up (tcp_rcv_synsent_state_process; for the
		// passive side since Linux 6.16, tcp_create_openreq_child).
		r.advmss -= tsOptLen
	}
	r.spaceTime = r.e.now()
	r.spaceSeq = r.copied
	maxwin := uint32(r.fullSpace())
	if r.clamp >= maxwin {
		r.clamp = maxwin
	}
	if r.clamp > 2*r.advmss && r.clamp+r.advmss > maxwin {
		r.clamp = max(2*r.advmss, maxwin-r.advmss)
	}
	r.ssthresh = min(r.ssthresh, r.clamp)
	r.space = min(r.ssthresh, r.wnd, initialCwnd*r.advmss)
}

// ---- reading ----

func (r *receiver) read(dst io.Writer, peek bool) (int, tcpip.Error) {
	avail := r.unread()
	if avail == 0 {
		r.dropIfEmpty()
		return 0, nil
	}
	total := 0
	for total < avail {
		span := r.buf.span(total, avail-total)
		n, err := dst.Write(span)
		total += n
		if err != nil || n < len(span) {
			break
		}
	}
	if total == 0 || peek {
		return total, nil
	}
	r.buf.drop(total)
	r.copied = r.copied.Add(seqnum.Size(total))
	r.dropIfEmpty()
	r.spaceAdjust()
	r.cleanupRbuf(total)
	return total, nil
}

// cleanupRbuf is tcp_cleanup_rbuf: after a read, send an ACK if one is
// pending and due, or if the window can now open to twice what it was.
func (r *receiver) cleanupRbuf(copied int) {
	e := r.e
	if !e.state.synchronized() {
		return
	}
	timeToAck := false
	if r.pending&ackSched != 0 {
		// More than a segment unacknowledged (the every-second-segment
		// ACK was not sent), or the read emptied the buffer of a small
		// segment: twice pushed, or pushed outside interactive mode.
		pushed := r.pending&ackPushed2 != 0 || r.pending&ackPushed != 0 && !r.inPingpong()
		if int(r.wup.Size(r.nxt)) > int(r.rcvMSS) || (copied > 0 && r.unread() == 0 && pushed) {
			timeToAck = true
		}
	}
	if copied > 0 && !timeToAck && !r.finRcvd {
		now := r.window()
		if 2*now <= r.clamp {
			if nw := uint32(r.selectWindowRaw()); nw != 0 && nw >= 2*now {
				timeToAck = true
			}
		}
	}
	if timeToAck {
		r.sendAck()
	}
}

// window is tcp_receive_window: what is left of the window last
// advertised.
func (r *receiver) window() uint32 {
	if d := int32(uint32(r.wup) + r.wnd - uint32(r.nxt)); d > 0 {
		return uint32(d)
	}
	return 0
}

// spaceAdjust is tcp_rcv_space_adjust (dynamic right-sizing) as Linux
// 6.18 has it: once per receiver RTT, what the application read in that
// RTT, less what still waits to be read, becomes the new measure when it
// is larger (rcvbufGrow).
func (r *receiver) spaceAdjust() {
	now := r.e.now()
	if r.rttEst == 0 || now-r.spaceTime < r.rttEst/8 {
		return
	}
	copied := int64(r.spaceSeq.Size(r.copied)) - int64(r.unread())
	if copied > int64(r.space) {
		r.rcvbufGrow(uint32(copied))
	}
	r.spaceSeq = r.copied
	r.spaceTime = now
}

// rcvbufGrow is tcp_rcvbuf_grow (Linux 6.18): the measure becomes
// newval; the buffer is made to hold a window of twice it (the measure
// describes the round trip before the last), plus twice that again in
// proportion to its growth since the last measure (room for a sender
// still in slow start), plus what the out-of-order queue spans; never
// smaller, at most tcp_rmem[2]. The window clamp follows the buffer.
func (r *receiver) rcvbufGrow(newval uint32) {
	oldval := max(r.space, 1)
	r.space = newval
	rcvwin := uint64(newval) << 1
	if newval > oldval {
		rcvwin += (rcvwin * uint64(newval-oldval) / uint64(oldval)) << 1
	}
	if len(r.ofo) > 0 {
		rcvwin += uint64(r.nxt.Size(r.ofo[len(r.ofo)-1].end))
	}
	buf := min(r.spaceFromWin(int(min(rcvwin, 1<<40))), r.e.p.opts.MaxReceiveBuffer)
	if buf > r.rcvbuf {
		r.rcvbuf = buf
		r.clamp = uint32(r.winFromSpace(buf))
	}
}

// dropIfEmpty gives the ring back, with the out-of-order list's memory,
// once they hold nothing: all read and nothing out of order (fin empties
// the list but keeps its memory).
func (r *receiver) dropIfEmpty() {
	if r.unread() == 0 && len(r.ofo) == 0 {
		r.dropBuf()
		r.ofo = nil
	}
}

// dropBuf gives the ring's chunks back.
func (r *receiver) dropBuf() { r.buf.free() }

// free drops the buffer and what it held: nothing is left to read.
func (r *receiver) free() {
	r.dropBuf()
	r.ofo = nil
	r.copied = r.nxt
	if r.finRcvd {
		r.copied-- // the FIN is not data
	}
}

// ---- the window ----

// selectWindowRaw is __tcp_select_window: the window to offer, in bytes.
func (r *receiver) selectWindowRaw() int {
	mss := int(r.rcvMSS)
	free := r.freeSpace()
	allowed := r.fullSpace()
	full := min(int(r.clamp), allowed)
	if mss > full {
		mss = full
		if mss <= 0 {
			return 0
		}
	}
	if free < full>>1 {
		r.quick = 0
		free -= free % (1 << r.wscale)
		if free < allowed>>4 || free < mss {
			return 0
		}
	}
	free = min(free, int(r.ssthresh))
	if r.wscale > 0 {
		unit := 1 << r.wscale
		return (free + unit - 1) / unit * unit
	}
	// Without scaling: whole segments, and keep the window if it is
	// within a segment of what would be offered.
	win := int(r.wnd)
	if win <= free-mss || win > free {
		win = free / mss * mss
	} else if mss == full && free > win+full>>1 {
		win = free
	}
	return win
}

// selectWindow is tcp_select_window: never shrink what was offered; the
// field is scaled; the offer is recorded (rcv_wnd, rcv_wup).
func (r *receiver) selectWindow() uint16 {
	cur := r.window()
	nw := uint32(max(r.selectWindowRaw(), 0))
	if nw < cur {
		unit := uint32(1) << r.wscale
		nw = (cur + unit - 1) / unit * unit
	}
	nw = min(nw, 65535<<r.wscale)
	r.wnd = nw
	r.wup = r.nxt
	return uint16(nw >> r.wscale)
}

// growWindow is tcp_grow_window: each full segment raises rcv_ssthresh
// by two segments, while the buffer has room.
func (r *receiver) growWindow(n int) {
	room := min(int(r.clamp), r.freeSpace()) - int(r.ssthresh)
	if room <= 0 {
		return
	}
	incr := max(2*int(r.advmss), 2*n)
	r.ssthresh += uint32(min(room, incr))
	r.quick |= 1
}

// ---- arriving data ----

// measureRcvMSS is tcp_measure_rcv_mss: the largest segment the peer
// sends, and the buffer's memory ratio from the first full one. A
// segment of at least rcv_mss marks the ACK pushed when it carries PSH
// (the end of a write: the reader's ACK should not wait); a shorter one
// marks it pushed, and pushed twice when one was already, unless it is
// the size of the last one and long enough to be the peer's real MSS
// (then rcv_mss follows it down).
func (r *receiver) measureRcvMSS(seg *segment, n int) {
	lss := r.lastSegSize
	r.lastSegSize = 0
	if uint32(n) < r.rcvMSS {
		// The segment's length with its TCP header, less the header
		// every segment of this connection carries (tcp_header_len):
		// invariant under SACK blocks.
		hdr := header.TCPMinimumSize
		if seg.hasTS {
			hdr += tsOptLen
		}
		if seg.nSACK > 0 {
			hdr += 4 + 8*seg.nSACK
		}
		l := n + hdr
		remnant := seg.flags&(header.TCPFlagFin|header.TCPFlagUrg|header.TCPFlagSyn|header.TCPFlagPsh) != 0
		if l >= 536+header.TCPMinimumSize || (l >= 88+header.TCPMinimumSize && !remnant) { // TCP_MSS_DEFAULT, TCP_MIN_MSS
			l -= header.TCPMinimumSize
			if r.e.tsOK {
				l -= tsOptLen
			}
			r.lastSegSize = l
			if l == lss {
				r.rcvMSS = uint32(l)
				return
			}
		}
		if r.pending&ackPushed != 0 {
			r.pending |= ackPushed2
		}
		r.pending |= ackPushed
		return
	}
	if uint32(n) != r.rcvMSS {
		ratio := uint32(uint64(n) << scaleShift / uint64(rcvTruesize(n)))
		if ratio == 0 {
			ratio = 1
		}
		if ratio != r.ratio {
			r.ratio = ratio
			r.setClamp(uint32(r.winFromSpace(r.rcvbuf)))
			r.space = min(r.space, r.clamp)
		}
	}
	r.rcvMSS = min(uint32(n), r.advmss)
	if seg.has(pshFlag) {
		r.pending |= ackPushed
	}
}

// rcvTruesize models the memory a kernel charges for a received segment
// of n payload bytes arriving through a TUN device: one linear buffer of
// headers, data, NET_SKB_PAD and skb_shared_info, rounded up to the
// allocator's power of two, plus the sk_buff itself.
func rcvTruesize(n int) int {
	size := n + 40 + 12 + 64 + 320
	p := 512
	for p < size {
		p <<= 1
	}
	return p + 256
}

// setClamp is tcp_set_window_clamp.
func (r *receiver) setClamp(v uint32) {
	v = max(v, 2304/2) // SOCK_MIN_RCVBUF / 2
	if v == r.clamp {
		return
	}
	old := r.clamp
	r.clamp = v
	if v < old {
		r.ssthresh = min(r.ssthresh, v)
	} else {
		r.ssthresh = max(min(r.wnd, v), r.ssthresh)
	}
}

// dataRecv is tcp_event_data_recv: the delayed-ACK engine's estimate of
// the peer's inter-segment time (ato), quick-ACK mode at the start and
// after a long gap, and window growth.
func (r *receiver) dataRecv(seg *segment, n int) {
	e := r.e
	hz := e.p.opts.HZ
	r.pending |= ackSched
	r.measureRcvMSS(seg, n)
	now := e.now()
	amin := atoMinOf(hz)
	if r.ato == 0 {
		r.incrQuick(maxQuickACKs)
		r.ato = amin
	} else {
		m := now - r.lrcvtime
		// Linux counts this gap in jiffies.
		m = m / jiffy(hz) * jiffy(hz)
		switch {
		case m <= amin/2:
			r.ato = r.ato/2 + amin/2
		case m < r.ato:
			r.ato = r.ato/2 + m
			r.ato = min(r.ato, e.snd.rto)
		case m > e.snd.rto:
			r.incrQuick(maxQuickACKs)
		}
	}
	r.lrcvtime = now
	if n >= 128 {
		r.growWindow(n)
	}
}

func atoMinOf(hz int) time.Duration { return ticksOf(max(hz/25, 1), hz) }

// incrQuick is tcp_incr_quickack.
func (r *receiver) incrQuick(limit int) {
	q := int(r.wnd / (2 * max(r.rcvMSS, 1)))
	if q == 0 {
		q = 2
	}
	q = min(q, limit)
	if q > r.quick {
		r.quick = q
	}
}

// enterQuickAck is tcp_enter_quickack_mode.
func (r *receiver) enterQuickAck() {
	r.incrQuick(maxQuickACKs)
	r.pingpong = 0
	r.ato = atoMinOf(r.e.p.opts.HZ)
}

func (r *receiver) inPingpong() bool { return r.pingpong >= 1 } // tcp_pingpong_thresh 1
func (r *receiver) inQuickAck() bool { return r.quick > 0 && !r.inPingpong() }

// data takes the payload of an acceptable segment (tcp_data_queue). It
// reports whether anything new became readable.
func (r *receiver) data(seg *segment) bool {
	payload := seg.payload
	seq := seg.seq
	fin := seg.has(finFlag)
	if len(payload) == 0 && !fin {
		return false
	}
	end := seq.Add(seqnum.Size(len(payload)))
	if seq == r.nxt {
		if r.window() == 0 && len(payload) > 0 {
			r.enterQuickAck()
			r.pending |= ackSched
			return false // tcp_data_queue: zero window
		}
		return r.queueInOrder(seg, payload, fin)
	}
	if !after(end, r.nxt) && !(fin && end == r.nxt) {
		// A retransmission of what arrived: D-SACK it, ACK at once.
		if len(payload) > 0 {
			r.setDSACK(seq, end)
		}
		r.delayedACKLost++
		r.enterQuickAck()
		r.pending |= ackSched
		return false
	}
	if !seq.LessThan(r.nxt.Add(seqnum.Size(r.window()))) {
		r.enterQuickAck()
		r.pending |= ackSched
		return false // beyond the window (a zero-window probe, say)
	}
	if seq.LessThan(r.nxt) {
		// Partly new: D-SACK the old part and take the rest.
		r.setDSACK(seq, r.nxt)
		if r.window() == 0 {
			r.enterQuickAck()
			r.pending |= ackSched
			return false
		}
		cut := int(seq.Size(r.nxt))
		return r.queueInOrder(seg, payload[cut:], fin)
	}
	r.queueOfo(seq, payload, fin)
	return false
}

func (r *receiver) queueInOrder(seg *segment, payload []byte, fin bool) bool {
	n := min(len(payload), int(r.window()))
	if n < len(payload) {
		fin = false
	}
	if n > 0 {
		r.store(r.nxt, payload[:n])
		r.nxt = r.nxt.Add(seqnum.Size(n))
		r.dataRecv(seg, n)
	}
	if fin {
		r.fin()
	}
	if len(r.ofo) > 0 {
		r.ofoQueue()
		if len(r.ofo) == 0 {
			r.pending |= ackNow // RFC 5681 section 4.2: a filled hole is ACKed at once
		}
	}
	if r.nsacks > 0 {
		r.sackRemove()
	}
	return n > 0 || fin
}

// store copies data at seq into the ring.
func (r *receiver) store(seq seqnum.Value, b []byte) {
	off := int(r.copied.Size(seq))
	r.buf.reserve(off + len(b))
	r.buf.copyIn(off, b)
}

// fin takes the peer's FIN (tcp_fin).
func (r *receiver) fin() {
	e := r.e
	r.finRcvd = true
	r.finSeq = r.nxt
	r.nxt++
	r.pending |= ackSched
	r.ofo = r.ofo[:0]
	r.nsacks = 0
	switch e.state {
	case stateSynRecv, stateEstablished:
		e.state = stateCloseWait
		r.pingpong = 1 // inet_csk_enter_pingpong_mode
	case stateFinWait1:
		// Our FIN is not acknowledged yet: simultaneous close.
		r.pending |= ackNow
		e.state = stateClosing
	case stateFinWait2:
		r.pending |= ackNow
		e.sendAckNow()
		e.enterTimeWait()
	}
	e.notify |= waiter.ReadableEvents | waiter.EventHUp
}

// queueOfo holds data above nxt (tcp_data_queue_ofo): SACK it, and ACK at
// once (in __tcp_ack_snd_check).
func (r *receiver) queueOfo(seq seqnum.Value, payload []byte, fin bool) {
	end := seq.Add(seqnum.Size(len(payload)))
	if fin {
		r.finOfo = true
		r.finSeq = end
	}
	r.pending |= ackSched
	if len(payload) == 0 {
		return
	}
	// Keep what fits in the buffer.
	limit := r.nxt.Add(seqnum.Size(r.window()))
	if after(end, limit) {
		end = limit
		payload = payload[:seq.Size(end)]
	}
	dup := false
	for _, b := range r.ofo {
		if b.start.LessThanEq(seq) && end.LessThanEq(b.end) {
			dup = true
			break
		}
	}
	if dup {
		// All of it is here already: D-SACK it, and its block goes
		// first (tcp_data_queue_ofo ends at add_sack for a range it
		// already holds too).
		r.setDSACK(seq, end)
		r.sackNewOfo(seq, end)
		return
	}
	if len(r.ofo) >= 255 {
		return // bound the scoreboard; the sender will retransmit
	}
	r.store(seq, payload)
	r.ofoInsert(seq, end)
	r.sackNewOfo(seq, end)
	r.growWindow(len(payload))
	// Room for what the out-of-order queue spans (tcp_data_queue_ofo
	// ends with tcp_rcvbuf_grow at the current measure, Linux 6.18).
	r.rcvbufGrow(r.space)
}

// ofoInsert adds [s, e) to the out-of-order ranges, merging.
func (r *receiver) ofoInsert(s, e seqnum.Value) {
	i := 0
	for i < len(r.ofo) && r.ofo[i].end.LessThan(s) {
		i++
	}
	j := i
	for j < len(r.ofo) && r.ofo[j].start.LessThanEq(e) {
		if r.ofo[j].start.LessThan(s) {
			s = r.ofo[j].start
		}
		if after(r.ofo[j].end, e) {
			e = r.ofo[j].end
		}
		j++
	}
	nb := sackBlock{s, e}
	if i == j {
		r.ofo = append(r.ofo, sackBlock{})
		copy(r.ofo[i+1:], r.ofo[i:])
		r.ofo[i] = nb
		return
	}
	r.ofo[i] = nb
	r.ofo = append(r.ofo[:i+1], r.ofo[j:]...)
}

// ofoQueue moves out-of-order data that now follows nxt into the stream
// (tcp_ofo_queue).
func (r *receiver) ofoQueue() {
	for len(r.ofo) > 0 && r.ofo[0].start.LessThanEq(r.nxt) {
		b := r.ofo[0]
		if after(b.end, r.nxt) {
			r.nxt = b.end
		}
		r.ofo = r.ofo[1:]
	}
	if len(r.ofo) == 0 {
		r.ofo = r.ofo[:0:0]
	}
	if r.finOfo && r.finSeq == r.nxt {
		r.finOfo = false
		r.fin()
	}
}

// setDSACK records a duplicate for the next ACK (tcp_dsack_set).
func (r *receiver) setDSACK(s, e seqnum.Value) {
	if !r.e.sackOK {
		return
	}
	if r.dsackOn {
		// tcp_dsack_extend: widen an adjacent one.
		if !e.LessThan(r.dsack.start) && !r.dsack.end.LessThan(s) {
			if s.LessThan(r.dsack.start) {
				r.dsack.start = s
			}
			if after(e, r.dsack.end) {
				r.dsack.end = e
			}
			return
		}
	}
	r.dsack, r.dsackOn = sackBlock{s, e}, true
}

// sackNewOfo is tcp_sack_new_ofo_skb: the block holding the new data
// goes first; overlapping blocks merge; at most four are kept. Before a
// block beyond the first two changes or a third appears, an ACK held
// by SACK compression goes out with the blocks as they were
// (TCP_SACK_BLOCKS_EXPECTED, tcp_sack_compress_send_ack): an ACK
// carries three blocks beside timestamps, and a sender that never sees
// a block retransmits data that arrived.
func (r *receiver) sackNewOfo(s, e seqnum.Value) {
	if !r.e.sackOK {
		return
	}
	const blocksExpected = 2 // TCP_SACK_BLOCKS_EXPECTED
	nb := sackBlock{s, e}
	touches := func(b sackBlock) bool { return !e.LessThan(b.start) && !b.end.LessThan(s) }
	first := r.nsacks // the first block the data extends (tcp_sack_extend)
	for i := 0; i < r.nsacks; i++ {
		if touches(r.sacks[i]) {
			first = i
			break
		}
	}
	if first >= blocksExpected {
		r.compSendAck()
	}
	// Merge with any blocks it touches (tcp_sack_maybe_coalesce).
	k := 0
	for i := 0; i < r.nsacks; i++ {
		b := r.sacks[i]
		if touches(b) {
			if b.start.LessThan(nb.start) {
				nb.start = b.start
			}
			if after(b.end, nb.end) {
				nb.end = b.end
			}
			continue
		}
		r.sacks[k] = b
		k++
	}
	if k == maxSACKBlocks {
		k--
	}
	copy(r.sacks[1:k+1], r.sacks[:k])
	r.sacks[0] = nb
	r.nsacks = k + 1
}

// compSendAck is tcp_sack_compress_send_ack: send the ACK that SACK
// compression holds, if it holds one.
func (r *receiver) compSendAck() {
	if r.compressed > 0 {
		r.sendAck()
	}
}

// sackRemove drops blocks the cumulative ACK now covers (tcp_sack_remove).
func (r *receiver) sackRemove() {
	k := 0
	for i := 0; i < r.nsacks; i++ {
		if r.sacks[i].end.LessThanEq(r.nxt) {
			continue
		}
		if r.sacks[i].start.LessThan(r.nxt) {
			r.sacks[i].start = r.nxt
		}
		r.sacks[k] = r.sacks[i]
		k++
	}
	r.nsacks = k
}

// rttMeasureTS is tcp_rcv_rtt_measure_ts: the receiver's RTT from the
// echo of its own timestamps on full segments.
func (r *receiver) rttMeasureTS(seg *segment) {
	e := r.e
	if !e.tsOK || !seg.hasTS || seg.tsEcr == 0 || seg.tsEcr == r.rttLastEcr {
		return
	}
	r.rttLastEcr = seg.tsEcr
	if uint32(len(seg.payload)) < r.rcvMSS {
		return
	}
	// tcp_rtt_tsopt_us with min 0: an echo from this very millisecond is
	// no sample (Linux 6.16, "remove zero TCP TS samples for autotuning").
	d := int32(e.tsVal() - seg.tsEcr)
	if d <= 0 {
		return
	}
	r.rttUpdate(time.Duration(d) * time.Millisecond)
}

// rttUpdate is tcp_rcv_rtt_update with win_dep 0, as Linux 6.16 has it:
// a sample below the estimate replaces it at once (the minimum is what
// counts); a larger one is smoothed in with gain 1/8, and only while
// everything received has been read — with data waiting, the sample
// measures the application, not the path.
func (r *receiver) rttUpdate(m time.Duration) {
	switch {
	case r.rttEst == 0 || 8*m < r.rttEst:
		r.rttEst = 8 * m
	case r.unread() == 0:
		r.rttEst += m - r.rttEst/8
	}
}

// ---- sending ACKs ----

// ackSndCheck is __tcp_ack_snd_check: now, delayed, or compressed.
func (r *receiver) ackSndCheck(ofoPossible bool) {
	if r.pending&ackSched == 0 {
		return
	}
	e := r.e
	// More than a full segment unacknowledged, and the window would not
	// shrink: the every-second-segment rule.
	full := int(r.wup.Size(r.nxt)) > int(r.rcvMSS) && uint32(r.selectWindowRaw()) >= r.wnd
	if full || r.inQuickAck() || r.pending&ackNow != 0 {
		if !full && r.pending&ackNow == 0 {
			r.quickACKs++ // sent at once only for quick-ACK mode
		}
		r.sendAck()
		return
	}
	if !ofoPossible || len(r.ofo) == 0 {
		r.sendDelayedAck()
		return
	}
	if !e.sackOK || r.compressed >= compSACKNr {
		r.sendAck()
		return
	}
	if r.compRcvNxt != r.nxt {
		r.compRcvNxt = r.nxt
		r.dupAckCount = 0
	}
	if r.dupAckCount < fastRetransThresh {
		r.dupAckCount++
		r.sendAck()
		return
	}
	r.compressed++
	if e.tm.comp.armed {
		return
	}
	rtt := r.rttEst / 8
	if e.snd.rtt.srtt > 0 && e.snd.rtt.srtt < rtt {
		rtt = e.snd.rtt.srtt
	}
	e.tm.comp.set(min(compSACKDelay, rtt/20))
}

// sendDelayedAck is tcp_send_delayed_ack.
func (r *receiver) sendDelayedAck() {
	e := r.e
	hz := e.p.opts.HZ
	ato := r.ato
	dmin := atoMinOf(hz)
	if ato > dmin {
		maxAto := ticksOf(hz/2, hz)
		if r.inPingpong() || r.pending&ackPushed != 0 {
			maxAto = delackMax(hz)
		}
		if e.snd.rtt.srtt > 0 {
			rtt := max(ticks(e.snd.rtt.srtt, hz), dmin)
			maxAto = min(maxAto, rtt)
		}
		ato = min(ato, maxAto)
	}
	ato = min(ato, delackMax(hz))
	// Linux counts the rest in jiffies: the timeout is jiffies + ato, an
	// ACK whose timer is due within ato/4 jiffies goes now, and a later
	// timeout never postpones the one armed.
	now := e.now()
	j := jiffies64(now, hz)
	atoJ := uint64(ato / jiffy(hz))
	due := j + atoJ
	if r.pending&ackTimer != 0 {
		if int64(r.ackDue-(j+atoJ>>2)) <= 0 {
			r.sendAck()
			return
		}
		if int64(due-r.ackDue) >= 0 {
			due = r.ackDue
		}
	}
	if r.pending&ackTimer == 0 {
		r.delackFrom = now
	}
	r.pending |= ackSched | ackTimer
	r.ackDue = due
	e.tm.delack.setJiffies(now, due, hz)
}

// delackTimer is tcp_delack_timer_handler. It reports whether it sent
// the pending ACK, which it counts as Linux counts LINUX_MIB_DELAYEDACKS,
// with how long the ACK was held since the timer was first armed for it.
func (r *receiver) delackTimer() bool {
	if r.pending&ackSched == 0 {
		return false
	}
	if !r.inPingpong() {
		r.ato = min(2*r.ato, r.e.snd.rto)
	} else {
		r.pingpong = 0
		r.ato = atoMinOf(r.e.p.opts.HZ)
	}
	r.delayedACKs++
	r.delayedACKTime += r.e.now() - r.delackFrom
	r.sendAck()
	return true
}

// sendAck sends a pure ACK now (tcp_send_ack).
func (r *receiver) sendAck() {
	e := r.e
	if !e.state.synchronized() && e.state != stateSynRecv {
		return
	}
	e.output(e.snd.nxt, ackFlag, payload{})
}

// ackSent is tcp_event_ack_sent: every segment carries the ACK, so any
// send ends the pending ACK; one that answers data received (an ACK was
// scheduled, in order or not) uses up a quick ACK (tcp_dec_quickack_mode
// as Linux 6.6 counts them: ACKs and SACKs of data not acknowledged
// before).
func (r *receiver) ackSent(scheduled bool) {
	e := r.e
	if r.quick > 0 && scheduled {
		r.quick--
		if r.quick == 0 {
			r.ato = atoMinOf(e.p.opts.HZ)
		}
	}
	r.pending = 0
	r.compressed = 0
	e.tm.delack.stop()
	e.tm.comp.stop()
	r.dsackOn = false
}

// sackOptLen is the length of the SACK option the next segment carries
// (tcp_established_options): 4 bytes and 8 per block, as many as fit
// beside the timestamps; 0 with none to send.
func (r *receiver) sackOptLen() int {
	e := r.e
	if !e.sackOK {
		return 0
	}
	k := r.nsacks
	if r.dsackOn {
		k++
	}
	if k == 0 {
		return 0
	}
	room := header.TCPOptionsMaximumSize - 4
	if e.tsOK {
		room -= tsOptLen
	}
	return 4 + 8*min(k, room/8, maxSACKBlocks)
}

// sackBlocks fills b with the blocks for the next segment: a D-SACK
// first, then the most recent (tcp_established_options).
func (r *receiver) sackBlocks(b []sackBlock) int {
	n := 0
	if r.dsackOn && len(b) > 0 {
		b[n] = r.dsack
		n++
	}
	for i := 0; i < r.nsacks && n < len(b); i++ {
		b[n] = r.sacks[i]
		n++
	}
	return n
}
