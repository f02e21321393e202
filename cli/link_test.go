package cli

import (
	"context"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// The netem and qdisc flags shape the directions they name: --netem-up
// alone leaves server→client as the other flags set it, --qdisc-down
// gives server→client its own discipline.
func TestLinkFlagsPerDirection(t *testing.T) {
	_, cases, err := ParseCases(context.Background(), testRun, []string{"bulk", "--rtt", "50ms", "--netem-up", "rate 1mbit", "--qdisc-down", "pfifo_head_drop limit 20"})
	if err != nil {
		t.Fatal(err)
	}
	lc := cases[0].Link
	if lc.Rate != 1e6 || lc.BtoA == nil || lc.BtoA.Rate != 10e6 || lc.BtoA.Delay != 25*time.Millisecond {
		t.Errorf("up rate %v, down %+v; want 1mbit up and --rate's 10mbit down", lc.Rate, lc.BtoA)
	}
	if q := lc.BtoA.Qdisc; q != (link.Qdisc{Kind: link.PFIFOHeadDrop, Limit: 20}) || lc.Qdisc.Limit != 1000 {
		t.Errorf("down qdisc %+v, up %+v", q, lc.Qdisc)
	}
	// A FIFO limit and a discipline with its own do not go together.
	for _, args := range [][]string{
		{"bulk", "--queue", "50", "--qdisc-down", "codel"},
		{"bulk", "--netem-down", "limit 50", "--qdisc", "fq_codel"},
	} {
		if _, _, err := ParseCases(context.Background(), testRun, args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
