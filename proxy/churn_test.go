package proxy_test

import (
	"context"
	"net/netip"
	"strings"
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

// soakFixture is a proxy under soak: a forward to an echo upstream, a
// forward to a port where nothing listens, and a SOCKS5 listener.
type soakFixture struct {
	p                    *proxy.Proxy
	echo, refused, socks string         // the proxy's listeners
	refusedUp            netip.AddrPort // the refused forward's upstream
}

// soakLoad is one load of the soak: conns connections, parallel at a
// time, each done by do against the fixture.
type soakLoad struct {
	name     string
	conns    int
	parallel int
	do       func(f soakFixture) (addr string, do func(ctx context.Context, i int, addr string) error)
}

var soakLoads = []soakLoad{
	{"reset-churn", 2000, 4, func(f soakFixture) (string, func(context.Context, int, string) error) {
		return f.echo, soak.Reset
	}},
	// Resets to one forward while another carries echoes, past the
	// client host's 28,232 ephemeral ports so that each is used again:
	// a port reused by a new connection must not be taken for the old
	// one's (each echo here must cross, none reset).
	{"reset-churn-beside", 30000, 4, func(f soakFixture) (string, func(context.Context, int, string) error) {
		return f.refused, func(ctx context.Context, i int, addr string) error {
			if i%20 == 0 {
				return soak.Echo(ctx, i, f.echo)
			}
			return soak.Reset(ctx, i, addr)
		}
	}},
	{"socks-refused", 500, 4, func(f soakFixture) (string, func(context.Context, int, string) error) {
		return f.socks, soak.SOCKSRefused(f.refusedUp)
	}},
	{"idle", 200, 200, func(f soakFixture) (string, func(context.Context, int, string) error) {
		return f.echo, soak.Hold(2 * time.Second)
	}},
	{"half-closed", 200, 200, func(f soakFixture) (string, func(context.Context, int, string) error) {
		return f.echo, soak.HalfClose(2 * time.Second)
	}},
	{"slowloris", 100, 100, func(f soakFixture) (string, func(context.Context, int, string) error) {
		return f.echo, soak.Slowloris(20, 100*time.Millisecond)
	}},
}

// soakProxy starts a proxy with netemu's TCP on a 1 ms, 1 Gbit/s link.
func soakProxy(t testing.TB) soakFixture {
	t.Helper()
	up := upstream(t, echo)
	refused := soak.FreeAddr(t)
	n := newNetTCP(t, link.Config{Delay: 500 * time.Microsecond, Rate: 1e9}, tcpstack.Netemu)
	p := start(t, n, proxy.Config{Forwards: []proxy.Forward{{Listen: "127.0.0.1:0", Upstream: up}, {Listen: "127.0.0.1:0", Upstream: refused}}, SOCKS5: "127.0.0.1:0"})
	a := p.Addrs()
	return soakFixture{p: p, echo: a[0].String(), refused: a[1].String(), socks: a[2].String(), refusedUp: netip.MustParseAddrPort(refused)}
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the soak takes about half a minute")
	}
	f := soakProxy(t)
	for _, l := range soakLoads {
		t.Run(l.name, func(t *testing.T) {
			runSoak(t, f, l)
		})
	}
}

func runSoak(t testing.TB, f soakFixture, l soakLoad) (soak.Result, soak.Peaks) {
	t.Helper()
	addr, do := l.do(f)
	load := soak.Load{Addr: addr, Conns: l.conns, Parallel: l.parallel, Do: do}
	probe := soak.Load{Addr: f.echo, Conns: 5, Do: soak.Echo}
	return soak.Measure(t, load, probe, func() bool { return f.p.Active() == 0 }, soakBounds)
}

// BenchmarkSoak runs each load of TestSoak once per iteration and
// reports connections per second, the peak resident set and the peak
// descriptors:
//
//	go test -run X -bench Soak -benchtime 1x ./proxy
func BenchmarkSoak(b *testing.B) {
	for _, l := range soakLoads {
		b.Run(l.name, func(b *testing.B) {
			f := soakProxy(b)
			var r soak.Result
			var peaks soak.Peaks
			for b.Loop() {
				r, peaks = runSoak(b, f, l)
			}
			soak.Report(b, r, peaks)
		})
	}
}

// A client that resets while its connection's handshake crosses the
// link frees its socket at once, not after the handshake: under churn
// the sockets of clients gone would otherwise pile up to the
// descriptor limit.
func TestResetDuringLinkHandshake(t *testing.T) {
	up := upstream(t, echo)
	// The handshake across this link takes a round trip: 20 s.
	n := newNetTCP(t, link.Config{Delay: 10 * time.Second}, tcpstack.Netemu)
	p := start(t, n, proxy.Config{Forwards: []proxy.Forward{{Listen: "127.0.0.1:0", Upstream: up}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := soak.Reset(ctx, 0, p.Addrs()[0].String()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for p.Active() == 0 && time.Since(start) < time.Second {
		time.Sleep(time.Millisecond) // until the proxy has accepted it
	}
	for p.Active() > 0 && time.Since(start) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if a := p.Active(); a > 0 {
		t.Fatalf("%d connection still open %v after its client reset, its handshake across the link under way; want it ended", a, time.Since(start).Round(time.Millisecond))
	}
	if r := p.Records(); len(r) != 1 || !strings.Contains(r[0].Err, "the client reset the connection first") {
		t.Errorf("records %+v; want one, ended by the client's reset", r)
	}
}
