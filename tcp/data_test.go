package tcp

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// noSACKPeer negotiates timestamps and window scaling but not SACK, so
// that no tail-loss probe (which needs SACK, tcp_schedule_loss_probe)
// comes before the RTO.
var noSACKPeer = peerOpts{mss: 1460, ws: 7, ts: true, window: 64240}

// acceptAfter is accept with the handshake's ACK arriving rtt after the
// SYN-ACK left, which gives the connection its first RTT sample
// (tcp_synack_rtt_meas).
func (h *harness) acceptAfter(p peerOpts, rtt time.Duration) *conn {
	h.t.Helper()
	h.handshakeRTT = rtt
	c, _ := h.accept(p)
	h.handshakeRTT = 0
	return c
}

// The initial window is ten segments (RFC 6928, TCP_INIT_CWND), sent at
// once; the first RTO after one RTT sample of 100 ms is srtt + max(4 *
// mdev, TCP_RTO_MIN) = 100 + 200 ms (tcp_rtt_estimator's first sample:
// mdev = m/2, rttvar = max(4 * mdev, 200 ms); __tcp_set_rto), and each
// expiry retransmits the head alone and doubles it (tcp_retransmit_timer),
// each on the timer wheel (300 ms is 75 jiffies, on level 1: up to 8
// jiffies late).
func TestInitialWindowAndRTOBackoff(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(noSACKPeer, 100*time.Millisecond)
	start := h.now()
	o := c.writeInitialWindow(20)
	for i, s := range o {
		if len(s.payload) != 1448 || s.at != start || s.seq != c.rcvNxt.Add(seqnum.Size(i*1448)) {
			t.Fatalf("segment %d: %v; want 1448 bytes at %d, at %v", i, s, c.rcvNxt.Add(seqnum.Size(i*1448)), start)
		}
	}
	if rto := c.ep.(*endpoint).TCPInfo().RTO; rto != 300*time.Millisecond {
		t.Errorf("RTO %v after one 100 ms sample; want 300ms", rto)
	}
	head := o[0].seq
	var at []time.Duration
	for range 4 {
		r := h.advanceUntilOut(10 * time.Second)
		if len(r) != 1 || r[0].seq != head || len(r[0].payload) != 1448 {
			t.Fatalf("at %v: %s; want the head segment alone again", h.now(), outsString(r))
		}
		at = append(at, r[0].at-start)
	}
	want := wheelChain(start, 300*time.Millisecond, 600*time.Millisecond, 1200*time.Millisecond, 2400*time.Millisecond)
	if !equalDurations(at, want) {
		t.Errorf("retransmissions at %v after the first send; want %v (300 ms doubling, on the wheel)", at, want)
	}
}

// The receiver's ACKs (tcp_event_data_recv, __tcp_ack_snd_check,
// tcp_send_delayed_ack): at the start every segment is ACKed at once
// (quick-ACK mode: at least TCP_MAX_QUICKACKS, 16, more while
// tcp_grow_window raises the window); after that an ACK for every
// second full segment; a lone segment's ACK waits TCP_ATO_MIN, 10
// jiffies: on the wheel's level 0 its timer runs on the eleventh tick,
// 40 to 44 ms at HZ 250.
func TestDelayedACK(t *testing.T) {
	h := newHarness(t, Options{})
	// No timestamps: no receiver RTT, so no buffer auto-tuning moves the
	// window while the test runs.
	c, _ := h.accept(quietPeer)
	if quick := c.leaveQuickAck(); quick < 16 {
		t.Errorf("%d segments ACKed at once at the start; want at least 16 (TCP_MAX_QUICKACKS)", quick)
	}
	// The first segment after quick-ACK mode waits; the second is ACKed
	// with it, on arrival, and so on.
	for i := range 10 {
		c.send(header.TCPFlagAck, fill(1460))
		if o := h.take(); len(o) != 1 || o[0].ack != c.sndNxt {
			t.Fatalf("pair %d: the second segment got %s; want one ACK of both, %d", i, outsString(o), c.sndNxt)
		}
		c.read()
		h.none("reading a pair already ACKed")
		c.send(header.TCPFlagAck, fill(1460))
		if i < 9 {
			h.none("the first segment of a pair")
			c.read()
			h.none("reading the first segment of a pair")
		}
	}
	sent := h.now()
	o := h.advanceUntilOut(time.Second)
	if len(o) != 1 || o[0].ack != c.sndNxt || o[0].at != onWheel(sent, 40*time.Millisecond) {
		t.Errorf("a lone segment's ACK: %s; want one ACK of %d at %v, 40 ms on the wheel after it", outsString(o), c.sndNxt, onWheel(sent, 40*time.Millisecond))
	}
}

// quietPeer negotiates SACK but no timestamps: with no receiver RTT
// measurement, no buffer auto-tuning moves the window while a test
// runs.
var quietPeer = peerOpts{mss: 1460, ws: 7, sack: true, window: 64240}

// leaveQuickAck sends full segments from the peer, each read at once,
// until one is not ACKed on arrival: quick-ACK mode is over. It returns
// how many were ACKed at once; the last segment's ACK is pending.
func (c *conn) leaveQuickAck() int {
	h := c.h
	h.t.Helper()
	quick := 0
	for quick < 100 {
		c.send(header.TCPFlagAck, fill(1460))
		o := h.take()
		c.read()
		if len(o) == 0 {
			return quick
		}
		if len(o) != 1 || o[0].ack != c.sndNxt {
			h.t.Fatalf("segment %d: %s; want one ACK of %d", quick, outsString(o), c.sndNxt)
		}
		quick++
	}
	h.t.Fatalf("quick-ACK mode never ended")
	return 0
}

