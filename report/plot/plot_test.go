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
		{Title: "cwnd", XLabel: "time (ms)", YLabel: "bytes", Series: []Series{
			{Name: "cwnd", X: []float64{0, 10, 20, 30}, Y: []float64{14480, 28960, 57920, 57920}, Step: true},
			{Name: "in flight", X: []float64{0, 10, 20, 30}, Y: []float64{1000, 20000, 50000, 40000}},
		}},
		{Title: "elapsed", XLabel: "RTT (ms)", YLabel: "ms", Series: []Series{
			{Name: "netemu", X: []float64{10, 100, 200}, Y: []float64{125, 827, 1627}},
			{Name: "reference", X: []float64{10, 100, 200}, Y: []float64{149, 915, 1749}, Points: true},
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
			for _, want := range []string{"<svg", "cwnd", "in flight", "reference", "RTT (ms)"} {
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
