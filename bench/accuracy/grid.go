package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/stats"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// The random grid: links nobody chose, drawn log-uniformly, on which
// each TCP of the emulator is measured against kernel TCP on the same
// link. Its ranges:
const (
	gridMinRTT, gridMaxRTT   = 2 * time.Millisecond, 400 * time.Millisecond
	gridMinRate, gridMaxRate = 1e6, 500e6 // bits per second
	gridMinBDP, gridMaxBDP   = 0.1, 4.0   // queue, in bandwidth-delay products
	gridMinLoss, gridMaxLoss = 0.0005, 0.03
	gridMinBulk, gridMaxBulk = 1 << 20, 50 << 20
	// gridMaxSeconds bounds a bulk transfer: at most this long at the
	// link's rate, so a cell at 1 mbit stays under a minute of real time,
	// and on a lossy link at the rate loss leaves (mathisRate).
	gridMaxSeconds = 20
	// Runs per cell unless flags say otherwise: seeds of a lossy cell on
	// each side, runs of a lossless cell on each side.
	gridDefaultRuns, gridDefaultKernelRuns = 10, 3
)

// mathisRate is the steady rate, in bits per second, of a Reno flow that
// loses a fraction p of its packets on a path of round trip rtt: one MSS
// per round trip times sqrt(3/2)/sqrt(p) (Mathis, Semke, Mahdavi and Ott,
// "The Macroscopic Behavior of the TCP Congestion Avoidance Algorithm",
// 1997). CUBIC does better on long fat paths, so a transfer sized by it
// takes at most about gridMaxSeconds.
func mathisRate(rtt time.Duration, p float64) float64 {
	const mss = link.DefaultMTU - 52 // IPv4 and TCP headers with timestamps
	return mss * 8 / rtt.Seconds() * math.Sqrt(1.5/p)
}

// gridCell is one drawn cell.
type gridCell struct {
	N        int // its number in the grid, from 1
	Workload workloads.Workload
	Link     link.Config
	Lossy    bool
}

// exchanges reports whether the cell's time is a sum of request and
// response exchanges (page, keepalive, rpc), to which the kernel's hosts
// add their own time at each; a bulk transfer's hosts keep ahead of the
// link.
func (c gridCell) exchanges() bool {
	_, bulk := c.Workload.(workloads.Bulk)
	return !bulk
}

// drawGrid draws n cells from seed: a third lossless; three in four bulk,
// the rest page, keepalive and rpc with their defaults.
func drawGrid(n int, seed uint64) []gridCell {
	r := rand.New(rand.NewPCG(seed, 0x67726964))
	logU := func(lo, hi float64) float64 { return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo))) }
	var cells []gridCell
	for i := range n {
		rtt := time.Duration(logU(float64(gridMinRTT), float64(gridMaxRTT))).Round(100 * time.Microsecond)
		rate := math.Round(logU(gridMinRate, gridMaxRate)/1e5) * 1e5
		bdp := rate * rtt.Seconds() / 8 / float64(link.DefaultMTU)
		queue := max(2, int(math.Round(bdp*logU(gridMinBDP, gridMaxBDP))))
		lc := link.Config{Delay: rtt / 2, Rate: rate, Qdisc: link.Qdisc{Limit: queue}, DelayedACK: link.LinuxDelayedACK}
		lossy := i%3 != 0
		if lossy {
			lc.Loss = link.RandomLoss(math.Round(logU(gridMinLoss, gridMaxLoss)*1e4)/1e4, 0)
		}
		var w workloads.Workload
		switch k := r.IntN(4); {
		case k < 3:
			size := int(logU(gridMinBulk, gridMaxBulk))
			size = min(size, int(rate/8*gridMaxSeconds))
			if lossy {
				size = min(size, int(mathisRate(rtt, lc.Loss.P)/8*gridMaxSeconds))
			}
			size = max(size, 64<<10) >> 10 << 10
			w = workloads.Bulk{Size: size}.WithDefaults()
		default:
			w = []workloads.Workload{workloads.Page{}, workloads.KeepAlive{}, workloads.RPC{}}[r.IntN(3)].WithDefaults()
		}
		cells = append(cells, gridCell{N: i + 1, Workload: w, Link: lc, Lossy: lossy})
	}
	return cells
}

// pickCells returns the cells of list ("7,12": their numbers, from 1),
// in the list's order; all of them for an empty list.
func pickCells(cells []gridCell, list string) ([]gridCell, error) {
	return pickNumbered(cells, list, "-grid-cells", "a cell of the grid", "7,12")
}

