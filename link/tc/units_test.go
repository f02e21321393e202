package tc

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	good := map[string]float64{
		"10mbit": 10e6, "10Mbit": 10e6, "500kbit": 500e3, "1gbit": 1e9, "1.5gbit": 1.5e9,
		"2mibit": 2 << 20, "100bit": 100, "1mbps": 8e6, "2Mbps": 16e6, "10kbps": 80e3,
		"0": 0, "unlimited": 0,
	}
	for in, want := range good {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"10", "10 mbps", "mbit", "-1mbit", "fast", "", "4bit", "NaNmbit", "1e400mbit"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) succeeded; want an error", in)
		} else if !strings.Contains(err.Error(), "10mbit") && !strings.Contains(err.Error(), "8bit") {
			t.Errorf("ParseRate(%q) error %q does not show the accepted form", in, err)
		}
	}
	for bps, want := range map[float64]string{10e6: "10mbit", 1.5e9: "1.5gbit", 800e3: "800kbit", 0: "unlimited", 12: "12bit"} {
		if got := FormatRate(bps); got != want {
			t.Errorf("FormatRate(%v) = %q; want %q", bps, got, want)
		}
	}
}

func TestParseSizeAndQueue(t *testing.T) {
	for in, want := range map[string]int64{"1500": 1500, "150KB": 150000, "5MiB": 5 << 20, "5mb": 5e6, "120k": 120000, "1KiB": 1024, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "1 MB", "x", "", "MB", "1e30GB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
	if q, err := ParseQueue("1000"); q != (Qdisc{Limit: 1000}) || err != nil {
		t.Errorf("ParseQueue(1000) = %+v, %v", q, err)
	}
	if q, err := ParseQueue("150KB"); q != (Qdisc{LimitBytes: 150000}) || err != nil {
		t.Errorf("ParseQueue(150KB) = %+v, %v", q, err)
	}
	for _, in := range []string{"0", "-5", "10B", "lots"} {
		if _, err := ParseQueue(in); err == nil {
			t.Errorf("ParseQueue(%q) succeeded", in)
		}
	}
}

func TestParseRateTooLarge(t *testing.T) {
	for _, in := range []string{"1e308tbit", "1e300gbps"} {
		if _, err := ParseRate(in); err == nil || err.Error() != `rate "`+in+`" is too large; write it like 10mbit, 500kbit or 1gbit (bits/s), 2mbps (bytes/s), or 0 for unlimited` {
			t.Errorf("ParseRate(%q): %v; want a too-large error", in, err)
		}
	}
}
