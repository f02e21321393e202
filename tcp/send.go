package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// A sent segment's marks, Linux's TCP_SKB_CB(skb)->sacked bits.
const (
	segSacked      = 1 << iota // TCPCB_SACKED_ACKED
	segRetrans                 // TCPCB_SACKED_RETRANS: a retransmission is in flight
	segLost                    // TCPCB_LOST
	segEverRetrans             // TCPCB_EVER_RETRANS
	segSyn
	segFin
	segRateStamped // the tx fields hold delivery state for a rate sample (tx.delivered_mstamp != 0)
)

// txSeg is a segment sent and not yet cumulatively acknowledged: an
// entry of Linux's retransmission queue. Segments are cut at MSS when
// first sent and never merged or split afterwards, except that a head
// partly acknowledged is trimmed.
type txSeg struct {
	seq, end seqnum.Value
	// The connection's delivery state at the latest transmission
	// (TCP_SKB_CB(skb)->tx, tcp_rate_skb_sent), for the rate sample of
	// the ACK that covers the segment; valid while flags has
	// segRateStamped.
	txDelivered  uint32
	flags        uint8
	txAppLimited bool
	sentAt       time.Duration // the latest transmission: its departure time (skb_mstamp_ns)
	txFirstTx    time.Duration // when the flight it was sent in began
	// txDeliveredStamp is when the delivery before it was sent was
	// acknowledged.
	txDeliveredStamp time.Duration
}

// initialCwnd is TCP_INIT_CWND (RFC 6928).
const initialCwnd = 10

// tsOptLen is the timestamp option as every segment carries it, padded
// to a 4-byte boundary (TCPOLEN_TSTAMP_ALIGNED).
const tsOptLen = 12

// synLinearTimeouts is net.ipv4.tcp_syn_linear_timeouts (Linux 6.18's
// default): the first four SYN retransmissions keep the initial timeout,
// later ones double it, and a connect makes that many retransmissions
// more than tcp_syn_retries before it gives up: SYNs at 0, 1, 2, 3, 4,
// 5, 7, 11, 19, 35 and 67 s, ETIMEDOUT at 131 s, as measured on Linux
// 6.18 (TestSynRetransmitSchedule).
const synLinearTimeouts = 4

// Retry limits: tcp_syn_retries, tcp_synack_retries, tcp_retries2.
const (
	synRetries    = 6
	synackRetries = 5
	retries2      = 15
)

// sender is the sending half of a connection, named after Linux's
// tcp_sock fields.
type sender struct {
	e *endpoint

	cc  ccConn
	ops congestion
	// The optional hooks ops has, found once when ops is set (setOps):
	// nil where it has none.
	ctl    rateController
	tso    tsoSizer
	sndbuf sndbufSizer
	// caInitPending: a passive open's rate controller waits for the
	// handshake's RTT sample before its init (see established).
	caInitPending bool

	iss, una, nxt   seqnum.Value
	wnd             uint32 // snd_wnd, bytes
	wl1, wl2        seqnum.Value
	maxWnd          uint32
	wscale          uint8  // the peer's window shift (snd_wscale)
	peerMSS         uint16 // mss_clamp
	everEstablished bool

	// The data: n bytes from una (the first unacknowledged) on, sent or
	// not; the FIN comes after it. The ring's chunks are given back when
	// n falls to 0 (popSeg), so an idle connection holds none (ring.go).
	buf       ring
	n         int
	limit     int // the send buffer, bytes of data (see sndbufLimit)
	finQueued bool
	finOut    bool // the FIN has been sent: it takes one sequence number, once

	// The retransmission queue, a ring of segments from una to nxt,
	// given back, as the data's, when qn falls to 0.
	q      []txSeg
	qh, qn int

	packetsOut, sackedOut, lostOut, retransOut uint32
	fack                                       seqnum.Value // the end of the highest SACKed segment
	delivered, totalRetrans                    uint32
	dataSegsOut                                uint32 // tp->data_segs_out: segments sent with data, retransmissions too
	dsackDups                                  uint32 // segments the peer reported received twice (tp->dsack_dups)
	lost                                       uint32 // tp->lost: packets marked lost, ever

	// Delivery-rate sampling (rate.go): the sample of the ACK being
	// processed, and tcp_sock's tcp_rate.c fields. The app_limited mark
	// lives in cc, where congestion control can set it too.
	rs             rateSample
	firstTxStamp   time.Duration // first_tx_mstamp: the send time that starts the next sample's send phase
	deliveredStamp time.Duration // delivered_mstamp: when delivered last grew
	rateDelivered  uint32        // rate_delivered, rate_interval_us, rate_app_limited: the sample
	rateIntervalUS uint32        // tcp_info reports (deliveryRate)
	rateAppLimited bool

	rtt         rttEstimator
	rto         time.Duration // icsk_rto, with backoff
	backoff     int
	retransmits int // icsk_retransmits: RTOs in a row
	totalRTO    int
	minRTT      minRTT
	firstTx     time.Duration // when the oldest unanswered (re)transmission of una left, for the retry limit

	// Recovery state (tcp_fastretrans_alert).
	ca            caState
	highSeq       seqnum.Value
	priorCwnd     uint32
	priorSsthresh uint32
	prrDelivered  uint32
	prrOut        uint32
	undoMarker    seqnum.Value
	undoValid     bool
	undoRetrans   int
	retransStamp  uint32 // our timestamp at the first retransmission of the episode; 0: none
	reordering    uint32
	reordSeen     uint32
	frto          bool

	// RACK (RFC 8985; tcp_recovery.c).
	rack struct {
		mstamp        time.Duration
		endSeq        seqnum.Value
		rtt           time.Duration
		advanced      bool
		reoWndSteps   uint32
		dsackSeen     bool
		lastDelivered uint32
		reoWndPersist int
	}

	// Tail-loss probe (RFC 8985 section 7).
	tlpHighSeq seqnum.Value
	tlpHigh    bool
	tlpRetrans bool

	sndSml   seqnum.Value // the end of the last small segment (Minshall)
	lsndtime time.Duration
	// wstamp is tcp_wstamp_ns: the departure time of the last segment
	// sent, data or not; with pacing (pacing.go), of the next one, which
	// may be later than now.
	wstamp time.Duration
	// The GSO packet being transmitted, for pacing (pacing.go): the
	// departure time before its first segment, and its data bytes.
	paceFrom  time.Duration
	paceBytes int
	// wq holds, from wqh, the ends of the unsent socket buffers of
	// Linux's write queue (the first starts at nxt): tcp_sendmsg fills
	// each to the size goal before it starts the next (queueWrite), and
	// tcp_tso_should_defer asks the head's length and whether it is the
	// last.
	wq           []seqnum.Value
	wqh          int
	probesOut    int  // unanswered zero-window probes (icsk_probes_out)
	probeBackoff int  // their backoff (icsk_backoff while probing)
	probing      bool // writeXmit sends a window probe: cut to the window
	lossProbe    bool // writeXmit sends a tail-loss probe: one segment, whatever the congestion window

	// Congestion window validation (tcp_cwnd_validate, RFC 7661).
	maxPacketsOut uint32
	cwndUsageSeq  seqnum.Value
	isCwndLimited bool
	cwndStamp     time.Duration
	cwndUsed      uint32
	noSpace       bool // the application waits for buffer space (SOCK_NOSPACE)

	// The GSO packet writeXmit is cutting: its segments, and whether the
	// one being sent is its first or its last (see writeXmit).
	gsoSegs  int
	gsoFirst bool
	gsoLast  bool

	rexmitLost, rexmitNew bool // what tcp_xmit_recovery should send after this ACK

	optBuf [header.TCPOptionsMaximumSize]byte
}

