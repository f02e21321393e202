package tcp

import (
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
