//go:build unix

package proxy_test

import (
	"errors"
	"io"
	"net"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
)

// openIdle opens conns connections through a forward on n, each carried
// to an upstream that answers one byte and then waits; it returns once
// every connection has had its answer, so that all are established end
// to end, and leaves them open until the test's cleanup.
func openIdle(tb testing.TB, n *emu.Net, conns int) *proxy.Proxy {
	tb.Helper()
	up := upstream(tb, func(c *net.TCPConn) {
		defer c.Close()
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err == nil {
			c.Write(b)
			io.Copy(io.Discard, c) // until the client closes
		}
	})
	p, addr := forward(tb, n, up, proxy.Config{})
	// 50 at a time: one after another, each would wait its round trips.
	cs := make([]net.Conn, conns)
	errs := make([]error, conns)
	sem := make(chan struct{}, 50)
	var wg sync.WaitGroup
	for i := range cs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := net.Dial("tcp4", addr)
			if err != nil {
				errs[i] = err
				return
			}
			cs[i] = c
			b := []byte{1}
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := c.Write(b); err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = io.ReadFull(c, b)
		})
	}
	wg.Wait()
	tb.Cleanup(func() {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
	return p
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Idle connections cost no CPU: with 1,000 connections open through the
// proxy and nothing sent, the link carries no packet (no keepalive, no
// probe, no window update) and nothing in the process wakes up for them:
// both stacks, the link's clock and the proxy's 4,000 goroutines stay
// blocked. A timer or a poll per connection would not: one wake-up per
// connection every 100 ms is 10,000 a second.
//
// Wake-ups are counted, not CPU time, which a loaded machine inflates
// (the CPU share is logged): the runtime's scheduling-latency histogram
// records a sample of the goroutines that start running (one in eight,
// in Go's runtime today). An idle process records a handful in 2 s; a
// wake-up per connection every 2 s would record more than 100.
func TestIdleConnectionsCostNoCPU(t *testing.T) {
	const conns = 1000
	n := newNet(t, link.Config{Delay: 5 * time.Millisecond, Rate: 100e6, DelayedACK: link.LinuxDelayedACK})
	p := openIdle(t, n, conns)
	if p.Active() != conns {
		t.Fatalf("%d connections active; want %d", p.Active(), conns)
	}
	time.Sleep(200 * time.Millisecond) // held ACKs leave, the last goroutines block
	runtime.GC()
	packets := func() uint64 { st := n.Stats().Link; return st[link.AtoB].Packets + st[link.BtoA].Packets }
	// Settle: on a loaded machine the connections' set-up may still be
	// running; wait (up to 10 s) for a quiet half second.
	for i := 0; i < 20; i++ {
		s0 := scheduled()
		time.Sleep(500 * time.Millisecond)
		if scheduled()-s0 < 25 {
			break
		}
	}
	p0, c0, t0, s0 := packets(), cpuTime(t), time.Now(), scheduled()
	time.Sleep(2 * time.Second)
	p1, c1, wall, s1 := packets(), cpuTime(t), time.Since(t0), scheduled()
	t.Logf("%d idle connections: %d packets, %d goroutine starts sampled, %v of CPU in %v (%.2f %% of a core)",
		conns, p1-p0, s1-s0, c1-c0, wall.Round(time.Millisecond), 100*float64(c1-c0)/float64(wall))
	if p1 != p0 {
		t.Errorf("the link carried %d packets while %d connections were idle; want none", p1-p0, conns)
	}
	if s1-s0 > 100 {
		t.Errorf("%d goroutine starts sampled in %v with %d idle connections; want at most 100: something wakes up for idle connections", s1-s0, wall, conns)
	}
}

// scheduled is the count of the runtime's scheduling-latency samples so
// far: a fixed share of the times a goroutine started running.
func scheduled() uint64 {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	var n uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n
}

// heapAndStacks is the memory the process holds in live objects and
// goroutine stacks, after a collection.
func heapAndStacks() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

// The memory one idle connection through the proxy holds: live heap and
// goroutine stacks, after a collection, per connection, with 1,000 open.
// It counts everything the connection brings: the two emulated ends
// (gVisor's endpoints and their buffers), the proxy's goroutines and
// buffers, and the test's own client and upstream sockets and goroutine.
// docs/PERFORMANCE.md has the figure.
func BenchmarkIdleConnectionMemory(b *testing.B) {
	const conns = 1000
	for range b.N {
		n := newNet(b, link.Config{Delay: 5 * time.Millisecond})
		before := heapAndStacks()
		openIdle(b, n, conns)
		time.Sleep(100 * time.Millisecond)
		b.ReportMetric(float64(heapAndStacks()-before)/conns, "bytes/conn")
		b.ReportMetric(float64(runtime.NumGoroutine())/conns, "goroutines/conn")
	}
}