func (s *sender) init(e *endpoint) {
	s.e = e
	s.reordering = 3 // net.ipv4.tcp_reordering
	s.rack.reoWndSteps = 1
	s.rto = timeoutInit
	ops, _ := newCongestion(e.p.opts.CongestionControl)
	s.setOps(ops)
	s.cc.hz = e.p.opts.HZ
	s.cc.rng = e.p
	s.cc.cwnd = initialCwnd
	s.cc.cwndClamp = ^uint32(0) >> 1
	s.cc.ssthresh = infiniteSsthresh
	s.cc.mss = 536
}

func (s *sender) setCongestion(c congestion) {
	s.setOps(c)
	if s.everEstablished {
		s.caInitPending = false
		s.refreshCC()
		s.ops.init(&s.cc)
	}
}

// setOps makes c the connection's congestion control and finds the
// optional hooks it has.
func (s *sender) setOps(c congestion) {
	s.ops = c
	s.ctl, _ = c.(rateController)
	s.tso, _ = c.(tsoSizer)
	s.sndbuf, _ = c.(sndbufSizer)
}

// start picks the initial sequence number.
func (s *sender) start(iss seqnum.Value) {
	s.iss, s.una, s.nxt = iss, iss, iss
	s.sndSml = iss
	s.highSeq = iss
	s.rtt.rttSeq = uint32(iss)
}

// mssFor is the payload of a full segment on this connection
// (tcp_sync_mss, tcp_current_mss): the path MTU less the IP and TCP
// headers, within the peer's MSS, less the timestamp option.
func (s *sender) mssFor() uint32 {
	mtu := int(s.e.route.MTU())
	mss := mtu - header.TCPMinimumSize
	if s.peerMSS != 0 {
		mss = min(mss, int(s.peerMSS))
	}
	if s.e.tsOK {
		mss -= tsOptLen
	}
	return uint32(max(mss, 48))
}

// advMSS is the MSS this host announces: the route's MTU less 40 bytes.
func (s *sender) advMSS() uint16 { return uint16(int(s.e.route.MTU()) - header.TCPMinimumSize) }

// established sets the sender up once the handshake is done
// (tcp_init_transfer): the MSS, the initial window, congestion control.
func (s *sender) established() {
	s.everEstablished = true
	s.cc.mss = s.mssFor()
	if s.totalRetrans > 1 && s.undoValid {
		s.cc.cwnd = 1
	} else {
		s.cc.cwnd = initialCwnd
	}
	if s.rtt.srtt == 0 && s.totalRetrans > 0 {
		s.rto = 3 * time.Second // TCP_TIMEOUT_FALLBACK
	}
	s.cwndStamp = s.e.now()
	if s.ctl != nil && s.qn > 0 && s.seg(0).flags&segSyn != 0 {
		// A passive open, its SYN-ACK not yet taken off the queue:
		// Linux takes the handshake's RTT sample
		// (tcp_synack_rtt_meas) before tcp_init_transfer initialises
		// congestion control, and a rate controller's init reads it
		// (bbr_init: min_rtt, the pacing rate from srtt). netemu's
		// child takes it from the ACK that completes the handshake,
		// which is processed after this; the init waits for it
		// (initPendingCC).
		s.caInitPending = true
	} else {
		s.refreshCC()
		s.ops.init(&s.cc)
	}
	s.limit = s.sndbufLimit()
}

