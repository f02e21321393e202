package experiment

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/plot"
	"github.com/netemu/netemu/report/timeline"
	"github.com/netemu/netemu/workloads"
)

// Title names a result in figures and headings: the workload and its
// variant, "nagle (nagle on, split)".
func Title(w workloads.Workload) string {
	if v := w.Variant(); v != "" {
		return w.Name() + " (" + v + ")"
	}
	return w.Name()
}

// RunFigure is the plot of one run: congestion window and bytes in flight
// of each connection that sent data (a colour per connection: the window
// solid, bytes in flight dashed), and the link's queues.
func RunFigure(title string, tl *timeline.Timeline) plot.Figure {
	tcp := plot.Chart{Title: title + ": TCP senders", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "cwnd, in flight", YUnit: plot.Bytes, FromZero: true}
	for _, c := range tl.Conns() {
		var sent bool
		var xs, cw, fl []float64
		for _, s := range c.Samples {
			sent = sent || s.InFlight > 0
			xs = append(xs, tl.Since(s.At).Seconds())
			cw = append(cw, float64(s.Cwnd))
			fl = append(fl, float64(s.InFlight))
		}
		if !sent {
			continue
		}
		name := connName(c)
		tcp.Series = append(tcp.Series,
			plot.Series{Name: "cwnd, " + name, X: xs, Y: cw, Step: true, Group: name},
			plot.Series{Name: "in flight, " + name, X: xs, Y: fl, Step: true, Dashed: true, Group: name})
		if len(tcp.Series) >= 8 {
			break
		}
	}
	q := plot.Chart{Title: title + ": link queue (packets waiting or on the wire)", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "packets", FromZero: true}
	queued := false
	for _, dir := range []link.Dir{link.AtoB, link.BtoA} {
		var xs, ys []float64
		for _, p := range tl.Queue(dir) {
			xs = append(xs, p.At.Seconds())
			ys = append(ys, p.Value)
			queued = queued || p.Value > 0
		}
		q.Series = append(q.Series, plot.Series{Name: timeline.DirName(dir), X: xs, Y: ys, Step: true})
	}
	var f plot.Figure
	if len(tcp.Series) > 0 {
		f.Charts = append(f.Charts, tcp)
	}
	if queued || len(f.Charts) == 0 {
		f.Charts = append(f.Charts, q)
	}
	return f
}

// connName names a connection by its hosts' roles, sender→receiver:
// "server:80→client:41409".
func connName(c timeline.Conn) string {
	if len(c.Samples) == 0 {
		return c.Name
	}
	end := func(a netip.AddrPort) string {
		switch a.Addr() {
		case emu.ClientAddr:
			return "client:" + strconv.Itoa(int(a.Port()))
		case emu.ServerAddr:
			return "server:" + strconv.Itoa(int(a.Port()))
		}
		return a.String()
	}
	s := c.Samples[0]
	return end(s.Local) + "→" + end(s.Remote)
}

// sweepAxis is a setting a sweep can vary, as a figure's axis.
type sweepAxis struct {
	label string
	unit  plot.Unit
	value func(Case) float64
	name  func(Case) string // the setting, for a series' name
}

// sweepAxes are the settings SweepFigure can put on its x axis, in order
// of preference.
var sweepAxes = []sweepAxis{
	{"RTT", plot.Seconds, func(c Case) float64 { return c.RTT().Seconds() },
		func(c Case) string { return "RTT " + link.FormatDuration(c.RTT()) }},
	{"rate", plot.BitsPerSecond, func(c Case) float64 { return c.Path().Rate },
		func(c Case) string { return "rate " + c.RateLabel() }},
	{"random loss", plot.Percent, func(c Case) float64 { return c.Path().Loss },
		func(c Case) string { return "loss " + strconv.FormatFloat(100*c.Path().Loss, 'g', -1, 64) + "%" }},
	{"queue limit", plot.Count, func(c Case) float64 { return float64(c.Link.QueuePackets) },
		func(c Case) string { return "queue " + strconv.Itoa(c.Link.QueuePackets) }},
	{"queue limit", plot.Bytes, func(c Case) float64 { return float64(c.Link.QueueBytes) },
		func(c Case) string { return "queue " + link.FormatSize(int64(c.Link.QueueBytes)) }},
	{"delayed-ACK timer", plot.Seconds, func(c Case) float64 { return c.Link.DelayedACK.Seconds() },
		func(c Case) string { return "delack " + link.FormatDuration(c.Link.DelayedACK) }},
}

