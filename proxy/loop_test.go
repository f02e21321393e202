package proxy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/internal/soak"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
	xproxy "golang.org/x/net/proxy"
)

func TestCatches(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, c := range []struct {
		listen, dst string
		want        bool
	}{
		{"127.0.0.1:8001", "127.0.0.1:8001", true},
		{"127.0.0.1:8001", "127.0.0.1:8002", false},
		{"127.0.0.1:8001", "127.0.0.2:8001", false},
		{"127.0.0.1:8001", "[::ffff:127.0.0.1]:8001", true},
		{"127.0.0.1:8001", "0.0.0.0:8001", true}, // a connect to 0.0.0.0 reaches loopback
		{"0.0.0.0:8001", "127.0.0.5:8001", true},
		{"0.0.0.0:8001", "[::1]:8001", false}, // an IPv4 listener
		{"[::]:8001", "127.0.0.1:8001", true}, // dual stack
		{"[::]:8001", "[::1]:8001", true},
		{"[::1]:8001", "[::1]:8001", true},
		{"[::1]:8001", "127.0.0.1:8001", false},
		{"0.0.0.0:8001", "192.0.2.1:8001", false}, // not this host's
		{"127.0.0.1:0", "127.0.0.1:0", false},
	} {
		if got := proxy.Catches(ap(c.listen), ap(c.dst)); got != c.want {
			t.Errorf("Catches(%s, %s) = %v; want %v", c.listen, c.dst, got, c.want)
		}
	}
}

// stubLookup resolves localhost and loop.test to loopback, and nothing
// else, without a real resolver.
func stubLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	switch host {
	case "localhost", "loop.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestCheckLoops(t *testing.T) {
	for _, c := range []struct {
		forwards []string
		want     string // "" for none
	}{
		{[]string{"127.0.0.1:8001=127.0.0.1:8001"}, "forward 127.0.0.1:8001=127.0.0.1:8001: upstream 127.0.0.1:8001 is its own listen address: a loop"},
		{[]string{"127.0.0.1:8001=localhost:8001"}, "is its own listen address"},
		{[]string{"0.0.0.0:8001=127.0.0.1:8001"}, "is its own listen address"},
		{[]string{"127.0.0.1:8001=127.0.0.1:8002", "127.0.0.1:8002=127.0.0.1:8001"},
			"forward 127.0.0.1:8001=127.0.0.1:8002: upstream 127.0.0.1:8002 is the listen address of forward 127.0.0.1:8002=127.0.0.1:8001, whose upstream is this one's listen address: a loop"},
		{[]string{"127.0.0.1:8001=127.0.0.1:8002", "127.0.0.1:8002=127.0.0.1:8003", "127.0.0.1:8003=loop.test:8001"},
			"is the listen address of forward 127.0.0.1:8002=127.0.0.1:8003, whose upstream is the listen address of forward 127.0.0.1:8003=loop.test:8001, whose upstream"},
		// A chain that leaves the proxy is no loop; nor are port 0s.
		{[]string{"127.0.0.1:8001=127.0.0.1:8002", "127.0.0.1:8002=127.0.0.1:9000"}, ""},
		{[]string{"127.0.0.1:0=127.0.0.1:0"}, ""},
		{[]string{"127.0.0.1:8001=nowhere.invalid:8001"}, ""},
	} {
		var fs []proxy.Forward
		for _, s := range c.forwards {
			f, err := proxy.ParseForward(s)
			if err != nil {
				f = proxy.Forward{Listen: strings.Split(s, "=")[0], Upstream: strings.Split(s, "=")[1]}
			}
			fs = append(fs, f)
		}
		err := proxy.CheckLoops(context.Background(), fs, stubLookup)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckLoops(%v): %v; want %q", c.forwards, err, c.want)
		}
	}
}

// New refuses a forward to itself, and leaves nothing listening.
func TestNewRefusesLoop(t *testing.T) {
	n := newNet(t, link.Config{})
	a := soak.FreeAddr(t)
	_, err := proxy.New(n, proxy.Config{Forwards: []proxy.Forward{{Listen: a, Upstream: a}}, LookupHost: stubLookup})
	if err == nil || !strings.Contains(err.Error(), "a loop") {
		t.Fatalf("New with a forward to itself: %v; want a loop refused", err)
	}
	if c, err := net.Dial("tcp4", a); err == nil {
		c.Close()
		t.Errorf("%s accepts after the refused New", a)
	}
}