// initPendingCC runs the init a passive open's rate controller waited
// for, once the ACK completing the handshake has given its RTT sample.
func (s *sender) initPendingCC() {
	if !s.caInitPending {
		return
	}
	s.caInitPending = false
	s.refreshCC()
	s.ops.init(&s.cc)
}

// sndbufLimit is the send buffer in bytes of data. Linux counts memory
// (sk_wmem_queued against sk_sndbuf): the buffer starts at tcp_wmem[1]
// and grows to twice the larger of the congestion window and the
// initial window (three times for an algorithm with .sndbuf_expand 3,
// BBR), each segment reckoned at perSegmentTruesize
// (tcp_sndbuf_expand), up to tcp_wmem[2]. What fills it are the queued
// socket buffers' truesize: tcp_sendmsg puts the data in page fragments
// of buffers that each cost skbOverhead beyond it (tcp_stream_alloc_skb),
// and sent data sits in GSO packets of tsoSegs segments (tso_fragment
// cuts the queue's buffers to them), so a buffer of mem bytes holds mem
// × goal / (goal + skbOverhead) bytes of data, goal a GSO packet's.
func (s *sender) sndbufLimit() int {
	o := s.e.p.opts
	mss := int(s.cc.mss)
	per := perSegmentTruesize(mss)
	segs := max(initialCwnd, int(s.cc.cwnd), int(s.reordering)+1)
	expand := 2
	if s.sndbuf != nil {
		expand = s.sndbuf.sndbufExpand()
	}
	mem := min(max(o.SendBuffer, expand*segs*per), o.MaxSendBuffer)
	goal := s.tsoSegs(mss) * mss
	return int(int64(mem) * int64(goal) / int64(goal+skbOverhead))
}

// skbOverhead is the truesize of a socket buffer of the send queue
// before its data: alloc_skb_fclone(MAX_TCP_HEADER) on x86-64, a 1024-byte
// head (MAX_TCP_HEADER 320 and skb_shared_info 320, rounded up by kmalloc)
// counted as SKB_TRUESIZE(1024 - 320): 704 + sk_buff 256 + 320.
const skbOverhead = 1280

// perSegmentTruesize is what tcp_sndbuf_expand reckons a segment of mss
// bytes costs (its per_mss): max(mss, 1460) + MAX_TCP_HEADER (320) +
// skb_shared_info (320), rounded up to a power of two, plus an sk_buff
// (256). It sizes the buffer; the buffers' data fill it (sndbufLimit).
func perSegmentTruesize(mss int) int {
	n := max(mss, 1460) + 320 + 320
	p := 1
	for p < n {
		p <<= 1
	}
	return p + 256
}

// refreshCC brings the read-only fields of the congestion-control state
// up to date.
func (s *sender) refreshCC() {
	c := &s.cc
	c.srtt = s.rtt.srtt
	c.minRTT = s.minRTT.get()
	c.inFlight = s.inFlight()
	c.cwndLimited = s.cwndLimited()
	c.sndNxt, c.sndUna = s.nxt, s.una
	c.now = s.e.now()
	c.lsndtime = s.lsndtime
	c.delivered = s.delivered
	c.deliveredStamp = s.deliveredStamp
	c.lost = s.lost
	c.caState = s.ca
	c.wstamp = s.wstamp
}

// inFlight is tcp_packets_in_flight: sent, less SACKed and lost, plus
// retransmissions in flight (RFC 6675's pipe).
func (s *sender) inFlight() uint32 {
	return s.packetsOut - (s.sackedOut + s.lostOut) + s.retransOut
}

// cwndLimited is tcp_is_cwnd_limited: in slow start, whether the window
// was at most twice what was in flight; else whether the last window was
// filled.
func (s *sender) cwndLimited() bool {
	if inSlowStart(&s.cc) {
		return s.cc.cwnd < 2*s.maxPacketsOut
	}
	return s.isCwndLimited
}

// ---- the send buffer ----

// unsent is the bytes queued but not yet sent.
func (s *sender) unsent() int { return s.n - s.sentBytes() }

// sentBytes is the data bytes between una and nxt.
func (s *sender) sentBytes() int {
	d := int(s.una.Size(s.nxt))
	if s.qn > 0 && s.q[s.qh].flags&segSyn != 0 {
		d--
	}
	if s.finSent() {
		d--
	}
	return max(d, 0)
}

func (s *sender) finSent() bool {
	if s.qn == 0 || !s.finQueued {
		return false
	}
	return s.q[(s.qh+s.qn-1)%len(s.q)].flags&segFin != 0
}

// queued is the bytes in the send queue (SIOCOUTQ).
func (s *sender) queued() int { return s.n }

// writable is sk_stream_is_writeable: room for a third of the buffer.
func (s *sender) writable() bool {
	lim := max(s.limit, DefaultSendBuffer)
	return s.n < lim && lim-s.n >= lim/3
}

func (s *sender) write(src tcpip.Payloader) (int, tcpip.Error) {
	s.rateCheckAppLimited() // tcp_sendmsg: is sending application-limited?
	lim := max(s.limit, int(s.cc.mss))
	room := lim - s.n
	if room <= 0 {
		s.noSpace = true
		return 0, nil
	}
	want := min(src.Len(), room)
	if want == 0 {
		return 0, nil
	}
	s.idleCheck()
	s.buf.reserve(s.n + want)
	from := s.dataStart().Add(seqnum.Size(s.n))
	total := 0
	for total < want {
		m, err := src.Read(s.buf.span(s.n, want-total))
		s.n += m
		total += m
		if err != nil || m == 0 {
			break
		}
	}
	if s.n == 0 {
		s.dropBuf() // the source had nothing after all
	}
	s.queueWrite(from, from.Add(seqnum.Size(total)))
	return total, nil
}

