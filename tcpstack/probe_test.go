package tcpstack

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
)

// probedSamples sends size bytes from b to a over lc with netemu's TCP
// running cc on both hosts and returns the samples of b's sending end.
func probedSamples(t *testing.T, lc link.Config, cc CongestionControl, size int) []Sample {
	t.Helper()
	clk := clock.NewVirtual(0, nil)
	var mu sync.Mutex
	var samples []Sample
	probe := func(s Sample) {
		if s.Local.Addr() == addrB {
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		}
	}
	var a, b *Host
	l, err := link.New(lc, clk, func(dir link.Dir, pkt []byte) {
		if dir == link.AtoB {
			b.Deliver(pkt)
		} else {
			a.Deliver(pkt)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := TCPConfig{Impl: Netemu, CongestionControl: cc}
	if a, err = New(Config{Addr: addrA, Clock: clk, TCP: tc, Seed: 1}, func(p []byte) { l.Send(link.AtoB, p) }); err != nil {
		t.Fatal(err)
	}
	if b, err = New(Config{Addr: addrB, Clock: clk, TCP: tc, Seed: 1, Probe: probe}, func(p []byte) { l.Send(link.BtoA, p) }); err != nil {
		t.Fatal(err)
	}
	defer func() {
		a.Close()
		b.Close()
		l.Close()
		clk.Close()
	}()
	ln, err := b.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(make([]byte, size))
	}()
	c, err := a.Dial(context.Background(), b.AddrPort(80))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, c); n != int64(size) {
		t.Fatalf("read %d bytes of %d: %v", n, size, err)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	return append([]Sample(nil), samples...)
}

// netemu's TCP's samples carry its pacing and delivery rates, and, for
// BBR, its state: the mode in the Sample's words, leaving STARTUP for
// DRAIN and PROBE_BW, the bandwidth estimate near the link's rate, the
// min RTT the link's, the gains of each mode. A CUBIC connection's
// samples have rates and no BBR state.
func TestSampleRatesAndBBR(t *testing.T) {
	lc := link.Config{Delay: 10 * time.Millisecond, Rate: 10e6, Qdisc: link.Qdisc{Limit: 100}}
	samples := probedSamples(t, lc, "bbr", 2<<20)
	modes := map[string]bool{}
	var paced, delivered bool
	var last Sample
	for _, s := range samples {
		modes[s.BBR.Mode] = true
		paced = paced || s.PacingRate > 0
		delivered = delivered || s.DeliveryRate > 0
		switch s.BBR.Mode {
		case BBRStartup:
			// Gains of 0 until the first ACK (bbr_init sets none).
			if g := s.BBR.PacingGain; g != BBRGain(739) && g != 0 || s.BBR.CwndGain != g {
				t.Errorf("STARTUP with gains %v, %v; want 2.89 both", s.BBR.PacingGain, s.BBR.CwndGain)
			}
		case BBRProbeBW:
			if s.BBR.CwndGain != 2 {
				t.Errorf("PROBE_BW with cwnd gain %v; want 2", s.BBR.CwndGain)
			}
		}
		last = s
	}
	if !modes[BBRStartup] || !modes[BBRDrain] || !modes[BBRProbeBW] || modes[""] {
		t.Errorf("modes seen %v; want startup, drain and probe_bw, never none", modes)
	}
	if !paced || !delivered {
		t.Errorf("pacing rate seen %v, delivery rate seen %v; want both", paced, delivered)
	}
	const rate = 10e6 / 8 // bytes per second
	if bw := float64(last.BBR.Bandwidth); bw < 0.8*rate || bw > 1.1*rate {
		t.Errorf("last bandwidth estimate %.0f B/s; want near the link's %.0f", bw, rate)
	}
	if m := last.BBR.MinRTT; m < 20*time.Millisecond || m > 22*time.Millisecond {
		t.Errorf("last min RTT %v; want the link's 20 ms and a little", m)
	}

	cubic := probedSamples(t, lc, "cubic", 256<<10)
	var cubicPaced bool
	for _, s := range cubic {
		cubicPaced = cubicPaced || s.PacingRate > 0
		if s.BBR != (BBRState{}) {
			t.Fatalf("CUBIC sample with BBR state %+v", s.BBR)
		}
	}
	if !cubicPaced {
		t.Error("CUBIC's samples have no pacing rate")
	}
}

// Kernel BBR's gains name its mode; other pairs name none.
func TestBBRModeOfGains(t *testing.T) {
	for _, c := range []struct {
		pacing, cwnd uint32
		want         string
	}{
		{739, 739, BBRStartup},
		{88, 739, BBRDrain},
		{320, 512, BBRProbeBW},
		{192, 512, BBRProbeBW},
		{256, 512, BBRProbeBW},
		{256, 256, BBRProbeRTT},
		{0, 0, BBRStartup}, // before the first ACK
		{256, 739, ""},
	} {
		if got := BBRModeOfGains(c.pacing, c.cwnd); got != c.want {
			t.Errorf("BBRModeOfGains(%d, %d) = %q; want %q", c.pacing, c.cwnd, got, c.want)
		}
	}
}
