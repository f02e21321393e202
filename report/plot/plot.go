// Package plot draws netemu's results as SVG or PNG figures: time series
// of a run (congestion window, bytes in flight, queue), elapsed time
// against a swept variable, and backends side by side.
//
// Values are given in base units (bytes, seconds, bits per second, a
// fraction for a percentage); each axis picks an SI prefix from its range
// (KB, MB; µs, ms, s; kbit/s, Mbit/s), names it in its label, and marks a
// handful of round values without needless decimals.
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// errNothing is the error of a figure without charts.
var errNothing = errors.New("plot: nothing to draw")

// Unit is what an axis measures.
type Unit int

// Units. The zero value, Count, is a plain number.
const (
	Count         Unit = iota // a number of things (packets): whole-number ticks, no unit in the label
	Bytes                     // B, KB, MB, GB (powers of 1000)
	Seconds                   // µs, ms, s
	BitsPerSecond             // bit/s, kbit/s, Mbit/s, Gbit/s
	Percent                   // a fraction, shown as %
	Number                    // a plain number with decimal ticks (an index, a ratio), no unit in the label
)

// prefix returns the scale to divide values by and the unit's name, for
// an axis whose largest magnitude is max.
func (u Unit) prefix(max float64) (scale float64, name string) {
	type step struct {
		scale float64
		name  string
	}
	var steps []step
	switch u {
	case Bytes:
		steps = []step{{1, "B"}, {1e3, "KB"}, {1e6, "MB"}, {1e9, "GB"}}
	case Seconds:
		steps = []step{{1e-6, "µs"}, {1e-3, "ms"}, {1, "s"}}
	case BitsPerSecond:
		steps = []step{{1, "bit/s"}, {1e3, "kbit/s"}, {1e6, "Mbit/s"}, {1e9, "Gbit/s"}}
	case Percent:
		return 0.01, "%"
	default:
		return 1, ""
	}
	s := steps[0]
	for _, t := range steps[1:] {
		if max >= t.scale {
			s = t
		}
	}
	return s.scale, s.name
}

// Series is one named line, or a set of markers.
type Series struct {
	Name string
	X, Y []float64
	// Points draws markers only, no line (for reference figures).
	Points bool
	// Dots marks each point of a line.
	Dots bool
	// Step draws a step line (each value holds until the next sample).
	Step bool
	// Dashed draws the line dashed.
	Dashed bool
	// Group: series with the same non-empty Group share a colour in every
	// chart of the figure (a flow's window, bytes in flight and goodput;
	// a line and its reference markers). Series of different groups, and
	// series without one, get colours of their own, as far as the palette
	// goes.
	Group string
	// Neutral draws the series in black or a grey rather than a colour:
	// a line that stands for no one flow, such as a total or the link's
	// queue.
	Neutral bool
	// Lo and Hi, if set (one value per point each), shade the band
	// between them under the line in its color: a spread over runs, such
	// as the 10th to 90th percentiles around a median.
	Lo, Hi []float64
}

// Chart is one panel: a title, axis labels and its series.
type Chart struct {
	Title, XLabel, YLabel string
	// XUnit and YUnit say what the values measure; the labels get the
	// unit's name with its prefix: "time (s)".
	XUnit, YUnit Unit
	Series       []Series
	// FromZero starts both axes at zero (time series).
	FromZero bool
	// Band names the shaded bands (Series.Lo, Hi) in the legend, once,
	// with a grey swatch: "p10–p90 of 20 seeds". "" leaves them out of
	// the legend.
	Band string
	// YNames, if set, names the y axis's whole values 0, 1, …: the
	// levels of a state (a series' Y is a level's index). The axis marks
	// each level by its name, and nothing else; YUnit is not used.
	YNames []string
}

// Figure is a column of charts saved as one file, under a title.
type Figure struct {
	// Title heads the figure: what ran, on which link. It wraps to the
	// figure's width. "" for none.
	Title  string
	Charts []Chart
	// Width and height of each chart; zero means 18 cm × 8 cm.
	Width, Height vg.Length
	// SameX gives every chart the one x range that covers them all:
	// charts over one time axis, or two runs of one case side by side.
	SameX bool
}

// Save writes the figure to path; the extension picks the format (.svg or
// .png).
func (f Figure) Save(path string) error { return SaveFile("plot", path, f.Write) }

