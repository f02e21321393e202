package experiment

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// needRoot skips tests that need namespaces and TUN devices where the
// process cannot make them.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kernel mode needs root (network namespaces, TUN devices); run the tests as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("kernel mode needs /dev/net/tun: %v", err)
	}
}

func reference(t *testing.T, table, label string) workloads.Reference {
	t.Helper()
	for _, r := range workloads.References() {
		if r.Table == table && r.Label == label {
			return r
		}
	}
	t.Fatalf("no reference cell %q / %q", table, label)
	return workloads.Reference{}
}

// floor is what the link guarantees any TCP on it: a run takes at least
// the model's round trips (the fewest the workload can make do with) and
// at least its bytes' time at the rate.
func floor(r workloads.Result, rtt time.Duration) time.Duration {
	return max(time.Duration(r.Model.RoundTrips*float64(rtt)), r.Model.Transfer)
}

// Kernel TCP over the same link as the emulator, on one cell of each
// reference table: it takes no less than what the link guarantees
// (floor) and less than twice that, bounds that hold however loaded the
// machine (kernel TCP runs in real time; a busy machine is slower, never
// faster, and a run that waits for a retransmission timeout or loses a
// round trip's worth per request goes past twice). How closely the two
// agree is the accuracy report's kernel column (go run ./bench/accuracy,
// docs/ACCURACY.md), not a test: it is a measurement of this machine.
func TestKernelReferenceCells(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("runs kernel TCP in real time (about 10 s)")
	}
	for _, c := range []struct{ table, label string }{
		{"bulk, RTT 50 ms", "10mbit"},
		{"keepalive, RTT 55 ms", "reuse"},
		{"keepalive, RTT 55 ms", "fresh"},
		{"page, RTT 50 ms", "10mbit"},
		{"page, rate 10 mbit", "100ms"},
	} {
		cs := ReferenceCase(reference(t, c.table, c.label), 1)
		emu, _, err := Emulated{}.Run(context.Background(), cs)
		if err != nil {
			t.Fatal(err)
		}
		k, _, err := Kernel{Via: kernel.TUN}.Run(context.Background(), cs)
		if err != nil {
			t.Fatal(err)
		}
		lo := floor(k, cs.RTT())
		t.Logf("%s %s: kernel %v, emulated %v; the link's floor %v (%.0f round trips, transfer %v)",
			c.table, c.label, k.Elapsed.Round(time.Microsecond), emu.Elapsed, lo, k.Model.RoundTrips, k.Model.Transfer)
		if k.Elapsed < lo || k.Elapsed >= 2*lo {
			t.Errorf("%s %s: kernel TCP took %v; want at least the link's floor %v and under twice it", c.table, c.label, k.Elapsed, lo)
		}
		if emu.Elapsed < lo || emu.Elapsed >= 2*lo {
			t.Errorf("%s %s: the emulator took %v; want at least the link's floor %v and under twice it", c.table, c.label, emu.Elapsed, lo)
		}
	}
}

// Workloads run over the TUN bridge through the Kernel backend, and its
// record says what ran.
func TestKernelBackend(t *testing.T) {
	needRoot(t)
	const rtt = 20 * time.Millisecond
	lc := link.Config{Delay: rtt / 2, Rate: 20e6, DelayedACK: link.LinuxDelayedACK}
	b := Kernel{Via: kernel.TUN}

	ka, rec, err := b.Run(context.Background(), Case{Workload: workloads.KeepAlive{Mode: workloads.Reuse, Requests: 5}, Link: lc})
	if err != nil {
		t.Fatal(err)
	}
	// Shapes, never speed: 6 round trips at least, and not wildly more.
	if ka.Elapsed < 6*rtt || ka.Elapsed > 20*rtt || ka.Conns != 1 {
		t.Errorf("keepalive reuse, 5 requests at RTT %v: %v over %d conns", rtt, ka.Elapsed, ka.Conns)
	}
	f := rec.Kernel
	if rec.Backend != "kernel" || rec.Clock != "real" || rec.Seed != nil || rec.DelackMs != 0 || rec.TraceHash != "" ||
		f == nil || f.Link != kernel.TUN || f.CongestionControl != "cubic" || f.Kernel == "" || rec.LateMeanUs == nil ||
		rec.LateMaxUs == nil || *rec.LateMaxUs < *rec.LateP99Us {
		t.Errorf("record %+v, facts %+v", rec, f)
	}

	bulk, rec, err := b.Run(context.Background(), Case{Workload: workloads.Bulk{Size: 1 << 20}, Link: lc})
	if err != nil {
		t.Fatal(err)
	}
	if g := bulk.Detail.(workloads.BulkDetail).Goodput; g > 20e6 || bulk.Bytes != 1<<20 {
		t.Errorf("bulk: goodput %.1f Mbit/s above the 20 Mbit/s link, or %d bytes", g/1e6, bulk.Bytes)
	}
	if rec.Drops == nil || *rec.Drops != 0 {
		t.Errorf("bridge drops %v; want 0", rec.Drops)
	}
	t.Logf("keepalive %v, bulk %v; delivery lateness mean %.0f µs p99 %.0f µs max %.0f µs", ka.Elapsed, bulk.Elapsed, *rec.LateMeanUs, *rec.LateP99Us, *rec.LateMaxUs)
}

