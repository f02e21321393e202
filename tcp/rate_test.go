package tcp

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// rateRig drives a bare sender's delivery-rate sampling (rate.go) by
// hand: segments sent at given instants, delivered by ACKs at others.
type rateRig struct {
	s   sender
	seq seqnum.Value
}

func newRateRig() *rateRig {
	r := &rateRig{seq: 1000}
	r.s.cc.cwnd = 100
	r.s.cc.mss = 1448
	r.s.minRTT.update(0, time.Millisecond) // as the handshake leaves it
	return r
}

// send transmits a new segment at at, as writeXmit does: counted in
// packets_out, then stamped.
func (r *rateRig) send(at time.Duration) *txSeg {
	t := &txSeg{seq: r.seq, end: r.seq.Add(1448), sentAt: at}
	r.seq = t.end
	r.s.packetsOut++
	r.s.rateSkbSent(t, true)
	return t
}

// ack is one ACK at at that cumulatively acknowledges segs and SACKs
// sacked; it returns its sample.
func (r *rateRig) ack(at time.Duration, segs []*txSeg, sacked ...*txSeg) rateSample {
	r.s.rs = rateSample{rttUS: -1}
	n := uint32(0)
	for _, t := range sacked {
		if t.flags&segSacked == 0 {
			t.flags |= segSacked
			r.s.sackedOut++
			r.s.delivered++
			n++
		}
		r.s.rateSkbDelivered(t)
	}
	for _, t := range segs {
		if t.flags&segSacked != 0 {
			r.s.sackedOut--
		} else {
			r.s.delivered++
			n++
		}
		r.s.packetsOut--
		r.s.rateSkbDelivered(t)
	}
	r.s.rateGen(at, n, 0)
	return r.s.rs
}

// One flight sent at once and acknowledged an RTT later: the sample is
// the flight over the RTT (the ACK phase), taken from the most recently
// sent segment.
func TestRateSampleOneFlight(t *testing.T) {
	r := newRateRig()
	var flight []*txSeg
	for range 10 {
		flight = append(flight, r.send(time.Second))
	}
	rs := r.ack(time.Second+100*time.Millisecond, flight)
	if rs.delivered != 10 || rs.intervalUS != 100000 || rs.ackedSacked != 10 {
		t.Fatalf("sample of 10 segments sent at once, ACKed 100 ms later: delivered %d over %d µs (acked %d); want 10 over 100000 µs",
			rs.delivered, rs.intervalUS, rs.ackedSacked)
	}
	if rs.priorDelivered != 0 || rs.lastEndSeq != flight[9].end {
		t.Errorf("the sample starts from prior_delivered %d, last_end_seq %d; want the last segment's: 0, %d", rs.priorDelivered, rs.lastEndSeq, flight[9].end)
	}
	if r.s.deliveredStamp != time.Second+100*time.Millisecond {
		t.Errorf("delivered_mstamp %v; want the ACK's time", r.s.deliveredStamp)
	}
	if got, want := r.s.deliveryRate(), uint64(10*1448*10); got != want {
		t.Errorf("tcpi_delivery_rate %d B/s; want %d (10 segments of 1448 bytes per 100 ms)", got, want)
	}
}

// Sending and ACKing are two phases of a flight; the longer one is the
// sample's interval. When ACKs come back compressed, faster than the
// packets were sent, the send phase is the longer (tcp_rate_gen).
func TestRateSampleLongerPhase(t *testing.T) {
	r := newRateRig()
	a := r.send(0)
	a2 := r.send(0)
	r.ack(70*time.Millisecond, []*txSeg{a}) // delivered_mstamp = 70 ms; first_tx_mstamp = 0
	b := r.send(75 * time.Millisecond)      // first_tx 0 (the flight goes on: a2 is out), delivered_mstamp 70 ms
	c := r.send(80 * time.Millisecond)
	// a2, b and c ACKed together 10 ms after c left: the ACK phase is
	// 90−70 = 20 ms, the send phase 80−0 = 80 ms.
	rs := r.ack(90*time.Millisecond, []*txSeg{a2, b, c})
	if rs.sndIntervalUS != 80000 || rs.rcvIntervalUS != 20000 || rs.intervalUS != 80000 || rs.delivered != 3 {
		t.Fatalf("send phase %d µs, ACK phase %d µs, interval %d µs, delivered %d; want 80000, 20000, the longer 80000, 3",
			rs.sndIntervalUS, rs.rcvIntervalUS, rs.intervalUS, rs.delivered)
	}

	// With nothing in flight a transmission starts a new flight: its
	// phases start at its own send time.
	d := r.send(200 * time.Millisecond)
	rs = r.ack(250*time.Millisecond, []*txSeg{d})
	if rs.sndIntervalUS != 0 || rs.rcvIntervalUS != 50000 {
		t.Errorf("a lone segment after idle: send phase %d µs, ACK phase %d µs; want 0 and 50000", rs.sndIntervalUS, rs.rcvIntervalUS)
	}
}

