package waterfall

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sample is 40 rows, as a page has: six connections' handshakes, then
// waves of requests.
func sample() Chart {
	c := Chart{Title: "page", End: 0.4272, EndLabel: "last byte 427.2 ms"}
	for i := range 40 {
		at := float64(i/6) * 0.053
		r := Row{Label: fmt.Sprintf("/r/%02d", i), Note: fmt.Sprintf("conn %d", i%6+1)}
		if i < 6 {
			r.Segments = append(r.Segments, Segment{Connect, 0, 0.050})
			at = 0.050
		}
		r.Segments = append(r.Segments, Segment{Waiting, at, at + 0.051}, Segment{Receiving, at + 0.051, at + 0.0525})
		c.Rows = append(c.Rows, r)
	}
	return c
}

func TestSaveSVGAndPNG(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"w.svg", "w.png"} {
		p := filepath.Join(dir, name)
		if err := sample().Save(p); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".svg") {
			for _, want := range []string{"<svg", "/r/00", "/r/39", "conn 6", "connect", "waiting", "receiving", "time (ms)", "last byte 427.2 ms", ">400<"} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("SVG lacks %q", want)
				}
			}
			// The legend names only the phases the rows have.
			for _, absent := range []string{">DNS<", ">TLS<", ">queued<"} {
				if bytes.Contains(b, []byte(absent)) {
					t.Errorf("SVG has %q, which no row has", absent)
				}
			}
			continue
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		// 40 rows legible: at least 20 pixels per row at 150 dpi.
		if img.Bounds().Dy() < 40*20 || img.Bounds().Dx() < 1000 {
			t.Errorf("PNG is %v; want at least 1000 × 800 pixels for 40 rows", img.Bounds())
		}
	}
	var a, b bytes.Buffer
	sample().Write(&a, "svg")
	sample().Write(&b, "svg")
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two renderings of one chart differ")
	}
}

// Each row's height is fixed, so the figure grows with its rows.
func TestHeightFollowsRows(t *testing.T) {
	short := sample()
	short.Rows = short.Rows[:10]
	var a, b bytes.Buffer
	if err := short.Write(&a, "png"); err != nil {
		t.Fatal(err)
	}
	if err := sample().Write(&b, "png"); err != nil {
		t.Fatal(err)
	}
	ia, _ := png.Decode(&a)
	ib, _ := png.Decode(&b)
	if d := ib.Bounds().Dy() - ia.Bounds().Dy(); d != 30*rowHeight*150/72 {
		t.Errorf("30 more rows add %d pixels; want %d", d, 30*rowHeight*150/72)
	}
}

func TestBadInput(t *testing.T) {
	if err := sample().Save(filepath.Join(t.TempDir(), "w.gif")); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("gif: %v", err)
	}
	if err := (Chart{}).Write(&bytes.Buffer{}, "svg"); err == nil {
		t.Error("no rows: no error")
	}
	c := sample()
	c.Rows[3].Segments[0] = Segment{Waiting, 0.2, 0.1}
	if err := c.Write(&bytes.Buffer{}, "svg"); err == nil || !strings.Contains(err.Error(), "/r/03") {
		t.Errorf("a segment that ends before it starts: %v", err)
	}
	if got := Phase(9).String(); got != "Phase(9)" {
		t.Errorf("Phase(9) is %q", got)
	}
}
