// Package mmlog writes one direction of a link as mahimahi's mm-link
// writes its --uplink-log and --downlink-log, so that mahimahi's tools
// (mm-throughput-graph, mm-delay-graph) read netemu's runs. After a
// header of "#" lines, each line is one event at a millisecond counted
// from the link's start:
//
//	TIME + SIZE        a packet arrives at the link (it may be dropped later)
//	TIME - SIZE DELAY  a packet leaves the rate stage, DELAY ms after it arrived
//	TIME # 1504        a delivery opportunity of the direction's trace
//	TIME d 1 SIZE      a packet dropped, for any reason
//
// SIZE counts the packet as mm-link does: its IP bytes and the 4 bytes
// of header its TUN device adds. Opportunities are listed only for a
// direction whose rate is a trace (link.Config.Trace); mm-link lists each
// one, used or not. Lines are in time order.
package mmlog

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
)

// Writer writes a direction's log. Observe takes the link's events;
// Close writes what remains due by the last of them.
type Writer struct {
	w    *bufio.Writer
	dir  link.Dir
	opps *link.TraceCursor // nil: no trace
	// departures waiting for their time: the link reports a packet's
	// departure from the rate stage when it is queued, ahead of time.
	later lines
	seq   uint64
	last  time.Duration // the latest event seen, either direction
	err   error
}

// A line is an event not yet written.
type line struct {
	at   time.Duration
	seq  uint64
	text string
}

type lines []line

func (h lines) Len() int { return len(h) }
func (h lines) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h lines) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *lines) Push(x any)   { *h = append(*h, x.(line)) }
func (h *lines) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// New starts the log of direction dir of a link configured as cfg on w,
// with mm-link's header; name is the link's label ("Uplink",
// "Downlink") and command the command line that ran, for the header.
func New(w io.Writer, dir link.Dir, cfg link.Config, name, command string) *Writer {
	d := cfg
	if dir == link.BtoA && cfg.BtoA != nil {
		d = *cfg.BtoA
	}
	m := &Writer{w: bufio.NewWriter(w), dir: dir}
	source := "rate " + tc.FormatRate(d.Rate)
	if d.Trace != nil {
		m.opps = d.Trace.Cursor()
		source = d.Trace.Name
	}
	q := d.Qdisc
	queue := q.Kind.String()
	if q.IsFIFO() {
		limit := q.Limit
		if limit == 0 {
			limit = link.DefaultQueuePackets
		}
		queue = fmt.Sprintf("droptail [packets=%d]", limit)
		if q.LimitBytes > 0 {
			queue = fmt.Sprintf("droptail [packets=%d, bytes=%d]", limit, q.LimitBytes)
		}
	}
	fmt.Fprintf(m.w, "# mahimahi mm-link (%s) [%s] > netemu\n# command line: %s\n# queue: %s\n# init timestamp: 0\n# base timestamp: 0\n",
		name, source, command, queue)
	return m
}

// size is a packet's size as mm-link counts it.
func size(pkt []byte) int { return len(pkt) + link.TraceFrameOverhead }

// ms is an instant of the link in mm-link's whole milliseconds.
func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }

// Observe takes one event of the link (a link.Observer).
func (m *Writer) Observe(e link.Event) {
	m.last = max(m.last, e.At)
	if e.Dir != m.dir {
		return
	}
	switch e.Kind {
	case link.EventSend:
		m.flush(e.At)
		m.printf("%d + %d\n", ms(e.At), size(e.Packet))
	case link.EventDrop:
		m.flush(e.At)
		m.printf("%d d 1 %d\n", ms(e.At), size(e.Packet))
	case link.EventQueue:
		m.flush(e.At)
		m.seq++
		heap.Push(&m.later, line{e.Finish, m.seq, fmt.Sprintf("%d - %d %d\n", ms(e.Finish), size(e.Packet), ms(e.Finish)-ms(e.At))})
	}
}

// flush writes the departures and opportunities due by t, in time order
// (an opportunity before a departure at its millisecond, as mm-link
// writes them).
func (m *Writer) flush(t time.Duration) {
	for {
		opp, ok := time.Duration(0), false
		if m.opps != nil {
			opp, ok = m.opps.Peek()
			ok = ok && opp <= t
		}
		dep := len(m.later) > 0 && m.later[0].at <= t
		switch {
		case ok && (!dep || opp <= m.later[0].at):
			m.printf("%d # %d\n", ms(opp), link.TraceFrameBytes)
			m.opps.Next()
		case dep:
			m.printf("%s", heap.Pop(&m.later).(line).text)
		default:
			return
		}
	}
}

func (m *Writer) printf(format string, args ...any) {
	if m.err == nil {
		_, m.err = fmt.Fprintf(m.w, format, args...)
	}
}

// Close writes what is due by the last event the link reported, the end
// of the run (a departure after it never happened), and flushes; it
// returns the first write error.
func (m *Writer) Close() error {
	m.flush(m.last)
	if err := m.w.Flush(); m.err == nil {
		m.err = err
	}
	return m.err
}
