package link

import (
	"strings"
	"testing"
	"time"
)

// A running link takes new delay, rate and loss from the next packet on;
// the packets under way keep their course, and the other direction is
// changed only when cfg says so.
func TestReconfigure(t *testing.T) {
	r := newRig(t, Config{Rate: 12_000_000, Delay: 10 * time.Millisecond})
	r.at(0, func() {
		r.l.Send(AtoB, rawPkt(1500)) // on the wire 0–1 ms, due 11 ms
		up := Config{Rate: 6_000_000, Delay: 50 * time.Millisecond}
		if err := r.l.Reconfigure(up.WithBtoA(Config{Rate: 12_000_000, Delay: 10 * time.Millisecond})); err != nil {
			t.Fatal(err)
		}
		r.l.Send(AtoB, rawPkt(1500)) // behind the first: 1–3 ms at 6 Mbit/s, due 53 ms
		r.l.Send(BtoA, rawPkt(1500)) // unchanged: due 11 ms
	})
	r.at(100*time.Millisecond, func() {
		if err := r.l.Reconfigure(Config{Rate: 12_000_000, Loss: RandomLoss(1, 0)}); err != nil {
			t.Fatal(err)
		}
		r.l.Send(AtoB, rawPkt(1500)) // lost
	})
	r.run(time.Second)
	got := r.arrivals()
	want := []arrival{{at: 11 * time.Millisecond, dir: AtoB}, {at: 11 * time.Millisecond, dir: BtoA}, {at: 53 * time.Millisecond, dir: AtoB}}
	if len(got) != len(want) {
		t.Fatalf("%d packets delivered: %+v; want %+v", len(got), got, want)
	}
	for i, a := range got {
		if a.at != want[i].at || a.dir != want[i].dir {
			t.Errorf("packet %d: %v at %v; want %v at %v", i, a.dir, a.at, want[i].dir, want[i].at)
		}
	}
	if d := r.l.Stats()[AtoB].Drops[DropLoss]; d != 1 {
		t.Errorf("%d lost after loss 100%%; want 1", d)
	}
	if c := r.l.Config(); c.Delay != 0 || c.Rate != 12_000_000 {
		t.Errorf("Config after Reconfigure: delay %v, rate %v; want the new ones", c.Delay, c.Rate)
	}
}

// What belongs to the whole link is refused, as is a discipline change
// while the discipline holds packets; nothing changes then.
func TestReconfigureRefuses(t *testing.T) {
	r := newRig(t, Config{Rate: 1_000_000, Qdisc: Qdisc{Kind: CoDel}, Seed: 3})
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Rate: 1_000_000, Qdisc: Qdisc{Kind: CoDel}, Seed: 3, MTU: 9000}, "MTU 9000"},
		{Config{Rate: 1_000_000, Qdisc: Qdisc{Kind: CoDel}, Seed: 4}, "Seed 4"},
		{Config{Rate: 1_000_000, Qdisc: Qdisc{Kind: CoDel}, Seed: 3, DelayedACK: time.Millisecond}, "DelayedACK"},
		{Config{Rate: -1, Seed: 3}, "Rate"},
	} {
		if err := r.l.Reconfigure(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Reconfigure(%+v): %v; want an error naming %s", c.cfg, err, c.want)
		}
	}
	r.at(0, func() {
		for range 5 {
			r.l.Send(AtoB, rawPkt(1500))
		}
		err := r.l.Reconfigure(Config{Rate: 1_000_000, Seed: 3})
		if err == nil || !strings.Contains(err.Error(), "holds 4 packets") {
			t.Errorf("replacing a codel that holds packets: %v; want a refusal", err)
		}
	})
	r.run(time.Second)
	if n := len(r.arrivals()); n != 5 {
		t.Errorf("%d packets delivered; want the 5", n)
	}
	if err := r.l.Reconfigure(Config{Rate: 1_000_000, Seed: 3}); err != nil {
		t.Errorf("replacing an empty codel by a FIFO: %v", err)
	}
}
