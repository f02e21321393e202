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
			return &fifo{limit: q.Limit, limitBytes: q.LimitBytes, q: newPktRing()}
		}})
}

type fifo struct {
	limit, limitBytes int
	q                 pktRing
}

func (f *fifo) full(size int, w *wire) bool {
	n, b := w.n+f.q.n, w.bytes+f.q.size
	return n >= f.limit || f.limitBytes > 0 && b+size > f.limitBytes
}

func (f *fifo) enqueue(p qpkt, _ time.Duration)      { f.q.push(p) }
func (f *fifo) dequeue(_ time.Duration) (qpkt, bool) { return f.q.pop() }
func (f *fifo) len() int                             { return f.q.n }
func (f *fifo) backlog() int                         { return f.q.size }
func (f *fifo) clear()                               { f.q.clear() }