// lossyCell returns the lossy cell with the given table and label.
func lossyCell(t *testing.T, table, label string) workloads.Cell {
	t.Helper()
	for _, c := range workloads.LossyCells() {
		if c.Table == table && c.Label == label {
			return c
		}
	}
	t.Fatalf("no lossy cell %q / %q", table, label)
	return workloads.Cell{}
}

// Kernel TCP through a lossy cell's link (5 MiB through a 20-packet
// queue): the bridge drops what overflows the queue and counts it, the
// kernel's senders recover, and the transfer takes no less than the
// link's floor. How the emulator's and the kernel's medians over seeds
// compare is reproduce --lossy's and the accuracy report's lossy
// section, not a test.
func TestKernelLossyCell(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("runs kernel TCP in real time (about 5 s)")
	}
	cell := lossyCell(t, "bulk 5 MiB, 10 mbit, RTT 50 ms", "queue 20")
	cs := Case{Workload: cell.Workload, Link: cell.Link, Seed: 1}
	k, rec, _, err := Measure(context.Background(), Kernel{Via: kernel.TUN}, cs, Instruments{})
	if err != nil {
		t.Fatal(err)
	}
	lo := floor(k, cs.RTT())
	t.Logf("kernel: %v, %d drops by reason %v, retransmits %v; the link's floor %v", k.Elapsed.Round(time.Millisecond), deref(rec.Drops), rec.DropsBy, deref(rec.Retransmits), lo)
	if k.Elapsed < lo || k.Bytes != workloads.DefaultBulkSize {
		t.Errorf("kernel TCP moved %d bytes in %v; want 5 MiB in no less than the link's floor %v", k.Bytes, k.Elapsed, lo)
	}
	if rec.DropsBy["queue-full"] == 0 || rec.Retransmits == nil || *rec.Retransmits == 0 {
		t.Errorf("drops %v, retransmits %v; want the 20-packet queue to overflow and the senders to retransmit", rec.DropsBy, deref(rec.Retransmits))
	}
}

// deref is *p, or zero for nil, for messages.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// Kernel connections are sampled from TCP_INFO, so a kernel run's record
// has the largest congestion window and the smoothed RTT, as an emulated
// run's has from gVisor's probe, and timelines of both show cwnd.
func TestKernelSamplesTCPInfo(t *testing.T) {
	needRoot(t)
	c := Case{Workload: workloads.Bulk{Size: 1 << 20}, Link: link.Config{Delay: 10 * time.Millisecond, Rate: 20e6}}
	_, rec, w, err := Measure(context.Background(), Kernel{Via: kernel.TUN}, c, Instruments{KeepTimeline: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec.MaxCwndBytes == nil || *rec.MaxCwndBytes < 10*1448 || rec.SRTTms == nil || *rec.SRTTms < 20 {
		t.Errorf("kernel record: max cwnd %v, srtt %v ms; want at least the initial window and the 20 ms RTT", rec.MaxCwndBytes, rec.SRTTms)
	}
	conns := w.Timeline().Conns()
	if len(conns) == 0 {
		t.Fatal("the kernel run's timeline has no connection samples")
	}
	// Every connection's end advertises a window, and Linux's receiver
	// reports its window-growth threshold.
	for _, c := range conns {
		last := c.Samples[len(c.Samples)-1]
		if last.RcvWnd <= 0 || last.RcvSsthresh <= 0 {
			t.Errorf("%s: receive window %d, rcv_ssthresh %d; want both sampled", c.Name, last.RcvWnd, last.RcvSsthresh)
		}
	}
}

// Kernel.AddedNoise delays every delivery on top of the kernel nodes'
// own time, on every link of a shape too: 5 requests on one connection
// make 6 round trips, each of two deliveries per link crossed, so each
// added 20 ms at least twice per link. A lower bound, which a loaded
// machine only raises; the record names the addition and the seed.
func TestKernelAddedNoise(t *testing.T) {
	needRoot(t)
	added := link.Noise{Base: 20 * time.Millisecond}
	lc := link.Config{Delay: 5 * time.Millisecond, Rate: 20e6}
	ka := workloads.KeepAlive{Mode: workloads.Reuse, Requests: 5}
	dumbbell := &Shape{Name: "dumbbell:1", Build: func(lc link.Config) (topo.Topology, []topo.Flow) {
		return topo.Dumbbell(1, []time.Duration{4 * time.Millisecond}, lc)
	}}
	for _, c := range []struct {
		name  string
		c     Case
		rtt   time.Duration
		links int
	}{
		{"two hosts", Case{Workload: ka, Link: lc, Seed: 3}, 10 * time.Millisecond, 1},
		{"dumbbell:1, 4ms access", Case{Workload: ka, Link: lc, Seed: 3, Shape: dumbbell}, 14 * time.Millisecond, 3},
	} {
		r, rec, err := Kernel{Via: kernel.TUN, AddedNoise: added}.Run(context.Background(), c.c)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if lo := 6 * (c.rtt + time.Duration(2*c.links)*added.Base); r.Elapsed < lo {
			t.Errorf("%s: 5 requests at RTT %v with %v added to each of %d deliveries a round trip: %v; want at least %v", c.name, c.rtt, added, 2*c.links, r.Elapsed, lo)
		}
		if want := "own+" + added.String(); rec.HostNoise != want || rec.Seed == nil || *rec.Seed != 3 {
			t.Errorf("%s: record's host_noise %q, seed %v; want %q and 3", c.name, rec.HostNoise, rec.Seed, want)
		}
	}
}
