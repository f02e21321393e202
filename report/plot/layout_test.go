package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// ramp is n points from (x0, y0) to (x1, y1).
func ramp(n int, x0, y0, x1, y1 float64) (xs, ys []float64) {
	for i := range n {
		f := float64(i) / float64(n-1)
		xs, ys = append(xs, x0+f*(x1-x0)), append(ys, y0+f*(y1-y0))
	}
	return xs, ys
}

// crowded are charts whose data sit where a legend goes first: in the
// top left corner, in every top corner, in every corner, and a band
// that covers the whole area.
func crowded() Figure {
	up, upY := ramp(50, 0, 0, 10, 100)
	down, downY := ramp(50, 0, 100, 10, 0)
	var zig, zigY []float64 // between 0 and 100 at every step: every corner taken
	for i := range 41 {
		zig, zigY = append(zig, float64(i)/4), append(zigY, float64(100*(i%2)))
	}
	flatX, flatY := []float64{0, 10}, []float64{100, 100}
	var many []Series
	for i := range 9 {
		x, y := ramp(20, 0, 100-float64(i), 10, 100-float64(i))
		many = append(many, Series{Name: fmt.Sprintf("connection number %d", i+1), X: x, Y: y, Step: true})
	}
	return Figure{Charts: []Chart{
		{Title: "top left", Series: []Series{{Name: "falling", X: down, Y: downY}}},
		{Title: "both top corners", Series: []Series{{Name: "flat at the top", X: flatX, Y: flatY}, {Name: "rising", X: up, Y: upY, Dots: true}}},
		{Title: "every corner", FromZero: true, Series: []Series{{Name: "zigzag", X: zig, Y: zigY, Step: true}, {Name: "flat", X: flatX, Y: flatY, Dashed: true}}},
		{Title: "a band everywhere", Band: "p10–p90 of 20 seeds", Series: []Series{
			{Name: "median", X: []float64{0, 10}, Y: []float64{50, 50}, Lo: []float64{0, 0}, Hi: []float64{100, 100}, Dots: true},
			{Name: "reference", X: []float64{0, 10}, Y: []float64{45, 55}, Points: true}}},
		{Title: "many entries", Series: many},
	}}
}

// inBox reports whether p lies inside r shrunk by a hair (a line that
// only touches the box's edge is not under it).
func inBox(r vg.Rectangle, x, y vg.Length) bool {
	const hair = 0.01
	return x > r.Min.X+hair && x < r.Max.X-hair && y > r.Min.Y+hair && y < r.Max.Y-hair
}

