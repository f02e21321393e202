package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
	"github.com/netemu/netemu/tcpstack"
	"go.uber.org/goleak"
	xproxy "golang.org/x/net/proxy"
)

// newNet is a network on the real clock, closed by the test's cleanup.
func newNet(t testing.TB, lc link.Config) *emu.Net {
	t.Helper()
	return newNetTCP(t, lc, tcpstack.GVisor)
}

// newNetTCP is newNet with the hosts' TCP impl.
func newNetTCP(t testing.TB, lc link.Config, impl tcpstack.Impl) *emu.Net {
	t.Helper()
	n, err := emu.New(emu.Config{Link: lc, Clock: emu.Real, Seed: 1, TCP: tcpstack.TCPConfig{Impl: impl}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// start starts a proxy on n, closed by the test's cleanup (before n).
func start(t testing.TB, n *emu.Net, cfg proxy.Config) *proxy.Proxy {
	t.Helper()
	p, err := proxy.New(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// upstream listens on loopback and serves each connection with serve,
// which owns it; the test's cleanup stops it.
func upstream(t testing.TB, serve func(c *net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve(c.(*net.TCPConn))
			}()
		}
	}()
	return ln.Addr().String()
}

// forward starts a proxy with one forward to up and returns its address.
func forward(t testing.TB, n *emu.Net, up string, cfg proxy.Config) (*proxy.Proxy, string) {
	t.Helper()
	cfg.Forwards = []proxy.Forward{{Listen: "127.0.0.1:0", Upstream: up}}
	p := start(t, n, cfg)
	return p, p.Addrs()[0].String()
}

func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed)})
	r.Read(b)
	return b
}

// waitRecords waits until the proxy has filed n records.
func waitRecords(t *testing.T, p *proxy.Proxy, n int) []proxy.Record {
	t.Helper()
	waitProgress(t, "records", func() int { return len(p.Records()) }, n, func() string { return fmt.Sprintf("%d connections still open", p.Active()) })
	return p.Records()
}

// stuckAfter is how long waitProgress waits without progress: it catches
// a hang, while a loaded machine that is merely slow keeps making
// progress (1,000 connections took more than 10 s to close beside two
// CPU-bound processes under the race detector).
const stuckAfter = 10 * time.Second

// waitProgress waits until count reaches want, and fails the test if the
// count stops growing for stuckAfter first; more says what else to
// report then.
func waitProgress(t *testing.T, what string, count func() int, want int, more func() string) {
	t.Helper()
	last, since := count(), time.Now()
	for last < want {
		time.Sleep(5 * time.Millisecond)
		if c := count(); c != last {
			last, since = c, time.Now()
		} else if time.Since(since) > stuckAfter {
			t.Fatalf("%d %s, none more in %v; want %d (%s)", last, what, stuckAfter, want, more())
		}
	}
}

// Bytes arrive intact both ways, and a half-close from the client ends
// the upstream's reading while it still writes.
func TestBytesIntact(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last, after the other cleanups
	n := newNet(t, link.Config{Delay: time.Millisecond})
	const size = 3 << 20
	fromUp := randomBytes(size, 2)
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		h := sha256.New()
		io.Copy(h, c) // to the client's half-close
		c.Write(h.Sum(nil))
		c.Write(fromUp)
	})
	p, addr := forward(t, n, up, proxy.Config{})
	c := dial(t, addr)
	fromClient := randomBytes(size, 1)
	go func() {
		c.Write(fromClient)
		c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(fromClient)
	if len(got) != 32+size || !bytes.Equal(got[:32], sum[:]) {
		t.Fatalf("got %d bytes; want the SHA-256 of the %d sent, then %d", len(got), size, size)
	}
	if sha256.Sum256(got[32:]) != sha256.Sum256(fromUp) {
		t.Fatal("the upstream's bytes arrived changed")
	}
	r := waitRecords(t, p, 1)[0]
	if r.BytesUp != size || r.BytesDown != 32+size || r.Err != "" || r.Upstream != up || r.ID != 1 {
		t.Errorf("record %+v; want %d bytes up, %d down, no error, upstream %s, id 1", r, size, 32+size, up)
	}
}

