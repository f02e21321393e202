package realclient

import (
	"bytes"
	"image/gif"
	"testing"
	"time"
)

// GIF's images are exactly the size asked for and decode.
func TestGIF(t *testing.T) {
	for n := 40; n < 1200; n++ {
		b := GIF(n)
		if len(b) != n {
			t.Fatalf("GIF(%d) is %d bytes", n, len(b))
		}
		img, err := gif.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("GIF(%d): %v", n, err)
		}
		if s := img.Bounds().Size(); s.X != 1 || s.Y != 1 {
			t.Fatalf("GIF(%d) is %v", n, s)
		}
	}
}

// ParseIperf3 reads the receiver's rate and refuses an error report.
func TestParseIperf3(t *testing.T) {
	bps, err := ParseIperf3([]byte(`{"end": {"sum_sent": {"bits_per_second": 2e7}, "sum_received": {"bits_per_second": 9.6e6}}}`))
	if err != nil || bps != 9.6e6 {
		t.Errorf("got %v, %v; want 9.6e6", bps, err)
	}
	if _, err := ParseIperf3([]byte(`{"start": {}, "error": "unable to connect to server"}`)); err == nil {
		t.Error("an iperf3 error report parsed")
	}
}

// A rate up to the link's passes; above it fails.
func TestIperf3Bounds(t *testing.T) {
	for _, c := range []struct {
		got  float64
		fail bool
	}{{9.655e6, false}, {2.2e6, false}, {10e6, false}, {10.01e6, true}, {100e6, true}} {
		if err := Iperf3Bounds(c.got, 10e6); (err != nil) != c.fail {
			t.Errorf("%.4g bit/s at a 10 Mbit/s link: %v; want failure %v", c.got, err, c.fail)
		}
	}
}

// CurlTimes reads curl's seconds, and refuses other words or another
// count.
func TestCurlTimes(t *testing.T) {
	ds, err := CurlTimes("0.112641 0.055779\n0.0558\n", 3)
	if err != nil || len(ds) != 3 || ds[0] != 112641*time.Microsecond || ds[2] != 55800*time.Microsecond {
		t.Errorf("got %v, %v", ds, err)
	}
	for _, bad := range []string{"0.1 0.2", "0.1 x 0.3", "0.1 0.2 0.3 0.4"} {
		if _, err := CurlTimes(bad, 3); err == nil {
			t.Errorf("CurlTimes(%q, 3) read it", bad)
		}
	}
}