// A legend covers nothing drawn: no point of a line (sampled every tenth
// of a point along it, steps included), no glyph, no part of a band.
// It is checked here independently of the layout's own geometry.
func TestLegendCoversNoData(t *testing.T) {
	l, err := crowded().layout()
	if err != nil {
		t.Fatal(err)
	}
	for _, pn := range l.panels {
		box := pn.legend.box
		if box.Size().X <= 0 || box.Size().Y <= 0 {
			t.Errorf("%s: no legend box", pn.chart.Title)
			continue
		}
		if !inside(pn.data.Rectangle, box) {
			t.Errorf("%s: legend %v outside the data area %v", pn.chart.Title, box, pn.data.Rectangle)
		}
		tx, ty := pn.p.Transforms(&pn.data)
		for _, s := range pn.chart.Series {
			var pts [][2]vg.Length
			for i := range s.X {
				pts = append(pts, [2]vg.Length{tx(s.X[i]), ty(s.Y[i])})
				if s.Step && i+1 < len(s.X) {
					pts = append(pts, [2]vg.Length{tx(s.X[i+1]), ty(s.Y[i])})
				}
			}
			if !s.Points {
				for i := 1; i < len(pts); i++ {
					a, b := pts[i-1], pts[i]
					n := int(math.Hypot(float64(b[0]-a[0]), float64(b[1]-a[1]))*10) + 1
					for k := 0; k <= n; k++ {
						f := vg.Length(float64(k) / float64(n))
						if x, y := a[0]+f*(b[0]-a[0]), a[1]+f*(b[1]-a[1]); inBox(box, x, y) {
							t.Fatalf("%s: the legend %v covers %q at (%.1f, %.1f)", pn.chart.Title, box, s.Name, x, y)
						}
					}
				}
			}
			for i := range s.X {
				x, y := tx(s.X[i]), ty(s.Y[i])
				if inBox(box, x, y) || (s.Points || s.Dots) && inBox(grow(box, 2.5), x, y) {
					t.Fatalf("%s: the legend %v covers a marker of %q at (%.1f, %.1f)", pn.chart.Title, box, s.Name, x, y)
				}
				if s.Lo != nil && s.Hi[i] > s.Lo[i] {
					for v := s.Lo[i]; v <= s.Hi[i]; v += (s.Hi[i] - s.Lo[i]) / 200 {
						if inBox(box, tx(s.X[i]), ty(v)) {
							t.Fatalf("%s: the legend covers the band of %q", pn.chart.Title, s.Name)
						}
					}
				}
			}
			if s.Lo != nil { // the band is a quadrilateral here: its middle
				if inBox(box, (tx(s.X[0])+tx(s.X[1]))/2, (ty(s.Lo[0])+ty(s.Hi[0]))/2) ||
					box.Min.X < tx(s.X[1]) && box.Max.X > tx(s.X[0]) && box.Min.Y < ty(s.Hi[0]) && box.Max.Y > ty(s.Lo[0]) {
					t.Errorf("%s: the legend %v lies on the band", pn.chart.Title, box)
				}
			}
		}
	}
	// The first chart keeps its legend in the top right, where the data
	// leave room; the third raises its y axis for it.
	if p := l.panels[0]; p.legend.box.Max.X < p.data.Max.X-legendInset-0.01 || p.p.Y.Max != 100 {
		t.Errorf("top left: legend at %v, y axis up to %v; want the top right corner and no headroom", p.legend.box, p.p.Y.Max)
	}
	if p := l.panels[2]; p.p.Y.Max <= 100 {
		t.Errorf("every corner: y axis up to %v; want it raised above the data", p.p.Y.Max)
	}
	// Nine entries go in columns of at most legendRows.
	if p := l.panels[4]; len(p.legend.cols) < 3 || len(p.legend.cols[0]) > legendRows {
		t.Errorf("many entries: %d columns of %d; want columns of at most %d", len(p.legend.cols), len(p.legend.cols[0]), legendRows)
	}
}

// inside reports whether r lies within outer.
func inside(outer, r vg.Rectangle) bool {
	return r.Min.X >= outer.Min.X && r.Max.X <= outer.Max.X && r.Min.Y >= outer.Min.Y && r.Max.Y <= outer.Max.Y
}

// Titles wrap to the page's width at spaces, losing no word.
func TestTitlesFit(t *testing.T) {
	long := "emulated share (down, cubic,reno,cubic,reno): link queue (packets waiting or on the wire) over the whole run of the flows, with more words than fit"
	figTitle := "share (down, cubic,reno) — RTT 50.0 ms, rate 10mbit, queue 1000 packets, netem delay 25ms 5ms distribution normal loss 1% 25% duplicate 1%, delayed ACK 40.0 ms on the emulated link"
	f := Figure{Title: figTitle, Width: 12 * vg.Centimeter, Charts: []Chart{{Title: long, Series: []Series{{Name: "a", X: []float64{0, 1}, Y: []float64{0, 1}}}}}}
	l, err := f.layout()
	if err != nil {
		t.Fatal(err)
	}
	width := l.width - l.tiles.PadLeft - l.tiles.PadRight
	for _, c := range []struct {
		got, want string
		style     func(string) vg.Length
	}{
		{l.title, figTitle, l.titleStyle.Width},
		{l.panels[0].p.Title.Text, long, l.panels[0].p.Title.TextStyle.Width},
	} {
		lines := strings.Split(c.got, "\n")
		if len(lines) < 2 || strings.Join(lines, " ") != c.want {
			t.Errorf("%q wrapped as %q; want it on several lines, every word kept", c.want, lines)
		}
		for _, line := range lines {
			if w := c.style(line); w > width {
				t.Errorf("title line %q is %.0f pt wide; the page has %.0f", line, w, width)
			}
		}
	}
	// The chart's title and the data area sit below the figure's title.
	if pn := l.panels[0]; pn.tile.Max.Y > l.height-l.titleHeight || l.titleHeight < l.titleStyle.Height(l.title) {
		t.Errorf("chart tile %v; the figure's title (%.0f pt high) takes the top %.0f pt of %.0f", pn.tile.Rectangle, l.titleStyle.Height(l.title), l.titleHeight, l.height)
	}
}

