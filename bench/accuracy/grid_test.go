package main

import (
	"context"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// TestDrawGrid: a grid seed names one grid; every cell lies in the
// ranges the report states; a third of the cells are lossless.
func TestDrawGrid(t *testing.T) {
	a, b := drawGrid(60, 11), drawGrid(60, 11)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two draws with seed 11 differ")
	}
	if reflect.DeepEqual(a, drawGrid(60, 12)) {
		t.Fatal("seeds 11 and 12 draw the same grid")
	}
	lossless := 0
	for i, c := range a {
		l := c.Link
		rtt := 2 * l.Delay
		if rtt < gridMinRTT-time.Millisecond || rtt > gridMaxRTT+time.Millisecond {
			t.Errorf("cell %d: RTT %v outside %v–%v", i, rtt, gridMinRTT, gridMaxRTT)
		}
		if l.Rate < gridMinRate*0.9 || l.Rate > gridMaxRate*1.01 {
			t.Errorf("cell %d: rate %v outside the range", i, l.Rate)
		}
		bdp := l.Rate * rtt.Seconds() / 8 / float64(link.DefaultMTU)
		if q := float64(l.Qdisc.Limit); q > gridMaxBDP*bdp+1 || (q < gridMinBDP*bdp-1 && q > 2) {
			t.Errorf("cell %d: queue %d packets for a BDP of %.1f", i, l.Qdisc.Limit, bdp)
		}
		if !c.Lossy {
			lossless++
			if l.Loss.P != 0 {
				t.Errorf("cell %d: lossless with loss %v", i, l.Loss.P)
			}
		} else if l.Loss.P < gridMinLoss*0.9 || l.Loss.P > gridMaxLoss*1.01 {
			t.Errorf("cell %d: loss %v outside the range", i, l.Loss.P)
		} else if pc := lossPercent(l.Loss.P); len(pc) > len("0.05%") {
			t.Errorf("cell %d: loss %v reads %q", i, l.Loss.P, pc)
		}
		if bw, ok := c.Workload.(workloads.Bulk); ok && (bw.Size > gridMaxBulk || float64(bw.Size) > l.Rate/8*gridMaxSeconds+1024) {
			t.Errorf("cell %d: bulk of %d bytes at %v bit/s", i, bw.Size, l.Rate)
		}
		if bw, ok := c.Workload.(workloads.Bulk); ok && c.Lossy && bw.Size > 64<<10 && float64(bw.Size) > mathisRate(2*l.Delay, l.Loss.P)/8*gridMaxSeconds+1024 {
			t.Errorf("cell %d: bulk of %d bytes on %v with %v loss: more than %d s at Mathis's rate", i, bw.Size, 2*l.Delay, l.Loss.P, gridMaxSeconds)
		}
		if err := l.Validate(); err != nil {
			t.Errorf("cell %d: %v", i, err)
		}
	}
	if lossless != 20 {
		t.Errorf("%d of 60 cells lossless; want a third", lossless)
	}
}

