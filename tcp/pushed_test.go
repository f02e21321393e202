package tcp

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// pingpongConn is a harness connection whose host has answered the
// peer's first request at once, so that it is in interactive (pingpong)
// mode (tcp_event_data_sent: a reply within ato of the data).
func pingpongConn(t *testing.T) (*harness, *conn) {
	h := newHarness(t, Options{})
	c, _ := h.accept(quietPeer)
	c.send(header.TCPFlagAck|header.TCPFlagPsh, fill(4))
	h.take() // quick-ACK mode answers the first segment at once
	c.read()
	c.write(fill(8))
	o := h.takeOne()
	if len(o.payload) != 8 {
		t.Fatalf("the reply: %v; want 8 bytes", o)
	}
	c.saw(o)
	if r := &c.ep.(*endpoint).rcv; !r.inPingpong() {
		t.Fatalf("a reply at once did not enter pingpong mode (pingpong %d)", r.pingpong)
	}
	return h, c
}

// tcp_cleanup_rbuf: in pingpong mode, reading a small pushed segment does
// not send its ACK; the delayed-ACK timer does, 40 ms on. This is the
// write-write-read stall: the writer's Nagle waits for that ACK. A PSH
// flag alone does not make the ACK due (tcp_measure_rcv_mss marks the ACK
// pushed for a short segment; cleanup_rbuf sends it only outside pingpong
// mode, or when pushed twice).
func TestPushedSmallSegmentWaitsInPingpong(t *testing.T) {
	h, c := pingpongConn(t)
	c.send(header.TCPFlagAck|header.TCPFlagPsh, fill(4))
	h.none("a small segment in pingpong mode")
	c.read()
	h.none("reading a small pushed segment in pingpong mode")
	at := h.now()
	o := h.advanceUntilOut(time.Second)
	if len(o) != 1 || o[0].ack != c.sndNxt || o[0].at != onWheel(at, 40*time.Millisecond) {
		t.Fatalf("the small segment's ACK: %s; want one ACK of %d, 40 ms on the wheel after it", outsString(o), c.sndNxt)
	}
}

// A second small segment before the ACK marks it pushed twice
// (ICSK_ACK_PUSHED2): reading them sends the ACK at once, pingpong or
// not. (Two of one size would instead lower rcv_mss to that size, and
// the second would be ACKed on arrival as a second full segment.)
func TestPushedTwiceACKedOnRead(t *testing.T) {
	h, c := pingpongConn(t)
	c.send(header.TCPFlagAck, fill(200))
	c.send(header.TCPFlagAck, fill(300))
	h.none("two small segments, unread, in pingpong mode")
	c.read()
	if o := h.take(); len(o) != 1 || o[0].ack != c.sndNxt {
		t.Fatalf("reading two small segments: %s; want one ACK of %d at once", outsString(o), c.sndNxt)
	}

	// Two of one size: rcv_mss follows them down, and the second is the
	// every-second-segment ACK on arrival.
	h, c = pingpongConn(t)
	c.send(header.TCPFlagAck, fill(200))
	h.none("one small segment in pingpong mode")
	c.send(header.TCPFlagAck, fill(200))
	if o := h.take(); len(o) != 1 || o[0].ack != c.sndNxt {
		t.Fatalf("two segments of 200 bytes: %s; want one ACK of %d on arrival", outsString(o), c.sndNxt)
	}
}
