package experiment

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/explain"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

func explainRun(t *testing.T, w workloads.Workload, rtt time.Duration, rate float64) (workloads.Result, explain.Breakdown) {
	t.Helper()
	rec := &explain.Analyzer{}
	c := Case{Workload: w, Link: link.Config{Delay: rtt / 2, Rate: rate, DelayedACK: link.LinuxDelayedACK}, TCP: tcpstack.TCPConfig{Impl: tcpstack.GVisor}, Seed: 1, Observe: rec.Observe, Exact: true}
	r, _, err := Emulated{}.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	b := rec.Breakdown(0, r.Elapsed)
	var sum time.Duration
	for _, c := range explain.Categories() {
		sum += b.Time[c]
	}
	if sum != r.Elapsed {
		t.Errorf("categories add up to %v, elapsed %v", sum, r.Elapsed)
	}
	return r, b
}

// The 40 ms Nagle stall is time spent waiting for delayed ACKs.
func TestNagleIsDelayedACKs(t *testing.T) {
	_, b := explainRun(t, workloads.Nagle{}, 0, 0)
	if s := b.Share(explain.DelayedACK); s < 0.9 {
		t.Errorf("delayed-ACK holds are %.0f%% of the time; want at least 90%%", s*100)
	}
	var held int
	for _, h := range b.Holds {
		if h.Held == 40*time.Millisecond {
			held++
		}
	}
	if held != 49 || b.HeldACKs != 49 || len(b.Waiting) != 49 || b.Waited != 49 || b.HeldTime != 49*40*time.Millisecond {
		t.Errorf("%d of %d ACKs held 40 ms by the timer (%v in all), %d of %d segments waited; want 49 of each, 1.96s", held, b.HeldACKs, b.HeldTime, len(b.Waiting), b.Waited)
	}
	for _, w := range b.Waiting {
		if w.Waited != 40*time.Millisecond || w.Len != 4 {
			t.Errorf("waiting segment %+v; want 4 bytes after 40ms", w)
		}
	}
	_, off := explainRun(t, workloads.Nagle{NoDelay: true, Rounds: 10}, 20*time.Millisecond, 0)
	if off.Time[explain.DelayedACK] != 0 || len(off.Waiting) != 0 || off.Share(explain.RoundTrip)+off.Share(explain.Handshake) < 0.99 {
		t.Errorf("Nagle off at 20 ms: %+v; want round trips only", off.Time)
	}
}

// Bulk at a low rate is serialization; keep-alive requests at a long RTT
// are round trips.
func TestBulkAndKeepAliveShapes(t *testing.T) {
	_, bulk := explainRun(t, workloads.Bulk{Size: 1 << 20}, 50*time.Millisecond, 5e6)
	if s := bulk.Share(explain.Serialization); s < 0.8 {
		t.Errorf("bulk at 5 mbit: serialization %.0f%%; want most of the time", s*100)
	}
	_, ka := explainRun(t, workloads.KeepAlive{Mode: workloads.Fresh, Requests: 5}, 100*time.Millisecond, 0)
	if ka.Share(explain.Handshake) < 0.45 || ka.Share(explain.RoundTrip) < 0.45 {
		t.Errorf("keepalive fresh: handshakes %.0f%%, requests %.0f%%; want about half each", ka.Share(explain.Handshake)*100, ka.Share(explain.RoundTrip)*100)
	}
}

// A retransmission after a silence of an RTO is counted as a timeout.
func TestTimeoutAttributed(t *testing.T) {
	rec := &explain.Analyzer{}
	c := Case{
		Workload: workloads.Bulk{Size: 64 << 10},
		Link:     link.Config{Delay: 10 * time.Millisecond, Outages: []link.Outage{{Start: 25 * time.Millisecond, End: 600 * time.Millisecond}}},
		Seed:     1, Observe: rec.Observe,
	}
	r, _, err := Emulated{}.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	b := rec.Breakdown(0, r.Elapsed)
	if b.Retransmits == 0 || b.Time[explain.Timeout] < 200*time.Millisecond {
		t.Errorf("across a 575 ms outage: %d retransmits, %v of timeouts; want some of each", b.Retransmits, b.Time[explain.Timeout])
	}
}

// A SYN lost in an outage is sent again after the initial RTO of 1 s:
// that second is a retransmission timeout, and the SYN a retransmission.
func TestSYNTimeoutAttributed(t *testing.T) {
	rec := &explain.Analyzer{}
	c := Case{
		Workload: workloads.KeepAlive{Mode: workloads.Fresh, Requests: 1},
		Link:     link.Config{Delay: 10 * time.Millisecond, Outages: []link.Outage{{Start: 0, End: time.Millisecond}}},
		Seed:     1, Observe: rec.Observe,
	}
	r, _, err := Emulated{}.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	b := rec.Breakdown(0, r.Elapsed)
	if b.Retransmits != 1 || b.Time[explain.Timeout] < 900*time.Millisecond || b.Time[explain.Other] > 100*time.Millisecond {
		t.Errorf("a SYN lost at the start: %d retransmits, %v of timeouts, %v other; want 1 and about 1 s of timeouts", b.Retransmits, b.Time[explain.Timeout], b.Time[explain.Other])
	}
}

// A BBR sender's stretches in PROBE_RTT or long-term mode reach the
// record, each with its cost.
func TestExplanationBBRSpans(t *testing.T) {
	var bd explain.Breakdown
	bd.BBR.Spans = []explain.BBRSpan{{Local: netip.MustParseAddrPort("198.18.0.2:80"), Remote: netip.MustParseAddrPort("198.18.0.1:40000"),
		Phase: explain.ProbeRTT, From: 10 * time.Second, To: 10200 * time.Millisecond, Delivered: 50_000, Bandwidth: 1_000_000}}
	ex := NewExplanation(bd)
	want := BBRSpan{Conn: "198.18.0.2:80→198.18.0.1:40000", Phase: "PROBE_RTT", FromMs: 10000, ToMs: 10200, CostMs: 150}
	if len(ex.BBR) != 1 || ex.BBR[0] != want {
		t.Errorf("bbr_spans %+v; want [%+v]", ex.BBR, want)
	}
}
