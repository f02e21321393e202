package proxy_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/realclient"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
)

// iperf3, a real client and server, through a forward at 10 mbit/s, both
// ways: what the receiving end measures lies within 5 % of the link's
// rate (realclient.Iperf3RateError).
// The first second, slow start's, is left out (-O 1).
func TestIperf3(t *testing.T) {
	const rate = 10e6
	up := realclient.Iperf3Server(t)
	n := newNet(t, link.Config{Delay: 10 * time.Millisecond, Rate: rate})
	_, addr := forward(t, n, up, proxy.Config{})
	host, port, _ := net.SplitHostPort(addr)
	for _, dir := range []struct{ name, flags string }{{"upload", ""}, {"download", "-R"}} {
		t.Run(dir.name, func(t *testing.T) {
			args := append([]string{"-c", host, "-p", port, "-t", "4", "-O", "1"}, strings.Fields(dir.flags)...)
			got := realclient.Iperf3Received(t, args...)
			t.Logf("iperf3 %s: %.3f Mbit/s received; the link: %.0f Mbit/s", strings.Join(args, " "), got/1e6, rate/1e6)
			if err := realclient.Iperf3RateError(got, rate); err != nil {
				t.Error(err)
			}
		})
	}
}