// queueWrite lays the data [from, to), just written, into the write
// queue's socket buffers as tcp_sendmsg does: the last unsent buffer
// takes what fits under the size goal, then new ones of the goal each.
func (s *sender) queueWrite(from, to seqnum.Value) {
	if from == to {
		return
	}
	goal := seqnum.Size(s.sizeGoal(int(s.cc.mss) - s.e.rcv.sackOptLen()))
	s.wqTrim()
	if n := len(s.wq); n > s.wqh {
		start := s.nxt
		if n-s.wqh > 1 {
			start = s.wq[n-2]
		}
		full := start.Add(goal)
		if to.LessThan(full) {
			full = to
		}
		if tail := &s.wq[n-1]; tail.LessThan(full) {
			*tail = full
		}
		from = s.wq[n-1]
	}
	for from.LessThan(to) {
		end := from.Add(goal)
		if to.LessThan(end) {
			end = to
		}
		s.wq = append(s.wq, end)
		from = end
	}
}

// sizeGoal is tcp_xmit_size_goal: the data a socket buffer of the write
// queue takes, the GSO limit (sk_gso_max_size, 65536) bounded to half the
// largest window the peer offered (tcp_bound_to_half_wnd), in whole
// segments of mss, at least one.
func (s *sender) sizeGoal(mss int) int {
	size := gsoMaxSize
	cutoff := int(s.maxWnd)
	if cutoff > 536 { // TCP_MSS_DEFAULT
		cutoff >>= 1
	}
	if cutoff > 0 && size > cutoff {
		hdr := header.TCPMinimumSize // tcp_header_len
		if s.e.tsOK {
			hdr += tsOptLen
		}
		size = max(cutoff, 68-hdr)
	}
	return max(min(size/mss, gsoMaxSegs)*mss, mss)
}

// wqHead is the write queue's first unsent buffer: its end, and whether
// it is the last; ok false when nothing is unsent.
func (s *sender) wqHead() (end seqnum.Value, last, ok bool) {
	s.wqTrim()
	if s.wqh == len(s.wq) {
		return 0, false, false
	}
	return s.wq[s.wqh], s.wqh == len(s.wq)-1, true
}

// wqTrim forgets the write queue's buffers sent in full, and moves the
// rest to the front once they are fewer than those forgotten, so that a
// long transfer, whose queue never empties, reuses one array.
func (s *sender) wqTrim() {
	for s.wqh < len(s.wq) && s.wq[s.wqh].LessThanEq(s.nxt) {
		s.wqh++
	}
	if s.wqh > 0 && s.wqh >= len(s.wq)-s.wqh {
		n := copy(s.wq, s.wq[s.wqh:])
		s.wq, s.wqh = s.wq[:n], 0
	}
}

// dropBuf gives the byte ring's chunks back.
func (s *sender) dropBuf() { s.buf.free() }

// payload is the data of [seq, seq+n), for a segment.
func (s *sender) payload(seq seqnum.Value, n int) payload {
	if n == 0 {
		return payload{}
	}
	return payload{r: &s.buf, off: int(s.dataStart().Size(seq)), n: n}
}

// dataStart is the sequence number of the first byte in the ring.
func (s *sender) dataStart() seqnum.Value {
	if s.qn > 0 && s.q[s.qh].flags&segSyn != 0 {
		return s.una + 1
	}
	return s.una
}

// free drops the data and the queue: the connection sends no more.
func (s *sender) free() {
	s.dropBuf()
	s.dropQueue()
	s.n, s.qn = 0, 0
	s.packetsOut, s.sackedOut, s.lostOut, s.retransOut = 0, 0, 0, 0
}

func (s *sender) queueFin() {
	if s.finQueued {
		return
	}
	s.finQueued = true
	s.push()
}

// ---- the retransmission queue ----

func (s *sender) seg(i int) *txSeg { return &s.q[(s.qh+i)%len(s.q)] }

// appendSeg queues a segment sent for the first time. The ring holds 64
// segments, doubled as often as it takes.
func (s *sender) appendSeg(t txSeg) {
	if s.qn == len(s.q) {
		c := max(2*len(s.q), 64)
		nq := s.e.p.spare.takeSegs(c)
		for i := range s.qn {
			nq[i] = *s.seg(i)
		}
		s.dropQueue()
		s.q = nq
	}
	s.q[(s.qh+s.qn)%len(s.q)] = t
	s.qn++
	s.packetsOut++
}

// popSeg removes the head segment, acknowledged, once the caller has
// taken its data out of the byte ring. Whichever ring that empties goes
// back to the spares.
func (s *sender) popSeg() {
	s.q[s.qh] = txSeg{}
	s.qh = (s.qh + 1) % len(s.q)
	s.qn--
	if s.qn == 0 {
		s.dropQueue()
	}
	if s.n == 0 {
		s.dropBuf()
	}
}

// dropQueue gives the ring of segments back to the protocol's spares.
func (s *sender) dropQueue() {
	if s.q != nil {
		s.e.p.spare.giveSegs(s.q)
	}
	s.q, s.qh = nil, 0
}

// ---- output ----

