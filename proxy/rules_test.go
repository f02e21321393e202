package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
)

// A listen address without a host means loopback, for forwards and for
// SOCKS5 alike; every interface takes an explicit address.
func TestBareListenPortIsLoopback(t *testing.T) {
	for in, want := range map[string]string{":8080": "127.0.0.1:8080", "8080": "127.0.0.1:8080",
		"0.0.0.0:8080": "0.0.0.0:8080", "[::]:8080": "[::]:8080", "[::1]:8080": "[::1]:8080"} {
		if got, err := proxy.ListenAddr(in); err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if f, err := proxy.ParseForward(":8080=127.0.0.1:80"); err != nil || f.Listen != "127.0.0.1:8080" {
		t.Errorf("ParseForward(:8080=…) listens on %q, %v; want 127.0.0.1:8080", f.Listen, err)
	}
	n := newNet(t, link.Config{})
	p := start(t, n, proxy.Config{SOCKS5: ":0", Forwards: []proxy.Forward{{Listen: ":0", Upstream: "127.0.0.1:80"}}})
	for _, a := range p.Addrs() {
		if ip := a.(*net.TCPAddr).IP; !ip.IsLoopback() {
			t.Errorf("a listener given :0 listens on %v; want loopback", a)
		}
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:1": false, "[::]:1": false, "198.18.0.1:1": false} {
		if got := proxy.Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v; want %v", addr, got, want)
		}
	}
}

// socksDial sends a SOCKS5 CONNECT for target (an IPv4 address or a
// name) and returns the connection and the reply's code.
func socksDial(t *testing.T, socks, target string) (net.Conn, byte) {
	t.Helper()
	c := dial(t, socks)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	host, port, _ := net.SplitHostPort(target)
	req := []byte{5, 1, 0, 5, 1, 0}
	if a, err := netip.ParseAddr(host); err == nil {
		req = append(append(req, 1), a.AsSlice()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	var pn int
	for _, d := range port {
		pn = pn*10 + int(d-'0')
	}
	req = append(req, byte(pn>>8), byte(pn))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 2+10)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("SOCKS5 CONNECT %s: reading the reply: %v", target, err)
	}
	if b[0] != 5 || b[1] != 0 || b[2] != 5 {
		t.Fatalf("SOCKS5 CONNECT %s: greeting and reply % x", target, b)
	}
	return c, b[3]
}

// connectDial sends an HTTP CONNECT for target and returns the status line.
func connectDial(t *testing.T, socks, target string) (net.Conn, string) {
	t.Helper()
	c := dial(t, socks)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("CONNECT %s: reading the reply: %v", target, err)
	}
	return c, strings.TrimSpace(line)
}

// The SOCKS5 listener reaches only what Config.Allow allows (loopback by
// default), by the addresses dialed, so a name that resolves elsewhere
// is refused too; and it answers each failure with its own code once
// the upstream's dial is known, never a success followed by a reset.
func TestSOCKS5Replies(t *testing.T) {
	n := newNet(t, link.Config{Delay: time.Millisecond})
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		io.Copy(c, c)
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, upPort, _ := net.SplitHostPort(up)
	var mu sync.Mutex
	var dialed []string
	var d net.Dialer
	cfg := proxy.Config{SOCKS5: "127.0.0.1:0",
		DialUpstream: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			if !strings.HasPrefix(addr, "127.") {
				return nil, errors.New("the test dials loopback only")
			}
			return d.DialContext(ctx, network, addr)
		},
		LookupHost: func(ctx context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "elsewhere.test":
				return []netip.Addr{netip.MustParseAddr("198.18.7.7")}, nil
			case "here.test":
				return []netip.Addr{netip.MustParseAddr("198.18.7.7"), netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}}
	p := start(t, n, cfg)
	socks := p.Addrs()[0].String()
	for _, c := range []struct {
		target string
		code   byte
		status string
	}{
		{up, 0, "200"},
		{"here.test:" + upPort, 0, "200"}, // only the allowed address is dialed
		{closed, 5, "502"},
		{"nosuchhost.invalid:80", 4, "502"},
		{"198.18.7.7:80", 2, "403"},
		{"elsewhere.test:80", 2, "403"},
	} {
		conn, code := socksDial(t, socks, c.target)
		if code != c.code {
			t.Errorf("SOCKS5 CONNECT %s: reply code %d; want %d", c.target, code, c.code)
		}
		if code == 0 {
			conn.Write([]byte("hi"))
			b := make([]byte, 2)
			if _, err := io.ReadFull(conn, b); err != nil || string(b) != "hi" {
				t.Errorf("SOCKS5 CONNECT %s: echo %q, %v", c.target, b, err)
			}
		} else if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("SOCKS5 CONNECT %s: after the failure reply, read %v; want the end of the stream", c.target, err)
		}
		conn.Close()
		_, status := connectDial(t, socks, c.target)
		if f := strings.Fields(status); len(f) < 2 || f[1] != c.status {
			t.Errorf("CONNECT %s: %q; want status %s", c.target, status, c.status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range dialed {
		if !strings.HasPrefix(a, "127.") {
			t.Errorf("the proxy dialed %s, outside the destination rule", a)
		}
	}
}

// A destination rule given widens what SOCKS5 reaches.
func TestSOCKS5Allow(t *testing.T) {
	n := newNet(t, link.Config{})
	var d net.Dialer
	p := start(t, n, proxy.Config{SOCKS5: "127.0.0.1:0", Allow: []netip.Prefix{netip.MustParsePrefix("198.18.7.0/24")},
		DialUpstream: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == "198.18.7.7:80" { // stands for a host the rule allows, without sending to it
				up := upstream(t, func(c *net.TCPConn) { c.Close() })
				return d.DialContext(ctx, network, up)
			}
			return nil, errors.New("unexpected dial " + addr)
		}})
	if _, code := socksDial(t, p.Addrs()[0].String(), "198.18.7.7:80"); code != 0 {
		t.Errorf("SOCKS5 CONNECT to an allowed address: code %d; want 0", code)
	}
	if _, code := socksDial(t, p.Addrs()[0].String(), "127.0.0.1:80"); code != 2 {
		t.Errorf("SOCKS5 CONNECT to loopback, outside the rule given: code %d; want 2", code)
	}
}

// Plain HTTP proxying to the SOCKS5 port gets an HTTP error that says
// what the port serves, not a dropped connection.
func TestPlainHTTPOnSOCKSPort(t *testing.T) {
	n := newNet(t, link.Config{})
	p := start(t, n, proxy.Config{SOCKS5: "127.0.0.1:0"})
	c := dial(t, p.Addrs()[0].String())
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("plain HTTP to the SOCKS5 port: %v; want an HTTP error", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(body), "CONNECT") {
		t.Errorf("plain HTTP to the SOCKS5 port: %s %q; want 405 naming CONNECT", resp.Status, body)
	}
}