// Out of quick-ACK mode, the segment that fills a hole is ACKed at once
// (RFC 5681 section 4.2, tcp_data_queue's ICSK_ACK_NOW), as is the
// out-of-order one before it (__tcp_ack_snd_check's dup_ack_counter),
// even when both are small. The buffer is fixed and small, so that the
// window is at its largest once quick-ACK mode ends, and no window growth
// (tcp_grow_window's quick-ACK) hides the rule.
func TestHoleFillACKedAtOnce(t *testing.T) {
	h := newHarness(t, Options{ReceiveBuffer: 32768, MaxReceiveBuffer: 32768})
	c, _ := h.accept(quietPeer)
	c.leaveQuickAck()
	c.send(header.TCPFlagAck, fill(1460)) // completes the pair
	c.saw(h.take()...)
	c.read()
	// A small in-order segment takes the window to its largest for
	// larger ones (tcp_grow_window stops at the free space).
	c.send(header.TCPFlagAck, fill(130))
	c.saw(h.take()...)
	c.read()
	h.none("reading")
	base := c.sndNxt
	c.sendAt(base+200, header.TCPFlagAck, fill(200))
	if o := h.takeOne(); o.ack != base || len(o.opts.SACKBlocks) != 1 {
		t.Fatalf("ACK of small out-of-order data: %v; want ack %d with a SACK block", o, base)
	}
	c.sendAt(base, header.TCPFlagAck, fill(200))
	if o := h.takeOne(); o.ack != base+400 {
		t.Errorf("ACK of the hole: %v; want an immediate ACK of %d", o, base+400)
	}
}

// Out-of-order data is ACKed at once with a SACK block for it (RFC 2018,
// tcp_data_queue_ofo); a duplicate gets an immediate ACK whose first
// block is a D-SACK (RFC 2883, tcp_dsack_set); the segment that fills
// the hole is ACKed at once (RFC 5681 section 4.2) and the data reads
// in order.
func TestOutOfOrderSACKAndDSACK(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	base := c.sndNxt
	data := fill(4 * 1448)
	seg := func(i int) []byte { return data[i*1448 : (i+1)*1448] }
	at := func(i int) seqnum.Value { return base.Add(seqnum.Size(i * 1448)) }
	c.sendAt(at(0), header.TCPFlagAck, seg(0))
	c.saw(h.take()...)
	c.sendAt(at(2), header.TCPFlagAck, seg(2))
	o := h.takeOne()
	if o.ack != at(1) || len(o.opts.SACKBlocks) != 1 || o.opts.SACKBlocks[0] != (header.SACKBlock{Start: at(2), End: at(3)}) {
		t.Errorf("ACK of out-of-order data: %v; want ack %d with SACK [%d, %d)", o, at(1), at(2), at(3))
	}
	c.sendAt(at(3), header.TCPFlagAck, seg(3))
	o = h.takeOne()
	if o.ack != at(1) || len(o.opts.SACKBlocks) != 1 || o.opts.SACKBlocks[0] != (header.SACKBlock{Start: at(2), End: at(4)}) {
		t.Errorf("ACK of more out-of-order data: %v; want ack %d with SACK [%d, %d)", o, at(1), at(2), at(4))
	}
	c.sendAt(at(0), header.TCPFlagAck, seg(0))
	o = h.takeOne()
	if o.ack != at(1) || len(o.opts.SACKBlocks) != 2 || o.opts.SACKBlocks[0] != (header.SACKBlock{Start: at(0), End: at(1)}) {
		t.Errorf("ACK of a duplicate: %v; want ack %d with D-SACK [%d, %d) first, then the SACK block", o, at(1), at(0), at(1))
	}
	c.sendAt(at(1), header.TCPFlagAck, seg(1))
	o = h.takeOne()
	if o.ack != at(4) || len(o.opts.SACKBlocks) != 0 {
		t.Errorf("ACK of the hole's data: %v; want ack %d without SACK blocks", o, at(4))
	}
	got, err := c.read()
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("read %d bytes, %v; want the %d bytes in order", len(got), err, len(data))
	}
}

// The peer's FIN moves the connection to CLOSE-WAIT and reads end; our
// FIN follows CloseWrite, and the peer's ACK of it closes the connection
// (RFC 9293 section 3.6, LAST-ACK).
func TestPassiveClose(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("request"))
	c.saw(h.take()...)
	c.send(header.TCPFlagFin|header.TCPFlagAck, nil)
	if c.state() != stateCloseWait {
		t.Fatalf("state %v after the peer's FIN; want CLOSE-WAIT", c.state())
	}
	o := h.advanceUntilOut(200 * time.Millisecond)
	if len(o) != 1 || o[0].ack != c.sndNxt {
		t.Fatalf("after the peer's FIN: %s; want its ACK within TCP_DELACK_MAX", outsString(o))
	}
	got, err := c.read()
	if string(got) != "request" || err != nil {
		t.Fatalf("read %q, %v; want the request", got, err)
	}
	if _, err := c.read(); err == nil {
		t.Fatalf("read after the data: no error; want the end of the stream")
	} else if _, ok := err.(*tcpip.ErrClosedForReceive); !ok {
		t.Fatalf("read after the data: %v; want the end of the stream", err)
	}
	c.write([]byte("reply"))
	c.saw(h.take()...)
	if err := c.ep.Shutdown(tcpip.ShutdownWrite); err != nil {
		t.Fatal(err)
	}
	fin := h.takeOne()
	if !fin.has(header.TCPFlagFin) || fin.seq != c.rcvNxt {
		t.Fatalf("after CloseWrite: %v; want a FIN at %d", fin, c.rcvNxt)
	}
	if c.state() != stateLastAck {
		t.Errorf("state %v after our FIN; want LAST-ACK", c.state())
	}
	c.saw(fin)
	c.ackUpTo(c.rcvNxt)
	h.none("after the ACK of our FIN")
	if c.state() != stateClosed {
		t.Errorf("state %v after the ACK of our FIN; want CLOSED", c.state())
	}
}

