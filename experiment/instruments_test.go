package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// The emulated hosts' samples carry the window each end advertises: the
// receiver's opens as data is read, and gVisor has no rcv_ssthresh.
func TestEmulatedSamplesReceiveWindow(t *testing.T) {
	c := Case{Workload: workloads.Bulk{Size: 1 << 20}, Link: link.Config{Delay: 10 * time.Millisecond, Rate: 20e6}, TCP: tcpstack.TCPConfig{Impl: tcpstack.GVisor}, Seed: 1}
	_, _, w, err := Measure(context.Background(), Emulated{}, c, Instruments{KeepTimeline: true})
	if err != nil {
		t.Fatal(err)
	}
	var receiver bool
	for _, conn := range w.Timeline().Conns() {
		for _, s := range conn.Samples {
			if s.RcvWnd <= 0 || s.RcvSsthresh != 0 {
				t.Fatalf("%s at %v: receive window %d, rcv_ssthresh %d; want a window and no threshold", conn.Name, s.At, s.RcvWnd, s.RcvSsthresh)
			}
			receiver = receiver || s.Local.Addr() == emu.ClientAddr
		}
	}
	if !receiver {
		t.Error("no sample of the receiving end")
	}
}