// A LoopGuard refuses a dial to one of its listeners (before connecting
// when the address says so, after when a name hid it), and a dial for a
// client that is one of its own upstream connections come back.
func TestLoopGuard(t *testing.T) {
	var g proxy.LoopGuard
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	release := g.Listen(ln.Addr())
	var dials atomic.Int32
	d := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		if strings.HasPrefix(addr, "loop.test:") {
			addr = ln.Addr().String() // a name that resolves to the listener, at connect time
		}
		var nd net.Dialer
		return nd.DialContext(ctx, network, addr)
	}
	ctx := context.Background()
	var le *proxy.LoopError
	if _, err := g.Dial(ctx, d, ln.Addr().String(), nil); !errors.As(err, &le) || dials.Load() != 0 {
		t.Errorf("dial to the guard's listener: %v after %d dials; want a LoopError and no dial", err, dials.Load())
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if _, err := g.Dial(ctx, d, "loop.test:"+port, nil); !errors.As(err, &le) || !strings.Contains(err.Error(), "a loop") {
		t.Errorf("dial to a name of the guard's listener: %v; want a LoopError", err)
	}
	if first, err := ln.Accept(); err == nil {
		first.Close() // the name's connection, made before it was refused
	}
	release()

	// The listener forgotten: the guard's connection, accepted there, is
	// one of its own come back.
	u, err := g.Dial(ctx, d, ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	dials.Store(0)
	if _, err := g.Dial(ctx, d, "127.0.0.1:9", back); !errors.As(err, &le) || dials.Load() != 0 {
		t.Errorf("dial for a client that is the guard's own connection: %v after %d dials; want a LoopError and no dial", err, dials.Load())
	}
	// The write half-close of a kernel socket is still there.
	if _, ok := u.(interface{ CloseWrite() error }); !ok {
		t.Errorf("the guard's connection %T has no CloseWrite", u)
	}
	u.Close()
	other, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := g.Dial(ctx, d, ln.Addr().String(), other); err != nil {
		t.Errorf("dial for an unrelated client, the listener forgotten: %v", err)
	} else if dials.Load() != 1 {
		t.Errorf("%d dials; want 1", dials.Load())
	}
}

// A SOCKS5 or CONNECT client may not name the proxy's own listeners; a
// forward whose upstream's name leads back to it at connect time ends at
// the first turn.
func TestLoopsAtConnect(t *testing.T) {
	n := newNet(t, link.Config{})
	self := soak.FreeAddr(t)
	_, port, _ := net.SplitHostPort(self)
	redirect := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "elsewhere.test:1" {
			addr = self // resolves to the proxy itself, but only now
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	p := start(t, n, proxy.Config{Forwards: []proxy.Forward{{Listen: self, Upstream: "elsewhere.test:1"}}, SOCKS5: "127.0.0.1:0",
		LookupHost: stubLookup, DialUpstream: redirect})
	socks := p.Addrs()[1].String()
	for _, target := range []string{socks, self, "localhost:" + port} {
		sd, err := xproxy.SOCKS5("tcp", socks, nil, xproxy.Direct)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := sd.Dial("tcp", target); err == nil || !strings.Contains(err.Error(), "not allowed") {
			if c != nil {
				c.Close()
			}
			t.Errorf("SOCKS5 to the proxy's own %s: %v; want not allowed", target, err)
		}
	}
	if c, err := net.Dial("tcp4", self); err == nil { // else reset so soon that the connect saw it: as wanted
		defer c.Close()
		c.Write([]byte("hello"))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := io.ReadFull(c, make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
			t.Errorf("a forward whose upstream leads back: read %d, %v; want the connection ended", n, err)
		}
	} else if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatal(err)
	}
	// One connection from the client, and its turns come back: the first
	// is cut once its dial shows where it led; the turn it made may reach
	// its own dial before that is recorded, and is then cut at the next.
	time.Sleep(200 * time.Millisecond)
	// Three SOCKS5 clients, the forward's, and at most two turns.
	if tot := p.Totals().Conns + p.Active(); tot > 6 {
		t.Errorf("%d connections after 4 clients'; want 6 at most: the loop cut within two turns", tot)
	}
	recs := p.Records()
	if len(recs) == 0 || !strings.Contains(recs[len(recs)-1].Err+recs[0].Err, "a loop") {
		t.Errorf("records %+v; want one that names the loop", recs)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
