package tcp

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// newTestConn is a sender as a connection sets one up before the first
// call: initial window 10, no ssthresh yet, no clamp (tcp_init_sock sets
// snd_cwnd_clamp to ~0), limited by cwnd.
func newTestConn(hz int) ccConn {
	return ccConn{
		cwnd:        10,
		cwndClamp:   ^uint32(0),
		ssthresh:    infiniteSsthresh,
		mss:         1448,
		inFlight:    10,
		cwndLimited: true,
		sndNxt:      seqnum.Value(1000),
		sndUna:      seqnum.Value(1000),
		now:         time.Second,
		hz:          hz,
	}
}

func TestNewCongestion(t *testing.T) {
	for _, name := range []string{"cubic", "reno", "bbr"} {
		cc, err := newCongestion(name)
		if err != nil || cc.name() != name {
			t.Errorf("newCongestion(%q) = %v, %v; want the %s algorithm", name, cc, err, name)
		}
	}
	a, _ := newCongestion("cubic")
	b, _ := newCongestion("cubic")
	if a == b {
		t.Error("newCongestion returned the same instance twice; each connection needs its own state")
	}
	_, err := newCongestion("vegas")
	if err == nil || !strings.Contains(err.Error(), `"vegas"`) ||
		!strings.Contains(err.Error(), "cubic") || !strings.Contains(err.Error(), "reno") || !strings.Contains(err.Error(), "bbr") {
		t.Errorf(`newCongestion("vegas") error = %v; want one naming vegas and listing cubic, reno and bbr`, err)
	}
}

// tcp_in_slow_start: slow start strictly below ssthresh.
func TestInSlowStart(t *testing.T) {
	c := newTestConn(250)
	for _, tc := range []struct {
		cwnd, ssthresh uint32
		want           bool
	}{{9, 10, true}, {10, 10, false}, {11, 10, false}, {10, infiniteSsthresh, true}} {
		c.cwnd, c.ssthresh = tc.cwnd, tc.ssthresh
		if got := inSlowStart(&c); got != tc.want {
			t.Errorf("inSlowStart(cwnd %d, ssthresh %d) = %v, want %v", tc.cwnd, tc.ssthresh, got, tc.want)
		}
	}
}

// tcp_slow_start (tcp_cong.c): cwnd += acked up to ssthresh; the rest is
// returned; the clamp caps cwnd without changing the leftover.
func TestSlowStartLeftover(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		cwnd, ssthresh, clamp, acked uint32
		wantCwnd, wantLeft           uint32
	}{
		{"below ssthresh", 10, 100, ^uint32(0), 3, 13, 0},
		{"reaches ssthresh", 10, 14, ^uint32(0), 4, 14, 0},
		{"crosses ssthresh", 10, 14, ^uint32(0), 6, 14, 2},
		{"stretch ACK", 10, infiniteSsthresh, ^uint32(0), 20, 30, 0},
		{"clamped", 10, 14, 12, 6, 12, 2},
	} {
		c := newTestConn(250)
		c.cwnd, c.ssthresh, c.cwndClamp = tc.cwnd, tc.ssthresh, tc.clamp
		left := tcpSlowStart(&c, tc.acked)
		if c.cwnd != tc.wantCwnd || left != tc.wantLeft {
			t.Errorf("%s: cwnd %d ssthresh %d clamp %d, %d acked: cwnd %d, leftover %d; want %d, %d",
				tc.name, tc.cwnd, tc.ssthresh, tc.clamp, tc.acked, c.cwnd, left, tc.wantCwnd, tc.wantLeft)
		}
	}
}