// A group has one colour in every chart, wherever it first appears;
// every other series has a colour of its own; neutral series are black
// or grey.
func TestColoursByGroupAcrossCharts(t *testing.T) {
	xy := []float64{0, 1}
	s := func(name, group string, neutral bool) Series {
		return Series{Name: name, X: xy, Y: xy, Group: group, Neutral: neutral}
	}
	f := Figure{Charts: []Chart{
		{Series: []Series{s("probe", "probe", false), s("base", "probe", false)}},
		{Series: []Series{s("all", "", true), s("flow 1", "flow 1", false), s("flow 2", "flow 2", false)}},
		{Series: []Series{s("cwnd 2", "flow 2", false), s("in flight 2", "flow 2", false), s("cwnd 1", "flow 1", false), s("other", "", false)}},
		{Series: []Series{s("down", "down", true), s("up", "up", true)}},
	}}
	c := f.colours()
	same := [][2][2]int{{{0, 0}, {0, 1}}, {{1, 1}, {2, 2}}, {{1, 2}, {2, 0}}, {{1, 2}, {2, 1}}}
	for _, p := range same {
		if a, b := c[p[0][0]][p[0][1]], c[p[1][0]][p[1][1]]; a != b {
			t.Errorf("series %v and %v: colours %v and %v; want one", p[0], p[1], a, b)
		}
	}
	distinct := map[color.Color][2]int{}
	for i, ch := range f.Charts {
		for j, s := range ch.Series {
			col := c[i][j]
			isNeutral := false
			for _, n := range neutrals {
				isNeutral = isNeutral || col == color.Color(n)
			}
			if isNeutral != s.Neutral {
				t.Errorf("%s: colour %v, neutral %v", s.Name, col, s.Neutral)
			}
			if prev, ok := distinct[col]; ok && (f.Charts[prev[0]].Series[prev[1]].Group != s.Group || s.Group == "") {
				t.Errorf("%s and %s share the colour %v", f.Charts[prev[0]].Series[prev[1]].Name, s.Name, col)
			}
			distinct[col] = [2]int{i, j}
		}
	}
}

// SameX gives every chart one x range: the union of theirs.
func TestSameX(t *testing.T) {
	f := Figure{Charts: []Chart{
		{Series: []Series{{Name: "a", X: []float64{1, 11.3}, Y: []float64{0, 1}}}},
		{Series: []Series{{Name: "b", X: []float64{0.5, 10.9}, Y: []float64{0, 1}}}},
	}}
	for _, same := range []bool{false, true} {
		f.SameX = same
		l, err := f.layout()
		if err != nil {
			t.Fatal(err)
		}
		a, b := l.panels[0].p.X, l.panels[1].p.X
		if got := a.Min == b.Min && a.Max == b.Max; got != same {
			t.Errorf("SameX %v: x from %v to %v and from %v to %v", same, a.Min, a.Max, b.Min, b.Max)
		}
		if same && (a.Min != 0.5 || a.Max != 11.3 || l.panels[0].data.Min.X != l.panels[1].data.Min.X || l.panels[0].data.Max.X != l.panels[1].data.Max.X) {
			t.Errorf("SameX: x from %v to %v, data areas %v and %v; want 0.5 to 11.3 in one column", a.Min, a.Max, l.panels[0].data.Rectangle, l.panels[1].data.Rectangle)
		}
	}
}

// A chart's Band names its shaded bands once in the legend, and only
// where there is a band.
func TestBandInLegend(t *testing.T) {
	band := func(lo, hi []float64) Figure {
		return Figure{Charts: []Chart{{Band: "p10–p90 of 20 seeds", Series: []Series{
			{Name: "loss 0%", X: []float64{0, 1}, Y: []float64{1, 2}, Lo: lo, Hi: hi, Dots: true},
			{Name: "loss 1%", X: []float64{0, 1}, Y: []float64{2, 4}, Lo: lo, Hi: hi, Dots: true},
		}}}}
	}
	for _, c := range []struct {
		f     Figure
		names string
	}{
		{band([]float64{0.5, 1.5}, []float64{3, 5}), "loss 0%|loss 1%|p10–p90 of 20 seeds"},
		{band(nil, nil), "loss 0%|loss 1%"},
	} {
		l, err := c.f.layout()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range l.panels[0].entries {
			names = append(names, e.name)
		}
		if got := strings.Join(names, "|"); got != c.names {
			t.Errorf("legend %q; want %q", got, c.names)
		}
		var svg bytes.Buffer
		if err := c.f.Write(&svg, "svg"); err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Count(svg.String(), "p10–p90 of 20 seeds"), strings.Count(c.names, "p10"); got != want {
			t.Errorf("the SVG names the band %d times; want %d", got, want)
		}
	}
}
