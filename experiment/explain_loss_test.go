package experiment

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/explain"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// Loss recovery on the virtual clock, for both TCPs: losses placed with
// outages at instants a lossless run of the same case reveals, so that
// each case loses exactly what it means to. The figures are exact: a
// change in either TCP's recovery shows here first.

const ms = time.Millisecond

// explainCase runs c, watched by an Analyzer (and by also, if not nil),
// and returns the breakdown of the workload's time.
func explainCase(t *testing.T, c Case, also link.Observer) (workloads.Result, explain.Breakdown) {
	t.Helper()
	a := &explain.Analyzer{}
	c.Observe = func(e link.Event) {
		a.Observe(e)
		if also != nil {
			also(e)
		}
	}
	// explain's accounting, checked on exact instants; netemu explain's
	// tests run it on noisy ones (Case.Exact).
	c.Exact = true
	r, _, err := Emulated{}.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	from := a.Since(r.Started)
	b := a.Breakdown(from, from+r.Elapsed)
	var sum time.Duration
	for _, cat := range explain.Categories() {
		sum += b.Time[cat]
	}
	if sum != r.Elapsed {
		t.Errorf("categories add up to %v, elapsed %v", sum, r.Elapsed)
	}
	return r, b
}

// lossCase is 100 KB downloaded at 10 mbit over 20 ms, with the TCP's
// usual delayed ACKs (the link's stage for gVisor's).
func lossCase(impl tcpstack.Impl, outages ...link.Outage) Case {
	lc := link.Config{Delay: 10 * ms, Rate: 10e6, Outages: outages}
	if impl != tcpstack.Netemu {
		lc.DelayedACK = link.LinuxDelayedACK
	}
	return Case{Workload: workloads.Bulk{Size: 100 << 10}, Link: lc, TCP: tcpstack.TCPConfig{Impl: impl}, Seed: 1}
}

// dataSent returns the instants the server sent segments with data, in a
// run of c.
func dataSent(t *testing.T, c Case) []time.Duration {
	var at []time.Duration
	explainCase(t, c, func(e link.Event) {
		p := e.Packet
		if e.Kind == link.EventSend && len(p) > 40 && binary.BigEndian.Uint16(p[20:22]) == 80 && int(binary.BigEndian.Uint16(p[2:4])) > 20+int(p[32]>>4)*4 {
			at = append(at, e.At)
		}
	})
	if len(at) == 0 {
		t.Fatal("no data sent")
	}
	return at
}

// lossWant is what a lossy run's breakdown must say: the time of each
// loss-recovery category (and of the run), and the counts.
type lossWant struct {
	elapsed, fast, probe, timeout time.Duration
	loss                          explain.Loss
}

func (w lossWant) check(t *testing.T, impl tcpstack.Impl, r workloads.Result, b explain.Breakdown) {
	t.Helper()
	got := lossWant{r.Elapsed, b.Time[explain.FastRecovery], b.Time[explain.TailLossProbe], b.Time[explain.Timeout], b.Loss}
	if got != w {
		t.Errorf("%s: elapsed %v, fast retransmit %v, probes %v, timeouts %v, %+v\nwant elapsed %v, fast retransmit %v, probes %v, timeouts %v, %+v",
			impl, got.elapsed, got.fast, got.probe, got.timeout, got.loss, w.elapsed, w.fast, w.probe, w.timeout, w.loss)
	}
}

func repaired(fast, probe, timeout int) (r [len(explain.Breakdown{}.Time)]int) {
	r[explain.FastRecovery], r[explain.TailLossProbe], r[explain.Timeout] = fast, probe, timeout
	return r
}

// The tail of the download lost: nothing after it arrives to report it,
// so the sender's probe timer sends the last segment again (after two
// round trips and the minimum RTO, as both TCPs wait for a lone
// segment). From the loss to the ACK of the probe is the probe's. The
// last send is one segment for gVisor's TCP and two at one instant for
// netemu's, whose probe's SACK then shows the other lost (RACK): both
// are the probe's repairs.
func TestExplainTailLossProbe(t *testing.T) {
	for _, c := range []struct {
		impl tcpstack.Impl
		want lossWant
	}{
		{tcpstack.GVisor, lossWant{elapsed: 419435561, probe: 294075561, loss: explain.Loss{Repaired: repaired(0, 1, 0), Probes: 1, Episodes: 1}}},
		{tcpstack.Netemu, lossWant{elapsed: 302108257, probe: 177164257, loss: explain.Loss{Repaired: repaired(0, 2, 0), Probes: 1, Episodes: 1}}},
	} {
		sent := dataSent(t, lossCase(c.impl))
		last := sent[len(sent)-1]
		r, b := explainCase(t, lossCase(c.impl, link.Outage{Start: last, End: last + 1}), nil)
		c.want.check(t, c.impl, r, b)
	}
}

// The first flight lost whole, and the probe after it (an outage of
// 100 ms from the first data segment): only the retransmission timer can
// send again, and what follows belongs to the timeout. gVisor then sends
// one segment per timeout, netemu's TCP (as Linux) goes on at each ACK.
// The client's request, whose ACK the outage took, is probed again for
// nothing.
func TestExplainTimeout(t *testing.T) {
	for _, c := range []struct {
		impl tcpstack.Impl
		want lossWant
	}{
		{tcpstack.GVisor, lossWant{elapsed: 1179094462, probe: 10 * ms, timeout: 813766462, loss: explain.Loss{Repaired: repaired(0, 0, 10), Probes: 2, Timeouts: 3, Unneeded: 1, Episodes: 1}}},
		{tcpstack.Netemu, lossWant{elapsed: 576594657, probe: 10 * ms, timeout: 361781857, loss: explain.Loss{Repaired: repaired(0, 0, 11), Probes: 2, Timeouts: 1, Unneeded: 1, Episodes: 1}}},
	} {
		first := dataSent(t, lossCase(c.impl))[0]
		r, b := explainCase(t, lossCase(c.impl, link.Outage{Start: first, End: first + 100*ms}), nil)
		c.want.check(t, c.impl, r, b)
	}
}

