package proxy_test

import (
	"context"
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
// The tests assert what holds on a loaded machine (soakBounds): nothing
// stalls, the proxy ends every connection, and what the loads took is
// given back. BenchmarkSoak reports the figures.
var soakBounds = soak.Bounds{
	PerConn: 20 * time.Second, // for one connection, however loaded the machine
	Drain:   20 * time.Second, // for the proxy to end its connections after a load
	// The spare ring chunks netemu's TCP keeps for the next connections
	// (at most 8 MiB, tcp's chunkSpares), the records the proxy keeps
	// (proxy.KeptRecords, a few hundred bytes each) and the link's spare
	// packet buffers. A connection left behind holds about 55 KB
	// (docs/PERFORMANCE.md), so a few hundred of them would show.
	HeapSlack: 16 << 20,
	// The runtime's own, and idle keep-alives.
	FDSlack: 8,
}

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
	for _, l := range soakLoads(netip.MustParseAddrPort(soak.FreeAddr(t))) {
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
	load := soak.Load{Addr: addr, Conns: l.conns, Parallel: l.parallel, Do: l.do(addr)}
	probe := soak.Load{Addr: forward, Conns: 5, Do: soak.Echo}
	return soak.Measure(t, load, probe, func() bool { return p.Active() == 0 }, soakBounds)
}

// BenchmarkSoak runs each load of TestSoak once per iteration and
// reports connections per second, the peak resident set and the peak
// descriptors:
//
//	go test -run X -bench Soak -benchtime 1x ./proxy
func BenchmarkSoak(b *testing.B) {
	for _, l := range soakLoads(netip.MustParseAddrPort(soak.FreeAddr(b))) {
		b.Run(l.name, func(b *testing.B) {
			p, forward, socks := soakProxy(b)
			var r soak.Result
			var peaks soak.Peaks
			for b.Loop() {
				r, peaks = runSoak(b, p, l, forward, socks)
			}
			soak.Report(b, r, peaks)
		})
	}
}
