package experiment

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/report/plot"
	"github.com/netemu/netemu/report/timeline"
	"github.com/netemu/netemu/tcpstack"
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

// RunFigure is the plot of one run of c on the backend named backend,
// under a title that names the workload and the link: the workload's own
// figures over time where its Detail offers them (workloads.Plotter:
// loaded's probe RTT and load goodput, share's goodput per flow), then
// the congestion window and bytes in flight of each connection that sent
// data (the window solid, bytes in flight dashed), the link's queues,
// and, where a sender ran BBR, the senders' pacing rates beside their
// delivery rates and BBR's mode, all over one time axis. A connection
// has one name and one colour in every chart: the Detail's name for it
// (workloads.ConnNamer: "flow 1") where it has one.
func RunFigure(c Case, backend string, r workloads.Result, tl *timeline.Timeline) plot.Figure {
	f := plot.Figure{Title: Title(c.Workload) + " — " + linkLabel(asRun(c, backend), ""), SameX: true}
	f.Charts = withTraceRates(runCharts("", r, tl), c, tl)
	return f
}

// withTraceRates adds to charts the rate each direction's trace offers,
// over 100 ms windows, with each sender's delivery rate over the same
// windows (from its TCP's delivered count, where the TCP reports one:
// netemu's and the kernel's), to the first chart of bit rates if there
// is one (a workload's goodput, else BBR's pacing and delivery rates),
// else in a chart of their own; over the span the other charts show.
func withTraceRates(charts []plot.Chart, c Case, tl *timeline.Timeline) []plot.Chart {
	const window = 100 * time.Millisecond
	end := 0.0
	for _, ch := range charts {
		for _, s := range ch.Series {
			for _, x := range s.X {
				end = max(end, x)
			}
		}
	}
	series := traceOffers(c, end, window)
	if len(series) == 0 {
		return charts
	}
	conns := tl.Conns()
	labels, groups := connNames(conns, nil)
	most := 0 // the most a sender delivered; those that sent little are left out
	for _, cn := range conns {
		if n := len(cn.Samples); n > 0 {
			most = max(most, cn.Samples[n-1].Delivered)
		}
	}
	for i, cn := range conns {
		if n := len(cn.Samples); n == 0 || cn.Samples[n-1].Delivered*100 < most {
			continue
		}
		s := plot.Series{Name: "delivered, " + labels[i], Step: true, Group: groups[i]}
		k, last := 0, 0
		for at := window; at.Seconds() <= end+window.Seconds(); at += window {
			d := last
			for ; k < len(cn.Samples) && tl.Since(cn.Samples[k].At) <= at; k++ {
				d = cn.Samples[k].Delivered * cn.Samples[k].MSS
			}
			s.X = append(s.X, (at - window).Seconds())
			s.Y = append(s.Y, float64(d-last)*8/window.Seconds())
			last = d
		}
		if last > 0 {
			series = append(series, s)
		}
	}
	for i := range charts {
		if charts[i].YUnit == plot.BitsPerSecond {
			charts[i].Series = append(charts[i].Series, series...)
			return charts
		}
	}
	return append(charts, plot.Chart{Title: "the link's rate (its trace, over 100 ms)", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "rate", YUnit: plot.BitsPerSecond, FromZero: true, Series: series})
}

// traceOffers are the series of what each direction's trace offers per
// window, up to end (seconds): server→client first, then client→server.
// Where both offer the same rates over the span (one trace both ways),
// they are one series named for both directions, which the other would
// otherwise hide, drawn over it in the same place.
func traceOffers(c Case, end float64, window time.Duration) []plot.Series {
	var series []plot.Series
	var names []string
	for _, d := range []struct {
		cfg  link.Config
		name string
	}{{c.down(), "server→client"}, {c.Link, "client→server"}} {
		tr := d.cfg.Trace
		if tr == nil {
			continue
		}
		s := plot.Series{Name: "the link offers, " + d.name + " (" + tr.Name + ")", Step: true, Dashed: true, Neutral: true}
		for at := window; at.Seconds() <= end+window.Seconds(); at += window {
			s.X = append(s.X, (at - window).Seconds())
			s.Y = append(s.Y, tr.RateAt(at, window))
		}
		series, names = append(series, s), append(names, tr.Name)
	}
	if len(series) == 2 && slices.Equal(series[0].Y, series[1].Y) {
		traces := names[0]
		if names[1] != names[0] {
			traces += ", " + names[1]
		}
		series[0].Name = "the link offers, both ways (" + traces + ")"
		series = series[:1]
	}
	return series
}

