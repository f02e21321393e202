package link

import "time"

// The drop-tail FIFO, netemu's default queue: tc's pfifo and bfifo in one
// discipline. Its limits count the packets accepted and not yet fully
// serialized, the one on the wire included, as netem's limit counts its
// queue; a packet that would go over either is dropped on arrival
// (DropQueueFull). Its order and its drops are fixed at arrival, so a
// packet it accepts passes straight to the serializer (queue.go),
// stamped with the instant the serializer will take it.

func init() {
	registerQdisc(FIFO, qdiscKind{name: "fifo", limit: DefaultQueuePackets, options: []QdiscOption{limitOption, limitBytesOption}, ahead: true,
		new: func(_ *Link, _ *direction, q Qdisc) discipline {
			return &fifo{limit: q.Limit, limitBytes: q.LimitBytes}
		}})
}

// limitBytesOption is Qdisc.LimitBytes in tc's grammar: bfifo's limit
// BYTES, at most tc's 32 bits.
var limitBytesOption = QdiscOption{Word: "limit", Field: "LimitBytes", Value: SizeValue, Min: 1, Max: 1<<32 - 1, Example: "150000",
	get: func(q Qdisc) int64 { return int64(q.LimitBytes) },
	set: func(q *Qdisc, v int64) { q.LimitBytes = int(v) }}

// fifo keeps no packet: each one it accepts passes straight to the
// serializer, and its limits count what the serializer has taken.
type fifo struct{ limit, limitBytes int }

func (f *fifo) full(size int, w *wire) bool {
	return w.n >= f.limit || f.limitBytes > 0 && w.bytes+size > f.limitBytes
}

func (f *fifo) enqueue(qpkt, time.Duration) bool   { return true }
func (f *fifo) dequeue(time.Duration) (qpkt, bool) { return qpkt{}, false }
func (f *fifo) len() int                           { return 0 }
func (f *fifo) backlog() int                       { return 0 }
func (f *fifo) clear()                             {}