// SaveFile creates path and renders into it with write, in the format
// its extension names (.svg or .png); a failed write leaves no file.
// Errors begin with what.
func SaveFile(what, path string, write func(w io.Writer, format string) error) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".svg" && ext != ".png" {
		return fmt.Errorf("%s: %s: want a file name ending in .svg or .png", what, path)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	err = write(out, ext[1:])
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", what, cerr) // a full disk may show only here
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// Write renders the figure to w as "svg" or "png".
func (f Figure) Write(w io.Writer, format string) error {
	if format != "svg" && format != "png" {
		return fmt.Errorf("plot: format %q; want svg or png", format)
	}
	l, err := f.layout()
	if err != nil {
		return err
	}
	var canvas interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if format == "svg" {
		canvas = vgsvg.New(l.width, l.height)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(l.width, l.height), vgimg.UseDPI(120), vgimg.UseBackgroundColor(color.White))}
	}
	l.draw(draw.New(canvas))
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("plot: write %s: %w", format, err)
	}
	return nil
}

// palette: the Okabe–Ito colours that read on white (yellow left out),
// distinguishable with the common kinds of colour blindness.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermilion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
}

// neutrals are the colours of Neutral series.
var neutrals = []color.RGBA{
	{0x00, 0x00, 0x00, 0xff}, // black
	{0x77, 0x77, 0x77, 0xff}, // grey
	{0xAA, 0xAA, 0xAA, 0xff}, // light grey
}

// bandGrey is the swatch of Chart.Band in the legend.
var bandGrey = color.NRGBA{0x77, 0x77, 0x77, 0x40}

// colours returns the colour of each series of each chart. A group gets
// its colour where it first appears, and keeps it in every chart; every
// other series takes the next colour not yet given in the figure (of the
// palette, or of the neutrals for a Neutral series).
func (f Figure) colours() [][]color.Color {
	groups := map[string]color.Color{}
	var next, nextNeutral int
	out := make([][]color.Color, len(f.Charts))
	for i, c := range f.Charts {
		out[i] = make([]color.Color, len(c.Series))
		for j, s := range c.Series {
			col, ok := groups[s.Group]
			if !ok || s.Group == "" {
				if s.Neutral {
					col = neutrals[nextNeutral%len(neutrals)]
					nextNeutral++
				} else {
					col = palette[next%len(palette)]
					next++
				}
				if s.Group != "" {
					groups[s.Group] = col
				}
			}
			out[i][j] = col
		}
	}
	return out
}

// plot builds the chart's plot in the given colours (one per series):
// its grid, bands, lines and markers, and the axes' ranges. It returns
// what it draws as marks, for placing the legend, and the legend's
// entries, in the order of the series.
func (c Chart) plot(colours []color.Color) (*plot.Plot, []mark, []entry, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.Add(plotter.NewGrid())
	var marks []mark
	var entries []entry
	banded := false
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return nil, nil, nil, fmt.Errorf("plot: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		col := colours[i]
		if len(s.X) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(s.X))
		for j := range s.X {
			xy[j].X, xy[j].Y = s.X[j], s.Y[j]
		}
		if s.Lo != nil || s.Hi != nil {
			if len(s.Lo) != len(s.X) || len(s.Hi) != len(s.X) {
				return nil, nil, nil, fmt.Errorf("plot: series %q has %d points and %d low, %d high band values", s.Name, len(s.X), len(s.Lo), len(s.Hi))
			}
			band := make(plotter.XYs, 0, 2*len(s.X))
			for j := range s.X {
				band = append(band, plotter.XY{X: s.X[j], Y: s.Lo[j]})
			}
			for j := len(s.X) - 1; j >= 0; j-- {
				band = append(band, plotter.XY{X: s.X[j], Y: s.Hi[j]})
			}
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return nil, nil, nil, err
			}
			r, g, b, _ := col.RGBA()
			poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0x40}
			poly.LineStyle.Width = 0
			p.Add(poly)
			marks = append(marks, mark{xy: band, area: true})
			banded = true
		}
		if s.Points {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, nil, nil, err
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(5)
			sc.GlyphStyle.Shape = crossGlyph{}
			p.Add(sc)
			marks = append(marks, mark{xy: xy, radius: sc.GlyphStyle.Radius})
			entries = append(entries, entry{s.Name, []plot.Thumbnailer{sc}})
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, nil, nil, err
		}
		l.Color = col
		l.Width = vg.Points(1.2)
		if s.Step {
			l.StepStyle = plotter.PostStep
		}
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		m := mark{xy: xy, line: true, step: s.Step}
		if !s.Dots {
			marks = append(marks, m)
			entries = append(entries, entry{s.Name, []plot.Thumbnailer{l}})
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, nil, nil, err
		}
		sc.GlyphStyle.Color = col
		sc.GlyphStyle.Radius = vg.Points(2.5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		m.radius = sc.GlyphStyle.Radius
		marks = append(marks, m)
		entries = append(entries, entry{s.Name, []plot.Thumbnailer{l, sc}})
	}
	if banded && c.Band != "" {
		swatch := &plotter.Polygon{Color: bandGrey}
		entries = append(entries, entry{c.Band, []plot.Thumbnailer{swatch}})
	}
	if c.FromZero {
		p.X.Min, p.Y.Min = math.Min(0, p.X.Min), math.Min(0, p.Y.Min)
	}
	if len(c.YNames) > 0 { // every level, half a level's room around them
		p.Y.Min, p.Y.Max = -0.5, float64(len(c.YNames))-0.5
	}
	return p, marks, entries, nil
}