// asRun returns c with its link as the backend named backend runs it:
// without the delayed-ACK stage where the TCP delays its own ACKs (kernel
// TCP, netemu's).
func asRun(c Case, backend string) Case {
	if backend == (Kernel{}).Name() || c.TCP.Impl.OrDefault() == tcpstack.Netemu {
		c.Link.DelayedACK = 0
	}
	return c
}

// runCharts are the charts of RunFigure, their titles after prefix.
func runCharts(prefix string, r workloads.Result, tl *timeline.Timeline) []plot.Chart {
	charts := detailCharts(prefix, r, tl)
	var names map[uint16]string
	if n, ok := r.Detail.(workloads.ConnNamer); ok {
		names = n.ConnNames()
	}
	return append(charts, senderCharts(prefix, names, tl)...)
}

// units are the plot units of the workloads' quantities.
var units = map[workloads.Quantity]plot.Unit{workloads.Time: plot.Seconds, workloads.BitRate: plot.BitsPerSecond}

// detailCharts are the charts of the series r's Detail offers, in the
// order their charts first appear, on the timeline's time axis.
func detailCharts(prefix string, r workloads.Result, tl *timeline.Timeline) []plot.Chart {
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
			charts = append(charts, plot.Chart{Title: prefix + s.Chart, XLabel: "time", XUnit: plot.Seconds,
				YLabel: label, YUnit: units[s.Of], FromZero: true})
		}
		ps := plot.Series{Name: s.Name, Step: s.Step, Dots: s.Dots, Dashed: s.Dashed, Group: s.Flow, Neutral: s.Flow == ""}
		for j, at := range s.At {
			ps.X = append(ps.X, offset+at.Seconds())
			ps.Y = append(ps.Y, s.Values[j])
		}
		charts[i].Series = append(charts[i].Series, ps)
	}
	return charts
}

// maxSenders is how many TCP senders a run's charts draw at most.
const maxSenders = 4

// senders are the senders that carried the most: at most maxSenders, by
// their peak bytes in flight, in connection order.
func senders(tl *timeline.Timeline) []timeline.Conn {
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
	return conns
}

// senderCharts are the TCP senders' windows, each connection named as
// names has it (by its client's port) or by its ends, the link's queues
// and, where a sender ran BBR, bbrCharts.
func senderCharts(prefix string, names map[uint16]string, tl *timeline.Timeline) []plot.Chart {
	tcp := plot.Chart{Title: prefix + "TCP senders", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "cwnd, in flight", YUnit: plot.Bytes, FromZero: true}
	conns := senders(tl)
	labels, groups := connNames(conns, names)
	for i, c := range conns {
		var xs, cw, fl []float64
		for _, s := range c.Samples {
			xs = append(xs, tl.Since(s.At).Seconds())
			cw = append(cw, float64(s.Cwnd))
			fl = append(fl, float64(s.InFlight))
		}
		tcp.Series = append(tcp.Series,
			plot.Series{Name: "cwnd, " + labels[i], X: xs, Y: cw, Step: true, Group: groups[i]},
			plot.Series{Name: "in flight, " + labels[i], X: xs, Y: fl, Step: true, Dashed: true, Group: groups[i]})
	}
	q := plot.Chart{Title: prefix + "link queue (packets waiting or on the wire)", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "packets", FromZero: true}
	queued := false
	for _, dir := range []link.Dir{link.BtoA, link.AtoB} { // the downloads' direction first
		var xs, ys []float64
		for _, p := range tl.Queue(dir) {
			xs = append(xs, p.At.Seconds())
			ys = append(ys, p.Value)
			queued = queued || p.Value > 0
		}
		q.Series = append(q.Series, plot.Series{Name: timeline.DirName(dir), X: xs, Y: ys, Step: true, Group: timeline.DirName(dir), Neutral: true})
	}
	var charts []plot.Chart
	if len(tcp.Series) > 0 {
		charts = append(charts, tcp)
	}
	if queued || len(charts) == 0 {
		charts = append(charts, q)
	}
	return append(charts, bbrCharts(prefix, conns, labels, groups, tl)...)
}

