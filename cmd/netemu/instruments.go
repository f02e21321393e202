package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netemu/netemu/emu/capture"
	"github.com/netemu/netemu/emu/explain"
	"github.com/netemu/netemu/emu/plot"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// instruments watch one case: a pcap file, a timeline, the explain
// recorder, the totals for the record. Any but the totals may be off.
type instruments struct {
	pcapFile     *os.File
	pcapBuf      *bufio.Writer
	pcap         *capture.Pcap
	timelineFile *os.File
	timeline     *capture.Timeline
	rec          *explain.Recorder
	tally        explain.Tally
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

// caseVariant names what distinguishes a case among several: nothing if
// it runs alone; otherwise the link values (queue and delayed ACK only
// when they are swept) and the workload's variant.
func (o *options) caseVariant(c workloads.Case, many bool) string {
	if !many {
		return ""
	}
	v := fmt.Sprintf("rtt%s-%s", strings.ReplaceAll(fmtDur(2*c.Link.Delay), " ", ""), link.FormatRate(c.Link.Rate))
	if len(o.queue.vals) > 1 {
		if c.Link.QueueBytes > 0 {
			v += fmt.Sprintf("-queue%dB", c.Link.QueueBytes)
		} else {
			v += fmt.Sprintf("-queue%d", c.Link.QueuePackets)
		}
	}
	if len(o.delack.vals) > 1 {
		v += "-delack" + strings.ReplaceAll(fmtDur(c.Link.DelayedACK), " ", "")
	}
	switch w := c.Workload.(type) {
	case workloads.KeepAlive:
		v += "-" + w.Mode
	case workloads.Nagle:
		v += fmt.Sprintf("-nodelay-%v-%s", w.NoDelay, w.Write)
	}
	return v
}

// attach readies the instruments the options ask for on case c and wires
// them into it; files are created now, so that a bad path fails before the
// run. finish writes what they collected.
func (o *options) attach(c *workloads.Case, variant string, explainIt bool) (in *instruments, err error) {
	in = &instruments{}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	observers := []link.Observer{in.tally.Observe}
	probes := []func(tcpstack.Sample){in.tally.TCP}
	if o.pcap != "" {
		if in.pcapFile, err = os.Create(variantPath(o.pcap, variant)); err != nil {
			return nil, usagef("--pcap: %v", err)
		}
		in.pcapBuf = bufio.NewWriterSize(in.pcapFile, 1<<16)
		if in.pcap, err = capture.NewPcap(in.pcapBuf); err != nil {
			return nil, err
		}
	}
	if o.timeline != "" {
		if in.timelineFile, err = os.Create(variantPath(o.timeline, variant)); err != nil {
			return nil, usagef("--timeline: %v", err)
		}
	}
	if o.timeline != "" || o.plot != "" {
		in.timeline = &capture.Timeline{}
		observers = append(observers, in.timeline.Observe)
		probes = append(probes, in.timeline.TCP)
	}
	if explainIt {
		in.rec = &explain.Recorder{}
		observers = append(observers, in.rec.Observe)
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
	c.Probe = func(s tcpstack.Sample) {
		for _, f := range probes {
			f(s)
		}
	}
	return in, nil
}

// finish writes what the instruments collected and closes their files.
func (in *instruments) finish() error {
	var err error
	if in.pcap != nil {
		err = in.pcap.Err()
		if ferr := in.pcapBuf.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("--pcap: %w", ferr)
		}
	}
	if in.timelineFile != nil && err == nil {
		err = in.timeline.WriteCSV(in.timelineFile)
	}
	if cerr := in.close(); err == nil {
		err = cerr
	}
	return err
}

// close closes the instruments' files.
func (in *instruments) close() error {
	var err error
	for _, f := range []*os.File{in.pcapFile, in.timelineFile} {
		if f != nil {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	in.pcapFile, in.timelineFile = nil, nil
	return err
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

// summarize adds the totals the instruments counted to the record:
// retransmissions (from the link's events) and, where the TCP state was
// sampled (the emulated hosts), the largest congestion window and the
// sender's last smoothed RTT.
func (in *instruments) summarize(rec *record) {
	retransmits, cwnd, srtt := in.tally.Totals()
	rec.Retransmits = ptr(retransmits)
	if cwnd > 0 {
		rec.MaxCwndBytes = ptr(cwnd)
		rec.SRTTms = ptr(msf(srtt))
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
		got, _ := results[i].Headline()
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
