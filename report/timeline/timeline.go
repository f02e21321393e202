// Package timeline records, over a run, each connection's TCP sender state
// and the link's queue occupancy, and writes them as CSV.
package timeline

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
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

// WriteCSV writes the timeline as CSV, one row per TCP sample and per
// change of queue occupancy, in time order. Columns:
//
//	time_ms         time since the link was made, ms
//	kind            tcp (a sender's state) or queue (the link's occupancy)
//	conn            sender→receiver: the connection, address:port→address:port,
//	                for tcp rows; the link's direction, client→server or
//	                server→client, for queue rows
//	cwnd_bytes      congestion window
//	ssthresh_bytes  slow-start threshold; empty while there is none (before
//	                the first loss, the stack's threshold is infinite)
//	inflight_bytes  sent and not yet acknowledged
//	srtt_ms, rto_ms smoothed round-trip time, retransmission timeout
//	queue_packets   packets waiting for the link or on the wire
//
// A cell that does not apply to the row's kind is empty.
func (t *Timeline) WriteCSV(w io.Writer) error {
	type row struct {
		at  time.Duration
		rec []string
	}
	var rows []row
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
	for _, c := range t.Conns() {
		for _, s := range c.Samples {
			at := t.Since(s.At)
			ssthresh := ""
			if s.Ssthresh < NoSsthresh {
				ssthresh = strconv.Itoa(s.Ssthresh)
			}
			rows = append(rows, row{at, []string{ms(at), "tcp", c.Name, strconv.Itoa(s.Cwnd), ssthresh,
				strconv.Itoa(s.InFlight), ms(s.SRTT), ms(s.RTO), ""}})
		}
	}
	for _, dir := range []link.Dir{link.AtoB, link.BtoA} {
		for _, p := range t.Queue(dir) {
			rows = append(rows, row{p.At, []string{ms(p.At), "queue", DirName(dir), "", "", "", "", "", strconv.Itoa(int(p.Value))}})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].at < rows[j].at })
	cw := csv.NewWriter(w)
	cw.Write([]string{"time_ms", "kind", "conn", "cwnd_bytes", "ssthresh_bytes", "inflight_bytes", "srtt_ms", "rto_ms", "queue_packets"})
	for _, r := range rows {
		cw.Write(r.rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("timeline: write CSV: %w", err)
	}
	return nil
}