// sendSyn sends (or resends) the SYN, with every option this host
// offers (tcp_connect, tcp_syn_options).
func (s *sender) sendSyn() {
	e := s.e
	if s.qn == 0 {
		s.appendSeg(txSeg{seq: s.iss, end: s.iss + 1, flags: segSyn})
		s.nxt = s.iss + 1
	}
	seg := s.seg(0)
	seg.sentAt = e.now()
	n := putSynOptions(s.optBuf[:], synOptions{mss: s.advMSS(), ws: int(e.rcv.wscale), sackPerm: true, ts: true, tsVal: e.tsVal()})
	wnd := uint16(min(e.rcv.wnd, 65535))
	e.p.writeSegment(e.route, e.localPort, e.remotePort, s.iss, 0, header.TCPFlagSyn, wnd, s.optBuf[:n], payload{})
	s.lsndtime = e.now()
	if !e.tm.xmit.armed {
		e.tm.setXmit(xmitRTO, s.rto)
	}
}

// sendSynAck answers a SYN with the options the peer offered
// (tcp_make_synack).
func (s *sender) sendSynAck() {
	e := s.e
	if s.qn == 0 {
		s.appendSeg(txSeg{seq: s.iss, end: s.iss + 1, flags: segSyn})
		s.nxt = s.iss + 1
	}
	s.seg(0).sentAt = e.now()
	ws := -1
	if e.rcv.wsOK {
		ws = int(e.rcv.wscale)
	}
	n := putSynOptions(s.optBuf[:], synOptions{mss: s.advMSS(), ws: ws, sackPerm: e.sackOK, ts: e.tsOK, tsVal: e.tsVal(), tsEcr: e.tsRecent})
	wnd := uint16(min(e.rcv.wnd, 65535))
	e.p.writeSegment(e.route, e.localPort, e.remotePort, s.iss, e.rcv.nxt, header.TCPFlagSyn|header.TCPFlagAck, wnd, s.optBuf[:n], payload{})
	s.lsndtime = e.now()
	if !e.tm.xmit.armed {
		e.tm.setXmit(xmitRTO, s.rto)
	}
}

// transmit sends [seq, end) of the queue as one segment (tcp_transmit_skb).
func (s *sender) transmit(t *txSeg, fresh bool) {
	e := s.e
	if t.flags&segSyn != 0 {
		if e.state == stateSynSent {
			s.sendSyn()
		} else {
			s.sendSynAck()
		}
		return
	}
	flags := header.TCPFlagAck
	dataEnd := t.end
	if t.flags&segFin != 0 {
		flags |= header.TCPFlagFin
		dataEnd--
	}
	n := int(t.seq.Size(dataEnd))
	switch {
	case n == 0:
	case dataEnd == s.dataStart().Add(seqnum.Size(s.n)):
		flags |= header.TCPFlagPsh // the last of the queued data (tcp_mark_push)
	case fresh && s.gsoSegs > 1 && s.gsoLast:
		flags |= header.TCPFlagPsh // the end of a GSO packet (__tcp_transmit_skb)
	case fresh && s.probing:
		flags |= header.TCPFlagPsh // a window probe's data (tcp_write_wakeup)
	}
	before := s.inFlight()
	if fresh {
		before--
	}
	// A GSO packet is one transmission (one skb) for pacing: it departs
	// at its first segment's time and moves the next departure on after
	// its last. A retransmission goes alone.
	single := s.gsoSegs == 0
	if single || s.gsoFirst {
		s.paceFrom, s.paceBytes = s.wstamp, 0
	}
	t.sentAt = s.departure()
	e.output(t.seq, flags, s.payload(t.seq, n))
	if n > 0 {
		s.dataSegsOut++
		s.paceBytes += n
	}
	if n > 0 || t.flags&segFin != 0 {
		s.onDataSent(before)
	}
	if single || s.gsoLast {
		s.paceSent()
	}
	s.rateSkbSent(t, fresh)
}

// onDataSent is tcp_event_data_sent: the first transmission with
// nothing in flight tells congestion control (CA_EVENT_TX_START); the
// time of the last send; and a reply within ato of the last data
// received counts towards interactive (pingpong) mode.
func (s *sender) onDataSent(inFlightBefore uint32) {
	e := s.e
	now := e.now()
	if inFlightBefore == 0 {
		s.refreshCC()
		s.ops.cwndEvent(&s.cc, caEventTxStart)
	}
	s.lsndtime = now
	if now-e.rcv.lrcvtime < e.rcv.ato {
		e.rcv.pingpong++
	}
}

// idleCheck is tcp_slow_start_after_idle_check, run when the
// application queues data: after an idle period longer than the RTO
// the window restarts; not for a rate controller, which restarts in its
// own way (CA_EVENT_TX_START).
func (s *sender) idleCheck() {
	if s.packetsOut > 0 || !s.everEstablished || s.ctl != nil {
		return
	}
	if idle := s.e.now() - s.lsndtime; idle > s.rto {
		s.cwndRestart(idle)
	}
}

// cwndRestart is tcp_cwnd_restart (RFC 5681 section 4.1, restart after
// idle, tcp_slow_start_after_idle): the window halves for each RTO the
// connection was idle, down to the restart window.
func (s *sender) cwndRestart(idle time.Duration) {
	s.refreshCC()
	s.ops.cwndEvent(&s.cc, caEventCwndRestart)
	restart := min(uint32(initialCwnd), s.cc.cwnd)
	cwnd := s.cc.cwnd
	s.cc.ssthresh = s.currentSsthresh()
	for d := idle - s.rto; d > 0 && cwnd > restart; d -= s.rto {
		cwnd >>= 1
	}
	s.cc.cwnd = max(cwnd, restart)
	s.cwndStamp = s.e.now()
	s.cwndUsed = 0
}

