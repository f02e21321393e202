package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// BenchmarkTopologyPacket measures what a packet costs as topologies
// grow: the CPU time per link crossing (a packet delivered by a link to
// the node at its far end: a host, or a router that forwards it on) of
// bulk transfers on the pair, and on stars of 10 and 100 hosts each with
// a transfer to one server through one router. The target: a star's
// figure within 1.2× of the pair's in the same run, so that cost grows
// with packets, not hosts.
func BenchmarkTopologyPacket(b *testing.B) {
	bottleneck := link.Config{Delay: 10 * time.Millisecond, Rate: 100e6, Qdisc: link.Qdisc{Limit: 200}}
	pair := func(lc link.Config) (topo.Topology, []topo.Flow) {
		return topo.Pair(lc), []topo.Flow{{From: "client", To: "server"}}
	}
	star := func(n int) func(link.Config) (topo.Topology, []topo.Flow) {
		return func(lc link.Config) (topo.Topology, []topo.Flow) { return topo.Star(n, lc) }
	}
	for _, c := range []struct {
		name  string
		build func(link.Config) (topo.Topology, []topo.Flow)
		size  int // bytes per flow: the same total for every shape
	}{
		{"pair", pair, 50 << 20},
		{"star10", star(10), 5 << 20},
		{"star100", star(100), 512 << 10},
	} {
		b.Run(c.name, func(b *testing.B) {
			cs := experiment.Case{Workload: workloads.Bulk{Size: c.size}, Link: bottleneck, Seed: 1,
				Shape: &experiment.Shape{Name: c.name, Build: c.build}}
			var crossings uint64
			cpu0 := cpuTime()
			for b.Loop() {
				_, rec, err := experiment.Emulated{}.Run(context.Background(), cs)
				if err != nil {
					b.Fatal(err)
				}
				for _, l := range rec.Detail.(experiment.ShapeDetail).Links {
					crossings += l.Delivered
				}
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(crossings), "cpu-µs/crossing")
			b.ReportMetric(float64(crossings)/float64(b.N), "crossings/op")
		})
	}
}

// BenchmarkIdleHost reports the memory a host of a topology holds while
// idle: a star of 100 hosts built and measured once per operation.
func BenchmarkIdleHost(b *testing.B) {
	const hosts = 100
	var perHost float64
	for b.Loop() {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t, _ := topo.Star(hosts, link.Config{})
		n, err := emu.New(emu.Config{Topology: &t, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		perHost = float64(m1.HeapAlloc-m0.HeapAlloc) / float64(hosts+1)
		n.Close()
	}
	b.ReportMetric(perHost, "B/host")
}
