//go:build unix

package emu

import (
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// BenchmarkTraceVsFixedRate replays a 60 s random-walk trace under a
// bulk transfer of about 55 s at its mean rate, and the same transfer over
// a fixed-rate link of that mean, both behind netemu's default queue, in
// each iteration; it reports the CPU time of the trace's runs over the
// fixed link's (trace/fixed, and per packet crossing the link), and the
// virtual seconds simulated per CPU second on the trace:
//
//	go test -run X -bench TraceVsFixedRate -benchtime 4x -count 5 ./emu
func BenchmarkTraceVsFixedRate(b *testing.B) {
	walk, err := link.RandomWalkTrace(12e6, 0.3, 100*time.Millisecond, 60*time.Second, 1)
	if err != nil {
		b.Fatal(err)
	}
	size := int(walk.MeanRate() / 8 * 55)
	base := link.Config{Delay: 20 * time.Millisecond} // netemu's default queue, 1000 packets
	cfg := func(lc link.Config) Config {
		return Config{Link: lc, TCP: tcpstack.TCPConfig{Impl: tcpstack.Netemu}, Seed: 1}
	}
	fixed := base
	fixed.Rate = walk.MeanRate()
	var traceCPU, fixedCPU, simulated time.Duration
	var tracePkts, fixedPkts uint64
	traceRun := func() {
		c0 := cpuTime(b)
		took, st := runBulk(b, cfg(base.WithTrace(link.BtoA, walk)), size)
		traceCPU += cpuTime(b) - c0
		simulated += took
		tracePkts += st.Link[0].Packets + st.Link[1].Packets
	}
	fixedRun := func() {
		c0 := cpuTime(b)
		_, st := runBulk(b, cfg(fixed), size)
		fixedCPU += cpuTime(b) - c0
		fixedPkts += st.Link[0].Packets + st.Link[1].Packets
	}
	first := true
	for b.Loop() {
		// Alternate which goes first, so that neither always pays for
		// the other's garbage.
		if first {
			traceRun()
			fixedRun()
		} else {
			fixedRun()
			traceRun()
		}
		first = !first
	}
	b.ReportMetric(float64(traceCPU)/float64(fixedCPU), "trace/fixed")
	b.ReportMetric(float64(traceCPU)/float64(tracePkts)/(float64(fixedCPU)/float64(fixedPkts)), "trace/fixed-per-packet")
	b.ReportMetric(simulated.Seconds()/traceCPU.Seconds(), "virtual-s/cpu-s")
}