// currentSsthresh is tcp_current_ssthresh.
func (s *sender) currentSsthresh() uint32 {
	if s.inCwndReduction() {
		return s.cc.ssthresh
	}
	return max(s.cc.ssthresh, s.cc.cwnd>>1+s.cc.cwnd>>2)
}

func (s *sender) inCwndReduction() bool { return s.ca == caCWR || s.ca == caRecovery }

// push sends what the windows and Nagle allow (tcp_write_xmit).
func (s *sender) push() { s.writeXmit(false, 0) }

// writeXmit is tcp_write_xmit: new segments while the congestion window,
// the peer's window and Nagle allow. nagleOff forces out a partial
// segment; limit caps the number of segments (0: none).
func (s *sender) writeXmit(nagleOff bool, limit int) bool {
	e := s.e
	if !e.state.synchronized() || e.state == stateTimeWait {
		return false
	}
	// tcp_current_mss: the SACK blocks the next segments will carry
	// take their room from the data.
	mss := int(s.cc.mss) - e.rcv.sackOptLen()
	sent := 0
	cwndLimited := false
	maxSegs := s.tsoSegs(mss)
	chunk, left := 0, 0 // the current GSO packet's segments, and those still to cut
	for limit == 0 || sent < limit {
		avail := s.unsent()
		if avail == 0 && !(s.finQueued && !s.finOut) {
			break
		}
		// Pacing holds the next GSO packet until its departure time
		// (tcp_pacing_check); a window probe is sent whatever it says
		// (tcp_write_wakeup does not ask).
		if left == 0 && !s.probing && s.pacingCheck() {
			break
		}
		if s.inFlight() >= s.cc.cwnd && avail > 0 {
			cwndLimited = true
			if !s.lossProbe {
				break
			}
		}
		seq := s.nxt
		size, fin, ok := s.nextSegment(seq, avail, mss, nagleOff)
		if !ok {
			break
		}
		// The segments leave as GSO packets (tcp_write_xmit): each of
		// min(tcp_cwnd_test's quota, tcp_tso_segs) segments, as the
		// windows and Nagle allow; __tcp_transmit_skb sets PSH on a
		// packet of more than one segment, and GSO (tcp_gso_segment)
		// keeps it on the last segment only.
		if left == 0 {
			if limit == 0 {
				if wait, cwndBound := s.tsoShouldDefer(mss, maxSegs); wait {
					cwndLimited = cwndLimited || cwndBound
					break
				}
			}
			quota := s.cwndQuota()
			if quota == 0 && s.lossProbe {
				quota = 1 // tcp_write_xmit with push_one 2: one segment goes, whatever the window
			}
			n := min(quota, maxSegs)
			if limit > 0 {
				n = min(n, limit-sent)
			}
			chunk = s.countSegments(mss, n, nagleOff)
			left = chunk
		}
		left--
		s.gsoSegs, s.gsoFirst, s.gsoLast = chunk, left == chunk-1, left == 0
		end := seq.Add(seqnum.Size(size))
		t := txSeg{seq: seq, end: end}
		if fin {
			t.flags |= segFin
			t.end++
			s.finOut = true
		}
		s.appendSeg(t)
		s.nxt = t.end
		if size < mss {
			s.sndSml = end
		}
		if s.inCwndReduction() {
			s.prrOut++
		}
		s.transmit(s.seg(s.qn-1), true)
		s.gsoSegs, s.gsoFirst, s.gsoLast = 0, false, false
		sent++
		if fin {
			break
		}
	}
	if sent > 0 || cwndLimited {
		s.cwndValidate(cwndLimited)
	}
	if sent > 0 {
		// Data out where nothing was in flight replaces a zero-window
		// probe's timer with the RTO (tcp_event_new_data_sent rearms
		// it when packets_out was 0). Only pacing sends then: without
		// it the ACK that opens the window stops the probe first
		// (ackProbe).
		if !s.scheduleLossProbe(false) && (!e.tm.xmit.armed || e.tm.xmitKind == xmitProbe) {
			s.rearmRTO()
		}
		return true
	}
	if s.packetsOut == 0 && s.unsent() > 0 && !e.tm.xmit.armed {
		s.resetProbeTimer()
	}
	return false
}

