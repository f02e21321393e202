// Package explain says where the time of a run went, from the events of
// its link: serialization, handshakes, request round trips, delayed-ACK
// holds and loss recovery (fast retransmit, tail-loss probes and
// retransmission timeouts), and, for small writes, which ACKs were held
// and which segments waited for them.
//
// Everything it says of time comes from the packets the link carried,
// dropped and delivered, so the same reasoning holds for every TCP
// behind the link (gVisor's, netemu's, the kernel's); loss.go says how it
// tells the ways of recovering from a loss apart. The one thing the link
// cannot see is an ACK that its own TCP held back: netemu's TCP reports
// those, and every TCP that has tcp_info its state (tcp.go).
package explain

import (
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/netemu/netemu/link"
)

// Category is a kind of time in a breakdown.
type Category int

// Categories, in the order they claim an instant: if the wire is busy the
// instant is serialization even if an ACK is also held, and while a lost
// segment waits for its repair the instant is loss recovery even if
// other packets are propagating.
const (
	Serialization Category = iota // a packet is being put on the wire
	Handshake                     // only connection set-up packets are propagating
	Timeout                       // a loss repaired after a retransmission timeout, or the silence before one
	TailLossProbe                 // a loss repaired after a tail-loss probe, or the silence before one
	FastRecovery                  // a loss repaired by fast retransmit or RACK, from the loss to the ACK of its repair
	RoundTrip                     // packets are propagating (requests, responses, ACKs)
	DelayedACK                    // nothing moves but an ACK held by a delayed-ACK timer
	Other                         // none of these: endpoints working or waiting
	numCategories
)

func (c Category) String() string {
	return [...]string{"serialization", "handshake round trips", "retransmission timeouts", "tail-loss probes", "fast retransmit, RACK", "request round trips", "delayed-ACK holds", "other (endpoints)"}[c]
}

// Categories lists the categories in order, for printing.
func Categories() []Category {
	return []Category{Serialization, Handshake, RoundTrip, DelayedACK, FastRecovery, TailLossProbe, Timeout, Other}
}

// LossRecovery lists the categories of loss recovery.
func LossRecovery() []Category { return []Category{FastRecovery, TailLossProbe, Timeout} }

// Hold is one ACK a delayed-ACK timer held.
type Hold struct {
	At   time.Duration // when the hold began: the receiver sent it (to the link's stage) or would have (held by its own timer)
	Held time.Duration
	From netip.AddrPort // the receiver that sent the ACK
	By   HoldSource     // whose timer: the link's stage or the TCP's own
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

	// HeldACKs is how many ACKs a delayed-ACK timer held (those it
	// released, not those a newer ACK replaced), HeldTime how long in
	// all; Holds lists the first of them. They are the holds the
	// DelayedACK category is made of. HeldBy says whose timers held
	// them: the link's delayed-ACK stage's (for a TCP that ACKs at once,
	// gVisor's), the receiving TCP's own (netemu's TCP, which reports
	// each ACK its timer sends; ByTCP whenever a TCP counts its ACKs,
	// even none), or both; TCPHeldACKs is how many of them the TCPs'.
	HeldACKs    int
	HeldTime    time.Duration
	Holds       []Hold
	HeldBy      HoldSource
	TCPHeldACKs int
	// Replaced is how many held ACKs a newer ACK (or data) replaced
	// before the timer fired: the newer packet carried what they said, so
	// they delayed nothing of their own.
	Replaced int
	// Waited is how many segments left only when an ACK arrived; Waiting
	// lists the first of them.
	Waited  int
	Waiting []Waiting
	// Inexact reports that HeldACKs, HeldTime or Waited include some
	// outside From..To: more fell outside than the analysis keeps.
	Inexact bool

	Loss Loss // what loss recovery the link saw, over the whole run

	// ACKs is what the receiving TCPs counted of their own ACKs over the
	// whole run, where they count them (netemu's TCP).
	ACKs ACKCounts
	// TCP is each connection end's TCP state as last sampled, where the
	// TCP reports tcp_info (netemu's, kernel TCP), in address order.
	TCP []TCPState
	// BBR is when BBR senders were in PROBE_RTT or long-term mode, and
	// what that cost (bbr.go), where the TCP reports BBR's state.
	BBR BBRSpans
}