// Our FIN first: FIN-WAIT-1, FIN-WAIT-2 once it is ACKed, data from the
// peer still read (half-close), then the peer's FIN is ACKed at once and
// the connection waits in TIME-WAIT for TCP_TIMEWAIT_LEN, 60 s,
// re-ACKing a retransmitted FIN (tcp_timewait_state_process); after it
// a segment meets no connection and is reset.
func TestActiveCloseTimeWait(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	if err := c.ep.Shutdown(tcpip.ShutdownWrite); err != nil {
		t.Fatal(err)
	}
	fin := h.takeOne()
	if !fin.has(header.TCPFlagFin) || c.state() != stateFinWait1 {
		t.Fatalf("after CloseWrite: %v in %v; want a FIN, FIN-WAIT-1", fin, c.state())
	}
	c.saw(fin)
	c.ackUpTo(c.rcvNxt)
	if c.state() != stateFinWait2 {
		t.Fatalf("state %v after the ACK of our FIN; want FIN-WAIT-2", c.state())
	}
	h.none("the ACK of our FIN")
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("more"))
	h.advance(time.Second)
	if o := h.take(); len(o) != 1 || o[0].flags != header.TCPFlagAck || o[0].seq != c.rcvNxt || o[0].ack != c.sndNxt {
		t.Fatalf("answer to data in FIN-WAIT-2: %s; want one ACK of %d at %d", outsString(o), c.sndNxt, c.rcvNxt)
	}
	if got, err := c.read(); string(got) != "more" || err != nil {
		t.Fatalf("read in FIN-WAIT-2: %q, %v; want the peer's data", got, err)
	}
	c.send(header.TCPFlagFin|header.TCPFlagAck, nil)
	o := h.takeOne()
	if o.flags != header.TCPFlagAck || o.ack != c.sndNxt {
		t.Fatalf("answer to the peer's FIN in FIN-WAIT-2: %v; want an immediate ACK of %d", o, c.sndNxt)
	}
	if c.state() != stateTimeWait {
		t.Fatalf("state %v; want TIME-WAIT", c.state())
	}
	twStart := h.now()
	h.advance(30 * time.Second)
	c.sendAt(c.sndNxt-1, header.TCPFlagFin|header.TCPFlagAck, nil)
	if o := h.takeOne(); o.flags != header.TCPFlagAck || o.ack != c.sndNxt {
		t.Errorf("answer to a retransmitted FIN in TIME-WAIT: %v; want an ACK of %d", o, c.sndNxt)
	}
	restart := h.now()
	h.advance(onWheel(restart, 60*time.Second) - restart - time.Millisecond)
	if c.state() != stateTimeWait {
		t.Fatalf("state %v %v after the FIN was ACKed again; want TIME-WAIT still (60 s from the last FIN, on the wheel)", c.state(), h.now()-restart)
	}
	h.advance(time.Millisecond)
	if c.state() != stateClosed {
		t.Errorf("state %v %v into TIME-WAIT; want CLOSED", c.state(), h.now()-twStart)
	}
	c.send(header.TCPFlagAck, []byte("late"))
	if o := h.takeOne(); !o.has(header.TCPFlagRst) {
		t.Errorf("answer to a segment after TIME-WAIT: %v; want a reset", o)
	}
}

// Resets (RFC 5961 section 3.2, tcp_validate_incoming): one outside the
// window is ignored, one in it but not at rcv_nxt gets a challenge ACK
// (at most one per 500 ms), one exactly at rcv_nxt ends the connection
// with ECONNRESET.
func TestResetValidation(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	c.sendAt(c.sndNxt.Add(1<<30), header.TCPFlagRst, nil)
	h.none("a reset outside the window")
	c.sendAt(c.sndNxt.Add(1000), header.TCPFlagRst, nil)
	o := h.takeOne()
	if o.flags != header.TCPFlagAck || o.ack != c.sndNxt || o.seq != c.rcvNxt {
		t.Errorf("answer to an in-window reset: %v; want a challenge ACK of %d", o, c.sndNxt)
	}
	if c.state() != stateEstablished {
		t.Fatalf("state %v after a non-exact reset; want ESTABLISHED", c.state())
	}
	// Challenge ACKs and ACKs of out-of-window segments are rate limited
	// to one per tcp_invalid_ratelimit, 500 ms (tcp_oow_rate_limited);
	// out-of-window data is always answered.
	c.sendAt(c.sndNxt.Add(2000), header.TCPFlagRst, nil)
	h.none("a second in-window reset at once")
	c.sendAt(c.sndNxt.Add(1<<30), header.TCPFlagAck, nil)
	h.none("an out-of-window ACK right after a challenge ACK")
	c.sendAt(c.sndNxt.Add(1<<30), header.TCPFlagAck, []byte("data"))
	if o := h.takeOne(); o.ack != c.sndNxt {
		t.Errorf("answer to out-of-window data: %v; want an ACK of %d", o, c.sndNxt)
	}
	h.advance(500 * time.Millisecond)
	c.sendAt(c.sndNxt.Add(1000), header.TCPFlagRst, nil)
	if o := h.takeOne(); o.flags != header.TCPFlagAck || o.ack != c.sndNxt {
		t.Errorf("answer to an in-window reset 500 ms later: %v; want a challenge ACK", o)
	}
	c.sendAt(c.sndNxt, header.TCPFlagRst, nil)
	h.none("an exact reset")
	if c.state() != stateClosed {
		t.Fatalf("state %v after an exact reset; want CLOSED", c.state())
	}
	if _, err := c.read(); err == nil {
		t.Errorf("read after a reset: no error; want ECONNRESET")
	} else if _, ok := err.(*tcpip.ErrConnectionReset); !ok {
		t.Errorf("read after a reset: %v; want ECONNRESET", err)
	}
}

