package link

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
)

// DeliverFunc receives a packet at the far end of direction dir. pkt is
// valid only during the call. It is called without the link's lock held, so
// it may Send. On the virtual clock it runs inside the link's quiet event
// (clock.QuietTimers): one that readies a goroutine (a send on a channel
// someone waits on) calls clock.Stir first, or goes through the clock's
// Wake.
type DeliverFunc func(dir Dir, pkt []byte)

// Link is a two-way link. It is safe for concurrent use.
type Link struct {
	cfg     Config
	clk     clock.Clock
	start   time.Time
	deliver DeliverFunc
	// oneByOne: deliver one packet per timer event (a clock.Sequential).
	oneByOne bool
	// pump: each direction delivers on a goroutine of its own (a
	// clock.SpawningTimers); done ends them and pumps counts them.
	pump  bool
	done  chan struct{}
	pumps sync.WaitGroup
	// seq or mono, if the clock is one, reads time since start cheaply:
	// seq.Elapsed() less startElapsed, or mono.Since(start).
	seq          clock.Sequential
	startElapsed time.Duration
	mono         clock.Monotonic

	mu     sync.Mutex
	obs    Observer // see Observe
	closed bool
	dirs   [2]direction
	flows  map[flowKey]*flow // delayed-ACK state, keyed by the data's direction
	free   [][]byte          // spare packet buffers of capacity MTU
}

// entry is a packet between the rate stage and the far end.
type entry struct {
	buf     []byte
	due     time.Duration // arrival at the far end
	sent    time.Duration // when the packet entered the link's queue
	seq     uint64        // order of entry into the delivery queue; breaks ties
	front   bool          // reordered: delivered before anything else due
	corrupt bool          // a bit was flipped (impair.go)
}

type direction struct {
	dir Dir
	cfg Config // this direction's parameters (Config.direction)

	// The delivery queue is netem's tfifo: entries that arrive in order
	// (due no earlier than the last one in) go to ring, a FIFO of n from
	// head; the others to late, a heap. The next delivery is the earlier
	// of the two heads. Without jitter or reordering late stays empty.
	ring    []entry
	head, n int
	late    lateHeap
	seq     uint64
	lastDue time.Duration // the latest due time given (KeepOrder)

	// qd is the queue discipline (queue.go); serve dequeues from it each
	// time the serializer is free: at once when ahead (the FIFO), else
	// when serveTimer fires. wire holds what the serializer has taken
	// and not finished; busyUntil is when it is next free.
	qd           discipline
	ahead        bool
	serveTimer   clock.Timer
	wire         wire
	busyUntil    time.Duration
	impair       impairments // impair.go
	trace        *traceLine  // the rate stage's trace (trace.go); nil: cfg.Rate
	holds        holdQueue
	deliverTimer clock.Timer
	holdTimer    clock.Timer
	wake         chan struct{} // pump mode: buffered(1), readies the goroutine

	// noise draws Config.Noise's waits (queue.go); quiet is the latest
	// due time it was given, before its wait.
	noise *rand.Rand
	quiet time.Duration

	stats DirStats
}

// New returns a link with the given configuration. deliver receives the
// packets that reach either end.
func New(cfg Config, clk clock.Clock, deliver DeliverFunc) (*Link, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil || deliver == nil {
		return nil, fmt.Errorf("link: New needs a clock and a deliver function")
	}
	l := &Link{
		cfg:     cfg.WithDefaults(),
		clk:     clk,
		start:   clk.Now(),
		deliver: deliver,
		flows:   make(map[flowKey]*flow),
	}
	if l.seq, l.oneByOne = clk.(clock.Sequential); l.oneByOne {
		l.startElapsed = l.seq.Elapsed()
		l.start = clock.Epoch.Add(l.startElapsed) // the same instant as Now
	}
	l.mono, _ = clk.(clock.Monotonic)
	_, l.pump = clk.(clock.SpawningTimers)
	if l.pump {
		l.done = make(chan struct{})
	}
	for i := range l.dirs {
		d := &l.dirs[i]
		d.dir = Dir(i)
		d.cfg = cfg.direction(d.dir)
		d.impair = newImpairments(d.cfg, d.dir)
		d.noise = newNoiseRand(d.cfg.Seed, d.dir)
		if d.cfg.Trace != nil {
			d.trace = &traceLine{t: d.cfg.Trace}
		}
		d.ring = make([]entry, 64)
		d.wire.spans = make([]span, 64)
		if l.pump {
			d.wake = make(chan struct{}, 1)
			d.deliverTimer = clk.AfterFunc(time.Hour, d.signal)
		} else {
			// The link's own events are quiet (clock.QuietTimers): the
			// deliver function takes the packet inline, and stirs the
			// clock where it readies a goroutine.
			d.deliverTimer = clock.AfterFuncQuiet(clk, time.Hour, func() { l.deliverDue(d) })
		}
		d.deliverTimer.Stop()
		d.holdTimer = clock.AfterFuncQuiet(clk, time.Hour, func() { l.releaseHolds(d) })
		d.holdTimer.Stop()
		q := d.cfg.Qdisc // defaults filled in by direction
		kind := qdiscKinds[q.Kind]
		d.qd, d.ahead = kind.new(l, d, q), kind.ahead
		if !d.ahead {
			// serve only queues packets for delivery and arms the
			// delivery timer (or wakes the pump): it may run on any clock's
			// timer.
			d.serveTimer = clock.AfterFuncQuiet(clk, time.Hour, func() { l.serveDue(d) })
			d.serveTimer.Stop()
		}
	}
	if l.pump {
		l.pumps.Add(len(l.dirs))
		for i := range l.dirs {
			go l.pumpLoop(&l.dirs[i])
		}
	}
	return l, nil
}

