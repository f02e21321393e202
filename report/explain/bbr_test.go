package explain

import (
	"slices"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// A BBR sender's samples give its spans in PROBE_RTT and long-term mode:
// from the first sample in the phase to the first after it (or, under
// way, to the last), what it delivered meanwhile, and the estimate before
// it; each costs its length less the time what it delivered takes at
// that estimate. A Breakdown of part of the run clips them to it. A
// CUBIC end's samples give none.
func TestBBRSpans(t *testing.T) {
	zero := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &Analyzer{}
	a.Observe(link.Event{Kind: link.EventSend, At: 0, Time: zero, Packet: tcpSeg(client, server, 0, 0, flagSYN, 0, nil)})
	bbr := func(at time.Duration, mode string, lt bool, bw uint64, delivered int) {
		a.TCP(tcpstack.Sample{At: zero.Add(at), Local: server, Remote: client, CAState: "Open", MSS: 1000, Delivered: delivered,
			BBR: tcpstack.BBRState{Mode: mode, LongTerm: lt, Bandwidth: bw, PacingGain: 1, CwndGain: 2}})
	}
	const s = time.Second
	bbr(1*s, tcpstack.BBRProbeBW, false, 1e6, 1000)
	bbr(10*s, tcpstack.BBRProbeBW, false, 1e6, 10000)
	bbr(10*s+1*ms, tcpstack.BBRProbeRTT, false, 1e6, 10001)
	bbr(10*s+100*ms, tcpstack.BBRProbeRTT, false, 1e6, 10020)
	bbr(10*s+201*ms, tcpstack.BBRProbeBW, false, 1e6, 10051) // 50 packets in 200 ms: 50 ms at 1 MB/s
	bbr(12*s, tcpstack.BBRProbeBW, true, 5e5, 11000)         // long-term, from an estimate of 1 MB/s
	bbr(14*s, tcpstack.BBRProbeBW, false, 1e6, 12000)        // 1 MB in 2 s: 1 s at 1 MB/s
	bbr(15*s, tcpstack.BBRProbeRTT, false, 1e6, 13000)
	bbr(15*s+100*ms, tcpstack.BBRProbeRTT, false, 1e6, 13002) // under way at the end: 2 ms of 100
	a.TCP(tcpstack.Sample{At: zero.Add(5 * s), Local: client, Remote: server, CAState: "Open", MSS: 1000, Delivered: 10})

	b := a.Breakdown(0, 16*s)
	want := []BBRSpan{
		{Local: server, Remote: client, Phase: ProbeRTT, From: 10*s + 1*ms, To: 10*s + 201*ms, Delivered: 50_000, Bandwidth: 1e6},
		{Local: server, Remote: client, Phase: LongTerm, From: 12 * s, To: 14 * s, Delivered: 1_000_000, Bandwidth: 1e6},
		{Local: server, Remote: client, Phase: ProbeRTT, From: 15 * s, To: 15*s + 100*ms, Ongoing: true, Delivered: 2000, Bandwidth: 1e6},
	}
	if !slices.Equal(b.BBR.Spans, want) {
		t.Errorf("spans\n%+v\nwant\n%+v", b.BBR.Spans, want)
	}
	if costs := []time.Duration{want[0].Cost(), want[1].Cost(), want[2].Cost()}; !slices.Equal(costs, []time.Duration{150 * ms, 1 * s, 98 * ms}) {
		t.Errorf("costs %v; want 150ms, 1s, 98ms", costs)
	}
	if b.BBR.N != [numBBRPhases]int{2, 1} || b.BBR.Time != [numBBRPhases]time.Duration{300 * ms, 2 * s} || b.BBR.Cost != [numBBRPhases]time.Duration{248 * ms, 1 * s} {
		t.Errorf("per phase: %v spans, %v long, costing %v; want [2 1], [300ms 2s], [248ms 1s]", b.BBR.N, b.BBR.Time, b.BBR.Cost)
	}
	if again := a.Breakdown(0, 16*s); !slices.Equal(again.BBR.Spans, b.BBR.Spans) {
		t.Errorf("a second Breakdown gives %+v", again.BBR.Spans)
	}

	part := a.Breakdown(0, 13*s)
	wantPart := []BBRSpan{want[0], {Local: server, Remote: client, Phase: LongTerm, From: 12 * s, To: 13 * s, Delivered: 500_000, Bandwidth: 1e6}}
	if !slices.Equal(part.BBR.Spans, wantPart) || part.BBR.Cost[LongTerm] != 500*ms {
		t.Errorf("up to 13 s: %+v, long-term cost %v\nwant %+v, 500ms", part.BBR.Spans, part.BBR.Cost[LongTerm], wantPart)
	}

	if (BBRSpan{From: 0, To: s, Delivered: 10}).Cost() != 0 {
		t.Error("a span without an estimate has a cost")
	}
}
