// Package timeline records, over a run, each connection's TCP sender state
// and the link's queue occupancy: in memory for a figure (Timeline), or
// streamed as CSV (CSV).
package timeline

import (
	"sync"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// MaxPoints is how many points a Timeline keeps of each series (a
// connection's samples, a direction's queue occupancy), enough for any
// figure. Past it, the series keeps every other point, and later points
// as sparsely: a connection's samples keep every k-th, the queue keeps
// the largest of every k (so a full queue still shows). The last point
// of each series is always kept.
const MaxPoints = 1 << 13

// Timeline collects, over a run, each connection's TCP state and the
// link's queue occupancy, for a figure; its memory is bounded by
// MaxPoints per series. Its Observe method is a link.Observer and its TCP
// method a tcpstack probe; times count from the link's creation. Read it
// (Conns, Queue) once the run is over. The zero value is ready to use and
// safe for concurrent use.
type Timeline struct {
	mu     sync.Mutex
	start  time.Time // the link's time zero, from its first event
	conns  []*sampled
	byName map[string]*sampled
	queue  occupancy
	points [2]thinned // per direction
}

// sampled is one connection's samples, every every-th kept.
type sampled struct {
	name    string
	samples []tcpstack.Sample
	every   int
	n       int             // samples taken
	last    tcpstack.Sample // the latest, kept or not
}

func (s *sampled) add(x tcpstack.Sample) {
	if s.n%s.every == 0 {
		s.samples = append(s.samples, x)
		if len(s.samples) > MaxPoints {
			half := (len(s.samples) + 1) / 2
			for i := range half {
				s.samples[i] = s.samples[2*i]
			}
			s.samples = s.samples[:half]
			s.every *= 2
		}
	}
	s.n++
	s.last = x
}

// thinned is a step function of which each kept point stands for every
// raw points: the first one's instant, the largest value.
type thinned struct {
	points  []Point
	every   int
	pending Point // the group being filled
	n       int   // raw points in it
	last    Point // the latest raw point
}

func (t *thinned) add(p Point) {
	if t.every == 0 {
		t.every = 1
	}
	if t.n == 0 {
		t.pending = p
	} else {
		t.pending.Value = max(t.pending.Value, p.Value)
	}
	t.n++
	t.last = p
	if t.n < t.every {
		return
	}
	t.points = append(t.points, t.pending)
	t.n = 0
	if len(t.points) > MaxPoints {
		half := (len(t.points) + 1) / 2
		for i := range half {
			a := t.points[2*i]
			if 2*i+1 < len(t.points) {
				a.Value = max(a.Value, t.points[2*i+1].Value)
			}
			t.points[i] = a
		}
		t.points = t.points[:half]
		t.every *= 2
	}
}

// series returns the kept points, the group being filled, and the last
// raw point if it is not already the last kept.
func (t *thinned) series() []Point {
	pts := append([]Point(nil), t.points...)
	if t.n > 0 {
		pts = append(pts, t.pending)
	}
	if len(pts) > 0 && pts[len(pts)-1] != t.last {
		pts = append(pts, t.last)
	}
	return pts
}

// TCP records a sample of a connection's state.
func (t *Timeline) TCP(s tcpstack.Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name := s.Local.String() + "→" + s.Remote.String()
	c := t.byName[name]
	if c == nil {
		if t.byName == nil {
			t.byName = map[string]*sampled{}
		}
		c = &sampled{name: name, every: 1}
		t.byName[name] = c
		t.conns = append(t.conns, c)
	}
	c.add(s)
}

// Observe records queue occupancy from the link's events.
func (t *Timeline) Observe(e link.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start.IsZero() {
		t.start = e.Time.Add(-e.At)
		t.queue.emit = func(dir link.Dir, p Point) { t.points[dir].add(p) }
	}
	t.queue.observe(e)
}

// Point is one step of a series.
type Point struct {
	At    time.Duration
	Value float64
}

// Queue returns the number of packets queued (waiting or on the wire) in
// direction dir as a step function: each point holds until the next.
func (t *Timeline) Queue(dir link.Dir) []Point {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.queue.emit != nil {
		t.queue.end()
	}
	return t.points[dir].series()
}

// Conn is one connection's samples, named by its sending side.
type Conn struct {
	Name    string // sender→receiver: "198.18.0.2:80→198.18.0.1:40000"
	Samples []tcpstack.Sample
}

// DirName names a direction of the link the way connections are named,
// sender→receiver: "client→server" (link.AtoB) or "server→client".
func DirName(d link.Dir) string {
	if d == link.AtoB {
		return "client→server"
	}
	return "server→client"
}

// NoSsthresh is the slow-start threshold a sample carries before the
// connection's first loss: gVisor's "infinite" (tcpstack caps it at
// 1<<62 bytes). The CSV leaves such a cell empty.
const NoSsthresh = 1 << 62

// Conns returns the TCP samples grouped by connection, in order of first
// appearance.
func (t *Timeline) Conns() []Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Conn, 0, len(t.conns))
	for _, c := range t.conns {
		s := append([]tcpstack.Sample(nil), c.samples...)
		if (c.n-1)%c.every != 0 {
			s = append(s, c.last)
		}
		out = append(out, Conn{Name: c.name, Samples: s})
	}
	return out
}

// Since converts a time of the run's clock to time since the link's
// creation.
func (t *Timeline) Since(at time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return at.Sub(t.start)
}