// Keepalive (tcp_keepalive_timer): after TCP_KEEPIDLE of silence a probe,
// a segment one below snd_una; TCP_KEEPINTVL later another; an answer
// restarts the idle time; after TCP_KEEPCNT unanswered probes the
// connection is reset and fails with ETIMEDOUT.
func TestKeepalive(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	c.ep.SocketOptions().SetKeepAlive(true)
	idle, intvl := tcpip.KeepaliveIdleOption(10*time.Second), tcpip.KeepaliveIntervalOption(5*time.Second)
	if err := c.ep.SetSockOpt(&idle); err != nil {
		t.Fatal(err)
	}
	if err := c.ep.SetSockOpt(&intvl); err != nil {
		t.Fatal(err)
	}
	if err := c.ep.SetSockOptInt(tcpip.KeepaliveCountOption, 3); err != nil {
		t.Fatal(err)
	}
	start := h.now()
	probe := func(want time.Duration) {
		t.Helper()
		o := h.advanceUntilOut(time.Minute)
		if len(o) != 1 || o[0].flags != header.TCPFlagAck || len(o[0].payload) != 0 || o[0].seq != c.rcvNxt-1 || o[0].at-start != want {
			t.Fatalf("%s; want a keepalive probe at %d, %v after the start", outsString(o), c.rcvNxt-1, want)
		}
		c.saw(o...)
	}
	// Each wait is a keepalive timer on the wheel (10 s is 2500 jiffies,
	// on level 2: up to 64 jiffies late).
	p1 := onWheel(start, 10*time.Second)
	p2 := onWheel(p1, 5*time.Second)
	probe(p1 - start)
	probe(p2 - start)
	c.send(header.TCPFlagAck, nil) // the answer, at p2
	// The timer set at the second probe finds the connection idle for
	// less than 10 s since the answer and waits for the rest.
	woke := onWheel(p2, 5*time.Second)
	p3 := onWheel(woke, 10*time.Second-(woke-p2))
	p4 := onWheel(p3, 5*time.Second)
	p5 := onWheel(p4, 5*time.Second)
	probe(p3 - start)
	probe(p4 - start)
	probe(p5 - start)
	o := h.advanceUntilOut(time.Minute)
	if rst := onWheel(p5, 5*time.Second); len(o) != 1 || !o[0].has(header.TCPFlagRst) || o[0].at != rst {
		t.Fatalf("%s; want a reset at %v, after three unanswered probes", outsString(o), rst)
	}
	if _, err := c.read(); err == nil {
		t.Errorf("read after keepalive gave up: no error; want ETIMEDOUT")
	} else if _, ok := err.(*tcpip.ErrTimeout); !ok {
		t.Errorf("read after keepalive gave up: %v; want ETIMEDOUT", err)
	}
}

// Zero-window probes (tcp_probe_timer, tcp_send_probe0): with the peer's
// window shut and data waiting, a probe one below snd_una after the RTO,
// then at doubling intervals; a window update lets the data go.
func TestZeroWindowProbe(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	c.write(fill(1000))
	c.saw(h.take()...)
	c.p.window = 0
	h.advance(100 * time.Millisecond)
	c.ackUpTo(c.rcvNxt)
	c.write(fill(3000))
	h.none("data with a shut window")
	rto := c.ep.(*endpoint).TCPInfo().RTO
	start := h.now()
	var at []time.Duration
	for range 4 {
		o := h.advanceUntilOut(time.Minute)
		if len(o) != 1 || len(o[0].payload) != 0 || o[0].seq != c.rcvNxt-1 {
			t.Fatalf("%s; want a window probe at %d", outsString(o), c.rcvNxt-1)
		}
		at = append(at, o[0].at-start)
		c.saw(o...)
		c.send(header.TCPFlagAck, nil) // the answer: still shut
	}
	want := wheelChain(start, rto, 2*rto, 4*rto, 8*rto)
	if !equalDurations(at, want) {
		t.Errorf("probes at %v; want %v (the RTO, %v, doubling, on the wheel)", at, want, rto)
	}
	// A window smaller than a segment: sender SWS avoidance sends
	// nothing at once (tcp_snd_wnd_test), the next probe carries what
	// fits (tcp_write_wakeup).
	c.p.window = 8
	c.send(header.TCPFlagAck, nil)
	h.none("a window of 1024 bytes, less than a segment")
	o := h.advanceUntilOut(time.Minute)
	// The ACK at the fourth probe rearms the probe timer with the
	// backoff it has (tcp_ack_probe): 16 RTOs.
	next := onWheel(start+want[3], 16*rto)
	if len(o) != 1 || o[0].seq != c.rcvNxt || len(o[0].payload) != 8<<7 || o[0].at != next {
		t.Fatalf("after the window opened to 8 << 7 bytes: %s; want 1024 bytes at %d at %v", outsString(o), c.rcvNxt, next)
	}
	c.saw(o...)
	c.p.window = 1000
	c.ackUpTo(c.rcvNxt)
	o = dataOuts(h.take())
	if len(o) != 2 || len(o[0].payload)+len(o[1].payload) != 3000-1024 {
		t.Errorf("after the window opened wide: %s; want the remaining %d bytes", outsString(o), 3000-1024)
	}
}