// tsoShouldDefer is tcp_tso_should_defer, Linux's "TSO Nagle": when the
// write queue's first buffer holds more than a segment and the windows
// leave room for only part of it, wait for the ACK that is due rather
// than send a small GSO packet now, unless the room is a GSO packet of
// maxSegs, the rest of a buffer that gets no more data, or a third of
// the window (tcp_tso_win_divisor); or the connection is in recovery,
// sent nothing in the last millisecond, or expects the next ACK (an srtt
// after the oldest segment in flight left) later than a millisecond, or
// half an srtt, from now. It
// reports whether to wait, and whether the congestion window is what
// holds the buffer back. mssNow is tcp_current_mss.
func (s *sender) tsoShouldDefer(mssNow, maxSegs int) (wait, cwndBound bool) {
	mss := int(s.cc.mss) // mss_cache, as Linux reckons the windows
	end, last, ok := s.wqHead()
	if !ok {
		return false, false
	}
	skbLen := int(s.nxt.Size(end))
	if skbLen <= mssNow { // tcp_init_tso_segs: one segment
		return false, false
	}
	now := s.e.now()
	if s.ca >= caRecovery || now-s.wstamp > time.Millisecond {
		return false, false
	}
	inFlight := s.inFlight()
	if s.cc.cwnd <= inFlight {
		return false, false
	}
	sendWin := 0
	if s.nxt.LessThan(s.wndEnd()) {
		sendWin = int(s.nxt.Size(s.wndEnd()))
	}
	congWin := int(s.cc.cwnd-inFlight) * mss
	room := min(sendWin, congWin)
	switch {
	case room >= maxSegs*mss:
		return false, false
	case !last && room >= skbLen:
		return false, false
	case room >= min(int(s.wnd), int(s.cc.cwnd)*mss)/tsoWinDivisor:
		return false, false
	case s.qn == 0:
		return false, false
	}
	// The next ACK is due one srtt after the oldest segment in flight
	// left; wait for it only if it is due within min(1 ms, srtt/2).
	// Linux 6.18 ("tcp: fix tcp_tso_should_defer() vs large RTT");
	// before, any ACK due within half an RTT was waited for, which on a
	// long path holds a segment back for tens of milliseconds and then
	// sends it in a burst.
	srtt := s.rtt.srtt
	if s.seg(0).sentAt+srtt-now > min(srtt/2, time.Millisecond) {
		return false, false
	}
	if congWin < sendWin {
		if congWin <= skbLen {
			return true, true
		}
	} else if sendWin <= skbLen {
		return true, false
	}
	if last && s.finQueued { // the buffer gets no more data
		return false, false
	}
	return true, false
}

// tsoWinDivisor is net.ipv4.tcp_tso_win_divisor: a GSO packet may wait
// for room until it can take this fraction of the window.
const tsoWinDivisor = 3

// nextSegment is the segment writeXmit sends at seq with avail bytes
// unsent from there: its size, whether it carries the FIN, and ok false
// when the peer's window (tcp_snd_wnd_test) or Nagle (tcp_nagle_test,
// tcp_nagle_check) holds it back. The congestion window is the caller's.
func (s *sender) nextSegment(seq seqnum.Value, avail, mss int, nagleOff bool) (size int, fin, ok bool) {
	fin = s.finQueued && !s.finOut && avail <= mss
	if avail == 0 && !fin {
		return 0, false, false
	}
	size = min(avail, mss)
	if s.probing {
		size = min(size, int(seq.Size(s.wndEnd())))
	}
	// tcp_snd_wnd_test: the segment must fit the peer's window.
	if seqnum.Size(size) > s.una.Size(s.wndEnd()) || after(seq.Add(seqnum.Size(size)), s.wndEnd()) {
		return 0, false, false
	}
	// Nagle, as Linux applies it: a partial segment waits while a small
	// one is unacknowledged (Minshall's rule), unless TCP_NODELAY, or it
	// carries the FIN.
	if size < mss && !fin && !nagleOff && s.e.ops.GetDelayOption() && s.packetsOut > 0 && s.minshallPending() {
		return 0, false, false
	}
	return size, fin, true
}

// countSegments is how many of the next n segments nextSegment lets out,
// at least one: the segments of the GSO packet tcp_write_xmit cuts from
// the head of the unsent data (tcp_mss_split_point). Linux 6.10 and later
// grow the packet across the write queue's skbs (tcp_grow_skb), so only
// the end of the data, the windows and Nagle end it early.
func (s *sender) countSegments(mss, n int, nagleOff bool) int {
	seq, avail := s.nxt, s.unsent()
	k := 0
	for k < n {
		size, fin, ok := s.nextSegment(seq, avail, mss, nagleOff)
		if !ok {
			break
		}
		k++
		if fin {
			break
		}
		seq, avail = seq.Add(seqnum.Size(size)), avail-size
	}
	return max(k, 1)
}

// cwndQuota is tcp_cwnd_test: the segments the congestion window lets
// one GSO packet hold, at most half the window, so that at least two
// packets are in flight.
func (s *sender) cwndQuota() int {
	in, cwnd := s.inFlight(), s.cc.cwnd
	if in >= cwnd {
		return 0
	}
	return int(min(max(cwnd>>1, 1), cwnd-in))
}

// Linux's defaults for TSO autosizing: net.ipv4.tcp_min_tso_segs,
// net.ipv4.tcp_tso_rtt_log, and the pacing shift (sk_pacing_shift,
// SK_DEFAULT_PACING_SHIFT).
const (
	minTSOSegs  = 2
	tsoRTTLog   = 9
	pacingShift = 10
	gsoMaxSegs  = 65535 // GSO_MAX_SEGS, a device's default gso_max_segs
)

// tsoSegs is tcp_tso_segs (tcp_tso_autosize): the segments of one GSO
// packet, about a millisecond of the pacing rate (sk_pacing_rate >>
// sk_pacing_shift), plus, on a path of small minimum RTT, a share of
// the GSO limit that halves with every 512 µs of it (tcp_tso_rtt_log);
// at most the GSO limit, at least tcp_min_tso_segs or what the
// congestion control's .min_tso_segs says. Before the first rate
// (Linux's ~0UL) it is the GSO limit.
func (s *sender) tsoSegs(mss int) int {
	bytes := uint64(gsoMaxSize)
	if r := s.cc.pacingRate; r != 0 {
		bytes = r >> pacingShift
	}
	// tcp_min_rtt is ~0U before the first sample: no share.
	if rtt := s.minRTT.get(); rtt > 0 {
		if r := uint64(rtt/time.Microsecond) >> tsoRTTLog; r < 32 {
			bytes += gsoMaxSize >> r
		}
	}
	bytes = min(bytes, gsoMaxSize)
	least := minTSOSegs
	if s.tso != nil {
		least = s.tso.minTSOSegs(&s.cc)
	}
	return min(max(int(bytes)/mss, least), gsoMaxSegs)
}