// bbrLevels are the levels of the chart of BBR's mode, from the bottom:
// PROBE_RTT's four packets below PROBE_BW's rate (the long-term one
// under the estimate's), DRAIN and STARTUP above it.
var bbrLevels = []string{tcpstack.BBRProbeRTT, tcpstack.BBRProbeBW + ", long-term", tcpstack.BBRProbeBW, tcpstack.BBRDrain, tcpstack.BBRStartup}

// bbrLevel is the level of a sample's BBR state in bbrLevels; false for
// a sample without one.
func bbrLevel(b tcpstack.BBRState) (float64, bool) {
	switch {
	case b.Mode == tcpstack.BBRProbeBW && b.LongTerm:
		return 1, true
	case b.Mode == "":
		return 0, false
	}
	i := slices.Index(bbrLevels, b.Mode)
	return float64(i), i >= 0
}

// bbrCharts are, where one of the senders conns (named by labels, in
// colour groups) ran BBR, three charts: each sender's pacing rate
// (solid) beside its delivery rate (dashed), as its TCP reported them;
// the bandwidth estimate of each that ran BBR (its windowed max filter,
// or the long-term rate; the kernel's from TCP_CC_INFO); and the mode of
// each, as a step between bbrLevels. None for a run without BBR.
func bbrCharts(prefix string, conns []timeline.Conn, labels, groups []string, tl *timeline.Timeline) []plot.Chart {
	rates := plot.Chart{Title: prefix + "pacing and delivery rates", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "rate", YUnit: plot.BitsPerSecond, FromZero: true}
	modes := plot.Chart{Title: prefix + "BBR's mode", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "mode", YNames: bbrLevels, FromZero: true}
	estimates := plot.Chart{Title: prefix + "BBR's bandwidth estimate", XLabel: "time", XUnit: plot.Seconds,
		YLabel: "bandwidth", YUnit: plot.BitsPerSecond, FromZero: true}
	for i, c := range conns {
		var xs, paced, delivered, mx, my, bw []float64
		hasRate := false
		for _, s := range c.Samples {
			x := tl.Since(s.At).Seconds()
			xs = append(xs, x)
			paced = append(paced, float64(s.PacingRate)*8)
			delivered = append(delivered, float64(s.DeliveryRate)*8)
			hasRate = hasRate || s.PacingRate > 0
			if level, ok := bbrLevel(s.BBR); ok {
				mx, my = append(mx, x), append(my, level)
				bw = append(bw, float64(s.BBR.Bandwidth)*8)
			}
		}
		if hasRate {
			rates.Series = append(rates.Series,
				plot.Series{Name: "pacing rate, " + labels[i], X: xs, Y: paced, Step: true, Group: groups[i]},
				plot.Series{Name: "delivery rate, " + labels[i], X: xs, Y: delivered, Step: true, Dashed: true, Group: groups[i]})
		}
		if len(mx) > 0 {
			modes.Series = append(modes.Series, plot.Series{Name: "BBR, " + labels[i], X: mx, Y: my, Step: true, Group: groups[i]})
			estimates.Series = append(estimates.Series, plot.Series{Name: "estimate, " + labels[i], X: mx, Y: bw, Step: true, Group: groups[i]})
		}
	}
	if len(modes.Series) == 0 {
		return nil
	}
	if len(rates.Series) == 0 {
		return []plot.Chart{estimates, modes}
	}
	return []plot.Chart{rates, estimates, modes}
}

// connNames names each sending connection in a chart's legend, and the
// group that gives it its colour. A connection that names has a name for
// (by its client's port) takes that name; the others are named by their
// ends, sender→receiver, with the server's port only ("server:80→client":
// the client's port changes from run to run and from backend to backend),
// numbered where several share ends ("server:80→client #2"), so that the
// same connections of two runs side by side share their names. Where
// both ends of one named connection send, each gets its direction.
func connNames(conns []timeline.Conn, names map[uint16]string) (labels, groups []string) {
	es := make([]ends, len(conns))
	count := map[string]int{}
	for i, c := range conns {
		es[i] = connEnds(c, names)
		count[es[i].name]++
	}
	nth := map[string]int{}
	for _, e := range es {
		label, group := e.name, e.name
		switch {
		case count[e.name] < 2:
		case e.named: // one connection: one colour
			label += " " + e.dir
		default:
			nth[e.name]++
			label += " #" + strconv.Itoa(nth[e.name])
			group = label
		}
		labels, groups = append(labels, label), append(groups, group)
	}
	return labels, groups
}

