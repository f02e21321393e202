package proxy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
)

// CheckUpstream connects once to an upstream that listens, and says
// which upstream failed and how otherwise, without naming any flag.
func TestCheckUpstream(t *testing.T) {
	seen := make(chan struct{}, 1)
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		io.Copy(io.Discard, c) // the check closes at once
		seen <- struct{}{}
	})
	if err := proxy.CheckUpstream(t.Context(), up); err != nil {
		t.Fatalf("CheckUpstream(%s), which listens: %v", up, err)
	}
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream saw no connection open and close")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := ln.Addr().String()
	ln.Close()
	err = proxy.CheckUpstream(t.Context(), refusing)
	if want := "upstream " + refusing + " refuses connections; start it first"; err == nil || err.Error() != want {
		t.Errorf("CheckUpstream(%s), which refuses: %v; want %q", refusing, err, want)
	}
	if err := proxy.CheckUpstream(t.Context(), "no-port"); err == nil || strings.Contains(err.Error(), "--") {
		t.Errorf("CheckUpstream(no-port): %v; want an error about the address, naming no flag", err)
	}
}

// Drain lets open connections go on for the grace, then resets them; its
// context cuts the grace short; with nothing open it returns at once.
func TestDrain(t *testing.T) {
	n := newNet(t, link.Config{Delay: time.Millisecond})
	up := upstream(t, func(c *net.TCPConn) {
		defer c.Close()
		io.Copy(c, c)
	})
	open := func(addr string) *net.TCPConn {
		c := dial(t, addr)
		c.Write([]byte("x"))
		c.Read(make([]byte, 1))
		return c
	}
	reset := func(c *net.TCPConn) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("client read after the drain: %v; want ECONNRESET", err)
		}
	}

	p, addr := forward(t, n, up, proxy.Config{})
	c := open(addr)
	begin := time.Now()
	if err := p.Drain(context.Background(), 100*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) < 100*time.Millisecond {
		t.Errorf("Drain with an idle connection open: %v after %v; want the grace's deadline after 100ms", err, time.Since(begin))
	}
	reset(c)

	p, addr = forward(t, n, up, proxy.Config{})
	c = open(addr)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := p.Drain(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain cut short by its context: %v; want context.Canceled", err)
	}
	reset(c)

	p, _ = forward(t, n, up, proxy.Config{})
	if err := p.Drain(context.Background(), time.Hour); err != nil {
		t.Errorf("Drain with nothing open: %v; want nil at once", err)
	}
}