// pickNumbered keeps the items list names by number, from 1, all of
// them when list is empty; flag, what an item is and an example word
// the refusal of a number that names none.
func pickNumbered[T any](items []T, list, flag, what, example string) ([]T, error) {
	if list == "" {
		return items, nil
	}
	var out []T
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > len(items) {
			return nil, fmt.Errorf("%s %q: %q is not %s; want numbers from 1 to %d, such as %s", flag, list, f, what, len(items), example)
		}
		out = append(out, items[n-1])
	}
	return out, nil
}

// gridSide is one TCP's figures on a cell.
type gridSide struct {
	Spread experiment.Spread
	Err    string
}

// gridRow is a cell with every TCP's figures.
type gridRow struct {
	Cell   gridCell
	CC     tcpstack.CongestionControl // every side's congestion control
	Sides  []gridSide                 // the emulator's TCPs in gridImpls order, then the kernel
	Kernel string                     // the kernel's facts
	// LateP99 is the median over the kernel runs of the bridge's 99th
	// percentile delivery lateness: how far behind its due instant the
	// TUN bridge wrote a packet into a namespace.
	LateP99 time.Duration
	// LateMean is the median over the kernel runs of the mean lateness.
	LateMean time.Duration
	// LateMax is the median over the kernel runs of the latest delivery:
	// a stall of the bridge, which the percentile does not show.
	LateMax time.Duration
	// Host is the kernel's time for the cell's workload on an ideal link
	// (no delay, rate, loss or queue): what its hosts, sockets and TUN
	// bridge add to the exchanges. Measured for cells of exchanges only;
	// 0 when not.
	Host time.Duration
}

// packetTime is one full packet's serialization time at the cell's rate.
func (r gridRow) packetTime() time.Duration {
	if r.Cell.Link.Rate <= 0 {
		return 0
	}
	return time.Duration(float64(link.DefaultMTU*8) / r.Cell.Link.Rate * float64(time.Second))
}

// reliable reports whether the kernel's figure measures kernel TCP on the
// cell's link, within a bias well under the 5 % the targets allow:
//   - the bridge delivered 99 % of packets within one packet's time at
//     the link's rate of when they were due; later than that, the bridge
//     itself bunches packets and ACKs that the bottleneck spaced out, so
//     the sender sees ACK compression and bursts the link never made;
//   - its mean lateness, paid once in each direction, adds at most 2 % to
//     the round-trip time;
//   - for a cell of exchanges, the hosts' own time (Host) is at most 2 %
//     of the kernel's figure: the emulator's hosts take none;
//   - the bridge's lateness does not decide HyStart's ACK train
//     (ackTrainEdge);
//   - the hosts' time does not decide whether the first flight fits
//     the queue (firstFlightEdge);
//   - nor whether a page's connects fit it (connectsEdge).
func (r gridRow) reliable() bool { return len(r.biases()) == 0 }

// gridRules are the names of reliable's rules, in its order: "p99" (one
// packet's time), "mean" (2 % of the RTT), "hosts", "ACK train", "first
// flight", "connects".
var gridRules = []string{"p99", "mean", "hosts", "ACK train", "first flight", "connects"}

// biases names the rules of gridRules that r breaks, in their order.
func (r gridRow) biases() []string {
	var why []string
	if r.LateP99 > r.packetTime() {
		why = append(why, "p99")
	}
	if 2*r.LateMean*50 > 2*r.Cell.Link.Delay {
		why = append(why, "mean")
	}
	if k := r.Sides[len(r.Sides)-1]; r.Host > 0 && k.Err == "" && r.Host*50 > k.Spread.Median {
		why = append(why, "hosts")
	}
	if r.ackTrainEdge() {
		why = append(why, "ACK train")
	}
	if r.firstFlightEdge() {
		why = append(why, "first flight")
	}
	if r.connectsEdge() {
		why = append(why, "connects")
	}
	return why
}

// hystartAckDelta is tcp_cubic's hystart_ack_delta_us: ACKs that reach
// the sender at most this far apart form HyStart's ACK train, which ends
// slow start once it spans half the minimum RTT.
const hystartAckDelta = 2 * time.Millisecond

