package tc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// rateUnits are tc's rate units: bits per second, and "bps" forms that
// mean bytes per second. Matching ignores case.
var rateUnits = []struct {
	suffix string
	mult   float64
}{
	{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
	{"tibit", 1 << 40 * 1.0}, {"gibit", 1 << 30}, {"mibit", 1 << 20}, {"kibit", 1 << 10},
	{"tbps", 8e12}, {"gbps", 8e9}, {"mbps", 8e6}, {"kbps", 8e3}, {"bps", 8},
}

// ParseRate reads a rate the way tc does: a number with a unit, where
// bit/kbit/mbit/gbit/tbit are bits per second (decimal), kibit/mibit/gibit
// binary, and bps/kbps/mbps/gbps/tbps bytes per second (so 1Mbps is 8 Mbit/s).
// "0" and "unlimited" mean no limit. A bare non-zero number is rejected as
// ambiguous.
func ParseRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "0" || t == "unlimited" {
		return 0, nil
	}
	for _, u := range orderedRateUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok && num != "" {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || strings.ContainsAny(num, " \t") {
				break
			}
			r := v * u.mult
			if math.IsInf(r, 0) { // 1e308tbit, say (FuzzParseRate)
				return 0, fmt.Errorf("rate %q is too large; write it like 10mbit, 500kbit or 1gbit (bits/s), 2mbps (bytes/s), or 0 for unlimited", s)
			}
			if r != 0 && r < 8 {
				return 0, fmt.Errorf("rate %q is below 8 bit/s; want at least 8bit, or 0 for unlimited", s)
			}
			return r, nil
		}
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return 0, fmt.Errorf("rate %q has no unit; write it like 10mbit, 500kbit or 1gbit (bits/s), 2mbps (bytes/s), or 0 for unlimited", s)
	}
	return 0, fmt.Errorf("rate %q is not a rate; write it like 10mbit, 500kbit or 1gbit (bits/s), 2mbps (bytes/s), or 0 for unlimited", s)
}

// orderedRateUnits lists rateUnits longest suffix first, so that "kibit"
// is not read as "ki" + "bit" and "mbps" not as "m" + "bps".
var orderedRateUnits = func() []struct {
	suffix string
	mult   float64
} {
	u := append(rateUnits[:0:0], rateUnits...)
	for i := 1; i < len(u); i++ {
		for j := i; j > 0 && len(u[j].suffix) > len(u[j-1].suffix); j-- {
			u[j], u[j-1] = u[j-1], u[j]
		}
	}
	return u
}()

// FormatRate writes bits per second the way tc does (10mbit, 1.5gbit,
// 800kbit), or "unlimited" for 0.
func FormatRate(bps float64) string {
	switch {
	case bps == 0:
		return "unlimited"
	case bps >= 1e9:
		return trimFloat(bps/1e9) + "gbit"
	case bps >= 1e6:
		return trimFloat(bps/1e6) + "mbit"
	case bps >= 1e3:
		return trimFloat(bps/1e3) + "kbit"
	}
	return trimFloat(bps) + "bit"
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000},
	{"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000},
	{"b", 1},
}

// ParseSize reads a byte count: a bare number, or a number with B, KB, MB,
// GB (decimal) or KiB, MiB, GiB (binary). Matching ignores case.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = num, u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || t == "" || strings.ContainsAny(t, " \t") || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q is not a size; write bytes like 1500, 150KB or 5MiB", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative; want 0 or more bytes", s)
	}
	b := v * float64(mult)
	if b > 1<<50 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(math.Round(b)), nil
}

// ParseQueue reads a FIFO's limit, as netemu's --queue takes it: a bare
// number is packets (pfifo), a size with a unit (150KB) is bytes (bfifo).
func ParseQueue(s string) (Qdisc, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.Atoi(t); err == nil {
		if n <= 0 {
			return Qdisc{}, fmt.Errorf("queue %q must hold at least 1 packet; write packets like 1000 or bytes like 150KB", s)
		}
		return Qdisc{Limit: n}, nil
	}
	b, err := ParseSize(t)
	if err != nil {
		return Qdisc{}, fmt.Errorf("queue %q is neither packets (1000) nor bytes (150KB)", s)
	}
	if b < 68 {
		return Qdisc{}, fmt.Errorf("queue %q is smaller than a packet; write packets like 1000 or bytes like 150KB", s)
	}
	return Qdisc{LimitBytes: int(b)}, nil
}

// FormatSize writes a byte count the way ParseSize reads it, in the
// largest unit that divides it exactly: 5MiB, 120KB, 1500.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
