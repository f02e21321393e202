// Package waterfall draws the requests of a run as a browser's network
// panel does: a row per request, a bar per phase (queued, DNS, connect,
// TLS, waiting for the first byte, receiving), on a time axis in
// milliseconds, saved as SVG or PNG.
package waterfall

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	figure "github.com/netemu/netemu/report/plot"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Phase is a part of a request's time.
type Phase int

// The phases, in the order a request goes through them.
const (
	Queued    Phase = iota // issued, waiting for a connection or its turn
	DNS                    // looking up the host name
	Connect                // TCP's handshake
	TLS                    // TLS's handshake
	Waiting                // request sent, waiting for the first byte
	Receiving              // first byte to last
	phases
)

var phaseNames = [phases]string{"queued", "DNS", "connect", "TLS", "waiting", "receiving"}

// String returns the phase's name as the legend writes it.
func (p Phase) String() string {
	if p < 0 || p >= phases {
		return "Phase(" + strconv.Itoa(int(p)) + ")"
	}
	return phaseNames[p]
}

// The colours of a browser's network panel, close enough to recognise:
// DNS teal, connect orange, TLS purple, waiting green, receiving blue;
// queued a thin grey line.
var phaseColors = [phases]color.RGBA{
	{0xa0, 0xa0, 0xa0, 0xff},
	{0x00, 0x96, 0x88, 0xff},
	{0xf5, 0x8c, 0x00, 0xff},
	{0x9c, 0x27, 0xb0, 0xff},
	{0x2e, 0x9e, 0x44, 0xff},
	{0x1e, 0x6f, 0xd9, 0xff},
}

// Segment is one phase of a request, from Start to End in seconds from
// the run's start.
type Segment struct {
	Phase      Phase
	Start, End float64
}

// Row is one request: a label on the left (its path), a note beside it
// (its connection), and its phases.
type Row struct {
	Label, Note string
	Segments    []Segment
}

// Chart is a waterfall: a title, a legend of the phases it shows, rows
// top to bottom, and an optional
// mark (End, in seconds; 0 means none) drawn as a line across all rows,
// labelled EndLabel.
type Chart struct {
	Title    string
	Rows     []Row
	End      float64
	EndLabel string
	// Width of the figure; zero means 18 cm. The height follows from
	// the number of rows.
	Width vg.Length
}

// Layout, in points.
const (
	rowHeight  = 11
	barHeight  = 7
	labelSize  = 7.5
	titleSize  = 11
	pad        = 6
	headHeight = 2*pad + titleSize + 14 // title, then the legend
	axisHeight = 30                     // tick labels and the axis's name
)

// Save writes the chart to path; the extension picks the format (.svg or
// .png).
func (c Chart) Save(path string) error { return figure.SaveFile("waterfall", path, c.Write) }

// Write renders the chart to w as "svg" or "png".
func (c Chart) Write(w io.Writer, format string) error {
	if len(c.Rows) == 0 {
		return fmt.Errorf("waterfall: no requests to draw")
	}
	for _, r := range c.Rows {
		for _, s := range r.Segments {
			if s.Phase < 0 || s.Phase >= phases || !(s.End >= s.Start) || s.Start < 0 {
				return fmt.Errorf("waterfall: row %q: segment %v from %g to %g", r.Label, s.Phase, s.Start, s.End)
			}
		}
	}
	width := c.Width
	if width == 0 {
		width = 18 * vg.Centimeter
	}
	height := vg.Length(headHeight + rowHeight*len(c.Rows) + axisHeight)
	var canvas interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "svg":
		canvas = vgsvg.New(width, height)
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(150), vgimg.UseBackgroundColor(color.White))}
	default:
		return fmt.Errorf("waterfall: format %q; want svg or png", format)
	}
	c.draw(draw.New(canvas), width, height)
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("waterfall: write %s: %w", format, err)
	}
	return nil
}

func textStyle(size float64, variant string) draw.TextStyle {
	return draw.TextStyle{
		Color:   color.Black,
		Font:    font.Font{Typeface: "Liberation", Variant: font.Variant(variant), Size: vg.Points(size)},
		Handler: plot.DefaultTextHandler,
	}
}

func rect(x0, y0, x1, y1 vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{X: x0, Y: y0})
	p.Line(vg.Point{X: x1, Y: y0})
	p.Line(vg.Point{X: x1, Y: y1})
	p.Line(vg.Point{X: x0, Y: y1})
	p.Close()
	return p
}

func line(x0, y0, x1, y1 vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{X: x0, Y: y0})
	p.Line(vg.Point{X: x1, Y: y1})
	return p
}