// A half-close from the upstream reaches the client, which can still
// send; its own half-close then reaches the upstream.
func TestHalfCloseFromUpstream(t *testing.T) {
	n := newNet(t, link.Config{Delay: time.Millisecond})
	upGot := make(chan string, 1)
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		c.Write([]byte("hello"))
		c.CloseWrite()
		b, _ := io.ReadAll(c)
		upGot <- string(b)
	})
	_, addr := forward(t, n, up, proxy.Config{})
	c := dial(t, addr)
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "hello" {
		t.Fatalf("client read %q, %v; want hello, then the end of stream", b, err)
	}
	if _, err := c.Write([]byte("later")); err != nil {
		t.Fatalf("write after the upstream's half-close: %v", err)
	}
	c.CloseWrite()
	select {
	case s := <-upGot:
		if s != "later" {
			t.Fatalf("upstream read %q; want later", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client's half-close did not reach the upstream in 10 s")
	}
}

// An upstream that refuses resets the client's connection as soon as
// the refusal is known, with a line naming it.
func TestRefusedUpstream(t *testing.T) {
	n := newNet(t, link.Config{Delay: time.Millisecond})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nowhere := ln.Addr().String()
	ln.Close()
	var mu sync.Mutex
	var lines []string
	p, addr := forward(t, n, nowhere, proxy.Config{Logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(f, a...))
	}})
	// The reset may reach the client before its connect returns: on a
	// loaded machine the dialing goroutine can wait longer to run than
	// the emulated handshake (2 ms of link) and the refusal take, and
	// connect then fails with ECONNRESET, the same answer. Generous:
	// 10 s only catches a hang.
	c, err := net.Dial("tcp4", addr)
	if err == nil {
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("client: %v; want ECONNRESET", err)
	}
	r := waitRecords(t, p, 1)[0]
	if !strings.Contains(r.Err, "upstream") || !strings.Contains(r.Err, "refused") {
		t.Errorf("record's error %q; want the upstream's refusal", r.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || !strings.Contains(lines[0], nowhere) {
		t.Errorf("log lines %q; want one naming %s", lines, nowhere)
	}
}

// A reset travels as a reset, from either end to the other.
func TestResetTravels(t *testing.T) {
	n := newNet(t, link.Config{Delay: time.Millisecond})
	t.Run("from the client", func(t *testing.T) {
		upErr := make(chan error, 1)
		up := upstream(t, func(c *net.TCPConn) {
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := io.ReadAll(c)
			upErr <- err
		})
		_, addr := forward(t, n, up, proxy.Config{})
		c := dial(t, addr)
		c.Write([]byte("x"))
		time.Sleep(20 * time.Millisecond) // the connection is through
		c.SetLinger(0)
		c.Close()
		if err := <-upErr; !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("upstream read: %v; want ECONNRESET", err)
		}
	})
	t.Run("from the upstream", func(t *testing.T) {
		up := upstream(t, func(c *net.TCPConn) {
			c.Read(make([]byte, 1))
			c.SetLinger(0)
			c.Close()
		})
		_, addr := forward(t, n, up, proxy.Config{})
		c := dial(t, addr)
		c.Write([]byte("x"))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("client read: %v; want ECONNRESET", err)
		}
	})
}

// Each round trip across the link takes at least the link's RTT: the
// first request two (the handshake crosses the link, then the request),
// the next one one. Only lower bounds: a loaded machine is slower, never
// faster.
func TestRTTAdded(t *testing.T) {
	const rtt = 60 * time.Millisecond
	n := newNet(t, link.Config{Delay: rtt / 2})
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		b := make([]byte, 4)
		for {
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
			c.Write([]byte("pong"))
		}
	})
	_, addr := forward(t, n, up, proxy.Config{})
	t0 := time.Now()
	c := dial(t, addr)
	b := make([]byte, 4)
	for i, want := range []time.Duration{2 * rtt, rtt, rtt} {
		t1 := time.Now()
		c.Write([]byte("ping"))
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		since := t1
		if i == 0 {
			since = t0
		}
		if got := time.Since(since); got < want {
			t.Errorf("request %d took %v; want at least %v", i+1, got, want)
		}
	}
}

