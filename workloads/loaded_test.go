package workloads

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
)

// runLink runs w on a fresh emulated network over lc (both directions
// alike), with Linux's delayed ACK.
func runLink(t testing.TB, w Workload, lc link.Config) (Result, emu.Stats) {
	t.Helper()
	lc.DelayedACK = link.LinuxDelayedACK
	n, err := emu.New(emu.Config{Link: lc, TCP: gvisorTCP, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	p := Path{RTT: 2 * lc.Delay, Rate: lc.Rate, DelayedACK: lc.DelayedACK}
	var r Result
	err = n.Run(context.Background(), func(ctx context.Context) error {
		var err error
		r, err = Run(ctx, w, n, p)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", w.Name(), err)
	}
	return r, n.Stats()
}

// The bufferbloat link of the tests: 20 mbit, RTT 20 ms.
const (
	bloatRate = 20e6
	bloatRTT  = 20 * time.Millisecond
	fullMTU   = 1500 // bytes of a full-sized packet, as the link counts them
)

// serialization is the time one full-sized packet takes at the rate.
func serialization(rate float64) time.Duration {
	return time.Duration(fullMTU * 8 / rate * 1e9)
}

func loadedDetail(t *testing.T, w Loaded, q link.Qdisc) LoadedDetail {
	t.Helper()
	r, _ := runLink(t, w, link.Config{Delay: bloatRTT / 2, Rate: bloatRate, Qdisc: q})
	d := r.Detail.(LoadedDetail)
	if want := int(w.Duration / DefaultLoadedInterval); d.ProbesUnderLoad != want {
		t.Errorf("%s: %d probes under load; want one per interval, %d", tc.Qdisc(q), d.ProbesUnderLoad, want)
	}
	// The base RTT is the link's RTT plus the probe's two packets at the
	// rate: the model, within the serialization of a packet.
	if d.Base < d.ModelRTT || d.Base > d.ModelRTT+serialization(bloatRate) {
		t.Errorf("%s: base RTT %v; want the model's %v plus at most a packet's serialization", tc.Qdisc(q), d.Base, d.ModelRTT)
	}
	// The flows keep the link busy: at least 90 % of the rate is payload
	// (headers take 52 of each 1500 bytes, slow start a little).
	if d.Goodput < 0.9*bloatRate {
		t.Errorf("%s: the load's goodput is %.1f Mbit/s; want the link saturated, at least 90%% of %.0f Mbit/s", tc.Qdisc(q), d.Goodput/1e6, bloatRate/1e6)
	}
	return d
}

// FQ-CoDel isolates the sparse probe from the bulk flows: it reaches the
// head of the new-flows list as soon as it arrives, so its queueing delay
// (RTT minus the base RTT) stays under CoDel's target plus the packet
// being serialized when it came, all the while the load runs.
func TestLoadedFQCoDelIsolatesTheProbe(t *testing.T) {
	w := Loaded{Duration: 5 * time.Second}
	d := loadedDetail(t, w, link.Qdisc{Kind: link.FQCoDel})
	bound := link.DefaultTarget + serialization(bloatRate)
	for _, p := range d.Probes {
		if q := p.RTT - d.Base; q > bound {
			t.Errorf("probe at %v: RTT %v, %v over the base %v; want at most %v (target + one packet)", p.At, p.RTT, q, d.Base, bound)
		}
	}
}

// Through the drop-tail FIFO of 1000 packets (600 ms at 20 mbit) the
// probe waits behind the load's backlog: its RTT rises by hundreds of
// ms. The margins: the 99th percentile at least a third of a full
// queue's drain time, the median at least ten CoDel targets.
func TestLoadedFIFOBloats(t *testing.T) {
	w := Loaded{Duration: 10 * time.Second}
	d := loadedDetail(t, w, link.Qdisc{})
	full := time.Duration(link.DefaultQueuePackets) * serialization(bloatRate)
	if q := d.P99 - d.Base; q < full/3 {
		t.Errorf("fifo: p99 queueing delay %v; want at least a third of a full queue's %v", q, full)
	}
	if q := d.Loaded.Median - d.Base; q < 10*link.DefaultTarget {
		t.Errorf("fifo: median queueing delay %v; want at least %v", q, 10*link.DefaultTarget)
	}
}

// Four flows and a probe, each started through env.Go, give the same
// packets at the same instants on every run, whatever GOMAXPROCS.
func TestLoadedDeterministic(t *testing.T) {
	w := Loaded{Flows: 4, Duration: 300 * time.Millisecond}
	lc := link.Config{Delay: 5 * time.Millisecond, Rate: 10e6, Qdisc: link.Qdisc{Kind: link.FQCoDel}}
	_, first := runLink(t, w, lc)
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for i := range race.DeterministicRuns(20) {
				if _, st := runLink(t, w, lc); st.TraceHash != first.TraceHash {
					t.Fatalf("run %d: trace %s; first %s", i+1, st.TraceHash[:12], first.TraceHash[:12])
				}
			}
		})
	}
}

// Two identical CUBIC flows share the bottleneck fairly, over 3 s (Jain's
// index 0.986; 0.999 over the default 10 s, which took 16 s of CPU under
// the race detector).
func TestShareTwoCubicFlowsAreFair(t *testing.T) {
	w := Share{Flows: 2, CCs: "cubic", Duration: 3 * time.Second}
	r, _ := runLink(t, w, link.Config{Delay: bloatRTT / 2, Rate: bloatRate})
	d := r.Detail.(ShareDetail)
	if d.Jain < 0.95 {
		t.Errorf("Jain's index %.3f (flows %.2f and %.2f Mbit/s); want at least 0.95", d.Jain, d.FlowGoodput[0]/1e6, d.FlowGoodput[1]/1e6)
	}
	if len(d.GoodputPerBin) != 2 || len(d.GoodputPerBin[0]) != int(w.Duration/flowBin) {
		t.Errorf("goodput per bin: %d flows", len(d.GoodputPerBin))
	}
}

func TestJain(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{5, 5}, 1},
		{[]float64{3, 3, 3, 3}, 1},
		{[]float64{1, 0, 0, 0}, 0.25},
		{[]float64{1, 3}, 16.0 / 20},
		{nil, 0},
	} {
		if got := Jain(c.xs); got != c.want {
			t.Errorf("Jain(%v) = %v; want %v", c.xs, got, c.want)
		}
	}
}
