package link

import "time"

// The delayed-ACK stage.
//
// A TCP stack that ACKs every segment at once (gVisor does) behaves unlike
// Linux, whose receiver delays ACKs. The stage watches both directions and
// holds a pure ACK when Linux would not have sent it yet:
//
//   - ACKs of a SYN (the handshake), duplicate ACKs and window updates (no
//     new data acknowledged) and ACKs carrying SACK blocks (out-of-order
//     data) pass at once;
//   - in quick-ack mode (the first maxQuickACKs ACKs of a connection, and
//     again after the receiver was idle longer than an RTO) ACKs pass,
//     unless the connection is interactive ("pingpong": the receiver
//     answered data with data within the delayed-ACK timeout);
//   - an ACK covering more than one full-sized segment passes;
//   - otherwise the ACK is held for Config.DelayedACK. A later packet of the
//     same flow carrying an equal or newer ACK (a newer pure ACK, or data
//     with the ACK piggybacked) supersedes it: the held one is discarded.
//     When the timer releases it, interactive mode ends, as in Linux.
//
// These follow tcp_input.c (__tcp_ack_snd_check, tcp_event_data_recv) and
// tcp_output.c (tcp_event_data_sent) with Linux's defaults
// (tcp_pingpong_thresh 1, TCP_MAX_QUICKACKS 16).

const (
	maxQuickACKs = 16
	minRTO       = 200 * time.Millisecond // Linux's TCP_RTO_MIN
	defaultMSS   = 536
)

// flow is the delayed-ACK state of one direction of a connection: data
// from a sender to a receiver, and the receiver's ACKs back.
type flow struct {
	synced   bool // the SYN reached the receiver
	fin      bool // the FIN reached the receiver
	rcvMSS   int  // largest payload seen
	lastData time.Duration
	hadData  bool

	win window // the receiver's window growth (window.go)

	acked    bool   // the receiver has sent an ACK past the SYN
	lastAck  uint32 // highest ACK number the receiver has sent
	quick    int    // quick-ACKs left
	pingpong bool

	holding bool
	holdDir Dir // the direction the held ACK travels
	held    []byte
	heldAck uint32
	heldAt  time.Duration
	gen     uint64 // bumps each time a hold starts, to retire stale queue slots
}

type holdSlot struct {
	f        *flow
	gen      uint64
	deadline time.Duration
}

// holdQueue is a FIFO of holds. All holds last the same time, so FIFO order
// is deadline order; superseded holds stay until they reach the head.
type holdQueue struct {
	slots []holdSlot
	head  int
}

// push appends s. When the slice is full it first slides the live part
// down over the slots already popped: holds overlap for the whole of a
// bulk transfer, so the queue is rarely empty, and appending alone would
// grow the slice without bound (docs/PERFORMANCE.md).
func (q *holdQueue) push(s holdSlot) {
	if q.head > 0 && len(q.slots) == cap(q.slots) {
		n := copy(q.slots, q.slots[q.head:])
		clear(q.slots[n:])
		q.slots, q.head = q.slots[:n], 0
	}
	q.slots = append(q.slots, s)
}

// peek returns the first live hold, discarding stale ones.
func (q *holdQueue) peek() *holdSlot {
	for q.head < len(q.slots) {
		s := &q.slots[q.head]
		if s.f.holding && s.f.gen == s.gen {
			return s
		}
		q.pop()
	}
	return nil
}

func (q *holdQueue) pop() {
	q.slots[q.head] = holdSlot{}
	q.head++
	if q.head == len(q.slots) {
		q.slots, q.head = q.slots[:0], 0
	}
}

func (q *holdQueue) live() int {
	n := 0
	for _, s := range q.slots[q.head:] {
		if s.f.holding && s.f.gen == s.gen {
			n++
		}
	}
	return n
}

// received updates the receiver-side state of s's flow as s reaches its
// destination over direction dir, sojourn after it entered the link. l.mu
// is held.
func (l *Link) received(s *segment, dir Dir, now, sojourn time.Duration) {
	if s.flags&flagRST != 0 {
		l.forget(s.key, now)
		l.forget(s.key.reverse(), now)
		return
	}
	f := l.flows[s.key]
	if s.flags&flagSYN != 0 {
		if f == nil {
			f = &flow{}
			l.flows[s.key] = f
		}
		// A new connection on the same addresses and ports: the old one's
		// held ACK is moot, and counted as superseded (FuzzLinkSend checks
		// that every packet is accounted for).
		l.dropHold(f, now)
		*f = flow{synced: true, rcvMSS: defaultMSS, quick: maxQuickACKs, gen: f.gen}
		return
	}
	if f != nil && s.flags&flagFIN != 0 {
		f.fin = true
		// Both FINs delivered and nothing held: the connection is over
		// for the stage. (A flow still holding an ACK stays until a SYN
		// or RST reuses or ends it.)
		if r := l.flows[s.key.reverse()]; r != nil && r.fin && !r.holding && !f.holding {
			delete(l.flows, s.key)
			delete(l.flows, s.key.reverse())
			return
		}
	}
	if f == nil || !f.synced {
		return
	}
	if s.seqLen() == 0 {
		return
	}
	if f.hadData && now-f.lastData > minRTO+l.dirs[AtoB].cfg.Delay+l.dirs[BtoA].cfg.Delay {
		// Idle longer than an RTO: Linux re-enters quick-ACK mode.
		f.quick = maxQuickACKs
	}
	f.hadData, f.lastData = true, now
	if s.payload > f.rcvMSS {
		f.rcvMSS = s.payload
	}
	// The receiver's RTT sample: this segment's trip, and the trip of the
	// ACK that released it, on the other direction.
	back := l.dirs[1-dir].cfg.Delay
	if s.payload > 0 && f.win.grew(s.payload, f.rcvMSS, sojourn+back, now) {
		f.quick = max(f.quick, 1) // tcp_grow_window: icsk_ack.quick |= 1
	}
}

