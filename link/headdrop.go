package link

import "time"

// pfifo_head_drop, as Linux's sch_fifo.c has it: a FIFO of at most Limit
// packets waiting for the serializer (the one on the wire is not
// counted); a packet arriving when it is full is taken, and the oldest
// waiting packet dropped in its place (DropOverlimit), so that what waits
// is the newest traffic. tc-pfifo(8): useful where stale data is worth
// less than fresh (telemetry, media).

// DefaultHeadDropLimit is pfifo_head_drop's default Limit: Linux's, the
// device's queue length (1000 on Ethernet).
const DefaultHeadDropLimit = 1000

func init() {
	registerQdisc(PFIFOHeadDrop, qdiscKind{name: "pfifo_head_drop", limit: DefaultHeadDropLimit, options: []QdiscOption{limitOption},
		new: func(l *Link, d *direction, q Qdisc) discipline {
			return &headDrop{l: l, d: d, limit: q.Limit, q: newPktRing()}
		}})
}

type headDrop struct {
	l     *Link
	d     *direction
	limit int
	q     pktRing
}

func (h *headDrop) full(int, *wire) bool { return false }

func (h *headDrop) enqueue(p qpkt, now time.Duration) bool {
	if h.q.n >= h.limit {
		old, _ := h.q.pop()
		h.l.qdrop(h.d, DropOverlimit, old, now)
	}
	h.q.push(p)
	return false
}

func (h *headDrop) dequeue(time.Duration) (qpkt, bool) { return h.q.pop() }
func (h *headDrop) len() int                           { return h.q.n }
func (h *headDrop) backlog() int                       { return h.q.size }
func (h *headDrop) clear()                             { h.q.clear() }
