package plot

import (
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A figure's page: the charts in a column under the figure's title, each
// chart's legend inside its data area, in the first corner (top left, top
// right, bottom right, bottom left) where it covers nothing drawn. Where
// no corner is free, the chart's y axis grows upwards until the top left
// or top right one is.

const (
	legendFontSize = 9 // points
	legendRows     = 4 // a legend has more columns rather than more rows
	// maxGrowths bounds the rounds of raising y axes for their legends.
	maxGrowths = 12
)

var (
	legendPad   = vg.Points(2)  // inside the legend's box, around its entries
	legendGap   = vg.Points(8)  // between its columns
	legendInset = vg.Millimeter // between the box and the data area's edges
	// clearance is kept between the box and anything drawn; more than
	// legendInset, so that a line along an edge of the data area keeps
	// the legend from that edge.
	clearance = vg.Points(4)
	titleSize = font.Length(13)
)

// layout is a figure placed on its page.
type layout struct {
	width, height vg.Length
	title         string // wrapped to the width
	titleStyle    text.Style
	titleHeight   vg.Length // with its padding; 0 without a title
	tiles         draw.Tiles
	panels        []*panel
}

// panel is one chart placed on the page.
type panel struct {
	chart   Chart
	p       *plot.Plot
	marks   []mark
	entries []entry
	legend  legend
	tile    draw.Canvas // the chart's part of the page
	data    draw.Canvas // its data area
}

// mark is something drawn in a data area, in data coordinates, that a
// legend must not cover.
type mark struct {
	xy     plotter.XYs
	line   bool      // segments between consecutive points
	step   bool      // post-step segments (each value held until the next point)
	area   bool      // a closed polygon: its edges and its inside
	radius vg.Length // a glyph of this radius at each point
}

// entry is one line of a legend.
type entry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// legend is a chart's legend set out in columns.
type legend struct {
	cols   [][]entry
	widths []vg.Length // of each column
	style  text.Style
	rowH   vg.Length    // height of one entry
	box    vg.Rectangle // where it is drawn, its background included
}

// layout builds every chart's plot and places the charts, their titles
// and their legends on the page.
func (f Figure) layout() (*layout, error) {
	if len(f.Charts) == 0 {
		return nil, errNothing
	}
	l := &layout{width: f.Width, height: f.Height}
	if l.width == 0 {
		l.width = 18 * vg.Centimeter
	}
	if l.height == 0 {
		l.height = 8 * vg.Centimeter
	}
	l.tiles = draw.Tiles{Rows: len(f.Charts), Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadY: vg.Millimeter * 4}
	textWidth := l.width - l.tiles.PadLeft - l.tiles.PadRight
	l.height *= vg.Length(len(f.Charts))
	if f.Title != "" {
		l.titleStyle = text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, titleSize),
			XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
		l.title = wrap(l.titleStyle, f.Title, textWidth)
		l.titleHeight = l.titleStyle.Height(l.title) + vg.Millimeter*3
		l.height += l.titleHeight
	}
	colours := f.colours()
	for i, c := range f.Charts {
		p, marks, entries, err := c.plot(colours[i])
		if err != nil {
			return nil, err
		}
		p.Title.Text = wrap(p.Title.TextStyle, c.Title, textWidth)
		l.panels = append(l.panels, &panel{chart: c, p: p, marks: marks, entries: entries})
	}
	if f.SameX {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, pn := range l.panels {
			lo, hi = math.Min(lo, pn.p.X.Min), math.Max(hi, pn.p.X.Max)
		}
		for _, pn := range l.panels {
			pn.p.X.Min, pn.p.X.Max = lo, hi
		}
	}
	for _, pn := range l.panels {
		pn.chart.label(pn.p)
	}
	l.place()
	return l, nil
}

// charts is the page below the figure's title, where the charts go. Its
// canvas is nil: it serves to place things, not to draw them.
func (l *layout) charts() draw.Canvas {
	return draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: l.width, Y: l.height - l.titleHeight}}}
}

// place aligns the charts and puts each legend where it covers nothing,
// raising y axes where it must.
func (l *layout) place() {
	rows := make([][]*plot.Plot, len(l.panels))
	for i, pn := range l.panels {
		rows[i] = []*plot.Plot{pn.p}
	}
	for round := 0; ; round++ {
		tiles := plot.Align(rows, l.tiles, l.charts())
		grown := false
		for i, pn := range l.panels {
			pn.tile = tiles[i][0]
			pn.data = pn.p.DataCanvas(pn.tile)
			if len(pn.entries) == 0 {
				continue
			}
			pn.legend = arrange(pn.entries, pn.data.Max.X-pn.data.Min.X-2*legendInset)
			var covered bool
			pn.legend.box, covered = pn.freeCorner()
			if covered && round < maxGrowths { // past it, the top left it is
				pn.grow()
				grown = true
			}
		}
		if !grown {
			return
		}
	}
}