// ackTrainEdge reports whether the link spaces a receiver's ACKs (a
// packet's time apart in quick-ACK mode, two packets' otherwise) under
// HyStart's ACK-train delta by no more than the bridge's 99th-percentile
// lateness. The kernel's ACKs then form a train or not as the bridge
// delays them, not as the link spaces them: on the virtual clock every
// gap is the link's, so netemu's slow start ends on the train where the
// kernel's, its gaps stretched past the delta, goes on to the delay
// detector or a loss. Only bulk cells: HyStart waits for cwnd 16
// (hystart_low_window), which the grid's exchanges stay under. A gap of
// exactly the delta still counts (hystart_update compares with <=).
func (r gridRow) ackTrainEdge() bool {
	pt := r.packetTime()
	if pt == 0 || r.Cell.exchanges() || r.CC != tcpstack.Cubic {
		return false
	}
	for k := time.Duration(1); k <= 2; k++ {
		if gap := k * pt; gap <= hystartAckDelta && hystartAckDelta-gap <= r.LateP99 {
			return true
		}
	}
	return false
}

// initialWindow is TCP_INIT_CWND, both TCPs' first flight in segments.
const initialWindow = 10

// firstFlightEdge reports whether a bulk cell's queue holds exactly the
// initial window. A bulk server answers the request with a pure ACK
// (the receiver is in quick-ACK mode, tcp_event_data_recv) and then the
// initial window. The emulator's server writes the response the instant
// the ACK goes out, so eleven packets meet a queue of ten and the tenth
// segment is dropped; the kernel's server writes a fraction of a
// millisecond later (its hosts' time, which the grid measures only for
// exchanges), when the ACK has left the queue, and all ten fit. The
// first loss then comes a window earlier on one side than the other.
// With a queue one packet shorter or longer both sides agree (tcpNotes,
// "A host answers in no time on the virtual clock").
func (r gridRow) firstFlightEdge() bool {
	q := r.Cell.Link.Qdisc
	return !r.Cell.exchanges() && q.IsFIFO() && q.LimitBytes == 0 && q.Limit == initialWindow
}

// connectsEdge reports whether a page cell's queue holds fewer packets
// than the page opens connections. The emulator's client sends every
// SYN at one instant, so the queue drops all it cannot hold on every
// run, and their retransmissions a second later meet it at one instant
// again; the kernel's client connects over 0.05–1 ms, its goroutines'
// and system calls' time, and loses fewer. Whether a connection starts
// after one second or three is then the hosts' time, not TCP (tcpNotes,
// "A page's six connects at one instant").
// The grid's pages are HTTP/1.1, a connection per parallel request.
func (r gridRow) connectsEdge() bool {
	p, ok := r.Cell.Workload.(workloads.Page)
	if !ok {
		return false
	}
	p = p.WithDefaults().(workloads.Page)
	q := r.Cell.Link.Qdisc
	// A limit of 0 is the default, 1000 packets; a page of fewer
	// resources than connections opens only as many.
	return q.IsFIFO() && q.LimitBytes == 0 && q.Limit > 0 && q.Limit < min(p.Conns, p.Resources)
}

var gridImpls = []tcpstack.Impl{tcpstack.Netemu, tcpstack.GVisor}

// gridPointer is the report's section on the grid, which has a file of
// its own: a grid takes the better part of an hour as root, the report
// minutes.
const gridPointer = `
# Links drawn at random

The cells above were chosen in advance. docs/GRID.md holds links drawn at random, log-uniformly over RTT, rate, queue,
loss and workload: ` + "`go run ./bench/accuracy -grid N`" + ` (as root) draws N cells from a new grid seed and prints, for
each, netemu's TCP, gVisor's TCP and kernel TCP on the same link, with a summary for lossless and lossy cells apart
(median |Δ|, worst, share within 5 % and 10 %); the output names its seed and the command that draws the same grid
again, and the file's first line the commit it was drawn on.
`

