package plot

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample() Figure {
	return Figure{Charts: []Chart{
		{Title: "cwnd", XLabel: "time", XUnit: Seconds, YLabel: "cwnd", YUnit: Bytes, Series: []Series{
			{Name: "cwnd", X: []float64{0, 0.010, 0.020, 0.030}, Y: []float64{14480, 28960, 57920, 57920}, Step: true, Group: "c"},
			{Name: "in flight", X: []float64{0, 0.010, 0.020, 0.030}, Y: []float64{1000, 20000, 50000, 40000}, Dashed: true, Group: "c"},
		}},
		{Title: "elapsed", XLabel: "RTT", XUnit: Seconds, YLabel: "elapsed", YUnit: Seconds, Series: []Series{
			{Name: "netemu", X: []float64{0.010, 0.100, 0.200}, Y: []float64{0.125, 0.827, 1.627}, Dots: true, Group: "n"},
			{Name: "netemu: reference", X: []float64{0.010, 0.100, 0.200}, Y: []float64{0.149, 0.915, 1.749}, Points: true, Group: "n"},
		}},
	}}
}

func TestSaveSVGAndPNG(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"f.svg", "f.png"} {
		path := filepath.Join(dir, name)
		if err := sample().Save(path); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 5000 {
			t.Fatalf("%s: %d bytes, %v", name, len(b), err)
		}
		if strings.HasSuffix(name, ".svg") {
			for _, want := range []string{"<svg", "cwnd (KB)", "in flight", "netemu: reference", "RTT (ms)", "elapsed (s)", "time (ms)"} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("SVG lacks %q", want)
				}
			}
		} else {
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil || img.Bounds().Dx() < 500 {
				t.Errorf("PNG: %v, bounds %v", err, img.Bounds())
			}
		}
	}
	// Deterministic: the same figure gives the same bytes.
	var a, b bytes.Buffer
	sample().Write(&a, "svg")
	sample().Write(&b, "svg")
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two renderings of one figure differ")
	}
}

func TestBadInput(t *testing.T) {
	if err := sample().Save(filepath.Join(t.TempDir(), "f.gif")); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("gif: %v", err)
	}
	if err := (Figure{}).Write(&bytes.Buffer{}, "svg"); err == nil {
		t.Error("empty figure accepted")
	}
	bad := Figure{Charts: []Chart{{Series: []Series{{Name: "x", X: []float64{1}, Y: nil}}}}}
	if err := bad.Write(&bytes.Buffer{}, "svg"); err == nil {
		t.Error("mismatched series accepted")
	}
}

// Each axis names its unit with a prefix that suits the range, and marks
// four to seven round values without needless decimals.
func TestAxes(t *testing.T) {
	for _, c := range []struct {
		unit     Unit
		min, max float64
		label    string
		ticks    string
	}{
		{Bytes, 0, 104_000, "cwnd (KB)", "0 20 40 60 80 100"},
		{Bytes, 0, 250_000, "cwnd (KB)", "0 50 100 150 200 250"},
		{Bytes, 0, 3_400_000, "cwnd (MB)", "0 0.5 1 1.5 2 2.5 3"},
		{Bytes, 0, 800, "cwnd (B)", "0 200 400 600 800"},
		{Count, 0, 28, "cwnd", "0 5 10 15 20 25"},
		{Count, 0, 2.3, "cwnd", "0 1 2"},
		{Seconds, 0, 4.55, "cwnd (s)", "0 1 2 3 4"},
		{Seconds, 0, 1.96, "cwnd (s)", "0 0.5 1 1.5"},
		{Seconds, 0, 0.2, "cwnd (ms)", "0 50 100 150 200"},
		{Seconds, 0, 0.000_8, "cwnd (µs)", "0 200 400 600 800"},
		{BitsPerSecond, 0, 50e6, "cwnd (Mbit/s)", "0 10 20 30 40 50"},
		{Percent, 0, 0.03, "cwnd (%)", "0 0.5 1 1.5 2 2.5 3"},
		{Seconds, 0, 0.175, "cwnd (ms)", "0 50 100 150"},
		{Seconds, 0.040, 0.062, "cwnd (ms)", "40 45 50 55 60"},
	} {
		label, tk := axis("cwnd", c.unit, c.min, c.max)
		var got []string
		for _, tick := range tk.Ticks(c.min, c.max) {
			got = append(got, tick.Label)
		}
		if label != c.label || strings.Join(got, " ") != c.ticks {
			t.Errorf("%v from %v to %v: %q, ticks %q; want %q, %q", c.unit, c.min, c.max, label, got, c.label, c.ticks)
		}
		if n := len(got); n > 8 || n < 3 {
			t.Errorf("%v from %v to %v: %d ticks", c.unit, c.min, c.max, n)
		}
	}
}

// A chart whose y axis has names marks each level by its name, and
// nothing else, over the whole range of levels, whatever the series'
// values reach.
func TestNamedLevels(t *testing.T) {
	names := []string{"probe_rtt", "probe_bw", "drain", "startup"}
	f := Figure{Charts: []Chart{{Title: "state", XLabel: "time", XUnit: Seconds, YLabel: "mode", YNames: names, FromZero: true,
		Series: []Series{{Name: "mode", X: []float64{0, 1, 2}, Y: []float64{3, 2, 1}, Step: true}}}}}
	l, err := f.layout()
	if err != nil {
		t.Fatal(err)
	}
	y := l.panels[0].p.Y
	var got []string
	for _, tick := range y.Tick.Marker.Ticks(y.Min, y.Max) {
		got = append(got, tick.Label)
	}
	if strings.Join(got, " ") != strings.Join(names, " ") || y.Label.Text != "mode" || y.Min != -0.5 {
		t.Errorf("y axis %q from %v, ticks %q; want %q from -0.5, ticks %q", y.Label.Text, y.Min, got, "mode", names)
	}
	var b bytes.Buffer
	if err := f.Write(&b, "svg"); err != nil || !bytes.Contains(b.Bytes(), []byte("probe_rtt")) {
		t.Errorf("SVG without the levels' names (%v)", err)
	}
}
