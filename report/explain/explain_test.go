package explain

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// The union of intervals equals the set of instants covered, whatever the
// order the intervals come in; touching intervals merge.
func TestSpansUnion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		var u spans
		var covered [200]bool
		for k := 0; k < 1+rng.IntN(30); k++ {
			from := rng.IntN(190)
			to := from + rng.IntN(10)
			u.add(time.Duration(from), time.Duration(to))
			for i := from; i < to; i++ {
				covered[i] = true
			}
		}
		for i := 1; i < len(u); i++ {
			if u[i-1].to >= u[i].from {
				t.Fatalf("trial %d: %v not sorted, disjoint and apart", trial, u)
			}
		}
		for i := range covered {
			in := false
			for _, s := range u {
				in = in || time.Duration(i) >= s.from && time.Duration(i) < s.to
			}
			if in != covered[i] {
				t.Fatalf("trial %d: instant %d covered %v, union %v says %v", trial, i, covered[i], u, in)
			}
		}
	}
}

// firstLast counts a window exactly while fewer items fall outside than
// it keeps, and says so when more do.
func TestFirstLastWindow(t *testing.T) {
	var l firstLast[int]
	const n = 5 * kept
	for i := 0; i < n; i++ {
		l.add(i, time.Duration(i))
	}
	sum := func(a, b int) (s time.Duration) {
		for i := a; i < b; i++ {
			s += time.Duration(i)
		}
		return s
	}
	for _, c := range []struct {
		from, to int
		inexact  bool
	}{
		{0, n, false},
		{10, n - 10, false},
		{kept - 1, n - kept + 1, false},
		{kept, n, true},         // the first kept are all outside: more may be
		{0, n - kept - 1, true}, // so are the last kept
	} {
		first, cnt, total, inexact := l.within(func(i int) bool { return i >= c.from && i < c.to })
		if inexact != c.inexact {
			t.Errorf("[%d,%d): inexact %v, want %v", c.from, c.to, inexact, c.inexact)
		}
		if c.inexact {
			continue
		}
		if cnt != c.to-c.from || total != sum(c.from, c.to) || len(first) == 0 || first[0] != c.from {
			t.Errorf("[%d,%d): %d items weighing %v, first %v; want %d weighing %v, first %d", c.from, c.to, cnt, total, first[:min(1, len(first))], c.to-c.from, sum(c.from, c.to), c.from)
		}
	}
}

// Tally counts a segment again as a retransmission, a SYN again too,
// but a second connection on the same ports is new, whatever its initial
// sequence number.
func TestTallyRetransmitsPerConnection(t *testing.T) {
	c, s := netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:80")
	var tl Tally
	send := func(seq uint32, flags byte, n int) {
		tl.Observe(link.Event{Kind: link.EventSend, Packet: tcpSeg(c, s, seq, 0, flags, n, nil)})
	}
	send(1000, flagSYN, 0)
	send(1000, flagSYN, 0) // the SYN again: counted
	send(1001, flagACK, 100)
	send(1101, flagACK, 100)
	send(1001, flagACK, 100)                   // data again: counted
	for _, isn := range []uint32{500, 90000} { // below and above the first connection's numbers
		send(isn, flagSYN, 0)
		send(isn+1, flagACK, 100)
	}
	if r, _, _ := tl.Totals(); r != 2 {
		t.Errorf("%d retransmissions; want 2, both in the first connection", r)
	}
}
