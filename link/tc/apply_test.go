package tc

import (
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// Apply replaces the options given, on the side asked: Up and Down set
// the directions apart, the other keeping what it had.
func TestNetemApply(t *testing.T) {
	parse := func(s string) Netem {
		n, err := ParseNetem(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	base := link.Config{Delay: 25 * time.Millisecond, Rate: 10e6, MTU: 9000, Seed: 7}

	both := parse("loss 1% limit 50").Apply(base, Both)
	if both.BtoA != nil || both.Loss != link.RandomLoss(0.01, 0) || both.Qdisc != (link.Qdisc{Limit: 50}) || both.Delay != base.Delay {
		t.Errorf("Both: %+v", both)
	}

	up := parse("rate 1mbit").Apply(base, Up)
	if up.Rate != 1e6 || up.BtoA == nil || up.BtoA.Rate != 10e6 || up.BtoA.Delay != base.Delay {
		t.Errorf("Up: rate %v, BtoA %+v; want 1mbit up and the base down", up.Rate, up.BtoA)
	}
	down := parse("delay 30ms").Apply(up, Down)
	if down.Rate != 1e6 || down.Delay != base.Delay || down.BtoA.Delay != 30*time.Millisecond || down.BtoA.Rate != 10e6 {
		t.Errorf("Down after Up: %+v, BtoA %+v", down, down.BtoA)
	}
	// Both, once the directions are apart, shapes each; the seed is the
	// link's.
	again := parse("corrupt 1% seed 3").Apply(down, Both)
	if again.Corrupt.P != 0.01 || again.BtoA.Corrupt.P != 0.01 || again.Seed != 3 || again.BtoA.Seed != 0 || again.BtoA.Delay != 30*time.Millisecond {
		t.Errorf("Both after Down: %+v, BtoA %+v", again, again.BtoA)
	}
	if err := again.Validate(); err != nil {
		t.Error(err)
	}
	// The zero Netem changes nothing.
	if got := (Netem{}).Apply(base, Both); got.Delay != base.Delay || got.BtoA != nil {
		t.Errorf("zero Netem: %+v", got)
	}
}

// NetemOf gives the options a direction sets away from netem's defaults.
func TestNetemOf(t *testing.T) {
	n := NetemOf(link.Config{Delay: time.Millisecond, Qdisc: link.Qdisc{Limit: link.DefaultQueuePackets}, Loss: link.RandomLoss(0.02, 0)})
	if got := n.Options(); len(got) != 2 || got[0] != Delay || got[1] != Loss {
		t.Errorf("options %v; want delay and loss", got)
	}
	if s := n.String(); s != "delay 1ms loss 2%" {
		t.Errorf("String %q", s)
	}
}
