// Package explain says where the time of a run went, from the events of
// its link: handshakes, request round trips, serialization, delayed-ACK
// holds and retransmission timeouts, and, for small writes, which ACKs
// were held and which segments waited for them.
package explain

import (
	"encoding/binary"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/netemu/netemu/link"
)

// packet is the part of a packet's headers the analysis reads.
type packet struct {
	tcp      bool
	src, dst netip.AddrPort
	seq      uint32
	syn      bool
	len      int // TCP payload bytes
}

func decode(b []byte) (p packet) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != 6 {
		return p
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || total > len(b) || total < ihl+20 {
		return p
	}
	t := b[ihl:total]
	off := int(t[12]>>4) * 4
	if off < 20 || off > len(t) {
		return p
	}
	p.tcp = true
	p.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[12:16])), binary.BigEndian.Uint16(t[0:2]))
	p.dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[16:20])), binary.BigEndian.Uint16(t[2:4]))
	p.seq = binary.BigEndian.Uint32(t[4:8])
	p.syn = t[13]&2 != 0
	p.len = len(t) - off
	return p
}

// end is the sequence number after p: a SYN takes one.
func (p packet) end() uint32 {
	if p.syn {
		return p.seq + uint32(p.len) + 1
	}
	return p.seq + uint32(p.len)
}

// Category is a kind of time in a breakdown.
type Category int

// Categories, in the order they claim an instant: if the wire is busy the
// instant is serialization even if an ACK is also held.
const (
	Serialization Category = iota // a packet is being put on the wire
	Handshake                     // only connection set-up packets are propagating
	RoundTrip                     // packets are propagating (requests, responses, ACKs)
	DelayedACK                    // nothing moves but an ACK held by a delayed-ACK timer
	Timeout                       // nothing moves until a retransmission timeout fires
	Other                         // none of these: endpoints working or waiting
	numCategories
)

func (c Category) String() string {
	return [...]string{"serialization", "handshake round trips", "request round trips", "delayed-ACK holds", "retransmission timeouts", "other (endpoints)"}[c]
}

// Hold is one held ACK.
type Hold struct {
	At       time.Duration // when the receiver sent it
	Held     time.Duration
	From     netip.AddrPort // the receiver that sent the ACK
	Released bool           // by the timer; false: superseded by a newer ACK
}

// Waiting is a data segment that left the instant a pure ACK arrived, with
// no data arriving for the application to answer at that instant: held
// back by Nagle's algorithm (or a full window) until the ACK came.
type Waiting struct {
	At     time.Duration // when it was sent
	Waited time.Duration // since the previous segment of the flow was sent
	From   netip.AddrPort
	Len    int
}

// Breakdown is where the time between From and To went. The categories
// partition the interval.
type Breakdown struct {
	From, To    time.Duration
	Time        [numCategories]time.Duration
	Packets     int
	Bytes       int
	Drops       int
	Retransmits int
	QueueDelay  time.Duration // total time packets waited for the wire
	MaxQueue    int

	// HeldACKs is how many ACKs a delayed-ACK timer held for some time,
	// HeldTime how long in all; Holds lists the first of them.
	HeldACKs int
	HeldTime time.Duration
	Holds    []Hold
	// Waited is how many segments left only when an ACK arrived; Waiting
	// lists the first of them.
	Waited  int
	Waiting []Waiting
	// Inexact reports that HeldACKs, HeldTime or Waited include some
	// outside From..To: more fell outside than the analysis keeps.
	Inexact bool
}

// Elapsed is To − From.
func (b Breakdown) Elapsed() time.Duration { return b.To - b.From }

// MinRTO is the shortest retransmission timeout the analysis recognises
// (Linux's and gVisor's minimum, 200 ms).
const MinRTO = 200 * time.Millisecond

type flowID struct{ src, dst netip.AddrPort }

// flow is what the analysis remembers of one direction of a connection.
type flow struct {
	sentAny     bool
	maxSent     uint32        // highest sequence number sent, plus one
	firstSend   time.Duration // its first SYN or data segment
	dataSent    bool
	lastData    time.Duration // its last data segment
	heard       bool
	lastHeard   time.Duration // last packet delivered to its sender
	ackArrived  time.Duration // last pure ACK delivered to its sender
	dataArrived time.Duration // last data delivered to its sender
}

