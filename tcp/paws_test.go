package tcp

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// PAWS as Linux applies it (tcp_paws_discard, RFC 7323 section 5): a
// timestamp one tick older than ts_recent passes (TCP_PAWS_WINDOW);
// an older one is an old duplicate, answered by a duplicate ACK
// (tcp_send_dupack) that D-SACKs it and counts it only when its data
// starts below rcv_nxt; a pure duplicate ACK whose timestamp is within
// an RTO of ts_recent and that updates no window is taken as reordered
// (tcp_disordered_ack) and passes silently, an older one is answered.
func TestPAWS(t *testing.T) {
	h := newHarness(t, Options{})
	c, _ := h.accept(linuxPeer)
	h.advance(time.Second)
	h.take()
	recent := h.peerTS() // the host's ts_recent after the next segment
	c.send(header.TCPFlagAck, fill(100))
	c.read()
	h.advance(time.Second)
	c.saw(h.take()...)
	info := func() Info { return c.ep.(*endpoint).TCPInfo() }
	lost := info().DelayedACKLost
	inject := func(seq seqnum.Value, flags header.TCPFlags, payload []byte, tsval uint32) {
		h.inject(seg{srcPort: c.peer, dstPort: c.port, flags: flags, seq: seq, ack: c.rcvNxt,
			wnd: c.p.window, opts: optTS(tsval, c.tsRecent), payload: payload})
	}

	// One tick older than ts_recent: within TCP_PAWS_WINDOW, the data
	// is taken.
	inject(c.sndNxt, header.TCPFlagAck, fill(100), recent-1)
	if got, err := c.read(); len(got) != 100 || err != nil {
		t.Fatalf("data one tick behind ts_recent: read %d bytes, %v; want 100", len(got), err)
	}
	c.sndNxt += 100
	h.advance(time.Second)
	c.saw(h.take()...)

	// Five ticks older, new data: discarded, a duplicate ACK at once,
	// without D-SACK (nothing of it had arrived) and not counted.
	inject(c.sndNxt, header.TCPFlagAck, fill(100), recent-5)
	if o := h.takeOne(); o.ack != c.sndNxt || len(o.opts.SACKBlocks) != 0 {
		t.Errorf("new data failing PAWS: %v; want a duplicate ACK of %d without SACK blocks", o, c.sndNxt)
	}
	if got, _ := c.read(); len(got) != 0 {
		t.Errorf("new data failing PAWS was read (%d bytes)", len(got))
	}
	h.advance(time.Second) // past the out-of-window ACK's rate limit

	// An old retransmission, failing PAWS: D-SACKed and counted.
	old := c.sndNxt - 100
	inject(old, header.TCPFlagAck, fill(100), recent-5)
	if o := h.takeOne(); o.ack != c.sndNxt || len(o.opts.SACKBlocks) != 1 || o.opts.SACKBlocks[0] != (header.SACKBlock{Start: old, End: c.sndNxt}) {
		t.Errorf("an old retransmission failing PAWS: %v; want a duplicate ACK of %d with the D-SACK [%d, %d)", o, c.sndNxt, old, c.sndNxt)
	}
	if got := info().DelayedACKLost; got != lost+1 {
		t.Errorf("DelayedACKLost %d; want %d", got, lost+1)
	}
	h.advance(time.Second)
	h.take()

	// A pure duplicate ACK, its timestamp 5 ms old, behind one that
	// updated the window (snd_wl1 = its seq): reordered, not old.
	recent = h.peerTS()
	inject(c.sndNxt, header.TCPFlagAck, nil, recent)
	h.none("a pure ACK")
	inject(c.sndNxt, header.TCPFlagAck, nil, recent-5)
	h.none("a disordered ACK")
	// 5 s old, beyond an RTO: an old duplicate, answered.
	inject(c.sndNxt, header.TCPFlagAck, nil, recent-5000)
	if o := h.takeOne(); o.ack != c.sndNxt {
		t.Errorf("a pure ACK 5 s behind ts_recent: %v; want a duplicate ACK of %d", o, c.sndNxt)
	}
}