// 1,000 connections open at once, each carrying its own bytes.
func TestThousandConnections(t *testing.T) {
	const conns = 1000
	n := newNet(t, link.Config{})
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		io.Copy(c, c)
	})
	p, addr := forward(t, n, up, proxy.Config{BufferSize: 4 << 10})
	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer c.Close()
		cs[i] = c
		if _, err := c.Write([]byte{byte(i), byte(i >> 8)}); err != nil {
			t.Fatal(err)
		}
	}
	waitProgress(t, "connections active", p.Active, conns, func() string { return "the rest never reached the proxy" })
	b := make([]byte, 2)
	for i, c := range cs {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(c, b); err != nil || int(b[0])|int(b[1])<<8 != i {
			t.Fatalf("connection %d read %v, %v; want its own two bytes back", i, b, err)
		}
	}
	for _, c := range cs {
		c.Close()
	}
	waitRecords(t, p, conns)
}

// A client that does not read holds the upstream back: the upstream's
// writes stop after what the sockets' and the stacks' buffers hold, far
// less than it has to send.
func TestSlowReaderBackpressure(t *testing.T) {
	n := newNet(t, link.Config{})
	// What can be in flight when the client reads nothing: the
	// upstream's send buffer and the proxy's receive buffer (Linux
	// autotunes them up to tcp_wmem and tcp_rmem's maxima, 4 and 6 MiB),
	// the proxy's two 32 KiB buffers, the server host's send buffer and
	// the client host's receive buffer (4 MiB each at most), and the
	// proxy's send buffer and the client's receive buffer (4 + 6 MiB):
	// 28 MiB. 64 MiB leaves room; without backpressure all 512 MiB go.
	const bound, total = 64 << 20, 512 << 20
	written := make(chan int64, 1)
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		chunk := make([]byte, 256<<10)
		var sent int64
		for sent < total {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			m, err := c.Write(chunk)
			sent += int64(m)
			if err != nil {
				break // a second without progress: held back
			}
		}
		written <- sent
	})
	_, addr := forward(t, n, up, proxy.Config{})
	c := dial(t, addr)
	c.Write([]byte("x"))
	var sent int64
	select {
	case sent = <-written:
	case <-time.After(60 * time.Second):
		t.Fatal("the upstream kept writing for 60 s")
	}
	if sent >= total || sent > bound {
		t.Fatalf("the upstream wrote %d MiB to a client that reads nothing; want at most %d MiB", sent>>20, bound>>20)
	}
	t.Logf("held back after %.1f MiB", float64(sent)/(1<<20))
}