// kept is how many held ACKs and waiting segments an Analyzer keeps from
// the start of a run, and again from its end, so that a Breakdown can
// list the first ones and leave out those outside its interval.
const kept = 1024

// Analyzer folds a link's events, as they come, into what a Breakdown
// reports. Its memory does not grow with the bytes moved: per category it
// keeps the union of the intervals that category claims (busy periods
// merge), per connection a few instants, and the first and last kept held
// ACKs and waiting segments. Its Observe method is a link.Observer; it is
// safe for concurrent use. The zero value is ready.
type Analyzer struct {
	mu      sync.Mutex
	start   time.Time // the link's time zero, from its first event
	started bool
	spans   [numCategories]spans
	flows   map[flowID]*flow
	b       Breakdown // the totals that count every event
	holds   firstLast[Hold]
	waiting firstLast[Waiting]
}

// Observe folds e into the analysis.
func (a *Analyzer) Observe(e link.Event) {
	r := decode(e.Packet)
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started {
		a.start, a.started = e.Time.Add(-e.At), true
	}
	if a.flows == nil {
		a.flows = map[flowID]*flow{}
	}
	get := func(id flowID) *flow {
		f := a.flows[id]
		if f == nil {
			f = &flow{}
			a.flows[id] = f
		}
		return f
	}
	switch e.Kind {
	case link.EventQueue:
		a.spans[Serialization].add(e.Start, e.Finish)
		if r.syn {
			a.spans[Handshake].add(e.Finish, e.Due)
		} else {
			a.spans[RoundTrip].add(e.Finish, e.Due)
		}
		a.b.QueueDelay += e.Start - e.At
		a.b.MaxQueue = max(a.b.MaxQueue, e.Queue)
	case link.EventRelease, link.EventSupersede:
		a.spans[DelayedACK].add(e.At-e.Held, e.At)
		if e.Held > 0 { // an ACK held and replaced in the same instant delayed nothing
			a.holds.add(Hold{At: e.At - e.Held, Held: e.Held, From: r.src, Released: e.Kind == link.EventRelease}, e.Held)
		}
	case link.EventDrop:
		a.b.Drops++
	case link.EventDeliver:
		a.b.Packets++
		a.b.Bytes += len(e.Packet)
		f := get(flowID{r.dst, r.src}) // the flow whose sender this reaches
		f.heard, f.lastHeard = true, e.At
		if r.tcp && r.len == 0 {
			f.ackArrived = e.At
		} else if r.tcp {
			f.dataArrived = e.At
		}
	case link.EventSend:
		if !r.tcp || r.len == 0 && !r.syn {
			return
		}
		f := get(flowID{r.src, r.dst})
		end := r.end()
		if f.sentAny && int32(end-f.maxSent) <= 0 {
			a.b.Retransmits++
			// Silent since the last packet heard, or, for a SYN that
			// heard nothing, since the flow's first: a timeout.
			since, ok := f.lastHeard, f.heard
			if !ok {
				since, ok = f.firstSend, true
			}
			if ok && e.At-since >= MinRTO*9/10 {
				a.spans[Timeout].add(since, e.At)
			}
		} else if r.len > 0 && f.dataSent && f.ackArrived == e.At && f.dataArrived != e.At && e.At > f.lastData {
			// Left the instant a pure ACK arrived, with no data arriving
			// that the application could be answering: it was waiting.
			a.waiting.add(Waiting{At: e.At, Waited: e.At - f.lastData, From: r.src, Len: r.len}, 0)
		}
		if r.len > 0 {
			f.dataSent, f.lastData = true, e.At
		}
		if !f.sentAny {
			f.firstSend = e.At
		}
		if !f.sentAny || int32(end-f.maxSent) > 0 {
			f.maxSent, f.sentAny = end, true
		}
	}
}

// Since converts an instant of the run's clock to link time (what
// Breakdown takes); zero before the first event.
func (a *Analyzer) Since(t time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started {
		return 0
	}
	return t.Sub(a.start)
}