func (s *sender) minshallPending() bool {
	return after(s.sndSml, s.una) && s.sndSml.LessThanEq(s.nxt)
}

// wndEnd is tcp_wnd_end: una plus the peer's window.
func (s *sender) wndEnd() seqnum.Value { return s.una.Add(seqnum.Size(s.wnd)) }

// cwndValidate is tcp_cwnd_validate (RFC 7661 as Linux has it): track
// how fully the window is used. A sender that has not filled its window
// for an RTO (and is not waiting for buffer space) has the window cut to
// the mean of what it was and what was used
// (tcp_cwnd_application_limited), unless a rate controller sets the
// window.
func (s *sender) cwndValidate(cwndLimited bool) {
	if !s.una.LessThan(s.cwndUsageSeq) || cwndLimited || (!s.isCwndLimited && s.packetsOut > s.maxPacketsOut) {
		s.isCwndLimited = cwndLimited
		s.maxPacketsOut = s.packetsOut
		s.cwndUsageSeq = s.nxt
	}
	now := s.e.now()
	if s.cwndLimited() {
		s.cwndUsed = 0
		s.cwndStamp = now
		return
	}
	s.cwndUsed = max(s.cwndUsed, s.packetsOut)
	if now-s.cwndStamp >= s.rto && s.ctl == nil {
		if s.ca == caOpen && !s.noSpace {
			used := max(s.cwndUsed, initialCwnd)
			if used < s.cc.cwnd {
				s.cc.ssthresh = s.currentSsthresh()
				s.cc.cwnd = (s.cc.cwnd + used) >> 1
			}
			s.cwndUsed = 0
		}
		s.cwndStamp = now
	}
}

// retransmit sends a queued segment again (tcp_retransmit_skb).
func (s *sender) retransmit(t *txSeg) {
	if t.flags&segSacked != 0 {
		return
	}
	s.transmit(t, false)
	if t.flags&segRetrans == 0 {
		s.retransOut++
	}
	t.flags |= segRetrans | segEverRetrans
	s.totalRetrans++
	if s.retransStamp == 0 {
		s.retransStamp = s.e.tsVal()
		if s.retransStamp == 0 {
			s.retransStamp = 1
		}
	}
	if s.undoRetrans < 0 {
		s.undoRetrans = 0
	}
	s.undoRetrans++
}

// xmitRetransmitQueue retransmits the segments marked lost, in order,
// while the window and pacing allow (tcp_xmit_retransmit_queue).
func (s *sender) xmitRetransmitQueue() {
	rearm := false
	for i := 0; i < s.qn; i++ {
		if s.pacingCheck() {
			break
		}
		if s.retransOut >= s.lostOut {
			break
		}
		if s.inFlight() >= s.cc.cwnd {
			break
		}
		t := s.seg(i)
		if t.flags&segLost == 0 || t.flags&(segSacked|segRetrans) != 0 {
			continue
		}
		s.retransmit(t)
		if s.inCwndReduction() {
			s.prrOut++
		}
		if i == 0 && s.e.tm.xmitKind != xmitReo {
			rearm = true
		}
	}
	if rearm {
		s.e.tm.setXmit(xmitRTO, s.rto)
	}
}

// sendProbeSegment sends a segment one below una, which the peer
// answers with an ACK (tcp_xmit_probe_skb): keepalives and, with no
// data to probe with, zero-window probes.
func (s *sender) sendProbeSegment() {
	s.e.output(s.una-1, header.TCPFlagAck, payload{})
}

// resetProbeTimer arms the zero-window probe (tcp_check_probe_timer,
// tcp_probe0_when): the RTO, at least TCP_RTO_MIN, shifted by the
// probes' backoff.
func (s *sender) resetProbeTimer() {
	s.e.tm.setXmit(xmitProbe, min(max(s.rto, rtoMin)<<s.probeBackoff, rtoMax))
}

// probeTimer is tcp_probe_timer and tcp_send_probe0: send a window
// probe and back off. The backoff grows with every probe, answered or
// not; the count that gives up after tcp_retries2 (with ETIMEDOUT and no
// reset, tcp_write_err) counts only unanswered ones, as an ACK clears it
// (ackProbe): a peer that keeps answering with a shut window is probed
// for ever.
func (s *sender) probeTimer() {
	if s.packetsOut > 0 || s.unsent() == 0 {
		s.probesOut, s.probeBackoff = 0, 0
		return
	}
	if s.probesOut >= retries2 {
		s.e.done(errTimeout)
		return
	}
	// tcp_write_wakeup: a segment of new data if the window has room,
	// as much as it takes (a window the sender's SWS avoidance would not
	// fill is probed with data), else a probe below una. Data in flight
	// hands the connection back to the RTO (tcp_send_probe0).
	if after(s.wndEnd(), s.nxt) {
		s.probing = true
		s.writeXmit(true, 1)
		s.probing = false
		if s.packetsOut > 0 {
			s.probesOut, s.probeBackoff = 0, 0
			return
		}
	} else {
		s.sendProbeSegment()
	}
	s.probesOut++
	if s.probeBackoff < retries2 {
		s.probeBackoff++
	}
	s.resetProbeTimer()
}

var errTimeout tcpip.Error = &tcpip.ErrTimeout{}
