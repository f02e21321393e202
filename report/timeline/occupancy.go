package timeline

import (
	"container/heap"
	"time"

	"github.com/netemu/netemu/link"
)

// occupancy turns the link's queue events into the number of packets
// queued per direction, as a step function, while the run goes on. It
// keeps only the departures of packets still queued. Changes at one
// instant make one point, emitted once time moves past that instant (or
// at the end); points come out in time order.
type occupancy struct {
	queued  [2]int
	held    [2]Point // per direction: the last change, not emitted yet
	holding [2]bool
	leave   departures // queued packets' departure times, earliest first
	emit    func(link.Dir, Point)
}

type departure struct {
	at  time.Duration
	dir link.Dir
}

// departures is a min-heap of departure times.
type departures []departure

func (d departures) Len() int           { return len(d) }
func (d departures) Less(i, j int) bool { return d[i].at < d[j].at }
func (d departures) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *departures) Push(x any)        { *d = append(*d, x.(departure)) }
func (d *departures) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

// observe takes a link event; only queue events change the occupancy.
// Events come in time order.
func (o *occupancy) observe(e link.Event) {
	if e.Kind != link.EventQueue || e.Finish <= e.At {
		return
	}
	o.until(e.At)
	o.change(e.Dir, e.At, +1)
	heap.Push(&o.leave, departure{e.Finish, e.Dir})
}

// until emits every change before at: departures due by then, and
// changes held at earlier instants.
func (o *occupancy) until(at time.Duration) {
	for len(o.leave) > 0 && o.leave[0].at <= at {
		d := heap.Pop(&o.leave).(departure)
		o.change(d.dir, d.at, -1)
	}
	o.flush(at)
}

// end emits everything left.
func (o *occupancy) end() { o.until(1<<63 - 1) }

// change applies delta to dir's occupancy at at, which is no earlier than
// any change before it.
func (o *occupancy) change(dir link.Dir, at time.Duration, delta int) {
	o.flush(at)
	o.queued[dir] += delta
	o.held[dir], o.holding[dir] = Point{at, float64(o.queued[dir])}, true
}

// flush emits the held points from before the instant at. Changes come in
// time order and each flushes first, so points held together are of one
// instant.
func (o *occupancy) flush(at time.Duration) {
	for _, dir := range []link.Dir{link.AtoB, link.BtoA} {
		if o.holding[dir] && o.held[dir].At < at {
			o.emit(dir, o.held[dir])
			o.holding[dir] = false
		}
	}
}
