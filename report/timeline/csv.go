package timeline

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// CSV writes a run's timeline as CSV while the run goes on, one row per
// TCP sample and per change of queue occupancy, in time order. It keeps
// only what is still to come: the departures of packets in the queue,
// and the TCP samples that arrive before the link's first event. Its
// Observe method is a link.Observer and TCP a tcpstack probe; times count
// from the link's creation. Close writes what remains. It is safe for
// concurrent use.
//
// Columns:
//
//	time_ms         time since the link was made, ms
//	kind            tcp (a sender's state), queue (the link's occupancy) or
//	                link_rate (a trace's offer)
//	conn            sender→receiver: the connection, address:port→address:port,
//	                for tcp rows; the link's direction, client→server or
//	                server→client, for queue rows, or on a topology the
//	                link and its direction, "hop1 r0→r1" (Link)
//	cwnd_bytes      congestion window
//	ssthresh_bytes  slow-start threshold; empty while there is none (until
//	                a loss or HyStart ends slow start, the stack's
//	                threshold is infinite)
//	inflight_bytes  sent and not yet acknowledged
//	srtt_ms, rto_ms smoothed round-trip time, retransmission timeout
//	queue_packets   packets waiting for the link or on the wire
//	rcv_wnd_bytes   receive window the connection last advertised
//	rcv_ssthresh_bytes the receiver's window-growth threshold, Linux's
//	                rcv_ssthresh: kernel TCP and netemu's (gVisor's
//	                receiver window growth is modelled by the link)
//	ca_state        tcp_info's congestion state: Open, Disorder, CWR,
//	                Recovery, Loss (kernel TCP and netemu's)
//	sacked_packets, lost_packets, retrans_packets, delivered_packets
//	                tcpi_sacked, tcpi_lost, tcpi_retrans, tcpi_delivered
//	                (kernel TCP and netemu's)
//	link_rate_bps   for link_rate rows, where a direction's rate is a trace
//	                (Traces): the rate it offers over the 100 ms from the
//	                row's time, in bits per second of 1500-byte packets
//
// The columns after link_rate_bps came later, appended so that a reader
// of the earlier ones by position reads them as before; a tcp row has
// them where its TCP reports them (kernel TCP and netemu's; empty for
// gVisor's):
//
//	pacing_rate_bps, delivery_rate_bps
//	                tcpi_pacing_rate and tcpi_delivery_rate, in bits per
//	                second: the rate the sender paces at (or would, for a
//	                congestion control that does not pace), 0 before it
//	                has one; its last delivery-rate sample
//	delivery_rate_app_limited
//	                1 where that sample was taken while the sender was
//	                application-limited, else 0
//	bbr_mode        BBR's mode where the connection runs BBR: startup,
//	                drain, probe_bw or probe_rtt (kernel TCP's named by its
//	                gains); empty for another algorithm, as are the
//	                bbr_ columns after it
//	bbr_bw_bps      BBR's bandwidth estimate, bits per second
//	bbr_min_rtt_ms  BBR's min RTT; empty before it has one
//	bbr_pacing_gain, bbr_cwnd_gain
//	                BBR's gains as ratios: 2.88671875 in STARTUP; 1.25,
//	                0.75 or 1 in PROBE_BW's phases; 1 in PROBE_RTT
//	bbr_long_term   1 while BBR uses its long-term (policed) bandwidth,
//	                else 0; netemu's TCP only (kernel TCP's tcp_bbr_info
//	                does not say, and its rows have 0)
//
// A cell that does not apply to the row's kind is empty. Link events come
// in time order (the link emits them under its lock); a TCP sample taken
// on the real clock by another goroutine can come microseconds late and
// is written as it comes.
type CSV struct {
	mu      sync.Mutex
	w       *csv.Writer
	start   time.Time // the link's time zero, from its first event
	started bool
	early   []tcpstack.Sample // samples before the link's first event
	queue   occupancy
	// others are a topology's links (Link); queue rows wait in pending,
	// every link's, until they are written in time order.
	others  []*occupancy
	pending []queueRow
	rec     []string
	traces  [2]*link.Trace // by link.Dir; nil: a fixed rate
	rateAt  time.Duration  // the next link_rate rows' time
}