// arrange sets entries out in as few columns as keep a column to
// legendRows entries, fewer where they would be wider than width; the
// columns are filled one after another.
func arrange(entries []entry, width vg.Length) legend {
	lg := plot.NewLegend()
	l := legend{style: lg.TextStyle}
	l.style.Font.Size = legendFontSize
	for _, e := range entries {
		l.rowH = max(l.rowH, l.style.Rectangle(e.name).Max.Y)
	}
	n := len(entries)
	for cols := (n + legendRows - 1) / legendRows; cols >= 1; cols-- {
		rows := (n + cols - 1) / cols
		l.cols, l.widths = nil, nil
		total := 2*legendPad - legendGap
		for i := 0; i < n; i += rows {
			col := entries[i:min(i+rows, n)]
			var w vg.Length
			for _, e := range col {
				w = max(w, lg.ThumbnailWidth+l.style.Rectangle(" "+e.name).Max.X)
			}
			l.cols, l.widths = append(l.cols, col), append(l.widths, w)
			total += w + legendGap
		}
		if total <= width {
			break
		}
	}
	return l
}

// size is the legend's box's width and height.
func (l legend) size() vg.Point {
	w := 2*legendPad - legendGap
	for _, cw := range l.widths {
		w += cw + legendGap
	}
	descent := l.style.FontExtents().Descent
	return vg.Point{X: w, Y: 2*legendPad + vg.Length(len(l.cols[0]))*l.rowH + 2*descent}
}

// corners lists where a legend may go, in order of preference: the
// corners of the data area, top left first.
var corners = []struct{ right, bottom bool }{{false, false}, {true, false}, {true, true}, {false, true}}

// corner returns the box of the legend at corner k of the data area.
func (pn *panel) corner(k int) vg.Rectangle {
	size := pn.legend.size()
	r := vg.Rectangle{Min: vg.Point{X: pn.data.Min.X + legendInset}, Max: vg.Point{Y: pn.data.Max.Y - legendInset}}
	if corners[k].right {
		r.Min.X = pn.data.Max.X - legendInset - size.X
	}
	if corners[k].bottom {
		r.Max.Y = pn.data.Min.Y + legendInset + size.Y
	}
	r.Max.X, r.Min.Y = r.Min.X+size.X, r.Max.Y-size.Y
	return r
}

// freeCorner returns the legend's box at the first corner where it
// covers no mark, or at the top left with covered set.
func (pn *panel) freeCorner() (box vg.Rectangle, covered bool) {
	for k := range corners {
		if r := pn.corner(k); !pn.covers(grow(r, clearance)) {
			return r, false
		}
	}
	return pn.corner(0), true
}

// grow raises the top of the y axis so that the marks under the legend's
// box at the top left (or the top right, where that takes less) pass
// below it.
func (pn *panel) grow() {
	y0, y1 := float64(pn.data.Min.Y), float64(pn.data.Max.Y)
	least := math.Inf(1)
	for k := range 2 {
		r := grow(pn.corner(k), clearance)
		top := float64(pn.highest(r.Min.X, r.Max.X))
		// The marks' top must come down from top to the box's bottom,
		// with room left for them: at least a fifth of the height.
		room := math.Max(float64(r.Min.Y)-y0, 0.2*(y1-y0))
		if top > y0 {
			least = math.Min(least, (top-y0)/room)
		}
	}
	y := &pn.p.Y
	if math.IsInf(least, 1) || least <= 1 {
		least = 1.05
	}
	y.Max = y.Min + (y.Max-y.Min)*least*1.001
	pn.chart.label(pn.p)
}

// grow returns r grown by d on every side.
func grow(r vg.Rectangle, d vg.Length) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: r.Min.X - d, Y: r.Min.Y - d}, Max: vg.Point{X: r.Max.X + d, Y: r.Max.Y + d}}
}

// segments calls f with each segment of m in page coordinates (for an
// area, its edges), and reports whether f ever returned true.
func (pn *panel) segments(m mark, f func(a, b vg.Point) bool) bool {
	tx, ty := pn.p.Transforms(&pn.data)
	at := func(i int) vg.Point { return vg.Point{X: tx(m.xy[i].X), Y: ty(m.xy[i].Y)} }
	switch {
	case m.area:
		for i := range m.xy {
			if f(at(i), at((i+1)%len(m.xy))) {
				return true
			}
		}
	case m.line:
		for i := 1; i < len(m.xy); i++ {
			a, b := at(i-1), at(i)
			if m.step {
				corner := vg.Point{X: b.X, Y: a.Y}
				if f(a, corner) || f(corner, b) {
					return true
				}
				continue
			}
			if f(a, b) {
				return true
			}
		}
	}
	return false
}