// TestGridReport: a small grid without the kernel measures both TCPs and
// writes a row per cell and the summary.
func TestGridReport(t *testing.T) {
	cells := drawGrid(3, 5)
	for i := range cells {
		cells[i].Workload = workloads.Bulk{Size: 64 << 10}.WithDefaults() // small, to stay quick
	}
	rows, err := measureGrid(context.Background(), cells, tcpstack.Cubic, 2, 1, "", false, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	gridMarkdown(&b, rows, tcpstack.Cubic, 5, 3, 2, 1, "")
	out := b.String()
	for _, want := range []string{"grid seed 5 (`go run ./bench/accuracy -grid 3 -grid-seed 5 -grid-runs 2 -grid-kernel-runs 1`)", "| 1 |", "| 2 |", "| 3 |", "median \\|Δ\\|"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for i, r := range rows {
		if len(r.Sides) != 3 || r.Sides[0].Spread.Median == 0 || r.Sides[1].Spread.Median == 0 || r.Sides[2].Err == "" {
			t.Errorf("row %d: %+v", i, r.Sides)
		}
	}
}

// TestGridUnreliableKernel: a kernel figure whose bridge delivered later
// than one packet's time at the link's rate is marked and left out of
// the summary.
func TestGridUnreliableKernel(t *testing.T) {
	cell := gridCell{Workload: workloads.Bulk{Size: 1 << 20}.WithDefaults(), Link: link.Config{Delay: 5 * time.Millisecond, Rate: 100e6, Qdisc: link.Qdisc{Limit: 50}}}
	side := func(ms float64) gridSide {
		return gridSide{Spread: experiment.Spread{Runs: 1, Median: time.Duration(ms * float64(time.Millisecond)), MedianMs: ms, Drops: -1}}
	}
	row := func(late time.Duration) gridRow {
		return gridRow{Cell: cell, Sides: []gridSide{side(110), side(150), side(100)}, LateP99: late}
	}
	// 1500 bytes at 100 mbit: 120 µs.
	if p := row(0).packetTime(); p != 120*time.Microsecond {
		t.Fatalf("packet time at 100 mbit: %v, want 120µs", p)
	}
	good, bad := row(100*time.Microsecond), row(121*time.Microsecond)
	if !good.reliable() || bad.reliable() {
		t.Fatalf("reliable: %v at 100 µs late, %v at 121 µs; want true, false", good.reliable(), bad.reliable())
	}
	// Twice the mean lateness against 2 % of the 10 ms RTT: a mean of 100 µs.
	slow := row(100 * time.Microsecond)
	slow.LateMean = 101 * time.Microsecond
	if good.LateMean = 100 * time.Microsecond; !good.reliable() || slow.reliable() {
		t.Fatalf("reliable: %v at 100 µs mean, %v at 101 µs; want true, false", good.reliable(), slow.reliable())
	}
	var b strings.Builder
	gridMarkdown(&b, []gridRow{good, bad}, tcpstack.Cubic, 1, 2, 1, 1, "")
	out := b.String()
	for _, want := range []string{"0 / 121 / 0 µs ✗ p99 |", "1 cells left out", "cells per rule: p99 1)", "| lossless (1) | netemu | 10.0 % |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestGridACKTrainEdge: where the link spaces ACKs under HyStart's 2 ms
// ACK-train delta by no more than the bridge's 99th-percentile lateness,
// the kernel's figure is marked. Cell 40 of grid 396466: 6.2 mbit, a
// packet every 1935 µs, 65 µs under the delta, bridge p99 147 µs.
func TestGridACKTrainEdge(t *testing.T) {
	side := gridSide{Spread: experiment.Spread{Runs: 1, Median: time.Second, MedianMs: 1000, Drops: -1}}
	row := func(rate float64, p99 time.Duration) gridRow {
		cell := gridCell{Workload: workloads.Bulk{Size: 4 << 20}.WithDefaults(), Link: link.Config{Delay: 86 * time.Millisecond, Rate: rate, Qdisc: link.Qdisc{Limit: 162}}}
		return gridRow{Cell: cell, CC: tcpstack.Cubic, Sides: []gridSide{side, side, side}, LateP99: p99, LateMean: 44 * time.Microsecond}
	}
	for _, c := range []struct {
		rate float64
		p99  time.Duration
		edge bool
	}{
		{6.2e6, 147 * time.Microsecond, true},  // one packet: 1935 µs, 65 µs under
		{6.2e6, 64 * time.Microsecond, false},  // the bridge keeps within the margin
		{12.4e6, 147 * time.Microsecond, true}, // two packets: 1935 µs
		{5.9e6, 147 * time.Microsecond, false}, // 2034 µs: over the delta, no train either way
		{100e6, 100 * time.Microsecond, false}, // 120 and 240 µs: a train however late
		{6e6, 10 * time.Microsecond, true},     // exactly 2 ms: still a train on time
	} {
		r := row(c.rate, c.p99)
		if r.ackTrainEdge() != c.edge || r.reliable() == c.edge {
			t.Errorf("%.1f mbit, p99 %v: edge %v, reliable %v; want edge %v", c.rate/1e6, c.p99, r.ackTrainEdge(), r.reliable(), c.edge)
		}
	}
	// Exchanges never reach HyStart's window: a page cell on the edge's link is not marked.
	page := row(6.2e6, 147*time.Microsecond)
	page.Cell.Workload = workloads.Page{}.WithDefaults()
	if page.ackTrainEdge() {
		t.Error("a page cell at 6.2 mbit, p99 147 µs: marked; want exchanges left alone")
	}
	// HyStart is CUBIC's: BBR's startup ends on its bandwidth filter.
	bbr := row(6.2e6, 147*time.Microsecond)
	bbr.CC = "bbr"
	if bbr.ackTrainEdge() {
		t.Error("a bbr cell at 6.2 mbit, p99 147 µs: marked; want HyStart's edge for CUBIC only")
	}
}

// TestGridBBR: with -grid-cc bbr, netemu's TCP runs BBR on every cell,
// gVisor's (which has none) is shown as not measured and stays out of the
// summary, and the report names the congestion control and the command.
func TestGridBBR(t *testing.T) {
	cells := drawGrid(2, 5)
	for i := range cells {
		cells[i].Workload = workloads.Bulk{Size: 64 << 10}.WithDefaults()
	}
	rows, err := measureGrid(context.Background(), cells, "bbr", 1, 1, "", false, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	cubic, err := measureGrid(context.Background(), cells, tcpstack.Cubic, 1, 1, "", false, func(int, string) {})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r.Sides[0].Spread.Median == 0 || r.Sides[1].Err != "gvisor's TCP has no bbr" {
			t.Errorf("row %d: %+v; want netemu measured, gvisor not", i, r.Sides)
		}
		if r.Sides[0].Spread.Median == cubic[i].Sides[0].Spread.Median {
			t.Errorf("row %d: bbr and cubic both %v: was bbr run?", i, r.Sides[0].Spread.Median)
		}
	}
	var b strings.Builder
	gridMarkdown(&b, rows, "bbr", 5, 2, 1, 1, "")
	for _, want := range []string{"-grid-seed 5 -grid-cc bbr", "Congestion control: bbr on every side"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if code := run(context.Background(), []string{"-grid", "1", "-grid-cc", "vegas"}, io.Discard, &b); code != 2 || !strings.Contains(b.String(), `-grid-cc "vegas": want one of netemu's TCP's congestion controls: cubic, reno or bbr`) {
		t.Errorf("-grid-cc vegas: exit %d, %s", code, b.String())
	}
	b.Reset()
	if code := run(context.Background(), []string{"-grid-cc", "bbr"}, io.Discard, &b); code != 2 || !strings.Contains(b.String(), "-grid-cc bbr: only with -grid N (e.g. -grid 40 -grid-cc bbr)") {
		t.Errorf("-grid-cc bbr without -grid: exit %d, %s", code, b.String())
	}
}

// A bulk cell whose FIFO holds exactly the initial window is marked:
// whether the first flight fits is the hosts' time, not TCP. One packet
// either way, a byte limit, another discipline or a page cell is not.
func TestGridFirstFlightEdge(t *testing.T) {
	side := gridSide{Spread: experiment.Spread{Runs: 1, Median: time.Second, MedianMs: 1000, Drops: -1}}
	row := func(w workloads.Workload, q link.Qdisc) gridRow {
		cell := gridCell{Workload: w, Link: link.Config{Delay: 69 * time.Millisecond, Rate: 2.9e6, Qdisc: q}}
		return gridRow{Cell: cell, Sides: []gridSide{side, side, side}, LateP99: 170 * time.Microsecond, LateMean: 50 * time.Microsecond}
	}
	bulk := workloads.Bulk{Size: 6 << 20}.WithDefaults()
	for _, c := range []struct {
		w    workloads.Workload
		q    link.Qdisc
		edge bool
	}{
		{bulk, link.Qdisc{Limit: 10}, true},
		{bulk, link.Qdisc{Limit: 9}, false},
		{bulk, link.Qdisc{Limit: 11}, false},
		{bulk, link.Qdisc{LimitBytes: 15000}, false},
		{bulk, link.Qdisc{Kind: link.CoDel, Limit: 10}, false},
		{workloads.Page{}.WithDefaults(), link.Qdisc{Limit: 10}, false},
	} {
		r := row(c.w, c.q)
		if r.firstFlightEdge() != c.edge || r.reliable() == c.edge {
			t.Errorf("%s, queue %+v: edge %v, reliable %v; want edge %v", c.w.Name(), c.q, r.firstFlightEdge(), r.reliable(), c.edge)
		}
	}
}

// TestGridHostTime: on a cell of exchanges, kernel hosts that take more
// than 2 % of the kernel's figure on an ideal link mark it unreliable.
func TestGridHostTime(t *testing.T) {
	cell := gridCell{N: 7, Workload: workloads.RPC{}.WithDefaults(), Link: link.Config{Delay: 5 * time.Millisecond, Rate: 20e6, Qdisc: link.Qdisc{Limit: 4}}}
	if !cell.exchanges() || (gridCell{Workload: workloads.Bulk{Size: 1 << 20}}).exchanges() {
		t.Fatal("rpc is a workload of exchanges, bulk is not")
	}
	side := func(ms float64) gridSide {
		return gridSide{Spread: experiment.Spread{Runs: 1, Median: time.Duration(ms * float64(time.Millisecond)), MedianMs: ms, Drops: -1}}
	}
	row := func(host time.Duration) gridRow {
		return gridRow{Cell: cell, Sides: []gridSide{side(625), side(625), side(675)}, Host: host}
	}
	// 2 % of 675 ms is 13.5 ms.
	good, bad := row(13500*time.Microsecond), row(13501*time.Microsecond)
	if !good.reliable() || bad.reliable() {
		t.Fatalf("reliable: %v with hosts at 13.5 ms, %v at 13.501 ms; want true, false", good.reliable(), bad.reliable())
	}
	var b strings.Builder
	gridMarkdown(&b, []gridRow{bad}, tcpstack.Cubic, 1, 40, 1, 1, "7")
	out := b.String()
	for _, want := range []string{"Only cells 7 measured here", "| 7 |", "0 / 0 µs, 13.5 ms ✗", "1 cells left out", "| lossless (0) | netemu | — |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestPickCells(t *testing.T) {
	cells := drawGrid(5, 1)
	got, err := pickCells(cells, "4, 2")
	if err != nil || len(got) != 2 || got[0].N != 4 || got[1].N != 2 || got[0].Link.Rate != cells[3].Link.Rate {
		t.Fatalf("cells 4, 2: %+v, %v", got, err)
	}
	if all, err := pickCells(cells, ""); err != nil || len(all) != 5 {
		t.Fatalf("no list: %d cells, %v; want all 5", len(all), err)
	}
	for _, bad := range []string{"0", "6", "x", "1,,2"} {
		if _, err := pickCells(cells, bad); err == nil {
			t.Errorf("-grid-cells %q: no error", bad)
		}
	}
}

// Mathis's rate: 1448-byte segments every 100 ms at 1 % loss are
// 115840 bit/s × sqrt(150) = 1.4187 Mbit/s.
func TestMathisRate(t *testing.T) {
	if got := mathisRate(100*time.Millisecond, 0.01); math.Abs(got-1.41874e6) > 10 {
		t.Errorf("mathisRate(100ms, 1%%) = %.0f bit/s; want 1418740", got)
	}
}

// A page cell whose FIFO holds fewer packets than the page's six
// connections is marked: whether their SYNs fit is the hosts' time. A
// queue of six, a byte limit, another discipline or a workload of one
// connection is not.
func TestGridConnectsEdge(t *testing.T) {
	side := gridSide{Spread: experiment.Spread{Runs: 1, Median: time.Second, MedianMs: 1000, Drops: -1}}
	page := workloads.Page{}.WithDefaults()
	for _, c := range []struct {
		w    workloads.Workload
		q    link.Qdisc
		edge bool
	}{
		{page, link.Qdisc{Limit: 2}, true},
		{page, link.Qdisc{Limit: 5}, true},
		{workloads.Page{}, link.Qdisc{Limit: 5}, true},
		{page, link.Qdisc{Limit: 6}, false},
		{page, link.Qdisc{}, false}, // the default limit, 1000 packets
		{workloads.Page{Resources: 2}.WithDefaults(), link.Qdisc{Limit: 2}, false},
		{workloads.Page{Conns: 1}.WithDefaults(), link.Qdisc{Limit: 2}, false},
		{page, link.Qdisc{LimitBytes: 3000}, false},
		{page, link.Qdisc{Kind: link.CoDel, Limit: 2}, false},
		{workloads.RPC{}.WithDefaults(), link.Qdisc{Limit: 2}, false},
		{workloads.Bulk{Size: 1 << 20}.WithDefaults(), link.Qdisc{Limit: 2}, false},
	} {
		cell := gridCell{Workload: c.w, Link: link.Config{Delay: 18200 * time.Microsecond, Rate: 2.1e6, Qdisc: c.q}}
		r := gridRow{Cell: cell, Sides: []gridSide{side, side, side}, LateP99: 30 * time.Microsecond, LateMean: 20 * time.Microsecond}
		if r.connectsEdge() != c.edge || r.reliable() == c.edge {
			t.Errorf("%s, queue %+v: edge %v, reliable %v; want edge %v", c.w.Name(), c.q, r.connectsEdge(), r.reliable(), c.edge)
		}
		if c.edge {
			var b strings.Builder
			gridMarkdown(&b, []gridRow{r}, tcpstack.Cubic, 1, 40, 1, 1, "")
			if !strings.Contains(b.String(), "cells per rule: connects 1") {
				t.Errorf("%s, queue %+v: the report does not count the cell under connects:\n%s", c.w.Name(), c.q, b.String())
			}
		}
	}
}
