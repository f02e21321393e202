package tcp

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Closing a listener resets the connections it never handed out
// (inet_csk_listen_stop), and a child still in SYN-RECV whose handshake
// completes after the close is reset and forgotten (tcp_v4_rcv drops a
// request whose listener is gone; the ACK finds no socket).
func TestClosingListenerResetsItsChildren(t *testing.T) {
	h := newHarness(t, Options{})
	ln := h.listen()
	syn := func(port uint16) out {
		h.inject(seg{srcPort: port, dstPort: hostPort, flags: header.TCPFlagSyn, seq: 5000, wnd: 64240, opts: linuxPeer.synOpts(h.peerTS(), 0)})
		return h.takeOne()
	}
	ack := func(port uint16, sa out) {
		h.inject(seg{srcPort: port, dstPort: hostPort, flags: header.TCPFlagAck, seq: 5001, ack: sa.seq + 1, wnd: 502})
	}
	saQueued := syn(peerPort)
	ack(peerPort, saQueued)
	h.none("after the handshake's ACK")
	saPending := syn(peerPort + 1)

	ln.Close()
	if o := h.takeOne(); o.dstPort != peerPort || !o.has(header.TCPFlagRst) || o.seq != saQueued.seq+1 {
		t.Errorf("closing the listener sent %v; want a reset of the unaccepted connection at %d", o, saQueued.seq+1)
	}
	ack(peerPort+1, saPending)
	if o := h.takeOne(); o.dstPort != peerPort+1 || !o.has(header.TCPFlagRst) || o.seq != saPending.seq+1 {
		t.Errorf("answer to the handshake's ACK after the listener closed: %v; want a reset at %d", o, saPending.seq+1)
	}
	h.proto.mu.Lock()
	conns, bound := len(h.proto.conns), len(h.proto.bound)
	h.proto.mu.Unlock()
	if conns != 0 || bound != 0 {
		t.Errorf("%d connections and %d ports held after the listener and its children closed; want none", conns, bound)
	}
	if _, _, err := ln.Accept(nil); err == nil {
		t.Errorf("Accept on a closed listener found a connection")
	}
}

// A child reset while it waits in the accept queue leaves it, and its
// place in the backlog is free again: the listener counts its children
// where they stand.
func TestResetChildLeavesAcceptQueue(t *testing.T) {
	h := newHarness(t, Options{})
	ln := h.listen() // backlog 10
	for i := range uint16(10) {
		port := peerPort + i
		h.inject(seg{srcPort: port, dstPort: hostPort, flags: header.TCPFlagSyn, seq: 5000, wnd: 64240, opts: linuxPeer.synOpts(h.peerTS(), 0)})
		sa := h.takeOne()
		h.inject(seg{srcPort: port, dstPort: hostPort, flags: header.TCPFlagAck, seq: 5001, ack: sa.seq + 1, wnd: 502})
		h.inject(seg{srcPort: port, dstPort: hostPort, flags: header.TCPFlagRst, seq: 5001})
	}
	h.none("after ten connections and their resets")
	h.inject(seg{srcPort: peerPort + 10, dstPort: hostPort, flags: header.TCPFlagSyn, seq: 5000, wnd: 64240, opts: linuxPeer.synOpts(h.peerTS(), 0)})
	if o := h.takeOne(); o.flags != header.TCPFlagSyn|header.TCPFlagAck {
		t.Errorf("answer to a SYN after ten children were reset: %v; want a SYN-ACK (the backlog is free)", o)
	}
	if _, _, err := ln.Accept(nil); err == nil {
		t.Errorf("Accept found a connection; want none: every queued child was reset")
	} else if _, ok := err.(*tcpip.ErrWouldBlock); !ok {
		t.Errorf("Accept: %v; want would-block", err)
	}
}

// When its stack closes, the protocol ends every connection and
// listener at once, without a segment: no timer of theirs stays armed
// (on the real clock one would keep the whole stack alive: TIME-WAIT's
// 60 s, a retransmission's minutes), the ports are free, and a caller
// learns of the end.
func TestStackCloseEndsEveryConnection(t *testing.T) {
	h := newHarness(t, Options{})
	timeWait, _ := h.accept(linuxPeer) // the harness's listener stays open
	if err := timeWait.ep.Shutdown(tcpip.ShutdownWrite); err != nil {
		t.Fatal(err)
	}
	timeWait.saw(h.takeOne())
	timeWait.ackUpTo(timeWait.rcvNxt)
	timeWait.send(header.TCPFlagFin|header.TCPFlagAck, nil)
	h.take()
	if timeWait.state() != stateTimeWait {
		t.Fatalf("state %v; want TIME-WAIT", timeWait.state())
	}
	sending, _ := h.dial(linuxPeer)
	sending.write([]byte("unacknowledged")) // arms the retransmission timer
	h.take()
	if _, armed := h.clk.Pending(); !armed {
		t.Fatal("no timer armed before the close; the test checks nothing")
	}

	h.proto.Close()
	h.none("after the stack closed")
	if at, armed := h.clk.Pending(); armed {
		t.Errorf("a timer is still armed for %v after the stack closed; want none", at)
	}
	for _, c := range []*conn{timeWait, sending} {
		if c.state() != stateClosed {
			t.Errorf("state %v after the stack closed; want CLOSED", c.state())
		}
	}
	if _, err := sending.ep.Write(strings.NewReader("more"), tcpip.WriteOptions{}); err == nil {
		t.Errorf("a write after the stack closed succeeded")
	}
	h.proto.mu.Lock()
	conns, listeners, bound := len(h.proto.conns), len(h.proto.listeners), len(h.proto.bound)
	h.proto.mu.Unlock()
	if conns+listeners+bound != 0 {
		t.Errorf("%d connections, %d listeners and %d ports held after the stack closed; want none", conns, listeners, bound)
	}
}
