package experiment

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/report/plot"
	"github.com/netemu/netemu/report/timeline"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// chartOf returns the chart of f whose title ends with suffix.
func chartOf(t *testing.T, f plot.Figure, suffix string) plot.Chart {
	t.Helper()
	for _, c := range f.Charts {
		if strings.HasSuffix(c.Title, suffix) {
			return c
		}
	}
	t.Fatalf("no chart titled …%q", suffix)
	return plot.Chart{}
}

// In a run's figure a flow has one name and one colour group in every
// chart: loaded's goodput chart and the TCP senders' chart both call the
// connection of the client's port FlowPorts[i] "flow i+1", whatever the
// order the timeline met the connections in.
func TestRunFigureNamesEachFlowOnce(t *testing.T) {
	c := Case{Workload: workloads.Loaded{Duration: time.Second}, Seed: 1,
		Link: link.Config{Delay: 10 * time.Millisecond, Rate: 20e6, DelayedACK: link.LinuxDelayedACK}}
	r, _, w, err := Measure(context.Background(), Emulated{}, c, Instruments{KeepTimeline: true})
	if err != nil {
		t.Fatal(err)
	}
	d := r.Detail.(workloads.LoadedDetail)
	f := RunFigure(c, Emulated{}.Name(), r, w.Timeline())
	if !f.SameX {
		t.Error("the run's charts do not share their time axis")
	}

	goodput := chartOf(t, f, "what TCP held back)")
	var flows []string
	for _, s := range goodput.Series {
		switch {
		case s.Name == "all flows":
			if s.Group != "" || !s.Neutral {
				t.Errorf("all flows: group %q, neutral %v; want a neutral line of no flow", s.Group, s.Neutral)
			}
		case s.Group != s.Name:
			t.Errorf("goodput series %q in group %q; want its own name", s.Name, s.Group)
		default:
			flows = append(flows, s.Name)
		}
	}
	if want := []string{"flow 1", "flow 2", "flow 3", "flow 4"}; !slices.Equal(flows, want) {
		t.Fatalf("goodput of %q; want %q", flows, want)
	}
	probe := chartOf(t, f, "probe round-trip time")
	for _, s := range probe.Series {
		if s.Group != "probe" {
			t.Errorf("probe chart: %q in group %q; want the probe's", s.Name, s.Group)
		}
	}

	// Each sender's window is the flow's of its port, named and grouped
	// as the flow.
	cwnd := map[uint16][]float64{}
	for _, conn := range w.Timeline().Conns() {
		if s := conn.Samples[0]; s.Local.Addr() == emu.ServerAddr {
			for _, x := range conn.Samples {
				cwnd[s.Remote.Port()] = append(cwnd[s.Remote.Port()], float64(x.Cwnd))
			}
		}
	}
	senders := chartOf(t, f, "TCP senders")
	var groups []string
	for _, s := range senders.Series {
		name, ok := strings.CutPrefix(s.Name, "cwnd, ")
		if !ok {
			if name, ok = strings.CutPrefix(s.Name, "in flight, "); !ok || s.Group != name {
				t.Errorf("sender series %q in group %q", s.Name, s.Group)
			}
			continue
		}
		if s.Group != name || !slices.Contains(flows, name) {
			t.Errorf("sender series %q in group %q; want a flow's name and group", s.Name, s.Group)
			continue
		}
		groups = append(groups, name)
		i := slices.Index(flows, name)
		if port := d.FlowPorts[i]; port == 0 || !slices.Equal(s.Y, cwnd[port]) {
			t.Errorf("%q: not the window of the connection of client port %d, %s's", s.Name, port, name)
		}
	}
	slices.Sort(groups)
	if !slices.Equal(groups, flows) {
		t.Errorf("TCP senders %q; want one window per flow, %q", groups, flows)
	}
	for _, ch := range f.Charts {
		for _, s := range ch.Series {
			if strings.Contains(s.Name, ":") && !strings.HasPrefix(ch.Title, "link queue") {
				t.Errorf("%s: series %q named by a port", ch.Title, s.Name)
			}
		}
	}
}

