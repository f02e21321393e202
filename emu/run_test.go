package emu

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"go.uber.org/goleak"
)

// Both sides read and nobody writes: the virtual run can never progress.
// Run must say so instead of hanging, and leave nothing behind.
func TestStalledRunIsAnError(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{Link: link.Config{Delay: 5 * time.Millisecond}, StallTimeout: 50 * time.Millisecond})
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Server().Listen(9)
		if err != nil {
			return err
		}
		go func() {
			c, err := ln.Accept()
			if err == nil {
				io.ReadAll(c)
			}
		}()
		c, err := n.Client().Dial(ctx, n.Server().AddrPort(9))
		if err != nil {
			return err
		}
		_, err = c.Read(make([]byte, 1))
		return err
	})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("Run returned %v; want ErrStalled", err)
	}
	// The last event is the client's handshake ACK reaching the server,
	// 1.5 RTT after the SYN; the stall is reported at that instant.
	if !strings.Contains(err.Error(), "at virtual time 15ms") {
		t.Errorf("error %q does not name the virtual instant 15ms", err)
	}
	n.Close()
}

// A read deadline fires at its exact virtual instant.
func TestReadDeadlineOnVirtualClock(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{Link: link.Config{Delay: 5 * time.Millisecond}})
	err := n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Server().Listen(9)
		if err != nil {
			return err
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				io.ReadAll(c)
				c.Close()
			}
		}()
		c, err := n.Client().Dial(ctx, n.Server().AddrPort(9))
		if err != nil {
			return err
		}
		defer c.Close()
		start := n.Now()
		c.SetReadDeadline(start.Add(123 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Read returned %v; want a deadline error", err)
		}
		if got := n.Now().Sub(start); got != 123*time.Millisecond {
			t.Errorf("deadline fired after %v; want exactly 123ms", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
}

// On the real clock the same code works; only shapes are asserted, never
// speed: a round trip takes at least the configured RTT.
func TestRealClockSmoke(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{Clock: Real, Link: link.Config{Delay: 2 * time.Millisecond, Rate: 100e6}})
	err := n.Run(context.Background(), func(ctx context.Context) error {
		rtts, err := pingPong(ctx, n, 5)
		if err != nil {
			return err
		}
		for i, d := range rtts {
			if d < 4*time.Millisecond {
				t.Errorf("round %d took %v on the real clock; want at least the 4ms RTT", i, d)
			}
		}
		el, err := bulk(ctx, n, 256<<10)
		if err != nil {
			return err
		}
		if el < 4*time.Millisecond {
			t.Errorf("bulk took %v; want at least one RTT", el)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	if st.Events != 0 || st.Link[link.BtoA].Packets == 0 || len(st.TraceHash) != 32 {
		t.Errorf("real-clock stats %+v", st)
	}
	n.Close()
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Link: link.Config{Delay: -1}}, "Delay is -1ns"},
		{Config{Clock: 7}, "Clock is 7"},
		{Config{StallTimeout: -1}, "StallTimeout"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want error containing %q", c.cfg, err, c.want)
		}
	}
	goleak.VerifyNone(t)
}
