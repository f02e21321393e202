// Package timeline records, over a run, each connection's TCP sender state
// and the link's queue occupancy: in memory for a figure (Timeline), or
// streamed as CSV (CSV).
package timeline

import (
	"sort"
	"sync"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// Timeline collects, over a run, each connection's TCP state and the
// link's queue occupancy. Its Observe method is a link.Observer and its
// TCP method a tcpstack probe; times count from the link's creation. The
// zero value is ready to use and safe for concurrent use.
type Timeline struct {
	mu    sync.Mutex
	start time.Time // the link's time zero, from its first event
	tcp   []tcpstack.Sample
	queue [2][]span // per direction: packets' time in the queue
}

type span struct{ in, out time.Duration }

// TCP records a sample of a connection's state.
func (t *Timeline) TCP(s tcpstack.Sample) {
	t.mu.Lock()
	t.tcp = append(t.tcp, s)
	t.mu.Unlock()
}

// Observe records queue occupancy from the link's events.
func (t *Timeline) Observe(e link.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start.IsZero() {
		t.start = e.Time.Add(-e.At)
	}
	if e.Kind == link.EventQueue {
		t.queue[e.Dir] = append(t.queue[e.Dir], span{e.At, e.Finish})
	}
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
	spans := append([]span(nil), t.queue[dir]...)
	t.mu.Unlock()
	type edge struct {
		at    time.Duration
		delta int
	}
	edges := make([]edge, 0, 2*len(spans))
	for _, s := range spans {
		if s.out > s.in {
			edges = append(edges, edge{s.in, +1}, edge{s.out, -1})
		}
	}
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].at < edges[j].at })
	var pts []Point
	n := 0
	for i, e := range edges {
		n += e.delta
		if i+1 < len(edges) && edges[i+1].at == e.at {
			continue
		}
		pts = append(pts, Point{e.at, float64(n)})
	}
	return pts
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
	var out []Conn
	idx := map[string]int{}
	for _, s := range t.tcp {
		name := s.Local.String() + "→" + s.Remote.String()
		i, ok := idx[name]
		if !ok {
			i = len(out)
			idx[name] = i
			out = append(out, Conn{Name: name})
		}
		out[i].Samples = append(out[i].Samples, s)
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
