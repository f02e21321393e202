package tcp

import (
	"bytes"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/clock/clocktest"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// A SYN offers what Linux's tcp_syn_options offers, in
// tcp_options_write's layout: MSS 1460 (the MTU less 40), SACK-permitted
// with timestamps, then window scale ilog2(tcp_rmem[2]) - 15 = 10
// (tcp_select_initial_window); the window is tcp_rmem[1]'s share,
// 131072 * 128/256 = 65536, rounded down to whole MSS: 64240.
func TestSynOptions(t *testing.T) {
	h := newHarness(t, Options{})
	_, syn := h.dialSyn()
	if syn.at != 0 {
		t.Errorf("SYN at %v; want at once", syn.at)
	}
	want := []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10}
	if len(syn.rawOpts) != 20 || !bytes.Equal(syn.rawOpts[:8], want) || !bytes.Equal(syn.rawOpts[16:], []byte{1, 3, 3, 10}) {
		t.Errorf("SYN options % x; want MSS 1460, SACK-permitted, timestamps, NOP, window scale 10 (02 04 05 b4 04 02 08 0a <8 bytes> 01 03 03 0a)", syn.rawOpts)
	}
	if ecr := syn.rawOpts[12:16]; !bytes.Equal(ecr, []byte{0, 0, 0, 0}) {
		t.Errorf("SYN's TSecr % x; want 0", ecr)
	}
	if syn.wnd != 64240 {
		t.Errorf("SYN window %d; want 64240", syn.wnd)
	}
	if syn.ack != 0 || syn.flags != header.TCPFlagSyn {
		t.Errorf("SYN %v; want flags S and ack 0", syn)
	}
}

// A smaller tcp_rmem[2] gives a smaller shift: 6 MiB (the default before
// Linux 6.14) is 7, as tcp_select_initial_window halves the space until
// it fits 16 bits.
func TestSynWindowScaleFollowsMaxBuffer(t *testing.T) {
	for _, c := range []struct{ max, ws int }{{6 << 20, 7}, {4 << 20, 7}, {1 << 20, 5}, {212992, 2}} {
		h := newHarness(t, Options{MaxReceiveBuffer: c.max})
		_, syn := h.dialSyn()
		if syn.syn.WS != c.ws {
			t.Errorf("tcp_rmem[2] %d: window scale %d; want %d", c.max, syn.syn.WS, c.ws)
		}
	}
}

// The SYN-ACK answers only what the SYN offered (tcp_make_synack,
// tcp_synack_options): a SYN without options gets MSS alone, and the
// connection then uses the 536-byte default MSS (RFC 9293 section
// 3.7.1) and no timestamps.
func TestSynAckEchoesOffer(t *testing.T) {
	h := newHarness(t, Options{})
	c, sa := h.accept(linuxPeer)
	if !sa.syn.TS || !sa.syn.SACKPermitted || sa.syn.WS != 10 || sa.syn.MSS != 1460 || sa.syn.TSEcr != h.peerTS() {
		t.Errorf("SYN-ACK to a full offer: %+v; want MSS 1460, SACK, timestamps echoing %d, WS 10", sa.syn, h.peerTS())
	}
	if got, _ := c.ep.GetSockOptInt(tcpip.MaxSegOption); got != 1448 {
		t.Errorf("MSS with timestamps %d; want 1460-12 = 1448", got)
	}
	// tcp_openreq_init_rwin rounds the window to the MSS less the
	// timestamp option when the SYN offered timestamps: 45 × 1448.
	if sa.wnd != 65160 {
		t.Errorf("SYN-ACK window with timestamps %d; want 65160 (45 × 1448)", sa.wnd)
	}

	h2 := newHarness(t, Options{})
	c2, sa2 := h2.accept(peerOpts{ws: -1, window: 65535})
	if sa2.syn.TS || sa2.syn.SACKPermitted || sa2.syn.WS != -1 || len(sa2.rawOpts) != 4 {
		t.Errorf("SYN-ACK to a bare SYN: options % x; want MSS alone", sa2.rawOpts)
	}
	if got, _ := c2.ep.GetSockOptInt(tcpip.MaxSegOption); got != 536 {
		t.Errorf("MSS without the peer's MSS option %d; want 536", got)
	}
	if sa2.wnd != 64240 {
		t.Errorf("SYN-ACK window without timestamps %d; want 64240 (44 × 1460)", sa2.wnd)
	}
	c2.write(fill(2000))
	for _, o := range h2.take() {
		if len(o.rawOpts) != 0 {
			t.Errorf("segment %v carries options % x; want none negotiated", o, o.rawOpts)
		}
		if len(o.payload) > 536 {
			t.Errorf("segment of %d bytes; want at most 536", len(o.payload))
		}
	}
}