// measureGrid runs every cell with congestion control cc on every side:
// each emulated TCP that has cc over seeds 1..kernelRuns (lossless: the
// seeds draw only the hosts' noise, link.DefaultNoise) or
// 1..lossyRuns, and kernel TCP as many times.
func measureGrid(ctx context.Context, cells []gridCell, cc tcpstack.CongestionControl, lossyRuns, kernelRuns int, via kernel.Via, kern bool, progress func(i int, what string)) ([]gridRow, error) {
	var rows []gridRow
	kernelWhy := ""
	if !kern {
		kernelWhy = "-kernel=false"
	}
	for _, cell := range cells {
		row := gridRow{Cell: cell, CC: cc}
		for _, impl := range gridImpls {
			if !slices.Contains(impl.CongestionControls(), cc) {
				row.Sides = append(row.Sides, gridSide{Err: fmt.Sprintf("%s's TCP has no %s", impl, cc)})
				continue
			}
			progress(cell.N, string(impl))
			c := experiment.Case{Workload: cell.Workload, Link: cell.Link, TCP: tcpstack.TCPConfig{Impl: impl, CongestionControl: cc}, Clock: emu.Virtual}
			runs := kernelRuns
			if cell.Lossy {
				runs = lossyRuns
			}
			times, recs, _, err := experiment.Repeat(ctx, experiment.Emulated{}, c, runs, nil)
			if err != nil {
				return rows, fmt.Errorf("cell %d, %s: %w", cell.N, impl, err)
			}
			row.Sides = append(row.Sides, gridSide{Spread: experiment.SpreadOf(times, recs)})
		}
		if kernelWhy != "" {
			row.Sides = append(row.Sides, gridSide{Err: kernelWhy})
			rows = append(rows, row)
			continue
		}
		progress(cell.N, "kernel")
		c := experiment.Case{Workload: cell.Workload, Link: cell.Link, TCP: tcpstack.TCPConfig{CongestionControl: cc}}
		runs := kernelRuns
		if cell.Lossy {
			runs = lossyRuns
		}
		times, recs, _, err := experiment.Repeat(ctx, experiment.Kernel{Via: via}, c, runs, nil)
		switch {
		case errors.Is(err, kernel.ErrUnsupported):
			kernelWhy = err.Error()
			row.Sides = append(row.Sides, gridSide{Err: kernelWhy})
		case err != nil:
			return rows, fmt.Errorf("cell %d, kernel: %w", cell.N, err)
		default:
			row.Sides = append(row.Sides, gridSide{Spread: experiment.SpreadOf(times, recs)})
			if recs[0].Kernel != nil {
				row.Kernel = recs[0].Kernel.String()
			}
			row.LateP99 = medianLate(recs, func(r experiment.Record) *float64 { return r.LateP99Us })
			row.LateMean = medianLate(recs, func(r experiment.Record) *float64 { return r.LateMeanUs })
			row.LateMax = medianLate(recs, func(r experiment.Record) *float64 { return r.LateMaxUs })
			if cell.exchanges() {
				progress(cell.N, "kernel on an ideal link")
				ideal := experiment.Case{Workload: cell.Workload, TCP: tcpstack.TCPConfig{CongestionControl: cc}}
				res, _, err := experiment.Kernel{Via: via}.Run(ctx, ideal)
				if err != nil {
					return rows, fmt.Errorf("cell %d, kernel on an ideal link: %w", cell.N, err)
				}
				row.Host = res.Elapsed
			}
		}
		rows = append(rows, row)
		progress(cell.N, row.summary())
	}
	return rows, nil
}

// lossPercent writes a drawn loss probability (a multiple of 0.01 %) as
// people write it: 2.05 %, not the float product 2.0500000000000003 %.
// (tc's netem formatting keeps every digit ParseNetem needs to read the
// value back exactly; a table rounds to the draw's step.)
func lossPercent(p float64) string {
	return fmt.Sprintf("%g%%", math.Round(p*1e4)/100)
}

// summary is a cell's figures in one line, for progress reports: a grid
// runs for an hour, and an interrupted one still shows what it measured.
func (r gridRow) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %s queue %d", 2*r.Cell.Link.Delay, tc.FormatRate(r.Cell.Link.Rate), r.Cell.Link.Qdisc.Limit)
	if r.Cell.Lossy {
		fmt.Fprintf(&b, " loss %s", lossPercent(r.Cell.Link.Loss.P))
	}
	fmt.Fprintf(&b, " %s:", r.Cell.Workload.Name())
	names := append(slices.Clone(gridImpls), "kernel")
	for j, s := range r.Sides {
		if s.Err != "" {
			fmt.Fprintf(&b, " %s —", names[j])
			continue
		}
		fmt.Fprintf(&b, " %s %.1f ms", names[j], s.Spread.MedianMs)
	}
	if k := r.Sides[len(r.Sides)-1]; k.Err == "" {
		fmt.Fprintf(&b, " (Δ netemu %+.1f %%, bridge %v / %v / %v", delta(r.Sides[0], k), r.LateMean, r.LateP99, r.LateMax)
		if r.Host > 0 {
			fmt.Fprintf(&b, ", hosts %.1f ms", float64(r.Host)/float64(time.Millisecond))
		}
		b.WriteString(")")
	}
	return b.String()
}

