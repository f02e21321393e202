package proxy_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/soak"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
	"github.com/netemu/netemu/tcpstack"
)

// The proxies' soak: loads that froze or bloated the proxy before, each
// bounded in count and time, on the real clock with netemu's TCP (netemu
// proxy's default), then a probe that must still cross: a network wedged
// by a lock-order deadlock in the TCP accepts connections on its real
// sockets and never carries them again.
//
// The tests assert what holds on a loaded machine: nothing stalls (each
// connection within soakPerConn), the proxy ends every connection, and
// what the loads took is given back (descriptors to where they were,
// the live heap within soakHeapSlack). BenchmarkSoak reports the figures.
const (
	soakPerConn = 20 * time.Second // for one connection, however loaded the machine
	soakDrain   = 20 * time.Second // for the proxy to end its connections after a load
	// soakHeapSlack is how far above its level before a load the live
	// heap may be once every connection has ended: the spare ring chunks
	// netemu's TCP keeps for the next connections (at most 8 MiB, tcp's
	// chunkSpares), the records the proxy keeps (proxy.KeptRecords, a
	// few hundred bytes each) and the link's spare packet buffers. A
	// connection left behind holds about 55 KB (docs/PERFORMANCE.md), so
	// a few hundred of them would show.
	soakHeapSlack = 16 << 20
	// soakFDSlack is how many descriptors above the level before a load
	// may stay open after it: the runtime's own, and idle keep-alives.
	soakFDSlack = 8
)

// soakLoad is one load of the soak; conns is its size in the test.
type soakLoad struct {
	name     string
	conns    int
	parallel int
	do       func(target string) func(ctx context.Context, i int, addr string) error
	via      string // "forward" or "socks"
}

func soakLoads(refused netip.AddrPort) []soakLoad {
	return []soakLoad{
		{"reset-churn", 2000, 4, func(string) func(context.Context, int, string) error { return soak.Reset }, "forward"},
		{"socks-refused", 500, 4, func(string) func(context.Context, int, string) error { return soak.SOCKSRefused(refused) }, "socks"},
		{"idle", 200, 200, func(string) func(context.Context, int, string) error { return soak.Hold(2 * time.Second) }, "forward"},
		{"slowloris", 100, 100, func(string) func(context.Context, int, string) error { return soak.Slowloris(20, 100*time.Millisecond) }, "forward"},
	}
}

// refusedPort is a loopback port where nothing listens.
func refusedPort(t testing.TB) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	return ap
}

// soakProxy starts a proxy with netemu's TCP on a 1 ms, 1 Gbit/s link:
// a forward to an echo upstream and a SOCKS5 listener.
func soakProxy(t testing.TB) (p *proxy.Proxy, forward, socks string) {
	t.Helper()
	up := upstream(t, echo)
	n := newNetTCP(t, link.Config{Delay: 500 * time.Microsecond, Rate: 1e9}, tcpstack.Netemu)
	p = start(t, n, proxy.Config{Forwards: []proxy.Forward{{Listen: "127.0.0.1:0", Upstream: up}}, SOCKS5: "127.0.0.1:0"})
	a := p.Addrs()
	return p, a[0].String(), a[1].String()
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the soak takes about half a minute")
	}
	p, forward, socks := soakProxy(t)
	for _, l := range soakLoads(refusedPort(t)) {
		t.Run(l.name, func(t *testing.T) {
			runSoak(t, p, l, forward, socks)
		})
	}
}

func runSoak(t testing.TB, p *proxy.Proxy, l soakLoad, forward, socks string) (soak.Result, soak.Peaks) {
	t.Helper()
	addr := forward
	if l.via == "socks" {
		addr = socks
	}
	fds := soak.FDs()
	w := soak.Watch()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(l.conns/l.parallel+1)*soakPerConn)
	defer cancel()
	r := soak.Load{Addr: addr, Conns: l.conns, Parallel: l.parallel, PerConn: soakPerConn, Do: l.do(addr)}.Run(ctx)
	if r.Err != nil {
		w.Stop()
		t.Fatalf("%s through the proxy: %v", l.name, r.Err)
	}
	if err := (soak.Load{Addr: forward, Conns: 5, PerConn: soakPerConn, Do: soak.Echo}).Run(ctx).Err; err != nil {
		w.Stop()
		t.Fatalf("after %d connections of %s, a probe does not cross: %v", l.conns, l.name, err)
	}
	// The proxy ends its connections, and the upstream (in this process)
	// its own, within soakDrain.
	deadline := time.Now().Add(soakDrain)
	for (p.Active() > 0 || fds >= 0 && soak.FDs() > fds+soakFDSlack) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	peaks := w.Stop()
	if a := p.Active(); a > 0 {
		t.Errorf("%d connections still open %v after %s ended; want none", a, soakDrain, l.name)
	}
	if now := soak.FDs(); fds >= 0 && now > fds+soakFDSlack {
		t.Errorf("%d descriptors open %v after %s, %d before; want at most %d more", now, soakDrain, l.name, fds, soakFDSlack)
	}
	if peaks.HeapTo > peaks.HeapFrom+soakHeapSlack {
		t.Errorf("live heap %d KiB after %s, %d KiB before; want at most %d KiB more", peaks.HeapTo>>10, l.name, peaks.HeapFrom>>10, soakHeapSlack>>10)
	}
	t.Logf("%s: %d connections in %v (%.0f/s), peak RSS %d MiB, peak descriptors %d, live heap %d → %d KiB",
		l.name, r.Conns, r.Elapsed.Round(time.Millisecond), r.PerSecond(), peaks.RSS>>20, peaks.FDs, peaks.HeapFrom>>10, peaks.HeapTo>>10)
	return r, peaks
}

// BenchmarkSoak runs each load of TestSoak once per iteration and
// reports connections per second, the peak resident set and the peak
// descriptors:
//
//	go test -run X -bench Soak -benchtime 1x ./proxy
func BenchmarkSoak(b *testing.B) {
	for _, l := range soakLoads(refusedPort(b)) {
		b.Run(l.name, func(b *testing.B) {
			p, forward, socks := soakProxy(b)
			var rate float64
			var peaks soak.Peaks
			for b.Loop() {
				r, pk := runSoak(b, p, l, forward, socks)
				rate = r.PerSecond()
				peaks = pk
			}
			b.ReportMetric(rate, "conns/s")
			b.ReportMetric(float64(peaks.RSS)/(1<<20), "peak-RSS-MiB")
			b.ReportMetric(float64(peaks.FDs), "peak-fds")
		})
	}
}
