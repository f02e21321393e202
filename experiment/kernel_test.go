package experiment

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
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

// The emulator (gVisor TCP, virtual clock) and kernel TCP agree on the
// same link: bulk and keepalive within 5 %, page within 8 %, judged on
// the median of three kernel runs; the spread of the runs is reported.
// One cell of each reference table; `netemu reproduce --backend kernel`
// runs them all.
func TestEmulatedMatchesKernel(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("runs kernel TCP in real time (about 10 s)")
	}
	const runs = 3
	for _, c := range []struct {
		table, label string
		tol          float64
	}{
		{"bulk, RTT 50 ms", "10mbit", 0.05},
		{"keepalive, RTT 55 ms", "reuse", 0.05},
		{"keepalive, RTT 55 ms", "fresh", 0.05},
		{"page, RTT 50 ms", "10mbit", 0.08},
		{"page, rate 10 mbit", "100ms", 0.08},
	} {
		cs := ReferenceCase(reference(t, c.table, c.label), 1)
		emu, _, err := Emulated{}.Run(context.Background(), cs)
		if err != nil {
			t.Fatal(err)
		}
		var kern []time.Duration
		for range runs {
			k, _, err := Kernel{Via: kernel.TUN}.Run(context.Background(), cs)
			if err != nil {
				t.Fatal(err)
			}
			kern = append(kern, k.Elapsed)
		}
		slices.Sort(kern)
		med := kern[runs/2]
		d := float64(emu.Elapsed-med) / float64(med)
		msg := "%s %s: emulated %v, kernel median %v (%+.1f%%) of %d runs spanning %v–%v"
		args := []any{c.table, c.label, emu.Elapsed, med.Round(time.Microsecond), d * 100, runs, kern[0].Round(time.Microsecond), kern[runs-1].Round(time.Microsecond)}
		if d < -c.tol || d > c.tol {
			t.Errorf(msg+"; want within ±%.0f%%", append(args, c.tol*100)...)
		} else {
			t.Logf(msg, args...)
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
	if rec.Backend != "kernel" || rec.Clock != "real" || rec.Seed != nil || rec.DelackMs != 0 || rec.TraceSHA256 != "" ||
		f == nil || f.Link != kernel.TUN || f.CongestionControl != "cubic" || f.Kernel == "" || rec.LateMeanUs == nil {
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
	t.Logf("keepalive %v, bulk %v; delivery lateness mean %.0f µs p99 %.0f µs", ka.Elapsed, bulk.Elapsed, *rec.LateMeanUs, *rec.LateP99Us)
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

// On lossy links the emulator and kernel TCP agree within 10 % on the
// median over the same seeds (the link draws the same losses for both);
// the spread of each side's runs is reported.
func TestLossyEmulatedMatchesKernel(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("runs kernel TCP in real time (about 40 s)")
	}
	for _, c := range []struct {
		table, label string
		runs         int
	}{
		{"page, 10 mbit, RTT 50 ms", "loss 1%", 5},
		{"bulk 5 MiB, 10 mbit, RTT 50 ms", "queue 20", 3},
	} {
		cell := lossyCell(t, c.table, c.label)
		var emu, kern []time.Duration
		for i := range c.runs {
			cs := Case{Workload: cell.Workload, Link: cell.Link, Seed: uint64(i + 1)}
			e, _, err := Emulated{}.Run(context.Background(), cs)
			if err != nil {
				t.Fatal(err)
			}
			k, _, err := Kernel{Via: kernel.TUN}.Run(context.Background(), cs)
			if err != nil {
				t.Fatal(err)
			}
			emu, kern = append(emu, e.Elapsed), append(kern, k.Elapsed)
		}
		es, ks := SpreadOf(emu, nil), SpreadOf(kern, nil)
		d := float64(es.Median-ks.Median) / float64(ks.Median)
		msg := "%s, %s: emulated median %v (%v–%v), kernel median %v (%v–%v) over seeds 1–%d: %+.1f%%"
		args := []any{c.table, c.label, es.Median, es.P10, es.P90, ks.Median.Round(time.Millisecond), ks.P10.Round(time.Millisecond), ks.P90.Round(time.Millisecond), c.runs, d * 100}
		if d < -0.10 || d > 0.10 {
			t.Errorf(msg+"; want within ±10%%", args...)
		} else {
			t.Logf(msg, args...)
		}
	}
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
