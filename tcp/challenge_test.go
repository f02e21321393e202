package tcp

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// A SYN on a synchronized connection, in the window or not, is answered
// with a challenge ACK, never a reset and never a new connection (RFC
// 5961 section 4; tcp_validate_incoming sends tcp_send_challenge_ack):
// the ACK carries the host's own sequence and acknowledges what the host
// had, not the SYN. Challenge ACKs share the out-of-window limit of one
// per tcp_invalid_ratelimit (500 ms) per connection, so a second SYN at
// once goes unanswered and one 500 ms later is answered again.
func TestSYNOnOpenConnectionGetsChallengeACK(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	e := c.ep.(*endpoint)
	e.mu.Lock()
	hostNxt := e.snd.nxt
	e.mu.Unlock()
	syn := func() {
		h.inject(seg{srcPort: c.peer, dstPort: c.port, flags: header.TCPFlagSyn, seq: c.sndNxt, wnd: c.p.window,
			opts: c.p.synOpts(h.peerTS(), c.tsRecent)})
	}
	syn()
	o := h.takeOne()
	if o.flags != header.TCPFlagAck || o.seq != hostNxt || o.ack != c.sndNxt {
		t.Fatalf("answer to a SYN on an open connection: %v; want a challenge ACK, seq %d ack %d", o, hostNxt, c.sndNxt)
	}
	if st := c.state(); st != stateEstablished {
		t.Fatalf("after the SYN the connection is %v; want it established still", st)
	}
	h.advance(100 * time.Millisecond)
	syn()
	h.none("a second SYN 100 ms after a challenge ACK")
	h.advance(400 * time.Millisecond)
	syn()
	if o := h.takeOne(); o.flags != header.TCPFlagAck || o.ack != c.sndNxt {
		t.Errorf("answer to a SYN 500 ms after the first challenge ACK: %v; want a challenge ACK again", o)
	}
	if st := c.state(); st != stateEstablished {
		t.Errorf("after three SYNs the connection is %v; want it established still", st)
	}
}
