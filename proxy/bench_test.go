package proxy_test

import (
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
	"github.com/netemu/netemu/tcpstack"
)

// Throughput through a forward on an unshaped link, with each TCP: a
// client writes 64 MiB per iteration, an upstream reads them. Both
// stacks, the link's delivery and the copies on both sides are in it;
// docs/PERFORMANCE.md has the figures.
func BenchmarkThroughput(b *testing.B) {
	for _, impl := range tcpstack.Impls {
		b.Run(string(impl), func(b *testing.B) { throughput(b, impl) })
	}
}

func throughput(b *testing.B, impl tcpstack.Impl) {
	n := newNetTCP(b, link.Config{}, impl)
	done := make(chan int64, 1)
	up := upstream(b, func(c *net.TCPConn) {
		defer c.Close()
		m, _ := io.Copy(io.Discard, c)
		done <- m
	})
	_, addr := forward(b, n, up, proxy.Config{})
	const size = 64 << 20
	chunk := make([]byte, 256<<10)
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			b.Fatal(err)
		}
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		c.(*net.TCPConn).CloseWrite()
		if m := <-done; m != size {
			b.Fatalf("the upstream read %d bytes; want %d", m, size)
		}
		c.Close()
	}
	b.ReportMetric(float64(size)*8*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gbit/s")
}

// The latency a forward adds to a round trip on an unshaped link: one
// byte there and back on one connection, alternately straight to the
// upstream and through the proxy; the medians and their difference.
func BenchmarkAddedLatency(b *testing.B) {
	n := newNet(b, link.Config{})
	up := upstream(b, func(c *net.TCPConn) {
		defer c.Close()
		io.Copy(c, c)
	})
	_, addr := forward(b, n, up, proxy.Config{})
	direct, through := dial(b, up), dial(b, addr)
	buf := make([]byte, 1)
	trip := func(c net.Conn) time.Duration {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for range 100 { // warm up both paths
		trip(direct)
		trip(through)
	}
	d, p := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		d = append(d, trip(direct))
		p = append(p, trip(through))
	}
	slices.Sort(d)
	slices.Sort(p)
	md, mp := d[len(d)/2], p[len(p)/2]
	b.ReportMetric(float64(md.Nanoseconds())/1e3, "µs-direct")
	b.ReportMetric(float64(mp.Nanoseconds())/1e3, "µs-proxy")
	b.ReportMetric(float64((mp-md).Nanoseconds())/1e3, "µs-added")
}
