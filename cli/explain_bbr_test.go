package cli

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/report/explain"
)

// explain says when BBR was in PROBE_RTT or long-term mode, for how
// long and at what cost, one line for all and one per span; nothing
// where BBR never was.
func TestBBRLines(t *testing.T) {
	server := netip.MustParseAddrPort("198.18.0.2:80")
	client := netip.MustParseAddrPort("198.18.0.1:40000")
	spans := []explain.BBRSpan{
		{Local: server, Remote: client, Phase: explain.ProbeRTT, From: 10 * time.Second, To: 10*time.Second + 200*time.Millisecond, Delivered: 50_000, Bandwidth: 1_250_000},
		{Local: server, Remote: client, Phase: explain.LongTerm, From: 12 * time.Second, To: 14 * time.Second, Ongoing: true, Delivered: 1_000_000, Bandwidth: 1_000_000},
	}
	b := explain.BBRSpans{Spans: spans, N: [2]int{1, 1}, Time: [2]time.Duration{200 * time.Millisecond, 2 * time.Second}, Cost: [2]time.Duration{160 * time.Millisecond, time.Second}}
	var w strings.Builder
	writeBBR(&w, b)
	want := "  BBR: in PROBE_RTT for 200.0 ms (1 span), costing about 160.0 ms; in long-term mode for 2000.0 ms (1 span), costing about 1000.0 ms (a span's cost: its length less the time what it delivered takes at the bandwidth estimate before it)\n" +
		"  BBR's PROBE_RTT and long-term mode (2):\n" +
		"    at   10.00 s  198.18.0.2:80→198.18.0.1:40000 in PROBE_RTT for 200.0 ms: delivered 50.0 KB, which takes 40.0 ms at the estimate of 10.00 Mbit/s before it; cost about 160.0 ms\n" +
		"    at   12.00 s  198.18.0.2:80→198.18.0.1:40000 in long-term mode for 2000.0 ms, still at the end: delivered 1.0 MB, which takes 1000.0 ms at the estimate of 8.00 Mbit/s before it; cost about 1000.0 ms\n"
	if w.String() != want {
		t.Errorf("got\n%s\nwant\n%s", w.String(), want)
	}
	w.Reset()
	writeBBR(&w, explain.BBRSpans{})
	if w.Len() != 0 {
		t.Errorf("without BBR's phases: %q; want nothing", w.String())
	}
}
