package experiment

import (
	"time"

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
// of each connection that sent data, and the link's queues.
func RunFigure(title string, tl *timeline.Timeline) plot.Figure {
	tcp := plot.Chart{Title: title + ": TCP senders", XLabel: "time (ms)", YLabel: "bytes", FromZero: true}
	for _, c := range tl.Conns() {
		var sent bool
		var xs, cw, fl []float64
		for _, s := range c.Samples {
			sent = sent || s.InFlight > 0
			xs = append(xs, Ms(tl.Since(s.At)))
			cw = append(cw, float64(s.Cwnd))
			fl = append(fl, float64(s.InFlight))
		}
		if !sent {
			continue
		}
		tcp.Series = append(tcp.Series,
			plot.Series{Name: "cwnd " + c.Name, X: xs, Y: cw, Step: true},
			plot.Series{Name: "in flight " + c.Name, X: xs, Y: fl, Step: true})
		if len(tcp.Series) >= 8 {
			break
		}
	}
	q := plot.Chart{Title: title + ": link queue (packets waiting or on the wire)", XLabel: "time (ms)", YLabel: "packets", FromZero: true}
	queued := false
	for _, dir := range []link.Dir{link.AtoB, link.BtoA} {
		var xs, ys []float64
		for _, p := range tl.Queue(dir) {
			xs = append(xs, Ms(p.At))
			ys = append(ys, p.Value)
			queued = queued || p.Value > 0
		}
		name := "client→server"
		if dir == link.BtoA {
			name = "server→client"
		}
		q.Series = append(q.Series, plot.Series{Name: name, X: xs, Y: ys, Step: true})
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

// SweepFigure plots each case's headline figure against the swept
// variable: RTT when several RTTs were given, otherwise the rate; one line
// per value of the other and per workload variant, and the published
// reference figures where a reference cell matches.
func SweepFigure(cases []Case, results []workloads.Result) plot.Figure {
	rtts := map[time.Duration]bool{}
	for _, c := range cases {
		rtts[c.RTT()] = true
	}
	byRTT := len(rtts) > 1
	xOf := func(c Case) float64 {
		if byRTT {
			return Ms(c.RTT())
		}
		return c.Path().Rate / 1e6
	}
	seriesName := func(c Case) string {
		name := "rtt " + link.FormatDuration(c.RTT())
		if byRTT {
			name = "rate " + c.RateLabel()
		}
		if v := c.Workload.Variant(); v != "" {
			name += ", " + v
		}
		return name
	}
	name := cases[0].Workload.Name()
	ch := plot.Chart{Title: name + ": elapsed time", XLabel: "rate (Mbit/s)", YLabel: "elapsed (ms)", FromZero: true}
	if byRTT {
		ch.XLabel = "RTT (ms)"
	}
	if k, ok := workloads.Lookup(name); ok && k.Headline != "" {
		ch.Title, ch.YLabel = name+": "+k.Headline, k.Headline+" (ms)"
	}
	index := map[string]int{}
	ref := plot.Series{Name: "reference (published)", Points: true}
	for i, c := range cases {
		sname := seriesName(c)
		j, ok := index[sname]
		if !ok {
			j = len(ch.Series)
			index[sname] = j
			ch.Series = append(ch.Series, plot.Series{Name: sname})
		}
		got, _ := results[i].Headline()
		ch.Series[j].X = append(ch.Series[j].X, xOf(c))
		ch.Series[j].Y = append(ch.Series[j].Y, Ms(got))
		for _, rf := range workloads.References() {
			if workloads.Same(rf.Workload, c.Workload) && rf.RTT == c.RTT() && rf.Rate == c.Link.Rate && c.Link.BtoA == nil {
				ref.X = append(ref.X, xOf(c))
				ref.Y = append(ref.Y, Ms(rf.Time))
			}
		}
	}
	if len(ref.X) > 0 {
		ch.Series = append(ch.Series, ref)
	}
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
