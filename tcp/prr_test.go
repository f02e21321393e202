package tcp

import (
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// In recovery, while more is in flight than ssthresh, the sender sends in
// proportion to what the peer reports delivered: after k segments
// delivered, ceil(ssthresh × k / prior_cwnd) sent in all (RFC 6937
// section 3, proportional rate reduction, as tcp_cwnd_reduction computes
// it with prior_cwnd for RecoverFS), the first of them the fast
// retransmission. A window of 20 loses the first of 20 segments; the
// peer SACKs one more segment with each ACK, 2 ms apart, and none of
// them yet the retransmission, which is a round trip away. The third SACK
// starts recovery (RACK's reordering window is 0 once three segments are
// SACKed, tcp_rack_reo_wnd), with CUBIC's ssthresh 20 × 717/1024 = 14;
// the two SACKs before it each let one new segment out (Disorder keeps
// the window). From the third on, the segments sent in all after each
// ACK are ceil(14k/20): 1, 2, 3, 3, 4, 5, 5, 6.
func TestPRRProportional(t *testing.T) {
	h := newHarness(t, Options{})
	c := h.acceptAfter(linuxPeer, 100*time.Millisecond)
	growWindow(t, c, 1)
	c.writeAll(fill(60 * 1448))
	o := dataOuts(h.take())
	if len(o) != 20 {
		t.Fatalf("with a window of 20 the host sent %d segments", len(o))
	}
	c.saw(o...)
	head := o[0].seq
	c.rcvNxt = head // the first segment was lost
	h.advance(100 * time.Millisecond)
	e := c.ep.(*endpoint)
	var before, during []int
	sent := 0
	for k := 1; k <= 10; k++ {
		c.send(header.TCPFlagAck, nil, optSACK(o[1].seq, o[k].seq.Add(1448)))
		r := dataOuts(h.take())
		c.saw(r...)
		c.rcvNxt = head // the retransmission is still on its way
		if k <= 2 {
			before = append(before, len(r))
		} else {
			if k == 3 && (len(r) == 0 || r[0].seq != head) {
				t.Fatalf("the ACK that starts recovery: %s; want the lost head, %d, first", outsString(r), head)
			}
			sent += len(r)
			during = append(during, sent)
		}
		h.advance(2 * time.Millisecond)
	}
	in := e.TCPInfo()
	if in.CAState != "Recovery" || in.SndSsthresh != 14 {
		t.Fatalf("%s with ssthresh %d; want Recovery, ssthresh 14", in.CAState, in.SndSsthresh)
	}
	if want := []int{1, 1}; !slices.Equal(before, want) {
		t.Errorf("segments sent for the first two SACKs: %v; want %v", before, want)
	}
	if want := []int{1, 2, 3, 3, 4, 5, 5, 6}; !slices.Equal(during, want) {
		t.Errorf("segments sent in all in recovery after each ACK: %v; want %v", during, want)
	}
}