// dropHold discards f's held ACK, if any, counted as superseded. l.mu is
// held.
func (l *Link) dropHold(f *flow, now time.Duration) {
	if f.holding {
		d := &l.dirs[f.holdDir]
		l.endHold(d, f, now)
		d.stats.ACKsSuperseded++
	}
}

// forget ends the flow's state, and any ACK it holds. l.mu is held.
func (l *Link) forget(k flowKey, now time.Duration) {
	if f := l.flows[k]; f != nil {
		l.dropHold(f, now)
		delete(l.flows, k)
	}
}

// ackStage applies the delayed-ACK rules to s, about to enter direction d.
// It reports whether the stage kept the packet. l.mu is held.
func (l *Link) ackStage(d *direction, s *segment, pkt []byte, now time.Duration) bool {
	if s.flags&flagACK == 0 {
		return false
	}
	// s travels from the receiver of flow f back to its sender.
	f := l.flows[s.key.reverse()]
	if f == nil || !f.synced {
		return false
	}
	ack := s.ack
	newData := !f.acked || seqAfter(ack, f.lastAck)

	if !s.pureACK() {
		// Data (or FIN) with the ACK piggybacked: Linux would send this
		// too, and it replaces any held ACK it covers.
		if s.payload > 0 && f.hadData && now-f.lastData < l.cfg.DelayedACK {
			f.pingpong = true
		}
		l.ackSent(d, f, ack, newData, now)
		return false
	}

	hold := f.acked && newData && !s.sack &&
		!(f.quick > 0 && !f.pingpong) &&
		ack-f.lastAck <= uint32(f.rcvMSS)
	if !hold {
		l.ackSent(d, f, ack, newData, now)
		return false
	}
	if f.holding {
		// A newer ACK replaces the held one; the timer keeps running.
		f.held = append(f.held[:0], pkt...)
		f.heldAck = ack
		d.stats.ACKsSuperseded++
		return true
	}
	f.holding = true
	f.holdDir = d.dir
	f.held = append(l.buffer(), pkt...)
	f.heldAck = ack
	f.heldAt = now
	f.gen++
	d.stats.ACKsHeld++
	if l.obs != nil {
		l.emit(Event{Kind: EventHold, Dir: d.dir, At: now, Packet: pkt})
	}
	d.holds.push(holdSlot{f: f, gen: f.gen, deadline: now + l.cfg.DelayedACK})
	if d.holds.peek().f == f {
		d.holdTimer.Reset(l.cfg.DelayedACK)
	}
	return true
}

// ackSent records that the receiver of f sent ACK number ack, discarding a
// held ACK it covers. l.mu is held.
func (l *Link) ackSent(d *direction, f *flow, ack uint32, newData bool, now time.Duration) {
	if f.holding && !seqAfter(f.heldAck, ack) {
		l.endHold(d, f, now)
		d.stats.ACKsSuperseded++
	}
	if newData {
		if f.acked && f.quick > 0 {
			f.quick--
		}
		f.acked, f.lastAck = true, ack
	}
}

// endHold clears f's hold and accounts for its duration. l.mu is held.
func (l *Link) endHold(d *direction, f *flow, now time.Duration) {
	held := now - f.heldAt
	if l.obs != nil {
		l.emit(Event{Kind: EventSupersede, Dir: d.dir, At: now, Packet: f.held, Held: held})
	}
	d.stats.HoldTime += held
	d.stats.MaxHoldTime = max(d.stats.MaxHoldTime, held)
	f.holding = false
	l.free = append(l.free, f.held[:0])
	f.held = nil
}

// releaseHolds sends on the ACKs whose timer has expired.
func (l *Link) releaseHolds(d *direction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	now := l.now()
	for {
		s := d.holds.peek()
		if s == nil {
			return
		}
		if s.deadline > now {
			d.holdTimer.Reset(s.deadline - now)
			return
		}
		f := s.f
		d.holds.pop()
		pkt := f.held
		f.held = nil
		held := now - f.heldAt
		d.stats.HoldTime += held
		d.stats.MaxHoldTime = max(d.stats.MaxHoldTime, held)
		d.stats.ACKsReleased++
		if l.obs != nil {
			l.emit(Event{Kind: EventRelease, Dir: d.dir, At: now, Packet: pkt, Held: held})
		}
		f.holding = false
		f.acked, f.lastAck = true, f.heldAck
		f.pingpong = false // the delayed-ACK timer ends interactive mode
		f.quick = max(f.quick-1, 0)
		l.enqueue(d, pkt, now)
		l.free = append(l.free, pkt[:0])
	}
}