// covers reports whether anything drawn in the data area meets r.
func (pn *panel) covers(r vg.Rectangle) bool {
	tx, ty := pn.p.Transforms(&pn.data)
	hit := func(a, b vg.Point) bool { _, _, ok := clip(a, b, r); return ok }
	for _, m := range pn.marks {
		if m.radius > 0 {
			for _, xy := range m.xy {
				pt := vg.Point{X: tx(xy.X), Y: ty(xy.Y)}
				if overlaps(grow(vg.Rectangle{Min: pt, Max: pt}, m.radius), r) {
					return true
				}
			}
		}
		if pn.segments(m, hit) {
			return true
		}
		if m.area && pn.inside(m, vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}) {
			return true
		}
	}
	return false
}

// inside reports whether the point is inside the area m (even-odd rule).
func (pn *panel) inside(m mark, pt vg.Point) bool {
	in := false
	pn.segments(m, func(a, b vg.Point) bool {
		if (a.Y > pt.Y) != (b.Y > pt.Y) && pt.X < a.X+(pt.Y-a.Y)*(b.X-a.X)/(b.Y-a.Y) {
			in = !in
		}
		return false
	})
	return in
}

// highest returns the top of the marks between x0 and x1, in page
// coordinates: the data area's bottom if there are none.
func (pn *panel) highest(x0, x1 vg.Length) vg.Length {
	tx, ty := pn.p.Transforms(&pn.data)
	top := pn.data.Min.Y
	span := vg.Rectangle{Min: vg.Point{X: x0, Y: -1e9}, Max: vg.Point{X: x1, Y: 1e9}}
	for _, m := range pn.marks {
		if m.radius > 0 {
			for _, xy := range m.xy {
				if x := tx(xy.X); x+m.radius >= x0 && x-m.radius <= x1 {
					top = max(top, ty(xy.Y)+m.radius)
				}
			}
		}
		pn.segments(m, func(a, b vg.Point) bool {
			if a, b, ok := clip(a, b, span); ok {
				top = max(top, a.Y, b.Y)
			}
			return false
		})
	}
	return top
}

// overlaps reports whether two rectangles share a point.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X <= b.Max.X && b.Min.X <= a.Max.X && a.Min.Y <= b.Max.Y && b.Min.Y <= a.Max.Y
}

// clip returns the part of the segment from a to b inside r
// (Liang–Barsky), and whether there is one.
func clip(a, b vg.Point, r vg.Rectangle) (vg.Point, vg.Point, bool) {
	dx, dy := float64(b.X-a.X), float64(b.Y-a.Y)
	t0, t1 := 0.0, 1.0
	for _, e := range []struct{ p, q float64 }{
		{-dx, float64(a.X - r.Min.X)}, {dx, float64(r.Max.X - a.X)},
		{-dy, float64(a.Y - r.Min.Y)}, {dy, float64(r.Max.Y - a.Y)},
	} {
		if e.p == 0 {
			if e.q < 0 {
				return a, b, false
			}
			continue
		}
		t := e.q / e.p
		if e.p < 0 {
			t0 = math.Max(t0, t)
		} else {
			t1 = math.Min(t1, t)
		}
		if t0 > t1 {
			return a, b, false
		}
	}
	at := func(t float64) vg.Point {
		return vg.Point{X: a.X + vg.Length(t*dx), Y: a.Y + vg.Length(t*dy)}
	}
	return at(t0), at(t1), true
}

// draw renders the page on c.
func (l *layout) draw(c draw.Canvas) {
	if l.title != "" {
		c.FillText(l.titleStyle, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - l.tiles.PadTop}, l.title)
	}
	for _, pn := range l.panels {
		tile := pn.tile
		tile.Canvas = c.Canvas
		pn.p.Draw(tile)
		if len(pn.entries) > 0 {
			pn.legend.draw(tile)
		}
	}
}

// draw draws the legend in its box on a white ground.
func (l legend) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(l.box.Path())
	x := l.box.Min.X + legendPad
	for i, col := range l.cols {
		lg := plot.NewLegend()
		lg.TextStyle = l.style
		lg.Top, lg.Left = true, true
		for _, e := range col {
			lg.Add(e.name, e.thumbs...)
		}
		lg.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: l.box.Min.Y + legendPad},
			Max: vg.Point{X: x + l.widths[i], Y: l.box.Max.Y - legendPad}}})
		x += l.widths[i] + legendGap
	}
}

// wrap breaks s into lines at spaces so that each line fits width in
// style (a word longer than width keeps a line of its own).
func wrap(style text.Style, s string, width vg.Length) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case style.Width(line+" "+w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
