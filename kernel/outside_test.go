//go:build linux

package kernel

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// DNS leaves the client through the link whether the query goes to an
// outside address or to a resolver on the client's own loopback (as a
// resolv.conf naming 127.0.0.53 sends it): either way the server's relay
// asks the resolver from this process's namespace, and the answer takes
// at least the link's round trip. The resolver here is a UDP server on
// the host's loopback that answers each query with it, prefixed.
func TestDNSLeavesThroughTheLink(t *testing.T) {
	needRoot(t)
	const rtt = 30 * time.Millisecond
	n := newNet(t, Config{Link: link.Config{Delay: rtt / 2}, Via: TUN})
	res, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	go func() {
		b := make([]byte, 512)
		for {
			m, from, err := res.ReadFromUDP(b)
			if err != nil {
				return
			}
			res.WriteToUDP(append([]byte("answer to "), b[:m]...), from)
		}
	}()
	resolver := res.LocalAddr().(*net.UDPAddr).AddrPort()
	loop := netip.MustParseAddr("127.0.0.77")
	if err := n.ForwardOutside(resolver, []netip.Addr{loop}); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []netip.AddrPort{
		netip.AddrPortFrom(loop, 53),                                // the client's loopback
		netip.AddrPortFrom(netip.MustParseAddr("198.19.253.1"), 53), // any address beyond the link
	} {
		var got string
		var took time.Duration
		err := n.client.do(func() error {
			c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(dst))
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			t0 := time.Now()
			if _, err := c.Write([]byte("query")); err != nil {
				return err
			}
			b := make([]byte, 512)
			m, err := c.Read(b)
			took, got = time.Since(t0), string(b[:m])
			return err
		})
		if err != nil || got != "answer to query" || took < rtt {
			t.Errorf("a query to %v from the client: %q after %v, %v; want the resolver's answer after one RTT (%v) or more", dst, got, took, err, rtt)
		}
	}
}

// A query over TCP to a loopback name server (a resolver retries a
// truncated answer so) crosses the link to the resolver too.
func TestDNSOverTCPLeavesThroughTheLink(t *testing.T) {
	needRoot(t)
	const rtt = 30 * time.Millisecond
	n := newNet(t, Config{Link: link.Config{Delay: rtt / 2}, Via: TUN})
	res, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	go func() {
		for {
			c, err := res.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c)
			c.Write(append([]byte("answer to "), b...))
			c.Close()
		}
	}()
	resolver := res.Addr().(*net.TCPAddr).AddrPort()
	loop := netip.MustParseAddr("127.0.0.77")
	if err := n.ForwardOutside(resolver, []netip.Addr{loop, loop}); err != nil { // listed twice, as resolv.conf may
		t.Fatal(err)
	}
	var got string
	var took time.Duration
	err = n.client.do(func() error {
		t0 := time.Now()
		c, err := net.DialTimeout("tcp4", netip.AddrPortFrom(loop, 53).String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("query"))
		c.(*net.TCPConn).CloseWrite()
		b, err := io.ReadAll(c)
		took, got = time.Since(t0), string(b)
		return err
	})
	if err != nil || got != "answer to query" || took < 2*rtt {
		t.Errorf("a TCP query to %v:53 from the client: %q after %v, %v; want the resolver's answer after two RTTs (%v: the handshake, the query) or more", loop, got, took, err, 2*rtt)
	}
}

// The relay for outside traffic refuses destinations that are this host:
// loopback (a command could route 127.0.0.0/8 over the link), 0.0.0.0/8,
// the link's own addresses and the host's interfaces' addresses, so the
// host's services are reachable only as ForwardHost makes them.
func TestOutsideRefusesThisHost(t *testing.T) {
	refused := []string{"127.0.0.1", "127.1.2.3", "0.0.0.0", "0.1.2.3", ServerAddr.String(), ClientAddr.String(), "::ffff:127.0.0.1"}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			refused = append(refused, p.Addr().String())
		}
	}
	for _, a := range refused {
		if err := outsideAllowed(netip.MustParseAddr(a)); err == nil {
			t.Errorf("outsideAllowed(%s): nil; want it refused, this host", a)
		}
	}
	for _, a := range []string{"198.19.253.1", "192.0.2.1"} {
		if err := outsideAllowed(netip.MustParseAddr(a)); err != nil {
			t.Errorf("outsideAllowed(%s): %v; want it allowed, the outside", a, err)
		}
	}
}
