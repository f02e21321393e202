//go:build unix

package emu

import (
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
			cfg := Config{Link: link.Config{Delay: 5 * time.Millisecond, Rate: 100e6, QueuePackets: 100}, TCP: tcpstack.TCPConfig{Impl: impl}, Seed: 1}
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