// pumpLoop delivers the packets of d as they fall due, until Close. On a
// clock.SpawningTimers, timers and sends only wake this long-lived
// goroutine, whose stack grows once for gVisor's receive path rather than
// on every batch; an unshaped link needs no timer (docs/PERFORMANCE.md).
func (l *Link) pumpLoop(d *direction) {
	defer l.pumps.Done()
	for {
		select {
		case <-d.wake:
		case <-l.done:
			return
		}
		for l.deliverNext(d) {
		}
	}
}

// signal readies d's delivery goroutine.
func (d *direction) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// arm schedules the delivery of d's head packet wait from now: at once on
// the delivery goroutine if it is due and the link pumps (a
// clock.SpawningTimers), otherwise by d's timer. l.mu is held.
func (l *Link) arm(d *direction, wait time.Duration) {
	if l.pump && wait <= 0 {
		d.signal()
		return
	}
	d.deliverTimer.Reset(wait)
}

// Config returns the link's configuration with defaults filled in
// (Config.WithDefaults).
func (l *Link) Config() Config {
	return l.cfg.WithDefaults() // a copy: Outages and BtoA too
}

func (l *Link) now() time.Duration {
	if l.seq != nil {
		return l.seq.Elapsed() - l.startElapsed
	}
	if l.mono != nil {
		return l.mono.Since(l.start)
	}
	return l.clk.Now().Sub(l.start)
}

// Send offers an IP packet to direction dir. The link copies it; the
// caller keeps pkt.
func (l *Link) Send(dir Dir, pkt []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := &l.dirs[dir]
	d.stats.SentPackets++
	d.stats.SentBytes += uint64(len(pkt))
	if l.closed {
		d.stats.Drops[DropClosed]++
		return
	}
	now := l.now()
	if l.obs != nil {
		l.emit(Event{Kind: EventSend, Dir: dir, At: now, Packet: pkt})
	}
	if len(pkt) > l.cfg.MTU {
		l.drop(d, DropTooBig, pkt, now)
		return
	}
	// The stages, in netem's order. Delayed ACK (delack.go): a held ACK
	// is enqueued when released.
	if l.cfg.DelayedACK > 0 {
		var s segment
		if parseTCP(pkt, &s) && l.ackStage(d, &s, pkt, now) {
			return // held
		}
	}
	// Duplicate, loss, corrupt (impair.go), then for each packet they let
	// through, admit: outage, queue discipline, reorder; at its dequeue,
	// rate and delay (queue.go).
	l.enqueue(d, pkt, now)
}

// enqueue runs pkt through the impairments, the outage, the queue, the
// rate and the delay, at time now. l.mu is held.
func (l *Link) enqueue(d *direction, pkt []byte, now time.Duration) {
	l.impaired(d, pkt, now, true) // impair.go: calls admit for each packet that goes on
}

// admit runs the outage, queue, reorder, rate and delay stages for pkt,
// which the impairments let through (corrupt: with a bit flipped). l.mu
// is held.
func (l *Link) admit(d *direction, pkt []byte, now time.Duration, corrupt bool) {
	if l.down(now) { // the outage stage, outage.go
		l.drop(d, DropOutage, pkt, now)
		return
	}
	l.queue(d, pkt, now, corrupt) // queue.go: the queue, reorder, rate and delay
}

// schedule puts e into d's delivery queue and arms the timer if e is now
// the next to go. l.mu is held.
func (l *Link) schedule(d *direction, e entry, now time.Duration) {
	d.seq++
	e.seq = d.seq
	next, ok := d.peek()
	if !e.front && (d.n == 0 || e.due >= d.ring[(d.head+d.n-1)%len(d.ring)].due) {
		if d.n == len(d.ring) {
			d.ring = grow(d.ring, d.head, d.n)
			d.head = 0
		}
		d.ring[(d.head+d.n)%len(d.ring)] = e
		d.n++
	} else {
		d.late.push(e)
	}
	d.lastDue = max(d.lastDue, e.due)
	if !ok || e.before(next) {
		l.arm(d, e.due-now)
	}
}