// rateWindow is the span of a link_rate row.
const rateWindow = 100 * time.Millisecond

// maxEarly is how many TCP samples a CSV keeps while no link event has
// set its time zero (a kernel run through tc netem has no emulated link:
// its first sample is time zero then).
const maxEarly = 1 << 10

// NewCSV starts a timeline on w and writes the header.
func NewCSV(w io.Writer) *CSV {
	c := &CSV{w: csv.NewWriter(w), rec: make([]string, len(csvHeader))}
	c.queue.emit = func(dir link.Dir, p Point) { c.pending = append(c.pending, queueRow{p, DirName(dir)}) }
	c.w.Write(csvHeader)
	return c
}

// csvHeader names the CSV's columns: those before firstAdded as they
// have always been, then those added since.
var csvHeader = []string{"time_ms", "kind", "conn", "cwnd_bytes", "ssthresh_bytes", "inflight_bytes", "srtt_ms", "rto_ms", "queue_packets", "rcv_wnd_bytes", "rcv_ssthresh_bytes", "ca_state", "sacked_packets", "lost_packets", "retrans_packets", "delivered_packets", "link_rate_bps",
	"pacing_rate_bps", "delivery_rate_bps", "delivery_rate_app_limited", "bbr_mode", "bbr_bw_bps", "bbr_min_rtt_ms", "bbr_pacing_gain", "bbr_cwnd_gain", "bbr_long_term"}

// Traces gives the directions whose rate is a trace (nil: a fixed
// rate), for the link_rate rows. Call it before the run.
func (c *CSV) Traces(up, down *link.Trace) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.traces = [2]*link.Trace{link.AtoB: up, link.BtoA: down}
}

// rates writes the link_rate rows of the windows that start by at.
func (c *CSV) rates(at time.Duration) {
	if c.traces == [2]*link.Trace{} {
		return
	}
	for ; c.rateAt <= at; c.rateAt += rateWindow {
		for _, dir := range []link.Dir{link.BtoA, link.AtoB} {
			if t := c.traces[dir]; t != nil {
				bps := strconv.FormatFloat(t.RateAt(c.rateAt+rateWindow, rateWindow), 'f', 0, 64)
				c.row(c.rateAt, "link_rate", DirName(dir), "", "", "", "", "", "", "", "", "", "", "", "", "", bps)
			}
		}
	}
}

// TCP writes a sample of a connection's state.
func (c *CSV) TCP(s tcpstack.Sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.early = append(c.early, s)
		if len(c.early) < maxEarly {
			return
		}
		c.begin(c.early[0].At)
	}
	c.tcp(s)
}

func (c *CSV) tcp(s tcpstack.Sample) {
	at := s.At.Sub(c.start)
	c.rates(at)
	c.until(at)
	ssthresh := ""
	if s.Ssthresh < NoSsthresh {
		ssthresh = strconv.Itoa(s.Ssthresh)
	}
	rcvSsthresh := ""
	if s.RcvSsthresh > 0 {
		rcvSsthresh = strconv.Itoa(s.RcvSsthresh)
	}
	var sacked, lost, retrans, delivered string
	if s.CAState != "" {
		sacked, lost, retrans, delivered = strconv.Itoa(s.Sacked), strconv.Itoa(s.Lost), strconv.Itoa(s.Retrans), strconv.Itoa(s.Delivered)
	}
	c.fill(at, "tcp", s.Local.String()+"→"+s.Remote.String(), strconv.Itoa(s.Cwnd), ssthresh,
		strconv.Itoa(s.InFlight), ms(s.SRTT), ms(s.RTO), "", strconv.Itoa(s.RcvWnd), rcvSsthresh,
		s.CAState, sacked, lost, retrans, delivered, "")
	if s.CAState != "" { // a TCP with tcp_info, which has the rates
		rateCells(c.rec[firstAdded:], &s)
	}
	c.w.Write(c.rec)
}

