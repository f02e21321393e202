package tcpstack

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// A datagram and its echo cross the link in one round trip, and arrive
// whole, from the sender's address.
func TestUDPEcho(t *testing.T) {
	p := newPair(t, link.Config{Delay: 10 * time.Millisecond}, TCPConfig{})
	srv, err := p.b.ListenUDP(53)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			srv.WriteTo(buf[:n], from)
		}
	}()
	c, err := p.a.ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.AddrPort().Port() == 0 || c.AddrPort().Addr() != addrA {
		t.Errorf("local address %v; want %v and a port", c.AddrPort(), addrA)
	}
	start := p.clk.Now()
	msg := []byte(strings.Repeat("x", 1200))
	if _, err := c.WriteTo(msg, net.UDPAddrFromAddrPort(srv.AddrPort())); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2000)
	n, from, err := c.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(msg) || from.String() != srv.LocalAddr().String() {
		t.Errorf("read %d bytes from %v; want %d from %v", n, from, len(msg), srv.LocalAddr())
	}
	if d := p.clk.Now().Sub(start); d != 20*time.Millisecond {
		t.Errorf("echo took %v; want one round trip, 20ms", d)
	}
}

// Deadlines are instants of the run's clock; Close ends a blocked read.
func TestUDPDeadlineAndClose(t *testing.T) {
	p := newPair(t, link.Config{}, TCPConfig{})
	c, err := p.a.ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	start := p.clk.Now()
	c.SetReadDeadline(start.Add(3 * time.Second))
	if _, _, err := c.ReadFrom(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ReadFrom = %v; want a deadline error", err)
	}
	if d := p.clk.Now().Sub(start); d != 3*time.Second {
		t.Errorf("the deadline passed after %v; want 3s", d)
	}
	c.SetReadDeadline(time.Time{})
	done := make(chan error)
	go func() {
		_, _, err := c.ReadFrom(make([]byte, 10))
		done <- err
	}()
	p.clk.AfterFunc(time.Second, func() { c.Close() })
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("ReadFrom after Close = %v; want net.ErrClosed", err)
	}
	if _, err := c.WriteTo([]byte("x"), net.UDPAddrFromAddrPort(p.b.AddrPort(53))); !errors.Is(err, net.ErrClosed) {
		t.Errorf("WriteTo after Close = %v; want net.ErrClosed", err)
	}
}

func TestUDPPortInUse(t *testing.T) {
	p := newPair(t, link.Config{}, TCPConfig{})
	c, err := p.b.ListenUDP(53)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := p.b.ListenUDP(53); err == nil || !strings.Contains(err.Error(), "port in use") {
		t.Errorf("second ListenUDP(53) = %v; want port in use", err)
	}
	if _, err := c.WriteTo([]byte("x"), &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 53}); err == nil {
		t.Error("WriteTo outside the emulated network: no error")
	}
}