// SweepFigure plots each case's headline figure against the swept
// variable: the first of RTT, rate, random loss, queue limit and
// delayed-ACK timer that takes several values. There is a line per value
// of the other swept settings and per workload variant, with a dot per
// case, and crosses of the line's colour where a published reference cell
// matches a case, named after the line they belong to.
func SweepFigure(cases []Case, results []workloads.Result) plot.Figure {
	spreads := make([]Spread, len(results))
	for i, r := range results {
		got, _ := r.Headline()
		spreads[i] = SpreadOf([]time.Duration{got}, nil)
	}
	return SpreadFigure(cases, spreads)
}

// SpreadFigure is SweepFigure of cells each run with several seeds: a
// dot at each cell's median and, where a cell ran more than once, the
// band of its 10th to 90th percentiles shaded in the line's colour.
func SpreadFigure(cases []Case, spreads []Spread) plot.Figure {
	banded := false
	for _, s := range spreads {
		banded = banded || s.Runs > 1
	}
	var x sweepAxis
	var others []sweepAxis
	for _, a := range sweepAxes {
		seen := map[float64]bool{}
		for _, c := range cases {
			seen[a.value(c)] = true
		}
		switch {
		case len(seen) < 2:
		case x.value == nil:
			x = a
		default:
			others = append(others, a)
		}
	}
	if x.value == nil {
		x = sweepAxes[0]
	}
	seriesName := func(c Case) string {
		var parts []string
		for _, a := range others {
			parts = append(parts, a.name(c))
		}
		if v := c.Workload.Variant(); v != "" {
			parts = append(parts, v)
		}
		if len(parts) == 0 {
			return "netemu"
		}
		return strings.Join(parts, ", ")
	}
	name := cases[0].Workload.Name()
	ch := plot.Chart{Title: name + ": elapsed time", XLabel: x.label, XUnit: x.unit, YLabel: "elapsed", YUnit: plot.Seconds, FromZero: true}
	if k, ok := workloads.Lookup(name); ok && k.Headline != "" {
		ch.Title, ch.YLabel = name+": "+k.Headline, k.Headline
	}
	index := map[string]int{}
	var refs []plot.Series
	for i, c := range cases {
		sname := seriesName(c)
		j, ok := index[sname]
		if !ok {
			j = len(ch.Series)
			index[sname] = j
			ch.Series = append(ch.Series, plot.Series{Name: sname, Dots: true, Group: sname})
			refs = append(refs, plot.Series{Name: sname + ": published reference", Points: true, Group: sname})
		}
		sp := spreads[i]
		ch.Series[j].X = append(ch.Series[j].X, x.value(c))
		ch.Series[j].Y = append(ch.Series[j].Y, sp.Median.Seconds())
		if banded {
			ch.Series[j].Lo = append(ch.Series[j].Lo, sp.P10.Seconds())
			ch.Series[j].Hi = append(ch.Series[j].Hi, sp.P90.Seconds())
		}
		for _, rf := range workloads.References() {
			if workloads.Same(rf.Workload, c.Workload) && rf.RTT == c.RTT() && rf.Rate == c.Link.Rate && c.Link.BtoA == nil {
				refs[j].X = append(refs[j].X, x.value(c))
				refs[j].Y = append(refs[j].Y, rf.Time.Seconds())
			}
		}
	}
	ch.Series = append(ch.Series, refs...) // the empty ones draw nothing
	return plot.Figure{Charts: []plot.Chart{ch}}
}

// CompareFigure shows one case on both backends: the emulator's TCP
// senders and queue, and the kernel bridge's queue.
func CompareFigure(title string, emulated, kern *Watch) plot.Figure {
	f := RunFigure("emulated "+title, emulated.Timeline())
	k := RunFigure("kernel "+title, kern.Timeline())
	f.Charts = append(f.Charts, k.Charts...)
	return f
}
