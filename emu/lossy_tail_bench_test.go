package emu

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// BenchmarkLossyTail measures, on the real clock, the slowest of many
// short transfers through a lossy link, how many did not finish in two
// minutes, and the longest retransmission timeout a sender had at its
// last sample: in each iteration 50 connections each fetch 64 KiB over
// 5 ms each way with 8 % random loss (seeded by the iteration), with
// each TCP. A sender's RTO comes back to about 200 ms
// with its next RTT sample (RFC 6298 section 5, Linux's tcp_ack_update_rtt
// resets the backoff on every sample it takes, timestamps included); one
// that stays long turns the next loss into a stall.
//
//	go test -run X -bench 'LossyTail/real' -benchtime 20x ./emu
//
// On the virtual clock the same rounds repeat exactly; stalled-runs
// counts those that ended with the run's stall error (no goroutine
// runnable, no timer scheduled), worst-conn-s is over the others:
//
//	go test -run X -bench 'LossyTail/virtual' -benchtime 40x ./emu
func BenchmarkLossyTail(b *testing.B) {
	for _, impl := range tcpstack.Impls {
		b.Run("virtual/"+string(impl), func(b *testing.B) {
			var worst time.Duration
			stalled, seed := 0, uint64(0)
			for b.Loop() {
				seed++
				w, err := lossyRoundVirtual(impl, seed)
				if errors.Is(err, ErrStalled) {
					stalled++
					continue
				} else if err != nil {
					b.Fatalf("%s, seed %d: %v", impl, seed, err)
				}
				worst = max(worst, w)
			}
			b.ReportMetric(worst.Seconds(), "worst-conn-s")
			b.ReportMetric(float64(stalled), "stalled-runs")
		})
		b.Run("real/"+string(impl), func(b *testing.B) {
			var worst, maxRTO time.Duration
			stalled := 0
			seed := uint64(0)
			for b.Loop() {
				seed++
				w, rto, st := lossyRound(b, impl, seed)
				worst, maxRTO, stalled = max(worst, w), max(maxRTO, rto), stalled+st
			}
			b.ReportMetric(worst.Seconds(), "worst-conn-s")
			b.ReportMetric(maxRTO.Seconds(), "max-end-rto-s")
			b.ReportMetric(float64(stalled), "stalled-conns")
		})
	}
}

// lossyRound runs one iteration of BenchmarkLossyTail: the slowest
// finished connection's time, the longest RTO a server end had at its
// last sample, and how many connections did not finish in time.
func lossyRound(b *testing.B, impl tcpstack.Impl, seed uint64) (worst, maxRTO time.Duration, stalled int) {
	const conns = 50
	var mu sync.Mutex
	rto := map[netip.AddrPort]time.Duration{} // by server end's remote
	n, err := New(Config{
		Link:  link.Config{Delay: 5 * time.Millisecond, Loss: link.RandomLoss(0.08, 0), Seed: seed},
		TCP:   tcpstack.TCPConfig{Impl: impl},
		Clock: Real, Seed: seed,
		Probe: func(s tcpstack.Sample) {
			if s.Local.Port() == 80 {
				mu.Lock()
				rto[s.Remote] = s.RTO
				mu.Unlock()
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	ln, err := n.Listen(80)
	if err != nil {
		b.Fatal(err)
	}
	go serveTail(ln, func(f func()) { go f() })
	times := make(chan time.Duration, conns)
	errs := make(chan error, conns)
	for range conns {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			d, err := fetchTail(ctx, n, time.Now().Add(2*time.Minute))
			if err != nil {
				errs <- err
				return
			}
			times <- d
		}()
	}
	for range conns {
		select {
		case d := <-times:
			worst = max(worst, d)
		case err := <-errs:
			if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
				b.Errorf("%s, seed %d: %v", impl, seed, err)
			}
			stalled++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range rto {
		maxRTO = max(maxRTO, r)
	}
	return worst, maxRTO, stalled
}

// lossyRoundVirtual runs the connections of one round on the virtual
// clock, inside the run: the slowest connection's time, or the run's
// error (ErrStalled when it stalled).
func lossyRoundVirtual(impl tcpstack.Impl, seed uint64) (worst time.Duration, err error) {
	const conns = 50
	n, err := New(Config{
		Link: link.Config{Delay: 5 * time.Millisecond, Loss: link.RandomLoss(0.08, 0), Seed: seed},
		TCP:  tcpstack.TCPConfig{Impl: impl}, Seed: seed,
	})
	if err != nil {
		return 0, err
	}
	defer n.Close()
	var mu sync.Mutex
	err = n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(80)
		if err != nil {
			return err
		}
		n.Go(func() { serveTail(ln, n.Go) })
		var wg sync.WaitGroup
		for range conns {
			wg.Add(1)
			n.Go(func() {
				defer wg.Done()
				d, err := fetchTail(ctx, n, time.Time{})
				if err != nil {
					return
				}
				mu.Lock()
				worst = max(worst, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		ln.Close()
		return nil
	})
	return worst, err
}

// tailSize is what each connection of BenchmarkLossyTail fetches.
const tailSize = 64 << 10

// serveTail answers each connection ln accepts, on a goroutine spawn
// starts: it reads the one-byte request, writes tailSize bytes and
// reads until the client closes.
func serveTail(ln net.Listener, spawn func(func())) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		spawn(func() {
			defer c.Close()
			c.Read(make([]byte, 1))
			c.Write(make([]byte, tailSize))
			io.Copy(io.Discard, c)
		})
	}
}

// fetchTail dials n's server, sends the request and reads the reply
// whole, with deadline on the connection unless it is zero, and returns
// how long that took on n's clock.
func fetchTail(ctx context.Context, n *Net, deadline time.Time) (time.Duration, error) {
	start := n.Now()
	c, err := n.Dial(ctx, 80)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if !deadline.IsZero() {
		c.SetDeadline(deadline)
	}
	c.Write([]byte{1})
	if _, err := io.ReadFull(c, make([]byte, tailSize)); err != nil {
		return 0, err
	}
	return n.Now().Sub(start), nil
}