// Random loss, on seeds where a timeout fires among the fast
// retransmits: for gVisor (3 % each way) after the ACKs of a fast
// retransmit were lost (the retransmission had got through, so the
// timeout repairs nothing, but its silence is the timeout's); for
// netemu's TCP (5 %, seed 7) one timeout among 26 recoveries, which
// repairs one lost segment, beside a tail-loss probe and one
// retransmission that repaired nothing the link lost.
func TestExplainRandomLoss(t *testing.T) {
	for _, c := range []struct {
		impl tcpstack.Impl
		loss float64
		seed uint64
		want lossWant
	}{
		{tcpstack.GVisor, 0.03, 2, lossWant{elapsed: 6697659202, fast: 1702693599, timeout: 195289604, loss: explain.Loss{Repaired: repaired(19, 0, 0), Timeouts: 1, Episodes: 19}}},
		{tcpstack.Netemu, 0.05, 7, lossWant{elapsed: 9528148302, fast: 3197383752, timeout: 526030400, loss: explain.Loss{Repaired: repaired(34, 0, 1), Probes: 1, Timeouts: 1, Unneeded: 1, Episodes: 26}}},
	} {
		lc := lossCase(c.impl)
		lc.Workload = workloads.Bulk{Size: 1 << 20}
		lc.Link.Delay, lc.Link.Loss, lc.Seed = 25*ms, link.RandomLoss(c.loss, 0), c.seed
		r, b := explainCase(t, lc, nil)
		c.want.check(t, c.impl, r, b)
	}
}

// Without loss the breakdown is what it was before loss recovery had
// categories of its own: the same figures, to the nanosecond, and none
// in loss recovery.
func TestExplainLosslessUnchanged(t *testing.T) {
	for _, c := range []struct {
		name string
		w    workloads.Workload
		rtt  time.Duration
		rate float64
		impl tcpstack.Impl
		// serialization, handshake, round trips, delayed-ACK holds
		want [4]time.Duration
	}{
		{"bulk", workloads.Bulk{Size: 1 << 20}, 50 * ms, 10e6, tcpstack.GVisor, [4]time.Duration{872804000, 50000000, 121605600, 0}},
		{"bulk", workloads.Bulk{Size: 1 << 20}, 50 * ms, 10e6, tcpstack.Netemu, [4]time.Duration{871056800, 50000000, 119459200, 0}},
		{"page", workloads.Page{}, 50 * ms, 10e6, tcpstack.GVisor, [4]time.Duration{111929600, 49520000, 265760000, 0}},
		{"keepalive", workloads.KeepAlive{Mode: workloads.Fresh, Requests: 5}, 100 * ms, 0, tcpstack.GVisor, [4]time.Duration{0, 500 * ms, 500 * ms, 0}},
		{"nagle", workloads.Nagle{}, 20 * ms, 0, tcpstack.GVisor, [4]time.Duration{0, 20 * ms, 2000 * ms, 1960 * ms}},
	} {
		lc := link.Config{Delay: c.rtt / 2, Rate: c.rate}
		if c.impl != tcpstack.Netemu {
			lc.DelayedACK = link.LinuxDelayedACK
		}
		r, b := explainCase(t, Case{Workload: c.w, Link: lc, TCP: tcpstack.TCPConfig{Impl: c.impl}, Seed: 1}, nil)
		got := [4]time.Duration{b.Time[explain.Serialization], b.Time[explain.Handshake], b.Time[explain.RoundTrip], b.Time[explain.DelayedACK]}
		if got != c.want || b.Time[explain.Other] != 0 || b.Loss != (explain.Loss{}) {
			t.Errorf("%s, %s: %v (other %v), loss %+v; want %v, none other, no loss", c.name, c.impl, got, b.Time[explain.Other], b.Loss, c.want)
		}
		if r.Elapsed != got[0]+got[1]+got[2]+got[3] {
			t.Errorf("%s, %s: elapsed %v", c.name, c.impl, r.Elapsed)
		}
	}
}

// The link sees every recovery netemu's TCP reports in its congestion
// state (tcpi_ca_state, sampled at each segment), on the download of
// issue #26. It sees more: a recovery that begins on the ACK that ends
// another, or one entered and left between two samples, shows in no
// sample.
func TestExplainSeesNetemuRecoveries(t *testing.T) {
	c := lossCase(tcpstack.Netemu)
	c.Workload = workloads.Bulk{}
	c.Link.Delay, c.Link.Loss = 25*ms, link.RandomLoss(0.02, 0)
	state := map[string]string{}
	entered := map[string]int{}
	c.Probe = func(s tcpstack.Sample) {
		k := s.Local.String() + s.Remote.String()
		if s.CAState != state[k] {
			entered[s.CAState]++
			state[k] = s.CAState
		}
	}
	_, b := explainCase(t, c, nil)
	if b.Loss.Episodes < entered["Recovery"]+entered["Loss"] || b.Loss.Timeouts < entered["Loss"] || entered["Recovery"] == 0 {
		t.Errorf("explain: %d recoveries, %d timeouts; netemu's TCP entered Recovery %d times, Loss %d", b.Loss.Episodes, b.Loss.Timeouts, entered["Recovery"], entered["Loss"])
	}
}