// ends is what a figure says of a sending connection.
type ends struct {
	name  string // its name in names, or its ends: "server:80→client"
	named bool   // the name is from names
	dir   string // "client→server", "server→client"; "" between other hosts
}

// connEnds names a sending connection by the port of its client's end
// in names, or else by its ends with the server's port.
func connEnds(c timeline.Conn, names map[uint16]string) ends {
	if len(c.Samples) == 0 {
		return ends{name: c.Name}
	}
	local, remote := c.Samples[0].Local, c.Samples[0].Remote
	client, server, dir := remote, local, timeline.DirName(link.BtoA)
	if local.Addr() == emu.ClientAddr {
		client, server, dir = local, remote, timeline.DirName(link.AtoB)
	}
	if client.Addr() != emu.ClientAddr || server.Addr() != emu.ServerAddr {
		return ends{name: local.String() + "→" + remote.String()}
	}
	if name, ok := names[client.Port()]; ok {
		return ends{name: name, named: true, dir: dir}
	}
	sp := "server:" + strconv.Itoa(int(server.Port()))
	if dir == timeline.DirName(link.AtoB) {
		return ends{name: "client→" + sp, dir: dir}
	}
	return ends{name: sp + "→client", dir: dir}
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
	{"queue limit", plot.Count, func(c Case) float64 { return float64(fifo(c).Limit) },
		func(c Case) string { return "queue " + strconv.Itoa(fifo(c).Limit) }},
	{"queue limit", plot.Bytes, func(c Case) float64 { return float64(fifo(c).LimitBytes) },
		func(c Case) string { return "queue " + tc.FormatSize(int64(fifo(c).LimitBytes)) }},
	{"delayed-ACK timer", plot.Seconds, func(c Case) float64 { return c.Link.DelayedACK.Seconds() },
		func(c Case) string { return "delack " + link.FormatDuration(c.Link.DelayedACK) }},
}

// fifo is c's client→server FIFO with the limits it was given; the zero
// Qdisc for another discipline, whose limit is not the queue's.
func fifo(c Case) link.Qdisc {
	if !c.Link.Qdisc.IsFIFO() {
		return link.Qdisc{}
	}
	return c.Link.Qdisc
}