// Connections no Detail names are named by their ends without the
// client's port, so that two runs' connections (two backends) share
// their names and colours.
func TestConnNamesAcrossRuns(t *testing.T) {
	client := func(port uint16) netip.AddrPort { return netip.AddrPortFrom(emu.ClientAddr, port) }
	server := netip.AddrPortFrom(emu.ServerAddr, 80)
	conn := func(local, remote netip.AddrPort) timeline.Conn {
		return timeline.Conn{Samples: []tcpstack.Sample{{Local: local, Remote: remote}}}
	}
	run := func(base uint16) []timeline.Conn {
		return []timeline.Conn{conn(client(base), server), conn(server, client(base)), conn(server, client(base+7))}
	}
	want := []string{"client→server:80", "server:80→client #1", "server:80→client #2"}
	for _, base := range []uint16{41409, 51754} {
		labels, groups := connNames(run(base), nil)
		if !slices.Equal(labels, want) || !slices.Equal(groups, want) {
			t.Errorf("client ports from %d: %q, groups %q; want %q", base, labels, groups, want)
		}
	}
	// A named connection whose two ends send: one name, one colour, the
	// direction to tell them apart.
	labels, groups := connNames(run(7000)[:2], map[uint16]string{7000: "probe"})
	if want := []string{"probe client→server", "probe server→client"}; !slices.Equal(labels, want) || groups[0] != "probe" || groups[1] != "probe" {
		t.Errorf("named: %q, groups %q; want %q in the probe's group", labels, groups, want)
	}
}

// Every figure's title names the workload and the link: RTT, rate,
// queue, impairments, and the delayed-ACK stage where the backend's TCP
// has the link's.
func TestFigureTitles(t *testing.T) {
	bulk := workloads.Bulk{Size: 1 << 20}
	base := link.Config{Delay: 25 * time.Millisecond, Rate: 10e6, DelayedACK: link.LinuxDelayedACK}
	impaired := base
	impaired.Qdisc.LimitBytes, impaired.Loss, impaired.MTU = 150_000, link.RandomLoss(0.01, 0), 9000
	impaired.Outages = []link.Outage{{Start: time.Second, End: 2 * time.Second}}
	fq, err := tc.ParseQdisc("fq_codel")
	if err != nil {
		t.Fatal(err)
	}
	down := base
	down.DelayedACK, down.Rate, down.Qdisc = 0, 20e6, link.Qdisc(fq)
	asym := base.WithBtoA(down)
	gv := tcpstack.TCPConfig{Impl: tcpstack.GVisor}
	tl := &timeline.Timeline{}
	for _, c := range []struct {
		c       Case
		backend string
		want    string
	}{
		{Case{Workload: bulk, Link: base, TCP: gv}, "emulated", "bulk — RTT 50.0 ms, rate 10mbit, queue 1000 packets, delayed ACK 40.0 ms"},
		{Case{Workload: bulk, Link: base, TCP: gv}, "kernel", "bulk — RTT 50.0 ms, rate 10mbit, queue 1000 packets"},
		{Case{Workload: bulk, Link: base}, "emulated", "bulk — RTT 50.0 ms, rate 10mbit, queue 1000 packets"},
		{Case{Workload: bulk, Link: impaired, TCP: gv}, "emulated", "bulk — RTT 50.0 ms, rate 10mbit, queue 150KB, netem loss 1%, delayed ACK 40.0 ms, MTU 9000, outage 1s to 2s"},
		{Case{Workload: bulk, Link: asym, TCP: gv}, "emulated", "bulk — RTT 50.0 ms, rate 10mbit/20mbit, up queue 1000 packets, down fq_codel, delayed ACK 40.0 ms"},
		{Case{Workload: workloads.Loaded{}, Link: base, TCP: gv}, "emulated", "loaded (down) — RTT 50.0 ms, rate 10mbit, queue 1000 packets, delayed ACK 40.0 ms"},
	} {
		if got := RunFigure(c.c, c.backend, workloads.Result{}, tl).Title; got != c.want {
			t.Errorf("%s on %s: title %q; want %q", tc.NetemOf(c.c.Link).String(), c.backend, got, c.want)
		}
	}

	w := &Watch{timeline: tl}
	f := CompareFigure(Case{Workload: bulk, Link: base, TCP: gv}, workloads.Result{}, workloads.Result{}, w, w)
	if want := "bulk — RTT 50.0 ms, rate 10mbit, queue 1000 packets, delayed ACK 40.0 ms on the emulated link"; f.Title != want || !f.SameX {
		t.Errorf("compare: title %q, same x %v; want %q over one time axis", f.Title, f.SameX, want)
	}
	var titles []string
	for _, ch := range f.Charts {
		titles = append(titles, ch.Title)
	}
	if want := []string{"emulated: link queue (packets waiting or on the wire)", "kernel: link queue (packets waiting or on the wire)"}; !slices.Equal(titles, want) {
		t.Errorf("compare charts %q; want %q", titles, want)
	}
}

