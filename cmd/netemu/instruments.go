package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netemu/netemu/emu/capture"
	"github.com/netemu/netemu/emu/explain"
	"github.com/netemu/netemu/emu/plot"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
)

// instruments watch one case: a pcap file, a timeline, the explain
// recorder. Any of them may be off.
type instruments struct {
	pcapPath     string
	pcapFile     *os.File
	pcap         *capture.Pcap
	timelinePath string
	timeline     *capture.Timeline
	rec          *explain.Recorder
}

// variantPath inserts a case's variant into a file name when a command
// runs several cases: nagle.pcap → nagle-nodelay-false-split.pcap.
func variantPath(path, variant string) string {
	if variant == "" {
		return path
	}
	ext := filepath.Ext(path)
	v := strings.NewReplacer(" ", "", ",", "-", "=", "-").Replace(variant)
	return strings.TrimSuffix(path, ext) + "-" + v + ext
}

// caseVariant names what distinguishes a case among several.
func caseVariant(c workloads.Case, many bool) string {
	if !many {
		return ""
	}
	v := fmt.Sprintf("rtt%s-%s", strings.ReplaceAll(fmtDur(2*c.Link.Delay), " ", ""), link.FormatRate(c.Link.Rate))
	switch w := c.Workload.(type) {
	case workloads.KeepAlive:
		v += "-" + w.Mode
	case workloads.Nagle:
		v += fmt.Sprintf("-nodelay-%v-%s", w.NoDelay, w.Write)
	}
	return v
}

// attach readies the instruments the options ask for on case c and wires
// them into it. finish writes what they collected.
func (o *options) attach(c *workloads.Case, variant string, watch bool) (*instruments, error) {
	in := &instruments{}
	var observers []link.Observer
	if o.pcap != "" {
		in.pcapPath = variantPath(o.pcap, variant)
		f, err := os.Create(in.pcapPath)
		if err != nil {
			return nil, usagef("--pcap: %v", err)
		}
		in.pcapFile = f
		if in.pcap, err = capture.NewPcap(f); err != nil {
			f.Close()
			return nil, err
		}
	}
	if o.timeline != "" || watch {
		in.timeline = &capture.Timeline{}
		in.timelinePath = o.timeline
		if in.timelinePath != "" {
			in.timelinePath = variantPath(o.timeline, variant)
		}
		observers = append(observers, in.timeline.Observe)
		c.Probe = in.timeline.TCP
	}
	if watch {
		in.rec = &explain.Recorder{}
		observers = append(observers, in.rec.Observe)
	}
	if in.pcap == nil && len(observers) == 0 {
		return in, nil
	}
	pcap := in.pcap
	c.Observe = func(e link.Event) {
		if pcap != nil && e.Kind == link.EventDeliver {
			pcap.Packet(e.Time, e.Packet)
		}
		for _, f := range observers {
			f(e)
		}
	}
	return in, nil
}

// finish closes the pcap and writes the timeline.
func (in *instruments) finish() error {
	if in.pcapFile != nil {
		in.pcapFile.Sync()
		err := in.pcap.Err()
		if cerr := in.pcapFile.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if in.timelinePath != "" {
		f, err := os.Create(in.timelinePath)
		if err != nil {
			return usagef("--timeline: %v", err)
		}
		err = in.timeline.WriteCSV(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

// runFigure is the plot of one run: congestion window and bytes in flight
// of each connection that sent data, and the link's queues.
func runFigure(title string, tl *capture.Timeline) plot.Figure {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	tcp := plot.Chart{Title: title + ": TCP senders", XLabel: "time (ms)", YLabel: "bytes", FromZero: true}
	for _, c := range tl.Conns() {
		var sent bool
		var xs, cw, fl []float64
		for _, s := range c.Samples {
			sent = sent || s.InFlight > 0
			xs = append(xs, ms(tl.Since(s.At)))
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
			xs = append(xs, ms(p.At))
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

// joinVariant adds a word to a variant name.
func joinVariant(variant, word string) string {
	if variant == "" {
		return word
	}
	return variant + "-" + word
}

// summarize adds what the instruments saw to the record: retransmissions
// (from the link's events) and, where the TCP state was sampled, the
// largest congestion window and the last smoothed RTT.
func (in *instruments) summarize(rec *record, r workloads.Result) {
	if in.rec != nil {
		b := explain.Analyze(in.rec.Records(), 0, r.Elapsed)
		rec.Retransmits = ptr(b.Retransmits)
	}
	if in.timeline != nil {
		if cw, srtt := in.timeline.Summary(); cw > 0 {
			rec.MaxCwndBytes = ptr(cw)
			rec.SRTTms = ptr(msf(srtt))
		}
	}
}

// sweepFigure plots elapsed time against the swept variable: RTT when
// several RTTs were given, otherwise the rate; one line per value of the
// other, and the reference figures where a reference cell matches.
func sweepFigure(cases []workloads.Case, results []workloads.Result) plot.Figure {
	rtts := map[time.Duration]bool{}
	for _, c := range cases {
		rtts[c.Link.Delay] = true
	}
	byRTT := len(rtts) > 1
	xOf := func(c workloads.Case) float64 {
		if byRTT {
			return msf(2 * c.Link.Delay)
		}
		return c.Link.Rate / 1e6
	}
	seriesName := func(c workloads.Case, r workloads.Result) string {
		name := "rtt " + fmtDur(2*c.Link.Delay)
		if byRTT {
			name = "rate " + link.FormatRate(c.Link.Rate)
		}
		if v := variant(r); v != "" {
			name += ", " + v
		}
		return name
	}
	ch := plot.Chart{Title: cases[0].Workload.Name() + ": elapsed time", XLabel: "rate (Mbit/s)", YLabel: "elapsed (ms)", FromZero: true}
	if byRTT {
		ch.XLabel = "RTT (ms)"
	}
	if cases[0].Workload.Name() == "nagle" {
		ch.Title, ch.YLabel = "nagle: median round", "median round (ms)"
	}
	index := map[string]int{}
	ref := plot.Series{Name: "reference (published)", Points: true}
	for i, c := range cases {
		name := seriesName(c, results[i])
		j, ok := index[name]
		if !ok {
			j = len(ch.Series)
			index[name] = j
			ch.Series = append(ch.Series, plot.Series{Name: name})
		}
		got, _ := headline(results[i])
		ch.Series[j].X = append(ch.Series[j].X, xOf(c))
		ch.Series[j].Y = append(ch.Series[j].Y, msf(got))
		for _, rf := range workloads.References {
			if workloads.Same(rf.Workload, c.Workload) && rf.RTT == 2*c.Link.Delay && rf.Rate == c.Link.Rate {
				ref.X = append(ref.X, xOf(c))
				ref.Y = append(ref.Y, msf(rf.Time))
			}
		}
	}
	if len(ref.X) > 0 {
		ch.Series = append(ch.Series, ref)
	}
	return plot.Figure{Charts: []plot.Chart{ch}}
}

// compareFigure shows one case on both backends: the emulator's TCP
// senders and queue, and the kernel bridge's queue.
func compareFigure(r workloads.Result, emulated, kern *instruments) plot.Figure {
	title := r.Workload
	if v := variant(r); v != "" {
		title += " (" + v + ")"
	}
	f := runFigure("emulated "+title, emulated.timeline)
	k := runFigure("kernel "+title, kern.timeline)
	f.Charts = append(f.Charts, k.Charts...)
	return f
}