// Nagle with Minshall's rule (RFC 896; tcp_nagle_check): with
// TCP_NODELAY off, a partial segment waits while a partial segment is
// unacknowledged; full segments go; the ACK of the small one releases
// the rest. With TCP_NODELAY (the default here) nothing waits.
func TestNagleMinshall(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	c.ep.SocketOptions().SetDelayOption(true)
	c.write(fill(100))
	o := h.takeOne()
	if len(o.payload) != 100 {
		t.Fatalf("first small write: %v; want its 100 bytes at once (nothing in flight)", o)
	}
	small := o
	c.write(fill(100))
	h.none("a second small write while the first is unacknowledged")
	c.write(fill(2000))
	o = h.takeOne()
	if len(o.payload) != 1448 || o.seq != small.seq+100 {
		t.Fatalf("after 2100 bytes were queued: %v; want one full segment at %d", o, small.seq+100)
	}
	c.saw(small)
	c.ackUpTo(small.seq + 100)
	o = h.takeOne()
	if len(o.payload) != 652 {
		t.Errorf("after the small segment was ACKed: %v; want the remaining 652 bytes", o)
	}

	h2 := newHarness(t, Options{})
	c2, _ := h2.accept(linuxPeer)
	c2.write(fill(100))
	c2.write(fill(100))
	if o := h2.take(); len(o) != 2 {
		t.Errorf("two small writes with TCP_NODELAY: %s; want both at once", outsString(o))
	}
}

// The RTO gives up once tcp_retries2 (15) retransmissions' worth of time
// has passed, as retransmits_timed_out models it from TCP_RTO_MIN:
// 200 ms doubling to TCP_RTO_MAX, 924.6 s; it ends the connection with
// ETIMEDOUT and sends nothing (tcp_write_err).
func TestRetransmitGivesUp(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(noSACKPeer, 100*time.Millisecond)
	start := h.now()
	c.write(fill(100))
	h.take()
	var at []time.Duration
	for {
		o := h.advanceUntilOut(200 * time.Second)
		if len(o) == 0 {
			break
		}
		if len(o) != 1 || len(o[0].payload) != 100 {
			t.Fatalf("%s; want the segment again", outsString(o))
		}
		at = append(at, o[0].at-start)
	}
	rto := 300 * time.Millisecond
	var rtos []time.Duration
	for range 15 {
		rtos = append(rtos, rto)
		rto = min(2*rto, 120*time.Second)
	}
	want := wheelChain(start, rtos...)
	if !equalDurations(at, want) {
		t.Errorf("retransmissions at %v; want %v", at, want)
	}
	if c.state() != stateClosed {
		t.Fatalf("state %v %v after the first send; want CLOSED", c.state(), h.now()-start)
	}
	if _, err := c.read(); err == nil {
		t.Errorf("read after the RTO gave up: no error; want ETIMEDOUT")
	} else if _, ok := err.(*tcpip.ErrTimeout); !ok {
		t.Errorf("read after the RTO gave up: %v; want ETIMEDOUT", err)
	}
}

// SACK blocks a sender owes its peer take their room from the data
// (tcp_current_mss counts tcp_established_options): while out-of-order
// data waits, new segments are 12 bytes shorter for one block; a segment
// cut before the blocks were due goes without them; nothing is ever
// fragmented.
func TestSACKBlocksTakeRoomFromData(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	c.write(fill(28000))
	first := h.take()
	c.saw(first...)
	// The peer's data arrives with a hole while it ACKs two segments.
	c.rcvNxt = first[2].seq
	c.sendAt(c.sndNxt+1000, header.TCPFlagAck, fill(500))
	o := h.take()
	var sawData bool
	for _, s := range o {
		if len(s.payload) == 0 {
			continue
		}
		sawData = true
		if len(s.opts.SACKBlocks) != 1 || len(s.payload) != 1448-12 {
			t.Errorf("new data while a SACK block is owed: %v; want 1436 bytes and the block", s)
		}
	}
	if !sawData {
		t.Fatalf("the ACK of two segments sent no new data: %s", outsString(o))
	}
	// The head's retransmission was cut at 1448 bytes: it goes without
	// the block (the harness fails on a fragment). A tail-loss probe of
	// new data may come first.
	var r []out
	for range 3 {
		if r = h.advanceUntilOut(5 * time.Second); len(r) > 0 && r[0].seq == first[2].seq {
			break
		}
	}
	if len(r) == 0 || len(r[0].payload) != 1448 || r[0].seq != first[2].seq {
		t.Fatalf("after a timeout: %s; want the head, 1448 bytes", outsString(r))
	}
}

// RACK's reordering timer (RFC 8985 section 6.2, tcp_rack_mark_lost): an
// ACK with a SACK of a segment sent with an unacknowledged one before it, with
// fewer than three SACKed, leaves the earlier one a reordering window
// of min_rtt/4; the timer for it, usecs_to_jiffies(25 ms + 2 ms) = 7
// jiffies at HZ 250 (Linux 6.6, "tcp: fix excessive TLP and RACK
// timeouts from HZ rounding"; before it, 25 ms rounded up plus 2
// jiffies, 9), on the timer wheel, then marks it lost and retransmits it. The RTO or TLP
// timer must not replace it (tcp_ack leaves it when
// tcp_identify_packet_loss clears FLAG_SET_XMIT_TIMER).
func TestRACKReorderTimer(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	c.write(fill(10 * 1448))
	o := h.take()
	c.saw(o...)
	if len(o) != 10 {
		t.Fatalf("sent %d segments; want 10", len(o))
	}
	h.advance(100 * time.Millisecond)
	// The first segment is ACKed, the third SACKed: the second waits.
	c.rcvNxt = o[1].seq
	c.send(header.TCPFlagAck, nil, optSACK(o[2].seq, o[3].seq))
	c.saw(h.take()...) // new data the ACK let out
	sacked := h.now()
	r := h.advanceUntilOut(time.Second)
	if len(r) == 0 || r[0].seq != o[1].seq || r[0].at != onWheel(sacked, 28*time.Millisecond) {
		t.Errorf("after the SACK: %s; want the second segment again at %v, 28 ms on the wheel after it", outsString(r), onWheel(sacked, 28*time.Millisecond))
	}
}

