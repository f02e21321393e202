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
	registerQdisc(FIFO, qdiscKind{name: "fifo", fields: []string{"Limit", "LimitBytes"}, limit: DefaultQueuePackets, ahead: true,
		new: func(_ *Link, _ *direction, q Qdisc) discipline {
			return &fifo{limit: q.Limit, limitBytes: q.LimitBytes}
		}})
}

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