// A sweep's figure names the link settings its cells share, and, where
// cells ran with several seeds, what the band spans.
func TestSpreadFigureTitleAndBand(t *testing.T) {
	var cases []Case
	var spreads []Spread
	for _, rtt := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond} {
		for _, loss := range []float64{0, 0.01} {
			l := link.Config{Delay: rtt / 2, Rate: 10e6, DelayedACK: link.LinuxDelayedACK, Loss: link.RandomLoss(loss, 0)}
			cases = append(cases, Case{Workload: workloads.Bulk{Size: 1 << 20}, Link: l, TCP: tcpstack.TCPConfig{Impl: tcpstack.GVisor}})
			spreads = append(spreads, Spread{Runs: 20, Median: time.Second, P10: time.Second / 2, P90: 2 * time.Second})
		}
	}
	for _, c := range []struct {
		backend string
		runs    []int
		title   string
		band    string
	}{
		{"emulated", []int{20, 20, 20, 20}, "bulk — rate 10mbit, queue 1000 packets, delayed ACK 40.0 ms", "p10–p90 of 20 seeds"},
		{"kernel", []int{20, 18, 20, 20}, "bulk — rate 10mbit, queue 1000 packets", "p10–p90 of 18–20 seeds"},
		{"emulated", []int{1, 1, 1, 1}, "bulk — rate 10mbit, queue 1000 packets, delayed ACK 40.0 ms", ""},
	} {
		for i := range spreads {
			spreads[i].Runs = c.runs[i]
		}
		f := SpreadFigure(c.backend, cases, spreads)
		if ch := f.Charts[0]; f.Title != c.title || ch.Band != c.band {
			t.Errorf("%s, runs %v: title %q, band %q; want %q, %q", c.backend, c.runs, f.Title, ch.Band, c.title, c.band)
		}
		if c.band != "" {
			var svg strings.Builder
			if err := f.Write(&svg, "svg"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(svg.String(), c.band) || !strings.Contains(svg.String(), "rate 10mbit") {
				t.Errorf("the SVG lacks the band's label %q or the title", c.band)
			}
		}
	}
}

