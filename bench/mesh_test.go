package bench

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/netemu/netemu/emutest"
)

// meshHosts is the size of BenchmarkMeshIdle's cluster.
const meshHosts = 5

// BenchmarkMeshIdle measures what a cluster of idle connections costs
// between events: a mesh of 5 hosts (emutest.Mesh, 10 ms round trips) on
// the virtual clock, a connection open between every two of them, each
// having carried one byte each way, then each operation an idle minute
// of run time. It reports the CPU time and the scheduler events per idle
// minute beyond the one that ends the minute; both should be about
// nothing: an idle connection of netemu's TCP keeps no timer.
func BenchmarkMeshIdle(b *testing.B) {
	n := emutest.New(b, emutest.Mesh(emutest.Names("n", meshHosts)...), emutest.RTT(10*time.Millisecond), emutest.Seed(1))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	n.Run(func(ctx context.Context) {
		hosts := n.Hosts()
		one := []byte{1}
		for i, a := range hosts {
			for _, to := range hosts[i+1:] {
				c, s := a.Pipe(ctx, to.Name(), 0)
				conns = append(conns, c, s)
				for _, dir := range [][2]net.Conn{{c, s}, {s, c}} {
					if _, err := dir[0].Write(one); err != nil {
						b.Fatal(err)
					}
					if _, err := dir[1].Read(one); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		// Let the last delayed ACKs go.
		if err := n.Sleep(ctx, time.Second); err != nil {
			b.Fatal(err)
		}
		e0, cpu0 := n.Stats().Events, cpuTime()
		for b.Loop() {
			if err := n.Sleep(ctx, time.Minute); err != nil {
				b.Fatal(err)
			}
		}
		cpu, events := cpuTime()-cpu0, n.Stats().Events-e0
		mins := float64(b.N)
		b.ReportMetric(float64(cpu.Microseconds())/mins, "cpu-µs/idle-min")
		b.ReportMetric(float64(events)/mins-1, "events/idle-min")
		b.ReportMetric(float64(len(conns)/2), "conns")
	})
}
