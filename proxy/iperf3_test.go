package proxy_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/realclient"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
)

// iperf3Rate is the link's rate for iperf3 through a forward.
const iperf3Rate = 10e6

// iperf3Through runs iperf3, a real client and server, through a forward
// at 10 mbit/s and 20 ms RTT, in one direction ("" uploads, "-R"
// downloads), for secs seconds after the first, slow start's, which is
// left out (-O 1). It returns the rate the receiving end measured.
func iperf3Through(tb testing.TB, reverse string, secs int) float64 {
	up := realclient.Iperf3Server(tb)
	n := newNet(tb, link.Config{Delay: 10 * time.Millisecond, Rate: iperf3Rate})
	_, addr := forward(tb, n, up, proxy.Config{})
	host, port, _ := net.SplitHostPort(addr)
	args := append([]string{"-c", host, "-p", port, "-t", strconv.Itoa(secs + 1), "-O", "1"}, strings.Fields(reverse)...)
	got := realclient.Iperf3Received(tb, args...)
	tb.Logf("iperf3 %s: %.3f Mbit/s received; the link: %.0f Mbit/s", strings.Join(args, " "), got/1e6, iperf3Rate/1e6)
	return got
}

// iperf3Dirs are the two directions, by name and iperf3's flag.
var iperf3Dirs = []struct{ name, flags string }{{"upload", ""}, {"download", "-R"}}

// iperf3 through a forward, both ways: the transfer completes and the
// receiving end never measures more than the link's rate
// (realclient.Iperf3Bounds), which holds on a loaded machine; how close
// it comes to a full link is BenchmarkIperf3's.
func TestIperf3(t *testing.T) {
	for _, dir := range iperf3Dirs {
		t.Run(dir.name, func(t *testing.T) {
			if err := realclient.Iperf3Bounds(iperf3Through(t, dir.flags, 2), iperf3Rate); err != nil {
				t.Error(err)
			}
		})
	}
}

// BenchmarkIperf3 measures what iperf3 receives through a forward, both
// ways, against a full link's payload rate (realclient.Iperf3Full): on an
// idle machine within a few per cent of it. docs/PROXY.md has the figures:
//
//	go test -run XXX -bench Iperf3 ./proxy
func BenchmarkIperf3(b *testing.B) {
	for _, dir := range iperf3Dirs {
		b.Run(dir.name, func(b *testing.B) {
			var sum float64
			for range b.N {
				sum += iperf3Through(b, dir.flags, 3)
			}
			got := sum / float64(b.N)
			b.ReportMetric(got/1e6, "Mbit/s")
			b.ReportMetric(100*(got/realclient.Iperf3Full(iperf3Rate)-1), "%-vs-full-link")
		})
	}
}