// Loss counts what the link saw of losses and their recovery (loss.go).
type Loss struct {
	// Repaired counts the data segments the link lost (dropped, or
	// corrupted so that the receiver discarded them) that their sender
	// sent again, by the way they were repaired: indexed by FastRecovery,
	// TailLossProbe and Timeout.
	Repaired [numCategories]int
	// Probes is how many tail-loss probes were sent, Timeouts how many
	// retransmission timeouts fired (a SYN sent again included).
	Probes, Timeouts int
	// Unneeded is how many retransmissions repaired nothing the link
	// lost: spurious ones, or repairs of a loss inside a host.
	Unneeded int
	// Unsure is how many timer-driven retransmissions could not be told
	// apart as a tail-loss probe or a timeout, for want of the
	// connection's handshake (SACK, round-trip time): they count as
	// timeouts.
	Unsure int
	// Episodes is how many times a sender went into recovery (each
	// reduces its congestion window).
	Episodes int
}

// Lost is how many lost data segments were sent again.
func (l Loss) Lost() int {
	n := 0
	for _, c := range LossRecovery() {
		n += l.Repaired[c]
	}
	return n
}

// Elapsed is To − From.
func (b Breakdown) Elapsed() time.Duration { return b.To - b.From }

// MinRTO is the shortest retransmission timeout the analysis recognises
// (Linux's and gVisor's minimum, 200 ms).
const MinRTO = 200 * time.Millisecond

type flowID struct{ src, dst netip.AddrPort }

// flow is what the analysis remembers of one direction of a connection:
// its sender's segments and what its sender heard back.
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

	rec recovery // loss.go
}

// kept is how many held ACKs and waiting segments an Analyzer keeps from
// the start of a run, and again from its end, so that a Breakdown can
// list the first ones and leave out those outside its interval.
const kept = 1024

// Analyzer folds a link's events and the TCPs' samples, as they come,
// into what a Breakdown reports. Its memory does not grow with the bytes
// moved: per category it keeps the union of the intervals that category
// claims (busy periods merge), per connection a few instants, the losses
// not yet repaired and each end's last TCP sample, and the first and
// last kept held ACKs and waiting segments. Its Observe method is a
// link.Observer and TCP a tcpstack probe; it is safe for concurrent use.
// The zero value is ready.
type Analyzer struct {
	mu       sync.Mutex
	start    time.Time // the link's time zero, from its first event
	started  bool
	spans    [numCategories]spans
	flows    map[flowID]*flow
	b        Breakdown       // the totals that count every event
	holds    firstLast[Hold] // the link's delayed-ACK stage's
	tcpHolds firstLast[Hold] // the TCPs' own timers' (tcp.go)
	waiting  firstLast[Waiting]

	ends        map[flowID]*end // connection ends the TCP samples came from
	acksCounted bool            // some TCP counted its ACKs
	retired     ACKCounts       // of connections whose addresses a later one took
	bbrSpans    []BBRSpan       // BBR's phases that ended, the first kept (bbr.go)
	bbrOpen     []BBRSpan       // those under way, as a Breakdown last saw them
}

