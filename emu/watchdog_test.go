package emu

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// A writer blocked on a peer that never reads keeps zero-window probes
// going, so the scheduler is never idle; with no data crossing the link
// for QuietLimit of virtual time, Run says so instead of running forever.
func TestZeroWindowWriterIsReported(t *testing.T) {
	n, err := New(Config{Link: link.Config{Delay: 5 * time.Millisecond, Rate: 100e6}, QuietLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(80)
		if err != nil {
			return err
		}
		n.Go(func() {
			c, err := ln.Accept()
			if err == nil {
				<-ctx.Done() // accepts, never reads
				c.Close()
			}
		})
		c, err := n.Dial(ctx, 80)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(make([]byte, 10<<20))
		return err
	})
	var se *StallError
	if !errors.As(err, &se) || !errors.Is(err, ErrStalled) || !strings.Contains(se.Why, "no data crossed the link for 1h") || se.At < time.Hour {
		t.Fatalf("Run returned %v; want a stall naming the hour without data, after at least an hour of virtual time", err)
	}
}

// A goroutine in time.Sleep waits on the wall clock, which the virtual
// clock never wakes: the stall says so instead of blaming the network.
func TestStallNamesTimeSleep(t *testing.T) {
	n, err := New(Config{StallTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		time.Sleep(time.Second)
		return nil
	})
	var se *StallError
	if !errors.As(err, &se) || !strings.Contains(se.Why, "time.Sleep") {
		t.Fatalf("Run returned %v; want a stall naming time.Sleep", err)
	}
	// Waiting on the network is named as such.
	m, err := New(Config{StallTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	err = m.Run(context.Background(), func(ctx context.Context) error {
		ln, err := m.Listen(80)
		if err != nil {
			return err
		}
		_, err = ln.Accept() // nobody dials
		return err
	})
	if !errors.As(err, &se) || !strings.Contains(se.Why, "waits on the network") {
		t.Fatalf("Run returned %v; want a stall saying everything waits on the network", err)
	}
}

// A loop that polls Now never lets the process settle, so virtual time
// cannot advance: Run reports it after ten stall timeouts of wall time.
func TestBusyRunIsReported(t *testing.T) {
	n, err := New(Config{StallTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		start := n.Now()
		for ctx.Err() == nil && n.Now().Equal(start) {
		}
		return nil
	})
	var se *StallError
	if !errors.As(err, &se) || !se.Busy || !strings.Contains(se.Why, "without the virtual clock advancing") {
		t.Fatalf("Run returned %v; want a stall saying goroutines ran without time advancing", err)
	}
}
