package realclient

import (
	"bytes"
	"image/gif"
	"testing"
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