// tcp_cong_avoid_ai (tcp_cong.c): one packet per w acked, the remainder
// carried in cwndCnt; old credit at a larger w is paid as one packet.
func TestCongAvoidAICarry(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		cwnd, cnt, w, acked, clamp uint32
		wantCwnd, wantCnt          uint32
	}{
		{"counts", 10, 3, 10, 1, ^uint32(0), 10, 4},
		{"carries the remainder", 10, 8, 10, 5, ^uint32(0), 11, 3},
		{"exact multiple", 10, 9, 10, 1, ^uint32(0), 11, 0},
		{"stretch ACK adds several", 10, 4, 10, 27, ^uint32(0), 13, 1},
		{"credit from a larger w", 10, 12, 5, 2, ^uint32(0), 11, 2},
		{"credit, then more", 10, 7, 5, 11, ^uint32(0), 13, 1},
		{"clamped", 10, 9, 10, 1, 10, 10, 0},
	} {
		c := newTestConn(250)
		c.cwnd, c.cwndCnt, c.cwndClamp = tc.cwnd, tc.cnt, tc.clamp
		tcpCongAvoidAI(&c, tc.w, tc.acked)
		if c.cwnd != tc.wantCwnd || c.cwndCnt != tc.wantCnt {
			t.Errorf("%s: cwnd %d cnt %d w %d acked %d: cwnd %d cnt %d; want %d, %d",
				tc.name, tc.cwnd, tc.cnt, tc.w, tc.acked, c.cwnd, c.cwndCnt, tc.wantCwnd, tc.wantCnt)
		}
	}
}

// tcp_reno_cong_avoid, RFC 5681 §3.1: slow start to ssthresh, the leftover
// to congestion avoidance, then one packet per window; nothing while the
// application, not cwnd, limits the sender.
func TestRenoCongAvoid(t *testing.T) {
	cc, _ := newCongestion("reno")
	c := newTestConn(250)
	cc.init(&c)
	c.cwnd, c.ssthresh = 9, 10

	cc.congAvoid(&c, c.sndUna, 3) // 1 fills slow start, 2 left for AI
	if c.cwnd != 10 || c.cwndCnt != 2 {
		t.Fatalf("across ssthresh: cwnd %d cnt %d, want 10, 2", c.cwnd, c.cwndCnt)
	}
	c.cwndLimited = false
	cc.congAvoid(&c, c.sndUna, 50)
	if c.cwnd != 10 || c.cwndCnt != 2 {
		t.Fatalf("not cwnd-limited: cwnd %d cnt %d, want it left at 10, 2", c.cwnd, c.cwndCnt)
	}
	c.cwndLimited = true
	// One window of single-packet ACKs per round: +1 per round.
	for round := uint32(0); round < 5; round++ {
		before := c.cwnd
		for i := uint32(0); i < before; i++ {
			cc.congAvoid(&c, c.sndUna, 1)
		}
		if c.cwnd != before+1 {
			t.Fatalf("round %d: %d ACKs took cwnd from %d to %d, want +1", round, before, before, c.cwnd)
		}
	}
}

// tcp_reno_ssthresh: max(cwnd/2, 2); tcp_reno_undo_cwnd: max(cwnd,
// prior_cwnd), prior_cwnd being cwnd when the reduction began.
func TestRenoHalvingAndUndo(t *testing.T) {
	cc, _ := newCongestion("reno")
	c := newTestConn(250)
	cc.init(&c)
	for _, tc := range []struct{ cwnd, want uint32 }{{20, 10}, {21, 10}, {5, 2}, {3, 2}, {1, 2}} {
		c.cwnd = tc.cwnd
		if got := cc.ssthresh(&c); got != tc.want {
			t.Errorf("reno ssthresh at cwnd %d = %d, want %d", tc.cwnd, got, tc.want)
		}
	}

	c.cwnd = 40
	c.ssthresh = cc.ssthresh(&c)
	c.cwnd = c.ssthresh // after the reduction
	cc.setState(&c, caRecovery)
	if got := cc.undoCwnd(&c); got != 40 {
		t.Errorf("undo after halving 40 to %d = %d, want 40", c.cwnd, got)
	}
	c.cwnd = 45 // grew past the old window since
	if got := cc.undoCwnd(&c); got != 45 {
		t.Errorf("undo at cwnd 45 (prior 40) = %d, want 45", got)
	}
}