// label names the plot's axes and sets their ticks for their ranges,
// first widening an empty range.
func (c Chart) label(p *plot.Plot) {
	if p.X.Max <= p.X.Min {
		p.X.Max = p.X.Min + 1
	}
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1
	}
	p.X.Label.Text, p.X.Tick.Marker = axis(c.XLabel, c.XUnit, p.X.Min, p.X.Max)
	p.Y.Label.Text, p.Y.Tick.Marker = axis(c.YLabel, c.YUnit, p.Y.Min, p.Y.Max)
	if len(c.YNames) > 0 {
		p.Y.Label.Text, p.Y.Tick.Marker = c.YLabel, levels(c.YNames)
	}
}

// levels marks the whole values of an axis in range with their names.
type levels []string

// Ticks implements plot.Ticker.
func (l levels) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for i, name := range l {
		if v := float64(i); v >= min && v <= max {
			ticks = append(ticks, plot.Tick{Value: v, Label: name})
		}
	}
	return ticks
}

// crossGlyph is an ×, drawn bold enough to show over a line's dots.
type crossGlyph struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (crossGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.6)})
	r := sty.Radius * math.Sqrt2 / 2
	c.Stroke(vg.Path{{Type: vg.MoveComp, Pos: vg.Point{X: pt.X - r, Y: pt.Y - r}}, {Type: vg.LineComp, Pos: vg.Point{X: pt.X + r, Y: pt.Y + r}}})
	c.Stroke(vg.Path{{Type: vg.MoveComp, Pos: vg.Point{X: pt.X - r, Y: pt.Y + r}}, {Type: vg.LineComp, Pos: vg.Point{X: pt.X + r, Y: pt.Y - r}}})
}

// axis returns an axis's label, with the unit's name, and its ticks for
// data from min to max.
func axis(label string, u Unit, min, max float64) (string, plot.Ticker) {
	scale, name := u.prefix(math.Max(math.Abs(min), math.Abs(max)))
	if name != "" {
		if label != "" {
			label += " "
		}
		label += "(" + name + ")"
	}
	return label, ticker{scale: scale, whole: u == Count}
}

// ticker marks four to seven round values (1, 2, 2.5 or 5 × a power of
// ten, in the axis's unit), labelled with as few decimals as they need.
type ticker struct {
	scale float64 // divide a value by it to get the axis's unit
	whole bool    // whole numbers only
}

// Ticks implements plot.Ticker.
func (t ticker) Ticks(min, max float64) []plot.Tick {
	lo, hi := min/t.scale, max/t.scale
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: min, Label: label(lo, 0)}}
	}
	step := niceStep(lo, hi, t.whole)
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
		if math.Abs(step*math.Pow(10, float64(decimals))-math.Round(step*math.Pow(10, float64(decimals)))) > 1e-9 {
			decimals++ // 0.25
		}
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo/step - 1e-9); i*step <= hi+step*1e-9; i++ {
		v := i * step
		ticks = append(ticks, plot.Tick{Value: v * t.scale, Label: label(v, decimals)})
	}
	return ticks
}

// niceStep returns the smallest round step that puts at most seven ticks
// between lo and hi.
func niceStep(lo, hi float64, whole bool) float64 {
	p := math.Pow(10, math.Floor(math.Log10(hi-lo))-1)
	for {
		for _, m := range []float64{1, 2, 2.5, 5} {
			step := m * p
			if whole && (step < 1 || step != math.Trunc(step)) {
				continue
			}
			if n := math.Floor(hi/step+1e-9) - math.Ceil(lo/step-1e-9) + 1; n <= 7 {
				return step
			}
		}
		p *= 10
	}
}

// label writes v with the given decimals, dropping trailing zeros: 0,
// 0.5, 1, 1.5.
func label(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