// A run over a trace draws what the trace offers per 100 ms beside what
// the sender delivered: the two agree where the queue keeps the link
// busy, and the delivery never runs ahead of the offer by more than the
// packets' headers allow.
func TestRunFigureDrawsTheTrace(t *testing.T) {
	tr, err := link.StepsTrace([]float64{12e6, 24e6, 6e6}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Workload: workloads.Bulk{Size: 3 << 20}, Seed: 1, TCP: tcpstack.TCPConfig{Impl: tcpstack.Netemu},
		Link: link.Config{Delay: 10 * time.Millisecond}.WithTrace(link.BtoA, tr)}
	r, _, w, err := Measure(context.Background(), Emulated{}, c, Instruments{KeepTimeline: true})
	if err != nil {
		t.Fatal(err)
	}
	ch := chartOf(t, RunFigure(c, Emulated{}.Name(), r, w.Timeline()), "the link's rate (its trace, over 100 ms)")
	var offer, got *plot.Series
	for i, s := range ch.Series {
		switch {
		case strings.HasPrefix(s.Name, "the link offers, server→client (steps)"):
			offer = &ch.Series[i]
		case strings.HasPrefix(s.Name, "delivered, server:80→client"):
			got = &ch.Series[i]
		}
	}
	if offer == nil || got == nil {
		t.Fatalf("series %v; want the trace's offer down and the server's delivery", ch.Series)
	}
	if offer.Y[2] != 12e6 || offer.Y[7] != 24e6 || offer.Y[12] != 6e6 {
		t.Errorf("the offer at 0.2, 0.7 and 1.2 s: %v, %v, %v; want 12, 24 and 6 Mbit/s", offer.Y[2], offer.Y[7], offer.Y[12])
	}
	// The sender counts a packet delivered when its ACK comes back, a
	// round trip's part later than the link carries it: the windows in
	// which the rate steps (every fifth) mix two rates.
	for i := 3; i < min(len(got.Y), len(offer.Y))-2; i++ {
		if i%5 == 0 {
			continue
		}
		if got.Y[i] > offer.Y[i]*1.02 || got.Y[i] < offer.Y[i]*0.9 {
			t.Errorf("window %d: delivered %v bit/s where the trace offered %v; want the link kept busy, under the offer", i, got.Y[i], offer.Y[i])
		}
	}
}