// SOCKS5 with a domain name and with an IPv4 address, and HTTP CONNECT,
// reach the upstream the client names.
func TestSOCKS5(t *testing.T) {
	n := newNet(t, link.Config{Delay: time.Millisecond})
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		io.Copy(c, c)
	})
	_, port, _ := net.SplitHostPort(up)
	// A name that does not resolve, without asking a real resolver.
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "localhost" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	p := start(t, n, proxy.Config{SOCKS5: "127.0.0.1:0", LookupHost: lookup})
	socks := p.Addrs()[0].String()
	echo := func(t *testing.T, c net.Conn) {
		defer c.Close()
		c.Write([]byte("hello"))
		b := make([]byte, 5)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
			t.Fatalf("read %q, %v; want hello", b, err)
		}
	}
	for _, target := range []string{"localhost:" + port, up} {
		t.Run("socks5 "+target, func(t *testing.T) {
			d, err := xproxy.SOCKS5("tcp", socks, nil, xproxy.Direct)
			if err != nil {
				t.Fatal(err)
			}
			c, err := d.Dial("tcp", target)
			if err != nil {
				t.Fatal(err)
			}
			echo(t, c)
		})
	}
	t.Run("http connect", func(t *testing.T) {
		c := dial(t, socks)
		io.WriteString(c, "CONNECT "+up+" HTTP/1.1\r\nHost: "+up+"\r\n\r\n")
		want := "HTTP/1.1 200 Connection established\r\n\r\n"
		b := make([]byte, len(want))
		if _, err := io.ReadFull(c, b); err != nil || string(b) != want {
			t.Fatalf("reply %q, %v; want %q", b, err, want)
		}
		echo(t, c)
	})
	t.Run("unresolvable", func(t *testing.T) {
		d, _ := xproxy.SOCKS5("tcp", socks, nil, xproxy.Direct)
		// The reply waits for the upstream's dial: host unreachable (4).
		if _, err := d.Dial("tcp", "nosuchhost.invalid:80"); err == nil || !strings.Contains(err.Error(), "host unreachable") {
			t.Fatalf("dial: %v; want the proxy's reply: host unreachable", err)
		}
	})
}

// Shutdown waits for open connections, and aborts them when its context
// ends; Close aborts at once.
func TestShutdown(t *testing.T) {
	n := newNet(t, link.Config{Delay: time.Millisecond})
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		io.Copy(c, c)
	})
	p, addr := forward(t, n, up, proxy.Config{})
	c := dial(t, addr)
	c.Write([]byte("x"))
	c.Read(make([]byte, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with an idle connection open: %v; want the context's deadline", err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("client read after the drain ran out: %v; want ECONNRESET", err)
	}
	if _, err := net.Dial("tcp4", addr); err == nil {
		t.Fatal("the proxy still accepts after Shutdown")
	}
	if r := p.Records(); len(r) != 1 || !strings.Contains(r[0].Err, "proxy closed") {
		t.Fatalf("records %+v; want one, aborted by the proxy", r)
	}
}

func TestNewRefuses(t *testing.T) {
	vn, err := emu.New(emu.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer vn.Close()
	if _, err := proxy.New(vn, proxy.Config{SOCKS5: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "virtual clock") {
		t.Errorf("New on the virtual clock: %v; want an error naming it", err)
	}
	n := newNet(t, link.Config{})
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, err = proxy.New(n, proxy.Config{Forwards: []proxy.Forward{{Listen: "127.0.0.1:0", Upstream: "127.0.0.1:80"}, {Listen: busy.Addr().String(), Upstream: "127.0.0.1:80"}}})
	if err == nil || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Errorf("New with a listen address in use: %v; want an error naming it", err)
	}
}

func TestParseForward(t *testing.T) {
	for _, c := range []struct{ in, listen, upstream, err string }{
		{in: "127.0.0.1:8080=127.0.0.1:80", listen: "127.0.0.1:8080", upstream: "127.0.0.1:80"},
		{in: "8080=example.com:443", listen: "127.0.0.1:8080", upstream: "example.com:443"},
		{in: "[::1]:8080=[::1]:80", listen: "[::1]:8080", upstream: "[::1]:80"},
		{in: "127.0.0.1:8080", err: "want LISTEN=UPSTREAM"},
		{in: "8080=80", err: "want host:port"},
		{in: "8080=host:0", err: "port 0"},
		{in: "8080=:80", err: "no host"},
		{in: "x:y=host:80", err: "not a number"},
		{in: "1=2=3", err: "want LISTEN=UPSTREAM"},
	} {
		f, err := proxy.ParseForward(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseForward(%q): %v; want an error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || f.Listen != c.listen || f.Upstream != c.upstream {
			t.Errorf("ParseForward(%q) = %+v, %v; want %s=%s", c.in, f, err, c.listen, c.upstream)
		}
	}
}
