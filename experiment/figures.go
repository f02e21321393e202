package experiment

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

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

// RunFigure is the plot of one run: the workload's own figures over time
// where its Detail offers them (workloads.Plotter: loaded's probe RTT and
// load goodput, share's goodput per flow), then the congestion window and
// bytes in flight of each connection that sent data (a colour per
// connection: the window solid, bytes in flight dashed), and the link's
// queues.
func RunFigure(title string, r workloads.Result, tl *timeline.Timeline) plot.Figure {
	f := plot.Figure{Charts: detailCharts(title, r, tl)}
	f.Charts = append(f.Charts, senderCharts(title, tl)...)
	return f
}

// units are the plot units of the workloads' quantities.
var units = map[workloads.Quantity]plot.Unit{workloads.Time: plot.Seconds, workloads.BitRate: plot.BitsPerSecond}

// detailCharts are the charts of the series r's Detail offers, in the
// order their charts first appear, on the timeline's time axis.
func detailCharts(title string, r workloads.Result, tl *timeline.Timeline) []plot.Chart {
	p, ok := r.Detail.(workloads.Plotter)
	if !ok {
		return nil
	}
	var offset float64
	if tl != nil {
		offset = tl.Since(r.Started).Seconds()
	}
	var charts []plot.Chart
	index := map[string]int{}
	for _, s := range p.Series() {
		i, ok := index[s.Chart]
		if !ok {
			i = len(charts)
			index[s.Chart] = i
			label := map[workloads.Quantity]string{workloads.Time: "RTT", workloads.BitRate: "goodput"}[s.Of]
			charts = append(charts, plot.Chart{Title: title + ": " + s.Chart, XLabel: "time", XUnit: plot.Seconds,
				YLabel: label, YUnit: units[s.Of], FromZero: true})
		}
		ps := plot.Series{Name: s.Name, Step: s.Step, Dots: s.Dots}
		for j, at := range s.At {
			ps.X = append(ps.X, offset+at.Seconds())
			ps.Y = append(ps.Y, s.Values[j])
		}
		charts[i].Series = append(charts[i].Series, ps)
	}
	return charts
}

// senderCharts are the TCP senders' windows and the link's queues.
func senderCharts(title string, tl *timeline.Timeline) []plot.Chart {
	tcp := plot.Chart{Title: title + ": TCP senders", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "cwnd, in flight", YUnit: plot.Bytes, FromZero: true}
	// The senders that carried the most: at most maxSenders, by their
	// peak bytes in flight, drawn in connection order.
	const maxSenders = 4
	var conns []timeline.Conn
	var peaks []int
	for _, c := range tl.Conns() {
		peak := 0
		for _, s := range c.Samples {
			peak = max(peak, int(s.InFlight))
		}
		if peak > 0 {
			conns, peaks = append(conns, c), append(peaks, peak)
		}
	}
	for len(conns) > maxSenders {
		least := 0
		for i := range peaks {
			if peaks[i] < peaks[least] {
				least = i
			}
		}
		conns, peaks = slices.Delete(conns, least, least+1), slices.Delete(peaks, least, least+1)
	}
	for _, c := range conns {
		var xs, cw, fl []float64
		for _, s := range c.Samples {
			xs = append(xs, tl.Since(s.At).Seconds())
			cw = append(cw, float64(s.Cwnd))
			fl = append(fl, float64(s.InFlight))
		}
		name := connName(c)
		tcp.Series = append(tcp.Series,
			plot.Series{Name: "cwnd, " + name, X: xs, Y: cw, Step: true, Group: name},
			plot.Series{Name: "in flight, " + name, X: xs, Y: fl, Step: true, Dashed: true, Group: name})
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
	var charts []plot.Chart
	if len(tcp.Series) > 0 {
		charts = append(charts, tcp)
	}
	if queued || len(charts) == 0 {
		charts = append(charts, q)
	}
	return charts
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

// sweepAxes are the settings SpreadFigure can put on its x axis, in order
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

// SpreadFigure plots each cell's headline figure against the swept
// variable: the first of RTT, rate, random loss, queue limit and
// delayed-ACK timer that takes several values. There is a line per value
// of the other swept settings and per workload variant, a dot at each
// cell's median and, where a cell ran more than once, the band of its
// 10th to 90th percentiles shaded in the line's colour, and crosses of the
// line's colour where a published reference cell matches a cell, named
// after the line they belong to.
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

// CompareFigure shows one case on both backends: the workload's own
// figures, the emulator's TCP senders and queue, and the kernel bridge's
// queue.
func CompareFigure(title string, er, kr workloads.Result, emulated, kern *Watch) plot.Figure {
	f := RunFigure("emulated "+title, er, emulated.Timeline())
	k := RunFigure("kernel "+title, kr, kern.Timeline())
	f.Charts = append(f.Charts, k.Charts...)
	return f
}