// Reordering is data delivered after data sent later (tcp_ack's
// prior_fack, tcp_clean_rtx_queue, tcp_check_sack_reordering): ACKs of
// data in order, with nothing SACKed, are none, so a hole with three
// segments SACKed above it is lost at once (tcp_rack_reo_wnd: no window
// until reordering has been seen); a hole that the cumulative ACK then
// fills, the original never retransmitted, below SACKed data, is
// reordering.
func TestReorderingSeenOnlyOutOfOrder(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	e := c.ep.(*endpoint)
	seen := func() uint32 {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.snd.reordSeen
	}
	c.write(fill(30 * 1448))
	o := h.take()
	c.saw(o...)
	h.advance(100 * time.Millisecond)
	c.ackUpTo(o[2].seq)
	c.saw(h.take()...)
	if n := seen(); n != 0 {
		t.Fatalf("an ACK of two segments in order counted %d reorderings; want 0", n)
	}
	// The third segment is missing; the next three arrive.
	h.advance(time.Millisecond)
	c.rcvNxt = o[2].seq
	c.send(header.TCPFlagAck, nil, optSACK(o[3].seq, o[6].seq))
	r := dataOuts(h.take())
	if len(r) == 0 || r[0].seq != o[2].seq {
		t.Fatalf("three segments SACKed above a hole: %s; want the hole, %d, again at once", outsString(r), o[2].seq)
	}

	// Another connection: the second segment arrives after the third,
	// before RACK's window for it ends.
	h = newHarness(t, Options{})
	c = h.acceptAfter(linuxPeer, 100*time.Millisecond)
	e = c.ep.(*endpoint)
	c.write(fill(30 * 1448))
	o = h.take()
	c.saw(o...)
	h.advance(100 * time.Millisecond)
	c.rcvNxt = o[1].seq
	c.send(header.TCPFlagAck, nil, optSACK(o[2].seq, o[3].seq))
	c.saw(h.take()...)
	h.advance(time.Millisecond)
	c.ackUpTo(o[3].seq)
	c.saw(h.take()...)
	if n := seen(); n != 1 {
		t.Fatalf("a segment delivered after one sent later: %d reorderings counted; want 1", n)
	}
}

// A receiver lists its newest SACK block first; the sender walks the
// blocks in sequence order (tcp_sacktag_write_queue sorts them), so data
// SACKed in order in an older block, listed after a newer one, is no
// reordering. In recovery, with none seen, RACK's reordering window is
// zero (tcp_rack_reo_wnd): a hole below newly SACKed data sent after it
// is lost at once.
func TestSACKBlocksWalkedInSequenceOrder(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	e := c.ep.(*endpoint)
	c.write(fill(30 * 1448))
	o := h.take()
	c.saw(o...)
	h.advance(100 * time.Millisecond)
	// The second segment is lost; three above it arrive: recovery.
	c.rcvNxt = o[1].seq
	c.send(header.TCPFlagAck, nil, optSACK(o[2].seq, o[5].seq))
	r := dataOuts(h.take())
	if len(r) == 0 || r[0].seq != o[1].seq {
		t.Fatalf("three segments SACKed above a hole: %s; want the hole, %d, again at once", outsString(r), o[1].seq)
	}
	c.saw(r...)
	// The sixth arrives, the seventh is lost, the eighth and ninth
	// arrive: the newest block first, the older one grown by one.
	h.advance(time.Millisecond)
	c.send(header.TCPFlagAck, nil, optSACK(o[7].seq, o[9].seq, o[2].seq, o[6].seq))
	r = dataOuts(h.take())
	e.mu.Lock()
	seen := e.snd.reordSeen
	e.mu.Unlock()
	if seen != 0 {
		t.Errorf("SACK blocks newest first, each in order: %d reorderings counted; want 0", seen)
	}
	if len(r) == 0 || r[0].seq != o[6].seq {
		t.Errorf("in recovery, a hole below SACKed data sent after it: %s; want the hole, %d, again at once", outsString(r), o[6].seq)
	}
}

