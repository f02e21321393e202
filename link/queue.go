package link

import "time"

// The queue stage, for every discipline (qdisc.go): a packet that the
// outage let through joins the discipline, and the discipline gives up
// one packet each time the serializer is free (serve). A discipline that
// decides at dequeue time (codel, fq_codel, pfifo_head_drop) is served at
// the instant the serializer finishes the packet before, by the serve
// timer: the instant Linux measures CoDel's sojourn time at. One that
// fixes each packet's turn when it arrives (the FIFO) passes its packets
// straight to the serializer, each stamped with the future instant the
// serializer takes it, so it needs no timer (qdiscKind.ahead).

// discipline is a queue discipline of one direction. Its methods run
// with the link's lock held; it drops through Link.qdrop.
type discipline interface {
	// full reports whether a packet of size bytes arriving now is
	// refused before it joins (tail drop, DropQueueFull); w holds the
	// packets the serializer has taken and not yet finished by now.
	full(size int, w *wire) bool
	// enqueue takes p, which arrived at now; it may drop p or others. It
	// reports whether p passes straight to the serializer, behind what
	// the serializer has taken: then the discipline keeps nothing of it.
	enqueue(p qpkt, now time.Duration) (pass bool)
	// dequeue returns the next packet to serialize at now, if any.
	dequeue(now time.Duration) (qpkt, bool)
	len() int     // packets held
	backlog() int // their bytes
	clear()       // forget every packet (Close)
}

// qpkt is a packet in a discipline.
type qpkt struct {
	buf     []byte
	enq     time.Duration // when it joined the queue
	corrupt bool
}

// span is a packet the serializer has taken: waiting for it or on the
// wire.
type span struct {
	finish time.Duration // last bit serialized
	size   int
}

// wire holds the packets the serializer has taken and not yet finished,
// oldest first: n of them from head, bytes bytes in all. Only an ahead
// discipline's packets wait in it; otherwise it holds at most the packet
// on the wire.
type wire struct {
	spans   []span
	head, n int
	bytes   int
}

// retire forgets the packets whose last bit has left by t.
func (w *wire) retire(t time.Duration) {
	for w.n > 0 && w.spans[w.head].finish <= t {
		w.bytes -= w.spans[w.head].size
		w.head = (w.head + 1) % len(w.spans)
		w.n--
	}
}

func (w *wire) push(finish time.Duration, size int) {
	if w.n == len(w.spans) {
		w.spans = grow(w.spans, w.head, w.n)
		w.head = 0
	}
	w.spans[(w.head+w.n)%len(w.spans)] = span{finish, size}
	w.n++
	w.bytes += size
}

// queue is the queue stage for pkt, which the outage let through: the
// discipline takes it (a FIFO may refuse it first), unless it is
// reordered, then the serializer takes what it can by now. l.mu is held.
func (l *Link) queue(d *direction, pkt []byte, now time.Duration, corrupt bool) {
	// What the serializer took before now, if a timer ran late (only a
	// real clock's can), goes first; ahead, nothing waits.
	if !d.ahead {
		l.serve(d, now)
	}
	d.wire.retire(now)
	if d.qd.full(len(pkt), &d.wire) {
		l.drop(d, DropQueueFull, pkt, now)
		return
	}
	buf := append(l.buffer(), pkt...)
	if corrupt {
		d.impair.corrupt(buf)
	}
	if d.impair.reorder() {
		// netem puts a reordered packet at the head of its queue, to be
		// sent at once: no rate, no delay.
		d.stats.Reordered++
		l.schedule(d, entry{buf: buf, due: now, sent: now, front: true, corrupt: corrupt}, now)
		return
	}
	// serve left the discipline empty or the serializer busy past now:
	// if it has been idle, it is free now.
	d.busyUntil = max(d.busyUntil, now)
	p := qpkt{buf: buf, enq: now, corrupt: corrupt}
	if d.qd.enqueue(p, now) {
		d.peak(1, len(pkt))
		l.send(d, p, d.busyUntil, now)
		return
	}
	d.peak(d.qd.len(), d.qd.backlog())
	l.serve(d, now)
}

// peak records the queue's size: n packets of b bytes in the discipline,
// and those the serializer has taken.
func (d *direction) peak(n, b int) {
	d.stats.PeakQueuePackets = max(d.stats.PeakQueuePackets, n+d.wire.n)
	d.stats.PeakQueueBytes = max(d.stats.PeakQueueBytes, b+d.wire.bytes)
}