// SYN retransmission, as Linux 6.18 does it (tcp_retransmit_timer with
// net.ipv4.tcp_syn_linear_timeouts 4): the first timeout is 1 s
// (TCP_TIMEOUT_INIT) and stays so for the first four retransmissions,
// then doubles; tcp_write_timeout allows tcp_syn_retries (6) plus the
// four linear ones, and the connect fails with ETIMEDOUT when the timer
// after the tenth expires. Measured on this machine's kernel: SYNs at 0,
// 1, 2, 3, 4, 5, 7, 11, 19, 35, 67 s, ETIMEDOUT at 131 s (a connect to a
// silent address in a network namespace).
func TestSynRetransmitSchedule(t *testing.T) {
	h := newHarness(t, Options{})
	c, first := h.dialSyn()
	var at []time.Duration
	for range 12 {
		o := h.advanceUntilOut(200 * time.Second)
		if len(o) == 0 {
			break
		}
		for _, s := range o {
			if s.flags != header.TCPFlagSyn || s.seq != first.seq {
				t.Fatalf("at %v: %v; want the SYN again", s.at, s)
			}
			at = append(at, s.at)
		}
	}
	var rtos []time.Duration
	for _, s := range []time.Duration{1, 1, 1, 1, 1, 2, 4, 8, 16, 32} {
		rtos = append(rtos, s*time.Second)
	}
	want := wheelChain(0, rtos...)
	if !equalDurations(at, want) {
		t.Errorf("SYN retransmissions at %v; want %v", at, want)
	}
	if c.state() != stateClosed {
		t.Errorf("state %v after the last retransmission timed out; want CLOSED", c.state())
	}
	if err := c.ep.LastError(); err == nil {
		t.Errorf("LastError nil; want ETIMEDOUT")
	} else if _, ok := err.(*tcpip.ErrTimeout); !ok {
		t.Errorf("LastError %v; want a timeout", err)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The SYN-ACK is retransmitted by the request's timer, 1 s doubling
// (reqsk_timer_handler: TCP_TIMEOUT_INIT << num_timeout), up to
// tcp_synack_retries (5); the timer after the last drops the request, so
// a late ACK then meets no connection and is reset.
func TestSynAckRetransmitAndExpiry(t *testing.T) {
	h := newHarness(t, Options{})
	ln := h.listen()
	h.inject(seg{srcPort: peerPort, dstPort: hostPort, flags: header.TCPFlagSyn, seq: 5000, wnd: 64240, opts: linuxPeer.synOpts(h.peerTS(), 0)})
	sa := h.takeOne()
	var at []time.Duration
	for range 8 {
		o := h.advanceUntilOut(100 * time.Second)
		if len(o) == 0 {
			break
		}
		for _, s := range o {
			if s.flags != header.TCPFlagSyn|header.TCPFlagAck || s.seq != sa.seq {
				t.Fatalf("at %v: %v; want the SYN-ACK again", s.at, s)
			}
			at = append(at, s.at)
		}
	}
	want := wheelChain(0, time.Second, 2*time.Second, 4*time.Second, 8*time.Second, 16*time.Second)
	if !equalDurations(at, want) {
		t.Errorf("SYN-ACK retransmissions at %v; want %v", at, want)
	}
	if h.now() < 63*time.Second {
		h.advance(63*time.Second - h.now())
	}
	h.proto.mu.Lock()
	conns := len(h.proto.conns)
	h.proto.mu.Unlock()
	if conns != 0 {
		t.Errorf("%d connections after the request's life (63 s); want the SYN-RECV child gone", conns)
	}
	h.inject(seg{srcPort: peerPort, dstPort: hostPort, flags: header.TCPFlagAck, seq: 5001, ack: sa.seq + 1, wnd: 502})
	if o := h.takeOne(); o.flags != header.TCPFlagRst || o.seq != sa.seq+1 {
		t.Errorf("answer to an ACK after the request expired: %v; want a reset at %d", o, sa.seq+1)
	}
	if _, _, err := ln.Accept(nil); err == nil {
		t.Errorf("Accept found a connection; want none")
	}
}

// A retransmitted SYN in SYN-RECV gets the SYN-ACK again
// (tcp_check_req), and a SYN to a listener whose queue is full is
// dropped.
func TestSynRecvRetransmittedSyn(t *testing.T) {
	h := newHarness(t, Options{})
	h.listen()
	syn := seg{srcPort: peerPort, dstPort: hostPort, flags: header.TCPFlagSyn, seq: 5000, wnd: 64240, opts: linuxPeer.synOpts(h.peerTS(), 0)}
	h.inject(syn)
	sa := h.takeOne()
	h.advance(300 * time.Millisecond)
	h.inject(syn)
	if o := h.takeOne(); o.flags != header.TCPFlagSyn|header.TCPFlagAck || o.seq != sa.seq {
		t.Errorf("answer to the SYN again: %v; want the SYN-ACK again", o)
	}
}

// A reset to our SYN with an acceptable ACK refuses the connection
// (RFC 9293 section 3.10.7.3); an ACK outside (iss, nxt] gets a reset
// and leaves the connect going.
func TestSynSentReset(t *testing.T) {
	h := newHarness(t, Options{})
	c, syn := h.dialSyn()
	h.inject(seg{srcPort: peerPort, dstPort: c.port, flags: header.TCPFlagSyn | header.TCPFlagAck, seq: 1, ack: syn.seq + 7, wnd: 1000})
	if o := h.takeOne(); o.flags != header.TCPFlagRst || o.seq != syn.seq+7 {
		t.Errorf("answer to a SYN-ACK with a bad ACK: %v; want a reset at its ack", o)
	}
	if c.state() != stateSynSent {
		t.Fatalf("state %v; want SYN-SENT still", c.state())
	}
	h.inject(seg{srcPort: peerPort, dstPort: c.port, flags: header.TCPFlagRst | header.TCPFlagAck, seq: 0, ack: syn.seq + 1})
	h.none("after the reset")
	if c.state() != stateClosed {
		t.Errorf("state %v after a reset; want CLOSED", c.state())
	}
	if _, ok := c.ep.LastError().(*tcpip.ErrConnectionRefused); !ok {
		t.Errorf("LastError after a reset; want connection refused")
	}
}

// A segment to a port nobody listens on is reset (RFC 9293 section
// 3.10.7.1, tcp_v4_send_reset): with an ACK, the reset's sequence is the
// ACK; without, it acknowledges everything the segment occupied.
func TestResetToClosedPort(t *testing.T) {
	h := newHarness(t, Options{})
	h.inject(seg{srcPort: peerPort, dstPort: 9, flags: header.TCPFlagSyn, seq: 100, wnd: 1000})
	if o := h.takeOne(); o.flags != header.TCPFlagRst|header.TCPFlagAck || o.seq != 0 || o.ack != 101 {
		t.Errorf("answer to a SYN to a closed port: %v; want RST-ACK seq 0 ack 101", o)
	}
	h.inject(seg{srcPort: peerPort, dstPort: 9, flags: header.TCPFlagAck, seq: 100, ack: 777, wnd: 1000, payload: []byte("hi")})
	if o := h.takeOne(); o.flags != header.TCPFlagRst || o.seq != 777 {
		t.Errorf("answer to an ACK to a closed port: %v; want RST seq 777", o)
	}
	h.inject(seg{srcPort: peerPort, dstPort: 9, flags: header.TCPFlagRst, seq: 100, wnd: 1000})
	h.none("a reset to a closed port")
	h.inject(seg{srcPort: peerPort, dstPort: 9, flags: header.TCPFlagSyn, seq: 100, wnd: 1000, badChecksum: true})
	h.none("a segment with a bad checksum")
}

var _ = seqnum.Value(0)

// Options.ClockPhase moves the protocol's clocks against the run's: a
// protocol started 1.5 ms into a millisecond-and-a-half of its kernel's
// clock stamps its SYN one millisecond later than one started on a tick,
// with the same seed (so the same timestamp offset).
func TestClockPhaseMovesTimestamps(t *testing.T) {
	var ts [2]uint32
	for i, phase := range []time.Duration{0, 1500 * time.Microsecond} {
		h := newHarness(t, Options{Seed: 3, ClockPhase: phase})
		_, syn := h.dialSyn()
		ts[i] = syn.syn.TSVal
	}
	if ts[1]-ts[0] != 1 {
		t.Errorf("SYN TSval %d at phase 0 and %d at phase 1.5ms; want one millisecond apart", ts[0], ts[1])
	}
	for _, bad := range []time.Duration{-1, time.Second} {
		if err := (Options{Clock: &clocktest.Manual{}, ClockPhase: bad}).Validate(); err == nil {
			t.Errorf("Validate accepted ClockPhase %v; want an error", bad)
		}
	}
}

// On a clock.Sequential (the virtual clock) the protocol reads its time
// through Elapsed; ClockPhase moves that origin too.
func TestClockPhaseOnSequentialClock(t *testing.T) {
	v := clock.NewVirtual(0, nil)
	defer v.Close()
	for _, phase := range []time.Duration{0, 1500 * time.Microsecond, 999 * time.Millisecond} {
		p := NewProtocol(Options{Clock: v, ClockPhase: phase})(nil).(*Protocol)
		if p.seq == nil {
			t.Fatal("the virtual clock is not read as Sequential")
		}
		if got := p.now(); got != phase {
			t.Errorf("ClockPhase %v: the protocol's time at its start is %v; want %v", phase, got, phase)
		}
	}
}