// SACK compression (tcp_comp_sack_nr, tcp_comp_sack_delay_ns) holds the
// ACKs of out-of-order data after three duplicates have gone at once
// (__tcp_ack_snd_check). An ACK carries three blocks beside timestamps,
// so before a block beyond the first two grows or a third appears, the
// held ACK goes out with the blocks as they were (tcp_sack_new_ofo_skb,
// TCP_SACK_BLOCKS_EXPECTED, tcp_sack_compress_send_ack); the next one
// reports the new block. No block goes unreported.
func TestSACKCompressionFlushesBeforeAThirdBlock(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	base := c.sndNxt
	data := fill(12 * 1448)
	seg := func(i int) []byte { return data[i*1448 : (i+1)*1448] }
	at := func(i int) seqnum.Value { return base.Add(seqnum.Size(i * 1448)) }
	blocks := func(o out) string { return fmt.Sprint(o.opts.SACKBlocks) }
	want := func(ij ...int) string {
		var b []header.SACKBlock
		for k := 0; k < len(ij); k += 2 {
			b = append(b, header.SACKBlock{Start: at(ij[k]), End: at(ij[k+1])})
		}
		return fmt.Sprint(b)
	}
	// The first segment is lost; the next three draw a duplicate ACK each.
	for i := 1; i <= 3; i++ {
		c.sendAt(at(i), header.TCPFlagAck, seg(i))
		if o := h.takeOne(); o.ack != at(0) {
			t.Fatalf("duplicate ACK %d: %v; want ack %d at once", i, o, at(0))
		}
	}
	// The fourth grows the block, the sixth opens a second: both held.
	c.sendAt(at(4), header.TCPFlagAck, seg(4))
	h.none("the fourth duplicate")
	c.sendAt(at(6), header.TCPFlagAck, seg(6))
	h.none("a second block")
	// The eighth would open a third: the held ACK first, as it was.
	c.sendAt(at(8), header.TCPFlagAck, seg(8))
	o := h.takeOne()
	if blocks(o) != want(6, 7, 1, 5) {
		t.Errorf("a third block: ACK with %s; want the held one at once, %s", blocks(o), want(6, 7, 1, 5))
	}
	// The ninth grows the newest block; its ACK, held, reports all three.
	c.sendAt(at(9), header.TCPFlagAck, seg(9))
	h.none("the newest block grown")
	r := h.advanceUntilOut(10 * time.Millisecond)
	if len(r) != 1 || blocks(r[0]) != want(8, 10, 6, 7, 1, 5) {
		t.Errorf("the compression timer: %s; want one ACK with %s", outsString(r), want(8, 10, 6, 7, 1, 5))
	}
}

// Quick-ACK mode ends after so many ACKs of data received, in order or
// not (tcp_dec_quickack_mode counts an ACK sent while one was scheduled,
// Linux 6.6): a receiver that starts in it (up to sixteen quick ACKs,
// TCP_MAX_QUICKACKS, one more each time the window grows,
// tcp_grow_window) and then meets a hole ACKs out-of-order data at once
// only until they are used up; then three duplicates go at once, and
// SACK compression holds the rest (__tcp_ack_snd_check).
func TestOutOfOrderACKsUseUpQuickACKs(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	e := c.ep.(*endpoint)
	base := c.sndNxt
	data := fill(40 * 1448)
	seg := func(i int) []byte { return data[i*1448 : (i+1)*1448] }
	at := func(i int) seqnum.Value { return base.Add(seqnum.Size(i * 1448)) }
	c.sendAt(at(0), header.TCPFlagAck, seg(0))
	if o := h.takeOne(); o.ack != at(1) {
		t.Fatalf("the first segment: %v; want its ACK at once (quick-ACK mode)", o)
	}
	immediate := 0 // ACKs at once since quick-ACK mode ended
	for i := 2; i < 40; i++ {
		e.mu.Lock()
		quick, pressed := e.rcv.quick, 2*e.rcv.freeSpace() < e.rcv.fullSpace()
		e.mu.Unlock()
		if pressed {
			// Less than half the buffer free ends quick-ACK mode too
			// (__tcp_select_window): too late to tell.
			t.Fatalf("out-of-order segment %d: the buffer is half full and ACKs have not used up quick-ACK mode; want it over before", i-1)
		}
		c.sendAt(at(i), header.TCPFlagAck, seg(i))
		o := h.take()
		switch {
		case quick > 0 && len(o) != 1:
			t.Fatalf("out-of-order segment %d, %d quick ACKs left: %d ACKs at once; want one", i-1, quick, len(o))
		case quick > 0:
		case immediate < 3 && len(o) != 1:
			t.Fatalf("out-of-order segment %d, quick ACKs used up: %d ACKs at once; want duplicate %d at once", i-1, len(o), immediate+1)
		case immediate < 3:
			immediate++
		case len(o) != 0:
			t.Fatalf("out-of-order segment %d after three duplicates: %d ACKs at once; want it held (SACK compression):\n%s", i-1, len(o), outsString(o))
		default:
			return
		}
	}
	t.Fatalf("38 out-of-order segments ACKed at once; want quick-ACK mode to end")
}

