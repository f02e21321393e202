package link

import (
	"fmt"
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
)

// DeliverFunc receives a packet at the far end of direction dir. pkt is
// valid only during the call. It is called without the link's lock held, so
// it may Send.
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

	mu     sync.Mutex
	obs    Observer // see Observe
	closed bool
	dirs   [2]direction
	flows  map[flowKey]*flow // delayed-ACK state, keyed by the data's direction
	free   [][]byte          // spare packet buffers of capacity MTU
}

// entry is a packet in flight: queued, on the wire or propagating.
type entry struct {
	buf    []byte
	finish time.Duration // last bit serialized
	due    time.Duration // arrival at the far end
}

type direction struct {
	dir Dir

	// ring holds entries in order from head, n of them. Those from
	// index wire on (relative to head) are still queued or being
	// serialized; earlier ones are propagating.
	ring      []entry
	head, n   int
	wire      int
	wireBytes int
	busyUntil time.Duration // when the serializer is next free

	holds holdQueue

	deliverTimer clock.Timer
	holdTimer    clock.Timer
	wake         chan struct{} // pump mode: buffered(1), readies the goroutine

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
		cfg:     cfg.withDefaults(),
		clk:     clk,
		start:   clk.Now(),
		deliver: deliver,
		flows:   make(map[flowKey]*flow),
	}
	_, l.oneByOne = clk.(clock.Sequential)
	_, l.pump = clk.(clock.SpawningTimers)
	if l.pump {
		l.done = make(chan struct{})
	}
	for i := range l.dirs {
		d := &l.dirs[i]
		d.dir = Dir(i)
		d.ring = make([]entry, 64)
		if l.pump {
			d.wake = make(chan struct{}, 1)
			d.deliverTimer = clk.AfterFunc(time.Hour, d.signal)
		} else {
			d.deliverTimer = clk.AfterFunc(time.Hour, func() { l.deliverDue(d) })
		}
		d.deliverTimer.Stop()
		d.holdTimer = clk.AfterFunc(time.Hour, func() { l.releaseHolds(d) })
		d.holdTimer.Stop()
	}
	if l.pump {
		l.pumps.Add(len(l.dirs))
		for i := range l.dirs {
			go l.pumpLoop(&l.dirs[i])
		}
	}
	return l, nil
}

// pumpLoop delivers the packets of d as they fall due, until Close. It is
// the real clock's delivery path: a real timer runs its function on a new
// goroutine, whose stack then grew anew through gVisor's receive path on
// every batch (a quarter of the CPU of an unshaped transfer); timers and
// sends now only wake this long-lived goroutine, and an unshaped link
// needs no timer at all (unshaped goodput 1.4 → 2.25 Gbit/s, CPU per
// packet 6.5 → 4.9 µs; docs/PERFORMANCE.md).
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
// the delivery goroutine if it is due and the clock is real, otherwise by
// d's timer. l.mu is held.
func (l *Link) arm(d *direction, wait time.Duration) {
	if l.pump && wait <= 0 {
		d.signal()
		return
	}
	d.deliverTimer.Reset(wait)
}

// Config returns the link's configuration with defaults filled in.
func (l *Link) Config() Config { return l.cfg.withDefaults() } // a copy: Outages too

func (l *Link) now() time.Duration {
	if l.pump {
		// The real clock: time.Since reads only the monotonic clock.
		return time.Since(l.start)
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
	if l.cfg.DelayedACK > 0 {
		var s segment
		if parseTCP(pkt, &s) && l.ackStage(d, &s, pkt, now) {
			return // held
		}
	}
	l.enqueue(d, pkt, now)
}

// enqueue runs the rate, queue and delay stages for pkt at time now.
// l.mu is held.
func (l *Link) enqueue(d *direction, pkt []byte, now time.Duration) {
	if l.down(now) { // the outage stage, outage.go
		l.drop(d, DropOutage, pkt, now)
		return
	}
	// Packets whose last bit has left no longer occupy the queue.
	for d.wire < d.n {
		e := &d.ring[(d.head+d.wire)%len(d.ring)]
		if e.finish > now {
			break
		}
		d.wireBytes -= len(e.buf)
		d.wire++
	}
	queued := d.n - d.wire
	if queued >= l.cfg.QueuePackets || (l.cfg.QueueBytes > 0 && d.wireBytes+len(pkt) > l.cfg.QueueBytes) {
		l.drop(d, DropQueueFull, pkt, now)
		return
	}
	start := max(now, d.busyUntil)
	finish := start + l.serialization(len(pkt))
	d.busyUntil = finish

	if d.n == len(d.ring) {
		d.grow()
	}
	e := &d.ring[(d.head+d.n)%len(d.ring)]
	e.buf = append(l.buffer(), pkt...)
	e.finish = finish
	e.due = finish + l.cfg.Delay
	d.n++
	d.wireBytes += len(pkt)
	if q := d.n - d.wire; q > d.stats.PeakQueuePackets {
		d.stats.PeakQueuePackets = q
	}
	if d.wireBytes > d.stats.PeakQueueBytes {
		d.stats.PeakQueueBytes = d.wireBytes
	}
	if l.obs != nil {
		l.emit(Event{Kind: EventQueue, Dir: d.dir, At: now, Packet: pkt, Start: start, Finish: finish, Due: e.due, Queue: d.n - d.wire})
	}
	if d.n == 1 {
		l.arm(d, e.due-now)
	}
}

// serialization is the time n bytes occupy the wire.
func (l *Link) serialization(n int) time.Duration {
	if l.cfg.Rate == 0 {
		return 0
	}
	return time.Duration(float64(n)*8*1e9/l.cfg.Rate + 0.5)
}

// deliverDue delivers the packets of d that are due. On the virtual clock
// it delivers one and lets the timer fire again for the next: one packet
// per event keeps the receivers' work in a canonical order. On the real
// clock a timer fires late (by a fraction of a millisecond), so it
// delivers every packet due by then.
func (l *Link) deliverDue(d *direction) {
	for l.deliverNext(d) && !l.oneByOne {
	}
}

// deliverNext hands the head packet of d to the far end if it is due and
// arms the timer for the next one. It reports whether it delivered.
func (l *Link) deliverNext(d *direction) bool {
	l.mu.Lock()
	if l.closed || d.n == 0 {
		l.mu.Unlock()
		return false
	}
	now := l.now()
	e := &d.ring[d.head]
	if e.due > now {
		l.arm(d, e.due-now)
		l.mu.Unlock()
		return false
	}
	buf := e.buf
	e.buf = nil
	if d.wire == 0 {
		d.wireBytes -= len(buf)
	} else {
		d.wire--
	}
	d.head = (d.head + 1) % len(d.ring)
	d.n--
	if d.n > 0 && !l.pump {
		d.deliverTimer.Reset(d.ring[d.head].due - now)
	}
	d.stats.Packets++
	d.stats.Bytes += uint64(len(buf))
	if l.cfg.DelayedACK > 0 {
		var s segment
		if parseTCP(buf, &s) {
			l.received(&s, now)
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

func (d *direction) grow() {
	ring := make([]entry, 2*len(d.ring))
	for i := 0; i < d.n; i++ {
		ring[i] = d.ring[(d.head+i)%len(d.ring)]
	}
	d.ring, d.head = ring, 0
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
		d.stats.Drops[DropClosed] += uint64(d.n + d.holds.live())
		for j := 0; j < d.n; j++ {
			d.ring[(d.head+j)%len(d.ring)].buf = nil
		}
		d.n, d.wire, d.wireBytes = 0, 0, 0
		d.holds = holdQueue{}
	}
	l.flows = nil
	l.free = nil
}
