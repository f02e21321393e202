package proxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The SOCKS5 listener: RFC 1928 without authentication, CONNECT only.
// It also answers HTTP's CONNECT (RFC 9110, 9.3.6), which costs one more
// branch: curl -x http://ADDR and browsers' HTTPS proxies use it. The
// handshake reads exactly its own bytes, so nothing of the stream is
// buffered in between.

// handshakeTimeout bounds a client's proxy handshake.
const handshakeTimeout = 10 * time.Second

// SOCKS5 reply codes (RFC 1928, section 6).
const (
	socksOK             = 0
	socksFailure        = 1
	socksNotAllowed     = 2
	socksNetUnreach     = 3
	socksHostUnreach    = 4
	socksRefused        = 5
	socksCmdUnsupported = 7
	socksAddrUnsupport  = 8
)

// serveSOCKS reads the client's request, then carries the connection as
// a forward to the upstream it named; the reply goes out once the link's
// handshake is done.
func (p *Proxy) serveSOCKS(s *session) {
	c := s.client
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	target, reply, err := handshake(c)
	if err != nil {
		s.target = target
		s.fail(fmt.Sprintf("proxy handshake: %v", err))
		s.abort("")
		s.end()
		return
	}
	_, port, _ := splitPort(target, false)
	p.serveClient(s, target, port, func(err error) bool {
		if werr := reply(err); werr != nil || err != nil {
			return false
		}
		c.SetDeadline(time.Time{})
		return true
	})
}

// handshake reads a SOCKS5 or HTTP CONNECT request from c. It returns
// the target as host:port and a function that sends the reply: success
// for a nil error, else the failure that fits it. Any other HTTP request
// is answered with an HTTP error.
func handshake(c net.Conn) (target string, reply func(error) error, err error) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return "", nil, err
	}
	switch {
	case b[0] == 5:
		return socks5(c)
	case 'A' <= b[0] && b[0] <= 'Z':
		return httpConnect(c, b[0])
	}
	return "", nil, fmt.Errorf("first byte 0x%02x is neither SOCKS5's version (5) nor an HTTP request's", b[0])
}

// socksCode is the SOCKS5 reply for an upstream dial's outcome.
func socksCode(err error) byte {
	var dns *net.DNSError
	var na *NotAllowedError
	var le *LoopError
	switch {
	case err == nil:
		return socksOK
	case errors.As(err, &na), errors.As(err, &le):
		return socksNotAllowed
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksRefused
	case errors.As(err, &dns), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ETIMEDOUT), isTimeout(err):
		return socksHostUnreach
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnreach
	}
	return socksFailure
}

// socks5 reads the rest of a SOCKS5 greeting and request, its version
// byte already read.
func socks5(c net.Conn) (string, func(error) error, error) {
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return "", nil, err
	}
	methods := make([]byte, n[0])
	if _, err := io.ReadFull(c, methods); err != nil {
		return "", nil, err
	}
	if !strings.Contains(string(methods), "\x00") {
		c.Write([]byte{5, 0xff})
		return "", nil, errors.New("SOCKS5: the client offers no method without authentication")
	}
	if _, err := c.Write([]byte{5, 0}); err != nil {
		return "", nil, err
	}
	var hdr [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return "", nil, err
	}
	fail := func(code byte) { c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0}) }
	if hdr[0] != 5 {
		return "", nil, fmt.Errorf("SOCKS5: request of version %d", hdr[0])
	}
	var host string
	switch hdr[3] {
	case 1, 4: // IPv4, IPv6
		ip := make([]byte, 4)
		if hdr[3] == 4 {
			ip = make([]byte, 16)
		}
		if _, err := io.ReadFull(c, ip); err != nil {
			return "", nil, err
		}
		a, _ := netip.AddrFromSlice(ip)
		host = a.Unmap().String()
	case 3: // a domain name
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return "", nil, err
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(c, name); err != nil {
			return "", nil, err
		}
		host = string(name)
	default:
		fail(socksAddrUnsupport)
		return "", nil, fmt.Errorf("SOCKS5: address type %d", hdr[3])
	}
	var pb [2]byte
	if _, err := io.ReadFull(c, pb[:]); err != nil {
		return "", nil, err
	}
	port := binary.BigEndian.Uint16(pb[:])
	target := net.JoinHostPort(host, strconv.Itoa(int(port)))
	if hdr[1] != 1 {
		fail(socksCmdUnsupported)
		return target, nil, fmt.Errorf("SOCKS5: command %d; only CONNECT (1) is served", hdr[1])
	}
	if port == 0 {
		fail(socksFailure)
		return target, nil, errors.New("SOCKS5: port 0")
	}
	return target, func(err error) error {
		// The bound address is not the client's business here: 0.0.0.0:0,
		// as many servers answer.
		_, werr := c.Write([]byte{5, socksCode(err), 0, 1, 0, 0, 0, 0, 0, 0})
		return werr
	}, nil
}

// maxHTTPHead bounds an HTTP request's head on the SOCKS5 listener.
const maxHTTPHead = 8 << 10

// httpConnect reads the rest of an HTTP CONNECT request, its first byte
// already read, up to the blank line that ends its head, one byte at a
// time so that nothing of the stream after it is consumed. Each byte is
// looked at once: the head's end is found from the last four bytes. A
// request other than CONNECT gets 405, naming what is served.
func httpConnect(c net.Conn, first byte) (string, func(error) error, error) {
	head := make([]byte, 1, 256)
	head[0] = first
	var b [1]byte
	for {
		n := len(head)
		if n >= 2 && head[n-1] == '\n' && (head[n-2] == '\n' || n >= 4 && string(head[n-4:n-1]) == "\r\n\r") {
			break
		}
		if n >= maxHTTPHead {
			c.Write([]byte("HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n"))
			return "", nil, fmt.Errorf("HTTP: request head longer than %d bytes", maxHTTPHead)
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return "", nil, err
		}
		head = append(head, b[0])
	}
	line, _, _ := strings.Cut(string(head), "\n")
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "CONNECT" || !strings.HasPrefix(f[2], "HTTP/1.") {
		const body = "netemu proxy: this port serves SOCKS5 and HTTP CONNECT only, not plain HTTP proxying; use a https:// URL, or --forward\n"
		fmt.Fprintf(c, "HTTP/1.1 405 Method Not Allowed\r\nAllow: CONNECT\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		return "", nil, fmt.Errorf("HTTP: %q is not a CONNECT request", strings.TrimSpace(line))
	}
	if _, _, err := splitPort(f[1], false); err != nil {
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
		return f[1], nil, fmt.Errorf("HTTP CONNECT %s: %v", f[1], err)
	}
	return f[1], func(err error) error {
		var na *NotAllowedError
		var le *LoopError
		msg := "HTTP/1.1 200 Connection established\r\n\r\n"
		switch {
		case errors.As(err, &na), errors.As(err, &le):
			msg = "HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n"
		case isTimeout(err):
			msg = "HTTP/1.1 504 Gateway Timeout\r\nConnection: close\r\n\r\n"
		case err != nil:
			msg = "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n"
		}
		_, werr := io.WriteString(c, msg)
		return werr
	}, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
