//go:build unix

package emu

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// cpuTime is the process's user and system CPU so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBulkTCP is 5 MiB at 100 mbit over 10 ms RTT on the virtual
// clock with each TCP, both hosts alike. It reports the CPU time and the
// allocations per packet crossing the link (data and ACKs), so the two
// TCPs compare in one run:
//
//	go test -run X -bench BulkTCP -benchtime 5x ./emu
func BenchmarkBulkTCP(b *testing.B) {
	for _, impl := range tcpstack.Impls {
		b.Run(string(impl), func(b *testing.B) {
			cfg := Config{Link: link.Config{Delay: 5 * time.Millisecond, Rate: 100e6, Qdisc: link.Qdisc{Limit: 100}}, TCP: tcpstack.TCPConfig{Impl: impl}, Seed: 1}
			if impl == tcpstack.GVisor {
				cfg.Link.DelayedACK = link.LinuxDelayedACK
			}
			var packets uint64
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				_, st := runBulk(b, cfg, 5<<20)
				packets += st.Link[0].Packets + st.Link[1].Packets
			}
			cpu := cpuTime(b) - cpu0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(packets), "cpu-ns/packet")
			b.ReportMetric(float64(packets)/float64(b.N), "packets/op")
		})
	}
}

// BenchmarkSteadyAllocs is the allocations per packet of a bulk transfer
// in steady state: the difference between an 8 MiB and a 1 MiB transfer
// on the same link, over the difference in packets, so that setting up
// the stacks and the connection cancels out.
//
//	go test -run X -bench SteadyAllocs -benchtime 3x ./emu
func BenchmarkSteadyAllocs(b *testing.B) {
	for _, impl := range tcpstack.Impls {
		b.Run(string(impl), func(b *testing.B) {
			cfg := Config{Link: link.Config{Delay: 5 * time.Millisecond, Rate: 100e6, Qdisc: link.Qdisc{Limit: 100}}, TCP: tcpstack.TCPConfig{Impl: impl}, Seed: 1}
			if impl == tcpstack.GVisor {
				cfg.Link.DelayedACK = link.LinuxDelayedACK
			}
			run := func(size int) (allocs, packets uint64) {
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				_, st := runBulk(b, cfg, size)
				runtime.ReadMemStats(&m1)
				return m1.Mallocs - m0.Mallocs, st.Link[0].Packets + st.Link[1].Packets
			}
			var da, dp float64
			for b.Loop() {
				a1, p1 := run(1 << 20)
				a8, p8 := run(8 << 20)
				da += float64(a8) - float64(a1)
				dp += float64(p8) - float64(p1)
			}
			b.ReportMetric(da/dp, "allocs/packet")
		})
	}
}
