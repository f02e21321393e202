package bench

import (
	"context"
	"net"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/tcpstack"
)

const idleConns = 1000

// BenchmarkIdleConns opens idleConns connections between the emulated
// hosts (virtual clock, unshaped link), each having exchanged one byte
// each way, lets them sit idle for a minute of virtual time, and reports
// the memory they hold per connection (both ends together): live heap
// bytes and goroutine stack bytes, measured after a GC against the same
// network before it opened any. It also reports the goroutines per
// connection and the scheduler events per connection per idle minute
// (timers that idle connections keep firing).
func BenchmarkIdleConns(b *testing.B) {
	for _, impl := range tcpstack.Impls {
		b.Run("tcp="+string(impl), func(b *testing.B) { benchIdleConns(b, impl) })
	}
}

func benchIdleConns(b *testing.B, impl tcpstack.Impl) {
	var heap, stacks, goroutines, idleEvents float64
	for b.Loop() {
		h, s, g, e := idleConnsOnce(b, impl)
		heap += h
		stacks += s
		goroutines += g
		idleEvents += e
	}
	n := float64(b.N)
	b.ReportMetric(heap/n, "heap-B/conn")
	b.ReportMetric(stacks/n, "stack-B/conn")
	b.ReportMetric((heap+stacks)/n, "B/conn")
	b.ReportMetric(goroutines/n, "goroutines/conn")
	b.ReportMetric(idleEvents/n, "idle-events/conn/min")
}

func idleConnsOnce(b *testing.B, impl tcpstack.Impl) (heap, stacks, goroutines, idleEvents float64) {
	n, err := emu.New(emu.Config{Seed: 1, TCP: tcpstack.TCPConfig{Impl: impl}})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	err = n.Run(context.Background(), func(ctx context.Context) error {
		ln, err := n.Listen(80)
		if err != nil {
			return err
		}
		defer ln.Close()
		accepted := make(chan net.Conn, idleConns)
		n.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		})
		h0, s0, g0 := memory()
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		one := []byte{1}
		for range idleConns {
			c, err := n.Dial(ctx, 80)
			if err != nil {
				return err
			}
			s := <-accepted
			conns = append(conns, c, s)
			if _, err := c.Write(one); err != nil {
				return err
			}
			if _, err := s.Read(one); err != nil {
				return err
			}
			if _, err := s.Write(one); err != nil {
				return err
			}
			if _, err := c.Read(one); err != nil {
				return err
			}
		}
		e0 := n.Stats().Events
		if err := n.Sleep(ctx, time.Minute); err != nil {
			return err
		}
		idleEvents = float64(n.Stats().Events-e0-1) / idleConns
		h1, s1, g1 := memory()
		heap = (h1 - h0) / idleConns
		stacks = (s1 - s0) / idleConns
		goroutines = (g1 - g0) / idleConns
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return heap, stacks, goroutines, idleEvents
}

// memory returns the live heap bytes, goroutine stack bytes and goroutine
// count after a full GC.
func memory() (heap, stacks, goroutines float64) {
	runtime.GC()
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(s)
	return float64(s[0].Value.Uint64()), float64(s[1].Value.Uint64()), float64(s[2].Value.Uint64())
}
