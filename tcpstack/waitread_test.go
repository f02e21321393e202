package tcpstack

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
)

// WaitRead waits for data without consuming it, and reports the end of
// the stream and a reset as Read would.
func TestWaitRead(t *testing.T) {
	p := newPair(t, link.Config{Delay: time.Millisecond}, TCPConfig{})
	ln, err := p.b.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			return
		}
		clock.Sleep(context.Background(), p.clk, 10*time.Millisecond)
		c.Write([]byte("hi"))
		c.CloseWrite()
		c2, err := ln.AcceptTCP()
		if err != nil {
			return
		}
		clock.Sleep(context.Background(), p.clk, 10*time.Millisecond)
		c2.Close() // with unread data: a reset
		c.Close()
	}()
	c, err := p.a.Dial(context.Background(), p.b.AddrPort(80))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitRead(); err != nil {
		t.Fatalf("WaitRead before the data: %v; want nil once it is there", err)
	}
	if b, err := io.ReadAll(c); string(b) != "hi" || err != nil {
		t.Errorf("read %q, %v after WaitRead; want all of \"hi\"", b, err)
	}
	if err := c.WaitRead(); !errors.Is(err, io.EOF) {
		t.Errorf("WaitRead after the end of the stream: %v; want io.EOF", err)
	}
	c2, err := p.a.Dial(context.Background(), p.b.AddrPort(80))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write([]byte("unread"))
	if err := c2.WaitRead(); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("WaitRead after the peer reset: %v; want ECONNRESET", err)
	}
	c2.Close()
	if err := c2.WaitRead(); err == nil {
		t.Error("WaitRead on a closed connection: nil; want an error")
	}
}