// Without SACK, duplicate ACKs count as SACKed segments (tcp_add_reno_sack)
// and the third marks the head lost (tcp_newreno_mark_lost with
// tcp_reordering 3): a fast retransmit at once (RFC 5681 section 3.2). In
// Recovery a partial ACK marks the new head lost and retransmits it
// (RFC 6582, NewReno); recovery ends with an ACK above what was sent
// before it (tcp_try_undo_recovery holds Reno in Recovery until then).
func TestNewRenoFastRetransmit(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(noSACKPeer, 100*time.Millisecond)
	c.write(fill(20 * 1448))
	o := h.take()
	c.saw(o...)
	h.advance(100 * time.Millisecond)
	// The first and third segments were lost: the others draw dupacks.
	c.rcvNxt = o[0].seq
	for i := range 3 {
		// Dupacks 2 ms apart, as a link spaces them: a sender that sent
		// within the last millisecond would hold one segment of room
		// back for more (tcp_tso_should_defer).
		h.advance(2 * time.Millisecond)
		c.send(header.TCPFlagAck, nil)
		// Each dupack lets a new segment out (it stands for one
		// delivered); the third retransmits the head first.
		r := dataOuts(h.take())
		if i < 2 && (len(r) != 1 || !after(r[0].seq, o[9].seq)) {
			t.Fatalf("dupack %d: %s; want one new segment", i+1, outsString(r))
		}
		if i == 2 && (len(r) == 0 || r[0].seq != o[0].seq) {
			t.Fatalf("third dupack: %s; want the head, %d, again at once", outsString(r), o[0].seq)
		}
		c.saw(r...) // the ACK of the retransmission echoes its timestamp
	}
	if ca := c.ep.(*endpoint).TCPInfo().CAState; ca != "Recovery" {
		t.Errorf("state %s after the fast retransmit; want Recovery", ca)
	}
	// More dupacks; then the retransmission's ACK covers the second
	// segment only: a partial ACK.
	c.send(header.TCPFlagAck, nil)
	c.send(header.TCPFlagAck, nil)
	c.saw(h.take()...)
	h.advance(100 * time.Millisecond)
	c.ackUpTo(o[2].seq)
	r := dataOuts(h.take())
	if len(r) == 0 || r[0].seq != o[2].seq {
		t.Fatalf("after a partial ACK: %s; want the third segment again at once", outsString(r))
	}
	c.saw(r...)
	if ca := c.ep.(*endpoint).TCPInfo().CAState; ca != "Recovery" {
		t.Errorf("state %s after a partial ACK; want Recovery", ca)
	}
	h.advance(100 * time.Millisecond)
	c.saw(h.take()...)
	e := c.ep.(*endpoint)
	e.mu.Lock()
	high := e.snd.highSeq
	e.mu.Unlock()
	c.ackUpTo(high)
	if ca := e.TCPInfo().CAState; ca != "Recovery" {
		t.Errorf("state %s after the ACK of exactly what was sent before recovery; want Recovery still", ca)
	}
	for range 5 {
		c.saw(h.take()...)
		h.advance(100 * time.Millisecond)
		c.saw(h.take()...)
		c.ackUpTo(c.seen)
		if e.TCPInfo().CAState != "Recovery" {
			break
		}
	}
	// CUBIC's ssthresh is 717/1024 of the window at the loss, 10: 7;
	// the reduction ends at it, and the ACK that ends it may grow it.
	if in := e.TCPInfo(); in.CAState != "Open" || in.SndSsthresh != 7 || in.SndCwnd < 7 {
		t.Errorf("after everything was ACKed: %s with cwnd %d, ssthresh %d; want Open, ssthresh 7, cwnd at least 7", in.CAState, in.SndCwnd, in.SndSsthresh)
	}
}

// A tail-loss probe sends new data when there is some and the peer's
// window has room, whatever the congestion window (tcp_send_loss_probe
// calls tcp_write_xmit with push_one 2, which forces out one segment):
// with the whole initial window unanswered, the probe is the eleventh
// segment, not the RTO's retransmission of the first.
func TestLossProbeSendsNewDataBeyondCwnd(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	o := c.writeInitialWindow(30)
	c.saw(o...)
	next := segEnd(o[9])
	probe := h.advanceUntilOut(time.Second)
	if len(probe) != 1 || probe[0].seq != next || len(probe[0].payload) == 0 {
		t.Fatalf("nothing answered the initial window: %s; want one probe of new data at %d", outsString(probe), next)
	}
}

// An ACK that echoes a timestamp from before a segment's retransmission
// acknowledges the original (tcp_skb_spurious_retrans): RACK must not
// take the retransmission's send time, or its RTT, from it.
func TestRACKIgnoresSpuriousRetransmission(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	c.write(fill(2 * 1448))
	o := h.take()
	c.saw(o...) // the peer echoes the originals' timestamp
	echo := c.tsRecent
	probe := h.advanceUntilOut(time.Second)
	if len(probe) != 1 || probe[0].seq != o[1].seq {
		t.Fatalf("%s; want the tail-loss probe of the second segment", outsString(probe))
	}
	// The ACK comes more than min_rtt after the probe, so that only the
	// timestamp tells which transmission it answers.
	h.advance(150 * time.Millisecond)
	c.tsRecent = echo
	c.ackUpTo(o[1].seq.Add(1448))
	e := c.ep.(*endpoint)
	e.mu.Lock()
	mstamp, rtt := e.snd.rack.mstamp, e.snd.rack.rtt
	e.mu.Unlock()
	if mstamp != o[0].at || rtt != h.now()-o[0].at {
		t.Errorf("RACK's segment sent at %v with RTT %v; want the first segment's, sent at %v, RTT %v", mstamp, rtt, o[0].at, h.now()-o[0].at)
	}
}

// A connection closed after its FIN was ACKed is an orphan in
// FIN-WAIT-2 and lives tcp_fin_timeout, 60 s (tcp_close); a segment after
// that is reset.
func TestOrphanFinWait2Expires(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	c.ep.Shutdown(tcpip.ShutdownWrite)
	c.saw(h.take()...)
	c.ackUpTo(c.rcvNxt)
	h.advance(10 * time.Second)
	c.ep.Close()
	h.none("Close in FIN-WAIT-2")
	closed := h.now()
	h.advance(onWheel(closed, 60*time.Second) - closed - time.Millisecond)
	if c.state() != stateFinWait2 {
		t.Fatalf("state %v just before tcp_fin_timeout; want FIN-WAIT-2", c.state())
	}
	h.advance(time.Millisecond)
	if c.state() != stateClosed {
		t.Fatalf("state %v 60 s after Close in FIN-WAIT-2; want CLOSED", c.state())
	}
	c.send(header.TCPFlagAck, []byte("late"))
	if o := h.takeOne(); !o.has(header.TCPFlagRst) {
		t.Errorf("answer to a segment after the orphan expired: %v; want a reset", o)
	}
}