// firstAdded is the index of the first column added after link_rate_bps.
const firstAdded = 17

// rateCells fills the cells of a tcp row's columns from pacing_rate_bps
// on: the rates, and BBR's state where the connection runs BBR.
func rateCells(r []string, s *tcpstack.Sample) {
	r[0], r[1], r[2] = bps(s.PacingRate), bps(s.DeliveryRate), flag(s.DeliveryRateAppLimited)
	b := &s.BBR
	if b.Mode == "" {
		return
	}
	minRTT := ""
	if b.MinRTT > 0 {
		minRTT = ms(b.MinRTT)
	}
	r[3], r[4], r[5] = b.Mode, bps(b.Bandwidth), minRTT
	r[6], r[7], r[8] = gain(b.PacingGain), gain(b.CwndGain), flag(b.LongTerm)
}

// bps writes a rate in bytes per second as bits per second.
func bps(bytesPerSecond uint64) string { return strconv.FormatUint(bytesPerSecond*8, 10) }

// gain writes a gain in its shortest exact form: 256ths have at most
// eight decimals.
func gain(g float64) string { return strconv.FormatFloat(g, 'f', -1, 64) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// begin sets time zero and writes the samples that waited for it.
func (c *CSV) begin(zero time.Time) {
	c.start, c.started = zero, true
	early := c.early
	c.early = nil
	for _, s := range early {
		c.tcp(s)
	}
}

// Observe writes the changes of queue occupancy that e brings.
func (c *CSV) Observe(e link.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.begin(e.Time.Add(-e.At))
	}
	c.rates(e.At)
	c.until(e.At)
	c.queue.observe(e)
}

// queueRow is a queue row waiting to be written: the occupancy and the
// link direction it is of.
type queueRow struct {
	p    Point
	conn string
}

// Link returns the observer of another link of the run (a topology's
// links, each its own): its queue rows name the link and the direction,
// "hop1 r0→r1", and come in time order with every other row.
func (c *CSV) Link(name, a, b string) link.Observer {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := &occupancy{}
	o.emit = func(dir link.Dir, p Point) {
		from, to := a, b
		if dir == link.BtoA {
			from, to = b, a
		}
		c.pending = append(c.pending, queueRow{p, name + " " + from + "→" + to})
	}
	c.others = append(c.others, o)
	return func(e link.Event) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.started {
			c.begin(e.Time.Add(-e.At))
		}
		c.rates(e.At)
		c.until(e.At)
		o.observe(e)
	}
}

// until writes the queue rows of every link from before at, in time
// order (rows of one instant in the order of their links).
func (c *CSV) until(at time.Duration) {
	c.queue.until(at)
	for _, o := range c.others {
		o.until(at)
	}
	c.writePending()
}

// writePending writes the waiting queue rows in time order.
func (c *CSV) writePending() {
	slices.SortStableFunc(c.pending, func(x, y queueRow) int { return cmp.Compare(x.p.At, y.p.At) })
	for _, r := range c.pending {
		c.row(r.p.At, "queue", r.conn, "", "", "", "", "", strconv.Itoa(int(r.p.Value)), "", "", "", "", "", "", "")
	}
	c.pending = c.pending[:0]
}

func (c *CSV) row(at time.Duration, cells ...string) {
	c.fill(at, cells...)
	c.w.Write(c.rec)
}

// fill sets the record to a row of the given cells after the time,
// those after them empty.
func (c *CSV) fill(at time.Duration, cells ...string) {
	c.rec[0] = ms(at)
	n := copy(c.rec[1:], cells)
	clear(c.rec[1+n:])
}

// Close writes the rows still held and flushes; it reports the first
// error writing any row.
func (c *CSV) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started && len(c.early) > 0 {
		c.begin(c.early[0].At)
	}
	c.queue.end()
	for _, o := range c.others {
		o.end()
	}
	c.writePending()
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("timeline: write CSV: %w", err)
	}
	return nil
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
