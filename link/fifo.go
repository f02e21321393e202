package link

import "time"

// The drop-tail FIFO, netemu's default queue: tc's pfifo and bfifo in one
// discipline. Its limits count the packets accepted and not yet fully
// serialized, the one on the wire included, as netem's limit counts its
// queue; a packet that would go over either is dropped on arrival
// (DropQueueFull). Its order and its drops are fixed at arrival, so the
// link serves it ahead (queue.go): a packet leaves the FIFO as it joins,
// stamped with the instant the serializer will take it.

func init() {
	registerQdisc(FIFO, qdiscKind{name: "fifo", fields: []string{"Limit", "LimitBytes"}, limit: DefaultQueuePackets, ahead: true,
		new: func(_ *Link, _ *direction, q Qdisc) discipline {
			return &fifo{limit: q.Limit, limitBytes: q.LimitBytes}
		}})
}

// fifo holds at most the packet being enqueued: the link serves it
// ahead, dequeuing each packet right after its enqueue.
type fifo struct {
	limit, limitBytes int
	p                 qpkt
	n                 int // 0 or 1
}

func (f *fifo) full(size int, w *wire) bool {
	return w.n+f.n >= f.limit || f.limitBytes > 0 && w.bytes+f.backlog()+size > f.limitBytes
}

func (f *fifo) enqueue(p qpkt, _ time.Duration) { f.p, f.n = p, 1 }

func (f *fifo) dequeue(_ time.Duration) (qpkt, bool) {
	if f.n == 0 {
		return qpkt{}, false
	}
	p := f.p
	f.p, f.n = qpkt{}, 0
	return p, true
}

func (f *fifo) len() int { return f.n }

func (f *fifo) backlog() int {
	if f.n == 0 {
		return 0
	}
	return len(f.p.buf)
}

func (f *fifo) clear() { f.p, f.n = qpkt{}, 0 }
