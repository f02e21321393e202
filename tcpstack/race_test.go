package tcpstack

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
)

// Many goroutines dialing at once on the real clock share the stack's
// random sources (ports, sequence numbers): under -race this must be clean.
func TestConcurrentDialsRealClock(t *testing.T) {
	p := &pair{}
	l, err := link.New(link.Config{}, clock.Real{}, func(dir link.Dir, pkt []byte) {
		if dir == link.AtoB {
			p.b.Deliver(pkt)
		} else {
			p.a.Deliver(pkt)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	p.a, _ = New(Config{Addr: addrA, Clock: clock.Real{}}, func(b []byte) { l.Send(link.AtoB, b) })
	p.b, _ = New(Config{Addr: addrB, Clock: clock.Real{}}, func(b []byte) { l.Send(link.BtoA, b) })
	defer func() { p.a.Close(); p.b.Close(); l.Close() }()
	ln, err := p.b.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := p.a.Dial(context.Background(), p.b.AddrPort(80))
			if err != nil {
				t.Error(err)
				return
			}
			c.Close()
		}()
	}
	wg.Wait()
}

// Moving a deadline around the instant it fires must neither panic nor
// fire the old deadline (real clock, where the timer's callback can run
// after Stop has lost the race).
func TestDeadlineMovedWhileFiring(t *testing.T) {
	d := newDeadline(clock.Real{})
	for i := range 2000 {
		d.set(time.Now().Add(time.Duration(i%3) * time.Microsecond))
		if i%2 == 0 {
			d.set(time.Time{})
			select {
			case <-d.done():
				t.Fatal("a cleared deadline is done")
			default:
			}
		}
	}
	d.set(time.Now().Add(time.Millisecond))
	<-d.done()
}
