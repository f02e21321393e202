package tcpstack

import (
	"context"
	"errors"
	"io"
	"net"
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

// Close unblocks a Read and a Write waiting on other goroutines at once,
// as net.Conn's Close promises: the connection here has nothing unread
// (Close sends a FIN, not a reset) and a peer that neither sends nor
// reads, so nothing else would ever wake them.
func TestCloseUnblocksReadAndWrite(t *testing.T) {
	for _, impl := range Impls {
		p := newPair(t, link.Config{Delay: time.Millisecond}, TCPConfig{Impl: impl})
		ln, err := p.b.Listen(80)
		if err != nil {
			t.Fatal(err)
		}
		peer := make(chan *Conn, 1)
		go func() {
			c, err := ln.AcceptTCP()
			if err != nil {
				close(peer)
				return
			}
			peer <- c // it reads nothing and writes nothing
		}()
		c, err := p.a.Dial(context.Background(), p.b.AddrPort(80))
		if err != nil {
			t.Fatal(err)
		}
		pc := <-peer
		start := p.clk.Now()
		p.clk.AfterFunc(time.Second, func() { c.Close() })
		// Were they left blocked, closing the host ends them later.
		p.clk.AfterFunc(2*time.Second, func() { p.a.Close() })
		errs := make(chan error, 2)
		var read, wrote time.Duration
		go func() {
			_, err := c.Read(make([]byte, 1))
			read = p.clk.Now().Sub(start)
			errs <- err
		}()
		go func() {
			// Far more than the peer's window and the send buffer hold.
			_, err := c.Write(make([]byte, 64<<20))
			wrote = p.clk.Now().Sub(start)
			errs <- err
		}()
		for range 2 {
			if err := <-errs; !errors.Is(err, net.ErrClosed) {
				t.Errorf("%s: a blocked call after Close: %v; want net.ErrClosed", impl, err)
			}
		}
		if read != time.Second || wrote != time.Second {
			t.Errorf("%s: Close at 1s ended the blocked Read at %v and Write at %v; want both at 1s", impl, read, wrote)
		}
		pc.Close()
		ln.Close()
	}
}