// medianLate is the median over records of one lateness figure (µs).
func medianLate(recs []experiment.Record, f func(experiment.Record) *float64) time.Duration {
	var v []float64
	for _, rec := range recs {
		if x := f(rec); x != nil {
			v = append(v, *x)
		}
	}
	return time.Duration(stats.Median(stats.Sorted(v)) * float64(time.Microsecond))
}

// delta is a's median against b's, in per cent; NaN without b.
func delta(a, b gridSide) float64 {
	if a.Err != "" || b.Err != "" || b.Spread.Median == 0 {
		return math.NaN()
	}
	return (a.Spread.MedianMs/b.Spread.MedianMs - 1) * 100
}

// gridMarkdown writes the grid's table and its summary.
// only is -grid-cells: the cells measured, if not all.
func gridMarkdown(w io.Writer, rows []gridRow, cc tcpstack.CongestionControl, seed uint64, n, lossyRuns, kernelRuns int, only string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\n# A random grid\n\n")
	cmd := fmt.Sprintf("go run ./bench/accuracy -grid %d -grid-seed %d", n, seed)
	if cc != tcpstack.Cubic {
		cmd += fmt.Sprintf(" -grid-cc %s", cc)
	}
	if lossyRuns != gridDefaultRuns {
		cmd += fmt.Sprintf(" -grid-runs %d", lossyRuns)
	}
	if kernelRuns != gridDefaultKernelRuns {
		cmd += fmt.Sprintf(" -grid-kernel-runs %d", kernelRuns)
	}
	p("%d cells drawn with grid seed %d (`%s`): RTT %v–%v, rate %s–%s, ", n, seed, cmd,
		gridMinRTT, gridMaxRTT, tc.FormatRate(gridMinRate), tc.FormatRate(gridMaxRate))
	p("queue %.1f–%.0f BDP in packets, log-uniform; two cells in three with random loss of %.2f–%.0f %%; ", gridMinBDP, gridMaxBDP, gridMinLoss*100, gridMaxLoss*100)
	p("three in four bulk of 1–50 MiB (at most %d s at the link's rate, and on a lossy link at the rate Mathis's formula gives for its loss and RTT), the rest page, keepalive or rpc. ", gridMaxSeconds)
	p("Lossless cells: seeds 1–%d on the emulator (they draw only the hosts' noise, each node's time to take a packet in: link.DefaultNoise, 55 µs on average), the kernel's median of as many runs; ", kernelRuns)
	p("lossy cells: seeds 1–%d on each side, medians with p10–p90. Δ is each emulated TCP's median against the kernel's. ", lossyRuns)
	p("Bridge is how late the TUN bridge delivered packets into the kernel's namespaces, mean / 99th percentile / latest (a stall; shown, not judged: one stall of milliseconds leaves a figure as it was, see the notes below); ")
	p("where the 99th percentile exceeds one packet's time at the link's rate, the bridge, not the link, spaced the kernel's packets and ACKs, ")
	p("and where twice the mean exceeds 2 %% of the RTT, it lengthened every round trip; ")
	p("where the link spaces ACKs (one or two packets' time) under HyStart's 2 ms ACK-train delta by no more than the 99th percentile, the bridge, not the link, decided whether the kernel's slow start ended on an ACK train (bulk cells). ")
	p("A bulk cell whose queue is exactly the initial window, 10 packets, is decided by the hosts' time: the server's ACK of the request and its first ten segments overflow the queue by one where the response follows the ACK at once, as on the emulator, and fit where it follows a fraction of a millisecond later, as on the kernel's hosts. ")
	p("A page cell whose queue holds fewer packets than the page's connections is decided by the hosts' time as well: the emulator's client sends its SYNs at one instant and the queue drops what it cannot hold on every run, the kernel's spreads them over up to a millisecond and loses fewer. ")
	p("Hosts, on page, keepalive and rpc cells, is the kernel's time for the same workload on a link with no delay, rate or loss: ")
	p("what its hosts, sockets and bridge add to the exchanges, which the emulator's hosts do in no time; where it exceeds 2 %% of the kernel's figure, the kernel's figure measured its hosts as well as the link. ")
	p("Such cells (marked ✗) are left out of the summary.\n\n")
	p("Congestion control: %s on every side", cc)
	if cc != tcpstack.Cubic {
		p(" (HyStart's ACK train, CUBIC's, decides nothing)")
	}
	p(".\n\n")
	if only != "" {
		p("Only cells %s measured here (`-grid-cells %s`).\n\n", only, only)
	}
	p("| # | link | workload | netemu | gvisor | kernel | Δ netemu | Δ gvisor | drops netemu / gvisor / kernel | bridge, hosts |\n")
	p("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var dn, dg [2][]float64 // [lossless, lossy]
	unreliable := 0
	byRule := map[string]int{} // cells each rule marked
	for _, r := range rows {
		cell := r.Cell
		l := cell.Link
		desc := fmt.Sprintf("%v, %s, queue %d", 2*l.Delay, tc.FormatRate(l.Rate), l.Qdisc.Limit)
		if cell.Lossy {
			desc += ", loss " + lossPercent(l.Loss.P)
		}
		fig := func(s gridSide) string {
			if s.Err != "" {
				return "—"
			}
			if s.Spread.Runs > 1 {
				return fmt.Sprintf("%.0f ms (%.0f–%.0f)", s.Spread.MedianMs, s.Spread.P10Ms, s.Spread.P90Ms)
			}
			return fmt.Sprintf("%.0f ms", s.Spread.MedianMs)
		}
		pc := func(d float64) string {
			if math.IsNaN(d) {
				return "—"
			}
			return fmt.Sprintf("%+.1f %%", d)
		}
		drops := func(s gridSide) string {
			if s.Err != "" || s.Spread.Drops < 0 {
				return "—"
			}
			return fmt.Sprintf("%g", s.Spread.Drops)
		}
		k := r.Sides[len(r.Sides)-1]
		a, b := delta(r.Sides[0], k), delta(r.Sides[1], k)
		j := 0
		if cell.Lossy {
			j = 1
		}
		late := "—"
		if k.Err == "" {
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			late = fmt.Sprintf("%.0f / %.0f / %.0f µs", us(r.LateMean), us(r.LateP99), us(r.LateMax))
			if r.Host > 0 {
				late += fmt.Sprintf(", %.1f ms", float64(r.Host)/float64(time.Millisecond))
			}
			if why := r.biases(); len(why) > 0 {
				late += " ✗ " + strings.Join(why, ", ")
				for _, w := range why {
					byRule[w]++
				}
			}
		}
		switch {
		case math.IsNaN(a):
		case !r.reliable():
			unreliable++
		default:
			dn[j] = append(dn[j], math.Abs(a))
			if !math.IsNaN(b) {
				dg[j] = append(dg[j], math.Abs(b))
			}
		}
		name := cell.Workload.Name()
		if bw, ok := cell.Workload.(workloads.Bulk); ok {
			name = fmt.Sprintf("bulk %.1f MiB", float64(bw.Size)/(1<<20))
		}
		p("| %d | %s | %s | %s | %s | %s | %s | %s | %s / %s / %s | %s |\n", cell.N, desc, name, fig(r.Sides[0]), fig(r.Sides[1]), fig(k), pc(a), pc(b),
			drops(r.Sides[0]), drops(r.Sides[1]), drops(k), late)
	}
	if unreliable > 0 {
		var rules []string
		for _, w := range gridRules {
			if byRule[w] > 0 {
				rules = append(rules, fmt.Sprintf("%s %d", w, byRule[w]))
			}
		}
		p("\n%d cells left out of the summary: the bridge's lateness or the hosts' time biased their kernel figure (✗, with the rules that marked it; cells per rule: %s).\n", unreliable, strings.Join(rules, ", "))
	}
	p("\n| cells | TCP | median \\|Δ\\| | worst \\|Δ\\| | within 5 %% | within 10 %% |\n|---|---|---:|---:|---:|---:|\n")
	for j, name := range []string{"lossless", "lossy"} {
		for _, s := range []struct {
			tcp string
			d   []float64
		}{{"netemu", dn[j]}, {"gvisor", dg[j]}} {
			p("| %s (%d) | %s | %s |\n", name, len(s.d), s.tcp, summarize(s.d))
		}
	}
	if len(rows) > 0 && rows[0].Kernel != "" {
		p("\nKernel: %s.\n", rows[0].Kernel)
	}
}

// summarize writes the median, the worst and the shares within 5 and 10
// per cent of absolute differences.
func summarize(d []float64) string {
	if len(d) == 0 {
		return "— | — | — | —"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	within := func(x float64) string {
		n := 0
		for _, v := range s {
			if v <= x {
				n++
			}
		}
		return fmt.Sprintf("%d %%", n*100/len(s))
	}
	return strings.Join([]string{fmt.Sprintf("%.1f %%", stats.Median(s)), fmt.Sprintf("%.1f %%", s[len(s)-1]), within(5), within(10)}, " | ")
}