// SpreadFigure plots each cell's headline figure against the swept
// variable: the first of RTT, rate, random loss, queue limit and
// delayed-ACK timer that takes several values. There is a line per value
// of the other swept settings and per workload variant, a dot at each
// cell's median and, where a cell ran more than once, the band of its
// 10th to 90th percentiles shaded in the line's colour (named in the
// legend: "p10–p90 of 20 seeds"), and crosses of the line's colour where
// a published reference cell matches a cell, named after the line they
// belong to. The title names the workload and the link settings all
// cells share.
func SpreadFigure(backend string, cases []Case, spreads []Spread) plot.Figure {
	banded := false
	lo, hi := 0, 0
	for _, s := range spreads {
		banded = banded || s.Runs > 1
		if lo == 0 || s.Runs < lo {
			lo = s.Runs
		}
		hi = max(hi, s.Runs)
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
	ch := plot.Chart{Title: "elapsed time", XLabel: x.label, XUnit: x.unit, YLabel: "elapsed", YUnit: plot.Seconds, FromZero: true}
	if k, ok := workloads.Lookup(name); ok && k.Headline != "" {
		ch.Title, ch.YLabel = k.Headline, k.Headline
	}
	if banded {
		ch.Band = "p10–p90 of " + strconv.Itoa(hi) + " seeds"
		if lo != hi {
			ch.Band = "p10–p90 of " + strconv.Itoa(lo) + "–" + strconv.Itoa(hi) + " seeds"
		}
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
	title := name
	if common := commonParts(backend, cases); len(common) > 0 {
		title += " — " + strings.Join(common, ", ")
	}
	return plot.Figure{Title: title, Charts: []plot.Chart{ch}}
}

// commonParts are the link settings (linkParts) every case shares, as
// the backend named backend runs them.
func commonParts(backend string, cases []Case) []string {
	common := linkParts(asRun(cases[0], backend))
	for _, c := range cases[1:] {
		parts := linkParts(asRun(c, backend))
		common = slices.DeleteFunc(common, func(p string) bool { return !slices.Contains(parts, p) })
	}
	return common
}

// CompareFigure shows one case on both backends, the emulator's run
// (with c's TCP) above the kernel's, over one time axis: of each, the
// workload's own figures, the TCP senders and the link's queue (for the
// kernel, the bridge's). A connection has one name and one colour in
// both.
func CompareFigure(c Case, er, kr workloads.Result, emulated, kern *Watch) plot.Figure {
	c = asRun(c, Emulated{}.Name())
	f := plot.Figure{Title: Title(c.Workload) + " — " + linkLabel(c, " on the emulated link"), SameX: true}
	f.Charts = runCharts("emulated: ", er, emulated.Timeline())
	f.Charts = append(f.Charts, runCharts("kernel: ", kr, kern.Timeline())...)
	return f
}

// linkLabel describes c's link for a figure's title: its RTT, rate and
// queue, netem's impairments, the delayed-ACK stage (followed by
// delackNote) and what else is not netemu's default. "RTT 50.0 ms, rate
// 10mbit, queue 1000 packets, delayed ACK 40.0 ms".
func linkLabel(c Case, delackNote string) string {
	parts := linkParts(c)
	for i, p := range parts {
		if strings.HasPrefix(p, delackPart) {
			parts[i] += delackNote
		}
	}
	return strings.Join(parts, ", ")
}

// delackPart begins linkParts' part on the delayed-ACK stage.
const delackPart = "delayed ACK "

// linkParts are the parts of linkLabel, each a setting: what differs
// between the directions is given for each ("up …", "down …").
func linkParts(c Case) []string {
	parts := []string{"RTT " + link.FormatDuration(c.RTT()), "rate " + c.RateLabel()}
	both := func(label func(link.Config) string) {
		up, down := label(c.Link), label(c.down())
		switch {
		case up == down && up != "":
			parts = append(parts, up)
		case up != down:
			if up != "" {
				parts = append(parts, "up "+up)
			}
			if down != "" {
				parts = append(parts, "down "+down)
			}
		}
	}
	both(queueLabel)
	both(impairLabel)
	if d := c.Link.DelayedACK; d > 0 {
		parts = append(parts, delackPart+link.FormatDuration(d))
	}
	if m := c.Link.MTU; m != 0 && m != link.DefaultMTU {
		parts = append(parts, "MTU "+strconv.Itoa(m))
	}
	for _, o := range c.Link.Outages {
		parts = append(parts, "outage "+o.String())
	}
	return parts
}

// queueLabel describes a direction's queue: "queue 1000 packets", "queue
// 150KB", or the qdisc as tc writes it ("fq_codel").
func queueLabel(d link.Config) string {
	if !d.Qdisc.IsFIFO() {
		return tc.Qdisc(d.Qdisc).String()
	}
	var limits []string
	if d.Qdisc.Limit != 0 || d.Qdisc.LimitBytes == 0 {
		limits = append(limits, strconv.Itoa(d.WithDefaults().Qdisc.Limit)+" packets")
	}
	if d.Qdisc.LimitBytes != 0 {
		limits = append(limits, tc.FormatSize(int64(d.Qdisc.LimitBytes)))
	}
	return "queue " + strings.Join(limits, " or ")
}

// impairLabel is a direction's impairments in netem's words ("netem
// loss 1%"), the delay and rate only where netem's options on them go
// beyond linkParts' RTT and rate (a jitter, an overhead); "" for none.
func impairLabel(d link.Config) string {
	imp := d
	imp.Qdisc, imp.Seed, imp.BtoA = link.Qdisc{}, 0, nil
	if imp.Jitter == 0 && imp.JitterCorr == 0 {
		imp.Delay = 0
	}
	if imp.PacketOverhead == 0 && imp.CellSize == 0 && imp.CellOverhead == 0 {
		imp.Rate = 0
	}
	if s := tc.NetemOf(imp).String(); s != "" {
		return "netem " + s
	}
	return ""
}