// Breakdown attributes the time from `from` to `to` (link time) to
// categories, lists the held ACKs and waiting segments in that interval,
// and counts every packet, drop and retransmission the link saw.
func (a *Analyzer) Breakdown(from, to time.Duration) Breakdown {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.b
	b.From, b.To = from, to
	var inexact [2]bool
	b.Holds, b.HeldACKs, b.HeldTime, inexact[0] = a.holds.within(func(h Hold) bool { return h.At+h.Held >= from && h.At <= to })
	b.Waiting, b.Waited, _, inexact[1] = a.waiting.within(func(w Waiting) bool { return w.At >= from && w.At <= to })
	b.Inexact = inexact[0] || inexact[1]
	var es []edge
	for c := range a.spans {
		for _, s := range a.spans[c] {
			s, e := max(s.from, from), min(s.to, to)
			if e > s {
				es = append(es, edge{s, Category(c), +1}, edge{e, Category(c), -1})
			}
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].at != es[j].at {
			return es[i].at < es[j].at
		}
		return es[i].delta < es[j].delta
	})
	var active [numCategories]int
	t := from
	for _, e := range es {
		if e.at > t {
			b.Time[claim(active)] += e.at - t
			t = e.at
		}
		active[e.cat] += e.delta
	}
	if to > t {
		b.Time[claim(active)] += to - t
	}
	return b
}

// edge is where a category's interval begins (+1) or ends (−1).
type edge struct {
	at    time.Duration
	cat   Category
	delta int
}

// span is the interval [from, to) of link time.
type span struct{ from, to time.Duration }

// spans is a union of intervals: sorted, disjoint and not touching.
type spans []span

// add joins [from, to) to the union. Intervals arrive near the end of
// the union, so the search runs from there.
func (u *spans) add(from, to time.Duration) {
	if to <= from {
		return
	}
	v := *u
	i := len(v) // the first interval that ends at or after from
	for i > 0 && v[i-1].to >= from {
		i--
	}
	j := i // the first interval that starts after to
	for j < len(v) && v[j].from <= to {
		j++
	}
	if i == j {
		v = append(v, span{})
		copy(v[i+1:], v[i:])
		v[i] = span{from, to}
	} else {
		v[i] = span{min(v[i].from, from), max(v[j-1].to, to)}
		v = append(v[:i+1], v[j:]...)
	}
	*u = v
}

// firstLast keeps the first kept items of a sequence and the last kept,
// with the count and total weight of all of them.
type firstLast[T any] struct {
	head   []T
	tail   []T // a ring once full; next is its oldest
	next   int
	n      int
	total  time.Duration
	weight []time.Duration // of head then tail items, parallel to them
}

func (l *firstLast[T]) add(x T, w time.Duration) {
	l.n++
	l.total += w
	switch {
	case len(l.head) < kept:
		l.head = append(l.head, x)
		l.weight = append(l.weight, w)
	case len(l.tail) < kept:
		l.tail = append(l.tail, x)
		l.weight = append(l.weight, w)
	default:
		l.tail[l.next] = x
		l.weight[kept+l.next] = w
		l.next = (l.next + 1) % kept
	}
}

// within returns the first kept items for which in is true, their count
// and total weight over the whole sequence. The items outside must lie at
// its start or end (in is a window on a sequence in time order); inexact
// reports that more were outside than were kept, so that the count and
// the total include some that are not in the window.
func (l *firstLast[T]) within(in func(T) bool) (first []T, n int, total time.Duration, inexact bool) {
	n, total = l.n, l.total
	for i, x := range l.head {
		if in(x) {
			first = append(first, x)
		} else {
			n--
			total -= l.weight[i]
		}
	}
	for i, x := range l.tail {
		if !in(x) {
			n--
			total -= l.weight[kept+i]
		} else if len(first) < kept {
			first = append(first, x)
		}
	}
	dropped := l.n > 2*kept
	inexact = dropped && (len(l.head) > 0 && !in(l.head[len(l.head)-1]) || !in(l.tail[l.next]))
	return first, n, total, inexact
}

func claim(active [numCategories]int) Category {
	for c := Category(0); c < Other; c++ {
		if active[c] > 0 {
			return c
		}
	}
	return Other
}

// Share is the fraction of the elapsed time in c.
func (b Breakdown) Share(c Category) float64 {
	if b.Elapsed() <= 0 {
		return 0
	}
	return float64(b.Time[c]) / float64(b.Elapsed())
}

// Categories lists the categories in order, for printing.
func Categories() []Category {
	return []Category{Serialization, Handshake, RoundTrip, DelayedACK, Timeout, Other}
}