// One trace both ways is one line of the offer, named for both
// directions (two lines in one place would hide each other); two traces
// are a line each.
func TestTraceOffersBothWays(t *testing.T) {
	steps, err := link.StepsTrace([]float64{12e6, 24e6}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := link.StepsTrace([]float64{6e6}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	lc := link.Config{Delay: 10 * time.Millisecond}
	for _, tc := range []struct {
		up, down *link.Trace
		want     []string
	}{
		{steps, steps, []string{"the link offers, both ways (steps)"}},
		{flat, steps, []string{"the link offers, server→client (steps)", "the link offers, client→server (steps)"}},
		{nil, steps, []string{"the link offers, server→client (steps)"}},
	} {
		c := Case{Workload: workloads.Bulk{}, Link: lc.WithTrace(link.BtoA, tc.down)}
		if tc.up != nil {
			c.Link = c.Link.WithTrace(link.AtoB, tc.up)
		}
		// A chart of a second's goodput, which the offers join.
		span := plot.Chart{YUnit: plot.BitsPerSecond, Series: []plot.Series{{Name: "goodput", X: []float64{0, 1}, Y: []float64{1, 1}}}}
		charts := withTraceRates([]plot.Chart{span}, c, &timeline.Timeline{})
		var names []string
		for _, s := range charts[0].Series[1:] {
			names = append(names, s.Name)
			if len(s.X) != 11 {
				t.Errorf("%s: %d points; want one per 100 ms up to 1 s", s.Name, len(s.X))
			}
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("series %q; want %q", names, tc.want)
		}
	}
}

// loaded's goodput per 100 ms is what the receivers read: behind a
// drop-tail FIFO of 1000 packets at 20 mbit every flow loses at once,
// reads nothing until its losses are repaired, then reads in one bin
// what TCP held behind the holes, above the link's rate (33 Mbit/s in
// the last bin). Up to any bin's end the flows never read more than the
// link delivered to them.
func TestLoadedGoodputNeverAheadOfTheLink(t *testing.T) {
	c := Case{Workload: workloads.Loaded{}, Link: link.Config{Delay: 10 * time.Millisecond, Rate: 20e6}, Seed: 1}
	var delivered []time.Duration // each segment of the load's data, at its arrival
	var sizes []int
	c.Observe = func(e link.Event) {
		// The load's data: server→client segments longer than a probe's reply.
		if e.Kind == link.EventDeliver && e.Dir == link.BtoA && len(e.Packet) > 52+workloads.LoadedProbe {
			delivered, sizes = append(delivered, e.At), append(sizes, len(e.Packet)-52)
		}
	}
	r, _, err := Emulated{}.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Detail.(workloads.LoadedDetail)
	var all []float64
	for _, s := range d.Series() {
		if s.Name == "all flows" {
			all = s.Values[:len(s.Values)-1] // the last point holds the last bin to its end
		}
	}
	const bin = 100 * time.Millisecond
	var read, carried float64 // bits, up to the current bin's end
	above, k := 0, 0
	for i, v := range all {
		end := d.LoadStart + time.Duration(i+1)*bin
		for ; k < len(delivered) && delivered[k] < end; k++ {
			carried += float64(sizes[k]) * 8
		}
		read += v * bin.Seconds()
		if v > 20e6 {
			above++
		}
		if read > carried {
			t.Fatalf("by %v the flows read %.0f bits, the link delivered %.0f; want no more read than delivered", end, read, carried)
		}
	}
	if above == 0 {
		t.Logf("no bin above the link's rate in this run")
	}
}

// A BBR run's figure draws the sender's pacing rate beside its delivery
// rate, in the sender's colour, its bandwidth estimate, and BBR's mode as a step through the
// named levels: STARTUP, DRAIN, PROBE_BW and, past 10 s, PROBE_RTT. A
// CUBIC run's figure has neither chart.
func TestRunFigureShowsBBR(t *testing.T) {
	c := Case{Workload: workloads.Bulk{Size: 14 << 20}, Seed: 1, TCP: tcpstack.TCPConfig{Impl: tcpstack.Netemu, CongestionControl: "bbr"},
		Link: link.Config{Delay: 10 * time.Millisecond, Rate: 10e6}}
	r, _, w, err := Measure(context.Background(), Emulated{}, c, Instruments{KeepTimeline: true})
	if err != nil {
		t.Fatal(err)
	}
	f := RunFigure(c, Emulated{}.Name(), r, w.Timeline())
	rates := chartOf(t, f, "pacing and delivery rates")
	if len(rates.Series) != 2 || rates.Series[0].Name != "pacing rate, server:80→client" || rates.Series[1].Name != "delivery rate, server:80→client" ||
		rates.Series[0].Group != rates.Series[1].Group || rates.YUnit != plot.BitsPerSecond {
		t.Fatalf("rates chart %+v; want the server's pacing and delivery rates in one colour", rates)
	}
	if peak := slices.Max(rates.Series[0].Y); peak < 10e6 || peak > 40e6 {
		t.Errorf("peak pacing rate %v bit/s; want STARTUP's, above the link's 10 Mbit/s", peak)
	}
	// The estimate settles at the link's rate: the bandwidth BBR's
	// max filter holds in PROBE_BW, within the filter's overshoot.
	est := chartOf(t, f, "BBR's bandwidth estimate")
	if len(est.Series) != 1 || est.Series[0].Group != rates.Series[0].Group {
		t.Fatalf("estimate chart %+v; want the server's estimate in its colour", est)
	}
	if last := est.Series[0].Y[len(est.Series[0].Y)-1]; last < 9e6 || last > 11e6 {
		t.Errorf("last bandwidth estimate %v bit/s; want about the link's 10 Mbit/s", last)
	}
	modes := chartOf(t, f, "BBR's mode")
	if len(modes.Series) != 1 || !slices.Equal(modes.YNames, bbrLevels) {
		t.Fatalf("mode chart %+v; want one series over bbrLevels", modes)
	}
	seen := map[string]bool{}
	for _, y := range modes.Series[0].Y {
		seen[bbrLevels[int(y)]] = true
	}
	for _, m := range []string{tcpstack.BBRStartup, tcpstack.BBRDrain, tcpstack.BBRProbeBW, tcpstack.BBRProbeRTT} {
		if !seen[m] {
			t.Errorf("mode %s not drawn; drawn %v", m, seen)
		}
	}

	c.TCP.CongestionControl, c.Workload = "cubic", workloads.Bulk{Size: 1 << 20}
	r, _, w, err = Measure(context.Background(), Emulated{}, c, Instruments{KeepTimeline: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range RunFigure(c, Emulated{}.Name(), r, w.Timeline()).Charts {
		if strings.Contains(ch.Title, "BBR") || strings.Contains(ch.Title, "pacing") {
			t.Errorf("CUBIC run with chart %q", ch.Title)
		}
	}
}