// A segment SACKed gives its delivery state once: when the cumulative
// ACK covers it later, the sample comes from the other segments.
func TestRateSampleSackedOnce(t *testing.T) {
	r := newRateRig()
	a := r.send(0)
	b := r.send(10 * time.Millisecond)
	rs := r.ack(100*time.Millisecond, nil, b)
	if rs.delivered != 1 || rs.lastEndSeq != b.end {
		t.Fatalf("SACK of b: sample delivered %d ending %d; want 1 ending at b (%d)", rs.delivered, rs.lastEndSeq, b.end)
	}
	if b.flags&segRateStamped != 0 {
		t.Fatal("b keeps its delivery state once SACKed; want it marked off")
	}
	rs = r.ack(110*time.Millisecond, []*txSeg{a, b})
	if rs.lastEndSeq != a.end || rs.ackedSacked != 1 {
		t.Errorf("cumulative ACK of a and the SACKed b: sample from the segment ending %d, %d newly delivered; want a's (%d), 1", rs.lastEndSeq, rs.ackedSacked, a.end)
	}
}

// Without delivery state (only segments SACKed before) there is no
// sample; nor when the interval is shorter than the minimum RTT.
func TestRateSampleInvalid(t *testing.T) {
	r := newRateRig()
	a := r.send(0)
	r.ack(50*time.Millisecond, nil, a)
	rs := r.ack(60*time.Millisecond, []*txSeg{a})
	if rs.delivered != -1 || rs.intervalUS != -1 {
		t.Errorf("ACK of a segment SACKed before: delivered %d, interval %d; want -1, -1", rs.delivered, rs.intervalUS)
	}

	r = newRateRig()
	r.s.minRTT = minRTT{}
	r.s.minRTT.update(0, 100*time.Millisecond)
	b := r.send(time.Second)
	rs = r.ack(time.Second+60*time.Millisecond, []*txSeg{b})
	if rs.intervalUS != -1 || rs.delivered != 1 {
		t.Errorf("a 60 ms sample with a 100 ms minimum RTT: interval %d, delivered %d; want -1 (invalid), 1", rs.intervalUS, rs.delivered)
	}
	if r.s.deliveryRate() != 0 {
		t.Errorf("an invalid sample set tcpi_delivery_rate to %d; want 0", r.s.deliveryRate())
	}
}

// The application-limited mark: set when the application writes with
// less than a segment unsent and the window open, carried by what is
// sent until then, cleared once what was in flight is delivered.
func TestRateSampleAppLimited(t *testing.T) {
	r := newRateRig()
	first := r.send(0)
	r.s.rateCheckAppLimited() // unsent 0, 1 in flight, cwnd 100: app-limited
	if want := r.s.delivered + 1; r.s.cc.appLimited != want {
		t.Fatalf("app_limited %d; want delivered + in flight = %d", r.s.cc.appLimited, want)
	}
	second := r.send(time.Millisecond)
	if first.txAppLimited || !second.txAppLimited {
		t.Fatalf("segments sent before and after the mark: app-limited %v, %v; want false, true", first.txAppLimited, second.txAppLimited)
	}
	rs := r.ack(100*time.Millisecond, []*txSeg{first})
	if rs.isAppLimited || r.s.cc.appLimited == 0 {
		t.Fatalf("ACK of the segment sent before the mark: sample app-limited %v, mark %d; want false and the mark kept", rs.isAppLimited, r.s.cc.appLimited)
	}
	rs = r.ack(101*time.Millisecond, []*txSeg{second})
	if !rs.isAppLimited || r.s.cc.appLimited != 0 {
		t.Errorf("ACK of the segment sent after: sample app-limited %v, mark %d; want true, the mark cleared", rs.isAppLimited, r.s.cc.appLimited)
	}

	// Limited by the window, the sender is not application-limited.
	r = newRateRig()
	r.s.cc.cwnd = 1
	r.send(0)
	r.s.rateCheckAppLimited()
	if r.s.cc.appLimited != 0 {
		t.Errorf("cwnd full: app_limited %d; want 0", r.s.cc.appLimited)
	}
}

// tcp_info keeps the last sample not application-limited, or an
// application-limited one only if its rate is higher.
func TestDeliveryRateKeepsHigherAppLimited(t *testing.T) {
	r := newRateRig()
	a := r.send(0)
	b := r.send(0)
	r.ack(100*time.Millisecond, []*txSeg{a, b}) // 2 per 100 ms
	want := r.s.deliveryRate()
	r.s.rateCheckAppLimited()
	c := r.send(100 * time.Millisecond)
	r.ack(300*time.Millisecond, []*txSeg{c}) // 1 per 200 ms, app-limited
	if got := r.s.deliveryRate(); got != want {
		t.Errorf("a slower app-limited sample changed tcpi_delivery_rate to %d; want %d kept", got, want)
	}
	if r.s.rateAppLimited {
		t.Error("tcpi_delivery_rate_app_limited set by a sample that was not kept")
	}
}