// draw lays the chart out on dc, whose origin is its bottom left corner.
func (c Chart) draw(dc draw.Canvas, width, height vg.Length) {
	label, note := textStyle(labelSize, "Mono"), textStyle(labelSize, "Sans")
	note.Color = color.Gray{Y: 0x60}
	// The label column fits the widest label and note.
	var labelW, noteW vg.Length
	for _, r := range c.Rows {
		labelW = max(labelW, label.Width(r.Label))
		noteW = max(noteW, note.Width(r.Note))
	}
	left := pad + labelW + pad + noteW + pad
	right := width - 2*pad
	top := height - headHeight
	bottom := vg.Length(axisHeight)

	// Title and legend.
	title := textStyle(titleSize, "Sans")
	title.YAlign = draw.YTop
	dc.FillText(title, vg.Point{X: pad, Y: height - pad}, c.Title)
	leg := textStyle(labelSize+0.5, "Sans")
	leg.YAlign = draw.YCenter
	x, y := vg.Length(pad), height-pad-titleSize-pad-4
	var present [phases]bool
	for _, r := range c.Rows {
		for _, s := range r.Segments {
			present[s.Phase] = true
		}
	}
	for p := Queued; p < phases; p++ {
		if !present[p] {
			continue
		}
		dc.SetColor(phaseColors[p])
		if p == Queued {
			dc.Fill(rect(x, y-0.75, x+12, y+0.75))
		} else {
			dc.Fill(rect(x, y-barHeight/2, x+12, y+barHeight/2))
		}
		dc.FillText(leg, vg.Point{X: x + 15, Y: y}, p.String())
		x += 15 + leg.Width(p.String()) + 12
	}

	// The time axis: 0 to the last end, rounded up to a tick.
	var last float64
	for _, r := range c.Rows {
		for _, s := range r.Segments {
			last = math.Max(last, s.End)
		}
	}
	last = math.Max(last, c.End)
	step := niceStep(last * 1e3)
	span := math.Max(math.Ceil(last*1e3/step-1e-9), 1) * step / 1e3
	xOf := func(t float64) vg.Length { return left + vg.Length(t/span)*(right-left) }

	// Rows: shaded every other one, labels, then the bars.
	for i := range c.Rows {
		y1 := top - vg.Length(i*rowHeight)
		y0 := y1 - rowHeight
		if i%2 == 1 {
			dc.SetColor(color.Gray{Y: 0xf2})
			dc.Fill(rect(0, y0, width, y1))
		}
	}
	// Grid lines and tick labels under the bars.
	tick := textStyle(labelSize, "Sans")
	tick.XAlign, tick.YAlign = draw.XCenter, draw.YTop
	ticks := int(math.Round(span*1e3/step)) + 1
	for i := range ticks {
		x := xOf(float64(i) * step / 1e3)
		// Drawing text sets the colour: set the line's each time.
		dc.SetLineStyle(draw.LineStyle{Color: color.Gray{Y: 0xd0}, Width: vg.Points(0.5)})
		dc.Stroke(line(x, bottom, x, top))
	}
	for i := range ticks {
		v := float64(i) * step
		dc.FillText(tick, vg.Point{X: xOf(v / 1e3), Y: bottom - 3}, formatMs(v, step))
	}
	axisName := textStyle(labelSize+0.5, "Sans")
	axisName.XAlign, axisName.YAlign = draw.XCenter, draw.YBottom
	dc.FillText(axisName, vg.Point{X: (left + right) / 2, Y: 2}, "time (ms)")
	label.YAlign, note.YAlign = draw.YCenter, draw.YCenter
	for i, r := range c.Rows {
		mid := top - vg.Length(i*rowHeight) - rowHeight/2
		dc.FillText(label, vg.Point{X: pad, Y: mid}, r.Label)
		dc.FillText(note, vg.Point{X: pad + labelW + pad, Y: mid}, r.Note)
		for _, s := range r.Segments {
			x0, x1 := xOf(s.Start), xOf(s.End)
			dc.SetColor(phaseColors[s.Phase])
			if s.Phase == Queued {
				if x1 > x0 {
					dc.Fill(rect(x0, mid-0.75, x1, mid+0.75))
				}
				continue
			}
			// A phase too short to see still shows as a sliver.
			x1 = max(x1, x0+0.8)
			dc.Fill(rect(x0, mid-barHeight/2, x1, mid+barHeight/2))
		}
	}
	if c.End > 0 {
		x := xOf(c.End)
		dc.SetLineStyle(draw.LineStyle{Color: color.RGBA{0xd0, 0x20, 0x20, 0xff}, Width: vg.Points(0.8), Dashes: []vg.Length{3, 2}})
		dc.Stroke(line(x, bottom, x, top))
		if c.EndLabel != "" {
			end := textStyle(labelSize, "Sans")
			end.Color = color.RGBA{0xd0, 0x20, 0x20, 0xff}
			end.XAlign, end.YAlign = draw.XRight, draw.YBottom
			dc.FillText(end, vg.Point{X: x - 2, Y: top + 1}, c.EndLabel)
		}
	}
	// The axis line.
	dc.SetLineStyle(draw.LineStyle{Color: color.Black, Width: vg.Points(0.6)})
	dc.Stroke(line(left, bottom, right, bottom))
}

// niceStep returns a round step (1, 2 or 5 × a power of ten) that puts
// at most ten ticks from 0 to hi.
func niceStep(hi float64) float64 {
	if !(hi > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(hi))-1)
	for {
		for _, m := range []float64{1, 2, 5} {
			if hi/(m*p) <= 10 {
				return m * p
			}
		}
		p *= 10
	}
}

// formatMs writes a tick's value with the decimals its step needs.
func formatMs(v, step float64) string {
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}