// before orders deliveries: by due time, a reordered packet first, then
// first in, first out.
func (e *entry) before(o *entry) bool {
	if e.due != o.due {
		return e.due < o.due
	}
	if e.front != o.front {
		return e.front
	}
	return e.seq < o.seq
}

// peek returns the next entry to deliver, if any.
func (d *direction) peek() (*entry, bool) {
	var r, h *entry
	if d.n > 0 {
		r = &d.ring[d.head]
	}
	if len(d.late) > 0 {
		h = &d.late[0]
	}
	switch {
	case r == nil:
		return h, h != nil
	case h == nil || r.before(h):
		return r, true
	}
	return h, true
}

// pop removes the next entry to deliver.
func (d *direction) pop() entry {
	if d.n > 0 && (len(d.late) == 0 || d.ring[d.head].before(&d.late[0])) {
		e := d.ring[d.head]
		d.ring[d.head].buf = nil
		d.head = (d.head + 1) % len(d.ring)
		d.n--
		return e
	}
	return d.late.pop()
}

// serialization is the time n bytes occupy the wire, counted as netem's
// rate counts them (packet_time_ns): plus PacketOverhead, in whole cells
// of CellSize bytes plus CellOverhead each when CellSize is set.
func (d *direction) serialization(n int) time.Duration {
	if d.cfg.Rate == 0 {
		return 0
	}
	n += d.cfg.PacketOverhead
	if cs := d.cfg.CellSize; cs > 0 {
		cells := max(n, 0) / cs
		if n > cells*cs {
			cells++
		}
		n = cells * (cs + d.cfg.CellOverhead)
	}
	return time.Duration(float64(max(n, 0))*8*1e9/d.cfg.Rate + 0.5)
}

// deliverDue delivers the packets of d that are due. On a clock.Sequential
// it delivers one and lets the timer fire again for the next: one packet
// per event keeps the receivers' work in a canonical order. On other
// clocks a timer can fire late, so it delivers every packet due by then.
func (l *Link) deliverDue(d *direction) {
	for l.deliverNext(d) && !l.oneByOne {
	}
}

// deliverNext hands the next packet of d to the far end if it is due and
// arms the timer for the one after. It reports whether it delivered.
func (l *Link) deliverNext(d *direction) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	next, ok := d.peek()
	if !ok {
		l.mu.Unlock()
		return false
	}
	now := l.now()
	if next.due > now {
		l.arm(d, next.due-now)
		l.mu.Unlock()
		return false
	}
	e := d.pop()
	if next, ok := d.peek(); ok && !l.pump {
		d.deliverTimer.Reset(next.due - now)
	}
	buf := e.buf
	d.stats.Packets++
	d.stats.Bytes += uint64(len(buf))
	if l.cfg.DelayedACK > 0 && !e.corrupt { // the receiver discards a corrupt packet
		var s segment
		if parseTCP(buf, &s) {
			l.received(&s, d.dir, now, now-e.sent)
		}
	}
	if l.obs != nil {
		l.emit(Event{Kind: EventDeliver, Dir: d.dir, At: now, Packet: buf})
	}
	l.mu.Unlock()

	l.deliver(d.dir, buf)

	l.mu.Lock()
	l.free = append(l.free, buf[:0])
	l.mu.Unlock()
	return true
}

// buffer returns an empty buffer able to hold an MTU-sized packet.
func (l *Link) buffer() []byte {
	if n := len(l.free); n > 0 {
		b := l.free[n-1]
		l.free = l.free[:n-1]
		return b
	}
	return make([]byte, 0, l.cfg.MTU)
}

// grow returns ring, n entries from head, in a ring twice the size from 0.
func grow[T any](ring []T, head, n int) []T {
	r := make([]T, 2*len(ring))
	for i := range n {
		r[i] = ring[(head+i)%len(ring)]
	}
	return r
}

// Stats returns a snapshot of the counters.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{l.dirs[0].stats, l.dirs[1].stats}
}

// Close stops the link's timers and discards the packets in flight,
// counting them as DropClosed. Later sends are dropped the same way. Close
// is idempotent; it waits for the delivery goroutines, so it must not be
// called from a DeliverFunc.
func (l *Link) Close() {
	defer l.pumps.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	if l.done != nil {
		close(l.done)
	}
	for i := range l.dirs {
		d := &l.dirs[i]
		d.deliverTimer.Stop()
		d.holdTimer.Stop()
		d.stats.Drops[DropClosed] += uint64(d.n + len(d.late) + d.holds.live())
		if d.serveTimer != nil {
			d.serveTimer.Stop()
		}
		d.stats.Drops[DropClosed] += uint64(d.qd.len())
		d.qd.clear()
		for j := 0; j < d.n; j++ {
			d.ring[(d.head+j)%len(d.ring)].buf = nil
		}
		d.n, d.late = 0, nil
		d.wire.head, d.wire.n, d.wire.bytes = 0, 0, 0
		d.holds = holdQueue{}
	}
	l.flows = nil
	l.free = nil
}
