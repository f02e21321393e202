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
// probe, no window update) and the whole process, both stacks, the
// link's clock and the proxy's 4,000 goroutines included, uses under
// 1 % of a core. A timer or a poll per connection would not: one wake-up
// per connection every 100 ms is 10,000 a second.
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
	p0, c0, t0 := packets(), cpuTime(t), time.Now()
	time.Sleep(2 * time.Second)
	p1, c1, wall := packets(), cpuTime(t), time.Since(t0)
	share := float64(c1-c0) / float64(wall)
	t.Logf("%d idle connections: %d packets and %v of CPU in %v (%.2f %% of a core)", conns, p1-p0, c1-c0, wall.Round(time.Millisecond), 100*share)
	if p1 != p0 {
		t.Errorf("the link carried %d packets while %d connections were idle; want none", p1-p0, conns)
	}
	if share > 0.01 {
		t.Errorf("the process used %v of CPU in %v with %d idle connections (%.2f %% of a core); want under 1 %%", c1-c0, wall, conns, 100*share)
	}
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
