package tcp

import (
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// The receiver's ACK counts, on the harness's clock: quick-ACK mode's
// ACKs at the start, one ACK sent by the delayed-ACK timer 40 ms after a
// lone segment (TcpExtDelayedACKs, held 40 ms), none for a pair (ACKed on
// arrival by the every-second-segment rule), and segments that came
// again (TcpExtDelayedACKLost), the second ACKed at once in the quick-ACK
// mode it enters. The
// probe hears the timer's ACK at its instant, with its count.
func TestACKCounts(t *testing.T) {
	var mu sync.Mutex
	var probed []Info
	h := newHarness(t, Options{Probe: func(in Info) {
		mu.Lock()
		probed = append(probed, in)
		mu.Unlock()
	}})
	c, _ := h.accept(quietPeer)
	h.advance(time.Second) // so that a hold counted from 0 shows
	h.none("an idle second")
	info := func() Info { return c.ep.(*endpoint).TCPInfo() }
	quick := c.leaveQuickAck()
	if in := info(); in.QuickACKs != uint32(quick) || in.DelayedACKs != 0 || in.DelayedACKTime != 0 || in.DelayedACKLost != 0 {
		t.Fatalf("after %d segments ACKed at once: %d quick ACKs, %d delayed (%v), %d lost; want %d, 0, 0", quick, in.QuickACKs, in.DelayedACKs, in.DelayedACKTime, in.DelayedACKLost, quick)
	}
	mu.Lock()
	probed = probed[:0]
	mu.Unlock()
	sent := h.now()
	due := onWheel(sent, 40*time.Millisecond)
	if o := h.advanceUntilOut(time.Second); len(o) != 1 || o[0].at != due {
		t.Fatalf("the lone segment's ACK: %s; want one at %v, 40 ms on the wheel after it", outsString(o), due)
	}
	mu.Lock()
	if len(probed) != 1 || probed[0].DelayedACKs != 1 || probed[0].DelayedACKTime != due-sent || probed[0].At != due {
		t.Errorf("the probe heard %+v at the timer's ACK; want one state with 1 delayed ACK held %v, at %v", probed, due-sent, due)
	}
	mu.Unlock()

	// A pair: the second segment's arrival sends the ACK of both; the
	// first's timer, armed meanwhile, sends nothing.
	c.send(header.TCPFlagAck, fill(1460))
	h.none("the first segment of a pair")
	c.read()
	h.none("reading the first segment of a pair")
	c.send(header.TCPFlagAck, fill(1460))
	c.saw(h.takeOne())
	c.read()
	h.advance(time.Second)
	h.none("a second after the pair")

	// The first segment again, below the window's left edge: a duplicate
	// ACK at once, with a D-SACK of it (tcp_send_dupack). Then the
	// second again, inside the window: a D-SACK, ACKed at once in the
	// quick-ACK mode it enters.
	old := c.sndNxt - 2*1460
	c.sendAt(old, header.TCPFlagAck, fill(1460))
	if o := h.takeOne(); o.ack != c.sndNxt || len(o.opts.SACKBlocks) != 1 || o.opts.SACKBlocks[0] != (header.SACKBlock{Start: old, End: old + 1460}) {
		t.Errorf("ACK of an old duplicate: %v; want an ACK of %d with the D-SACK [%d, %d)", o, c.sndNxt, old, old+1460)
	}
	c.sendAt(c.sndNxt-1460, header.TCPFlagAck, fill(1460))
	if o := h.takeOne(); o.ack != c.sndNxt || len(o.opts.SACKBlocks) != 1 {
		t.Errorf("ACK of a duplicate: %v; want an ACK of %d with a D-SACK", o, c.sndNxt)
	}
	in := info()
	if in.DelayedACKs != 1 || in.DelayedACKTime != due-sent || in.QuickACKs != uint32(quick)+1 || in.DelayedACKLost != 2 {
		t.Errorf("at the end: %d delayed ACKs (%v), %d quick, %d lost; want 1 (%v), %d, 2", in.DelayedACKs, in.DelayedACKTime, in.QuickACKs, in.DelayedACKLost, due-sent, quick+1)
	}
}