func (a *Analyzer) flow(id flowID) *flow {
	f := a.flows[id]
	if f == nil {
		f = &flow{}
		a.flows[id] = f
	}
	return f
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
	case link.EventRelease:
		if e.Held > 0 { // an ACK released in the instant it was held delayed nothing
			a.spans[DelayedACK].add(e.At-e.Held, e.At)
			a.holds.add(Hold{At: e.At - e.Held, Held: e.Held, From: r.src, By: ByLink}, e.Held)
		}
	case link.EventSupersede:
		if e.Held > 0 {
			a.b.Replaced++
		}
	case link.EventDrop:
		a.b.Drops++
		if r.tcp && r.len > 0 {
			a.lost(a.flow(flowID{r.src, r.dst}), r, e.At)
		}
	case link.EventDeliver:
		a.b.Packets++
		a.b.Bytes += len(e.Packet)
		if !r.tcp {
			return
		}
		if !intact(e.Packet) { // the receiver discards it: lost
			if r.len > 0 {
				a.lost(a.flow(flowID{r.src, r.dst}), r, e.At)
			}
			return
		}
		f := a.flow(flowID{r.dst, r.src}) // the flow whose sender this reaches
		f.heard, f.lastHeard = true, e.At
		if r.len == 0 {
			f.ackArrived = e.At
		} else {
			f.dataArrived = e.At
		}
		if r.hasACK {
			a.acked(f, r, e.At)
		}
		if r.len > 0 {
			a.arrived(a.flow(flowID{r.src, r.dst}), r)
		}
	case link.EventSend:
		if !r.tcp || r.len == 0 && !r.syn {
			return
		}
		f := a.flow(flowID{r.src, r.dst})
		end := r.end()
		if f.sentAny && int32(end-f.maxSent) <= 0 {
			a.b.Retransmits++
			a.retransmitted(f, a.flows[flowID{r.dst, r.src}], r, e.At)
		} else if r.len > 0 {
			a.sentNew(f, a.flows[flowID{r.dst, r.src}], r, e.At)
			if f.dataSent && f.ackArrived == e.At && f.dataArrived != e.At && e.At > f.lastData {
				// Left the instant a pure ACK arrived, with no data arriving
				// that the application could be answering: it was waiting.
				a.waiting.add(Waiting{At: e.At, Waited: e.At - f.lastData, From: r.src, Len: r.len}, 0)
			}
		}
		if r.syn {
			f.rec.synSeen, f.rec.synSACK = true, r.sackOK
		}
		if r.len > 0 {
			f.dataSent, f.lastData = true, e.At
		}
		if !f.sentAny {
			f.firstSend = e.At
			f.rec.timeFrom(end, e.At) // the handshake's round trip
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
// and counts every packet, drop, retransmission and loss the link saw.
// A loss repaired but not yet acknowledged counts as recovery up to `to`.
func (a *Analyzer) Breakdown(from, to time.Duration) Breakdown {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.b
	b.From, b.To = from, to
	var inexact [3]bool
	inWindow := func(h Hold) bool { return h.At+h.Held >= from && h.At <= to }
	var linkHolds, tcpHolds []Hold
	var n, tn int
	var held, theld time.Duration
	linkHolds, n, held, inexact[0] = a.holds.within(inWindow)
	tcpHolds, tn, theld, inexact[1] = a.tcpHolds.within(inWindow)
	b.Holds = mergeHolds(linkHolds, tcpHolds)
	b.HeldACKs, b.HeldTime, b.TCPHeldACKs = n+tn, held+theld, tn
	if n > 0 || !a.acksCounted {
		b.HeldBy |= ByLink
	}
	if a.acksCounted {
		b.HeldBy |= ByTCP
	}
	b.Waiting, b.Waited, _, inexact[2] = a.waiting.within(func(w Waiting) bool { return w.At >= from && w.At <= to })
	b.Inexact = inexact[0] || inexact[1] || inexact[2]
	a.tcpSummary(&b)
	var es []edge
	interval := func(c Category, sp span) {
		s, e := max(sp.from, from), min(sp.to, to)
		if e > s {
			es = append(es, edge{s, c, +1}, edge{e, c, -1})
		}
	}
	for c := range a.spans {
		for _, s := range a.spans[c] {
			interval(Category(c), s)
		}
	}
	for _, f := range a.flows {
		for _, h := range f.rec.holes {
			if h.repaired && !h.healed {
				interval(h.repair, span{h.at, to})
				b.Loss.Repaired[h.repair]++
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

// mergeHolds merges two lists of holds in time order into one of at
// most kept.
func mergeHolds(x, y []Hold) []Hold {
	if len(y) == 0 {
		return x
	}
	if len(x) == 0 {
		return y
	}
	m := make([]Hold, 0, min(len(x)+len(y), kept))
	for len(m) < kept && (len(x) > 0 || len(y) > 0) {
		if len(y) == 0 || len(x) > 0 && x[0].At <= y[0].At {
			m, x = append(m, x[0]), x[1:]
		} else {
			m, y = append(m, y[0]), y[1:]
		}
	}
	return m
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
