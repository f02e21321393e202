// Package plot draws netemu's results as SVG or PNG figures: time series
// of a run (congestion window, bytes in flight, queue), elapsed time
// against a swept variable, and backends side by side.
package plot

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Series is one named line.
type Series struct {
	Name string
	X, Y []float64
	// Points draws markers only, no line (for reference figures).
	Points bool
	// Step draws a step line (each value holds until the next sample).
	Step bool
}

// Chart is one panel: a title, axis labels and its series.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// FromZero starts both axes at zero (time series).
	FromZero bool
}

// Figure is a column of charts saved as one file.
type Figure struct {
	Charts []Chart
	// Width and height of each chart; zero means 18 cm × 8 cm.
	Width, Height vg.Length
}

// Save writes the figure to path; the extension picks the format (.svg or
// .png).
func (f Figure) Save(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".svg" && ext != ".png" {
		return fmt.Errorf("plot: %s: want a file name ending in .svg or .png", path)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := f.Write(out, ext[1:]); err != nil {
		out.Close()
		os.Remove(path)
		return err
	}
	return out.Close()
}

// Write renders the figure to w as "svg" or "png".
func (f Figure) Write(w io.Writer, format string) error {
	if len(f.Charts) == 0 {
		return fmt.Errorf("plot: nothing to draw")
	}
	width, height := f.Width, f.Height
	if width == 0 {
		width = 18 * vg.Centimeter
	}
	if height == 0 {
		height = 8 * vg.Centimeter
	}
	total := height * vg.Length(len(f.Charts))
	var canvas interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "svg":
		canvas = vgsvg.New(width, total)
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, total), vgimg.UseDPI(120), vgimg.UseBackgroundColor(color.White))}
	default:
		return fmt.Errorf("plot: format %q; want svg or png", format)
	}
	rows := make([][]*plot.Plot, len(f.Charts))
	for i, c := range f.Charts {
		p, err := c.plot()
		if err != nil {
			return err
		}
		rows[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadY: vg.Millimeter * 4}
	canvases := plot.Align(rows, tiles, draw.New(canvas))
	for i := range rows {
		rows[i][0].Draw(canvases[i][0])
	}
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("plot: write %s: %w", format, err)
	}
	return nil
}

func (c Chart) plot() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	colors, err := brewer.GetPalette(brewer.TypeAny, "Set1", 9)
	if err != nil {
		return nil, err
	}
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("plot: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(s.X))
		for j := range s.X {
			xy[j].X, xy[j].Y = s.X[j], s.Y[j]
		}
		col := colors.Colors()[i%len(colors.Colors())]
		if s.Points {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(3.5)
			sc.GlyphStyle.Shape = draw.CrossGlyph{}
			p.Add(sc)
			p.Legend.Add(s.Name, sc)
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = col
		l.Width = vg.Points(1.2)
		if s.Step {
			l.StepStyle = plotter.PostStep
		}
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	if c.FromZero {
		p.X.Min, p.Y.Min = 0, 0
	}
	// Headroom above the data for the legend.
	p.Y.Max += 0.07 * float64(len(c.Series)) * (p.Y.Max - p.Y.Min)
	return p, nil
}