// serve dequeues from d's discipline each time the serializer is free by
// now, at the instant it became free, and sends the packet on to the rate
// and delay stages; then it sets the serve timer for the next such
// instant if packets wait. Invariant: when serve returns, either the
// discipline is empty or the serializer is busy past now, so every packet
// that waits in it arrived while the serializer was busy, and busyUntil
// is the instant the next dequeue happens. l.mu is held.
func (l *Link) serve(d *direction, now time.Duration) {
	for d.qd.len() > 0 && d.busyUntil <= now {
		at := d.busyUntil
		p, ok := d.qd.dequeue(at)
		if !ok {
			break // CoDel dropped the rest
		}
		l.send(d, p, at, now)
	}
	if d.qd.len() > 0 {
		d.serveTimer.Reset(d.busyUntil - now)
	}
}

// send runs the rate and delay stages for p, which the serializer takes
// at at: at most now for a dequeue at the serializer's instant, at least
// now for an ahead one. l.mu is held.
func (l *Link) send(d *direction, p qpkt, at, now time.Duration) {
	// The rate stage: the serializer, or a trace's opportunities.
	var finish time.Duration
	if d.trace != nil {
		// An ahead packet queues behind those before it on the trace
		// from its arrival; a dequeued one waited in the discipline
		// until at, the instant the packet before it left.
		var ok bool
		if d.ahead {
			finish, ok = d.trace.depart(p.enq, len(p.buf), false)
		} else {
			finish, ok = d.trace.depart(at, len(p.buf), true)
		}
		if !ok {
			l.qdrop(d, DropTraceEnded, p, now)
			return
		}
	} else {
		finish = at + d.serialization(len(p.buf))
	}
	d.busyUntil = finish
	d.wire.retire(min(at, now)) // the dequeue's instant; ahead, the arrival's
	d.wire.push(finish, len(p.buf))
	// The delay stage.
	due := finish + max(d.impair.delay(d.cfg.Delay), 0)
	if d.cfg.KeepOrder {
		// Behind every packet before it, before the far node's noise,
		// which noiseDue then keeps in order: noise does not add up.
		if d.cfg.Noise.IsZero() {
			due = max(due, d.lastDue)
		} else {
			due = max(due, d.quiet)
		}
	}
	due = d.noiseDue(due)
	if l.obs != nil {
		// At is the packet's arrival in the queue, Start its
		// serialization: for a dequeue at the serializer's instant the
		// event comes then, so At may be earlier than the events before it.
		l.emit(Event{Kind: EventQueue, Dir: d.dir, At: p.enq, Packet: p.buf, Start: at, Finish: finish, Due: due, Queue: d.qd.len() + d.wire.n})
	}
	l.schedule(d, entry{buf: p.buf, due: due, sent: p.enq, corrupt: p.corrupt}, now)
}

// noiseDue delays an arrival due at due by a draw of Config.Noise; a
// packet due no earlier than every one before it stays behind them.
// l.mu is held.
func (d *direction) noiseDue(due time.Duration) time.Duration {
	if d.cfg.Noise.IsZero() {
		return due
	}
	inOrder := due >= d.quiet
	d.quiet = max(d.quiet, due)
	due += d.cfg.Noise.Draw(d.noise)
	if inOrder {
		due = max(due, d.lastDue)
	}
	return due
}

// serveDue is the serve timer's work. On a real clock it may run late;
// serve then dequeues at the instants the serializer became free.
func (l *Link) serveDue(d *direction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.serve(d, l.now())
	}
}

// qdrop counts and reports a packet a discipline drops, and takes its
// buffer back. l.mu is held.
func (l *Link) qdrop(d *direction, why DropReason, p qpkt, now time.Duration) {
	l.drop(d, why, p.buf, now)
	l.free = append(l.free, p.buf[:0])
}

// pktRing is a FIFO of packets, for the disciplines that keep one.
type pktRing struct {
	ring    []qpkt
	head, n int
	size    int // bytes held
}

func newPktRing() pktRing { return pktRing{ring: make([]qpkt, 64)} }

func (r *pktRing) push(p qpkt) {
	if r.n == len(r.ring) {
		r.ring = grow(r.ring, r.head, r.n)
		r.head = 0
	}
	r.ring[(r.head+r.n)%len(r.ring)] = p
	r.n++
	r.size += len(p.buf)
}

func (r *pktRing) pop() (qpkt, bool) {
	if r.n == 0 {
		return qpkt{}, false
	}
	p := r.ring[r.head]
	r.ring[r.head] = qpkt{}
	r.head = (r.head + 1) % len(r.ring)
	r.n--
	r.size -= len(p.buf)
	return p, true
}

func (r *pktRing) clear() {
	for r.n > 0 {
		r.pop()
	}
}
