package emutest

import (
	"context"
	"time"

	"github.com/netemu/netemu/link"
)

// The faults of a cluster test, by host and link name, each at the
// instant of the call on the run's clock and recorded in the run's trace
// (see emu.Net.Faults for what each does to packets). Each fails the test
// on an unknown name; call them on the test's goroutine, the one that
// runs Run's function. To get the error instead, call the same method of
// the embedded emu.Net (n.Net.Crash).
//
// A test acts at an instant with At: n.At(ctx, 10*time.Second) sleeps on
// the run's clock until 10 s after New, then the fault that follows falls
// at exactly that instant, at one place among that instant's events on
// every run.

// At sleeps on the run's clock until Elapsed (run time since New) reaches
// at. The test fails if the instant has passed, or if ctx ends first.
func (n *Net) At(ctx context.Context, at time.Duration) {
	n.tb.Helper()
	if err := n.Net.SleepUntil(ctx, at); err != nil {
		n.tb.Fatalf("emutest: At(%v): %v", at, err)
	}
}

// check fails the test with err, if any.
func (n *Net) check(err error) {
	n.tb.Helper()
	if err != nil {
		n.tb.Fatalf("emutest: %v", err)
	}
}

// Cut cuts the path between hosts a and b both ways: each one's packets
// to the other are dropped at its interface.
func (n *Net) Cut(a, b string) { n.tb.Helper(); n.check(n.Net.Cut(a, b)) }

// CutOneWay cuts the path from host from to host to, one way.
func (n *Net) CutOneWay(from, to string) { n.tb.Helper(); n.check(n.Net.CutOneWay(from, to)) }

// HealPath heals the path between hosts a and b, both ways.
func (n *Net) HealPath(a, b string) { n.tb.Helper(); n.check(n.Net.HealPath(a, b)) }

// Partition cuts every path between the hosts named and the others, both
// ways: Partition(leader) cuts the leader from the rest.
func (n *Net) Partition(hosts ...string) { n.tb.Helper(); n.check(n.Net.Partition(hosts...)) }

// Isolate cuts host's link both ways: nothing leaves or reaches it.
func (n *Net) Isolate(host string) { n.tb.Helper(); n.check(n.Net.Isolate(host)) }

// CutLink cuts the link called name in the directions given, both if
// none (link.AtoB alone: the link's A end no longer reaches B).
func (n *Net) CutLink(name string, dirs ...link.Dir) {
	n.tb.Helper()
	n.check(n.Net.CutLink(name, dirs...))
}

// HealLink heals the link called name in the directions given, both if
// none.
func (n *Net) HealLink(name string, dirs ...link.Dir) {
	n.tb.Helper()
	n.check(n.Net.HealLink(name, dirs...))
}

// Heal heals every cut; crashed hosts stay down until Restart.
func (n *Net) Heal() { n.tb.Helper(); n.check(n.Net.Heal()) }

// ChangeLink edits the running link called name (emu.Net.ChangeLink).
func (n *Net) ChangeLink(name string, change func(*link.Config)) {
	n.tb.Helper()
	n.check(n.Net.ChangeLink(name, change))
}

// SetDelay sets the one-way delay of both directions of the link called
// name: a Mesh pair's round trip becomes 2d.
func (n *Net) SetDelay(name string, d time.Duration) {
	n.tb.Helper()
	n.ChangeLink(name, func(c *link.Config) { eachDir(c, func(c *link.Config) { c.Delay = d }) })
}

// SetRate sets the rate of both directions of the link called name, in
// bits per second; 0 means unlimited.
func (n *Net) SetRate(name string, bitsPerSecond float64) {
	n.tb.Helper()
	n.ChangeLink(name, func(c *link.Config) { eachDir(c, func(c *link.Config) { c.Rate = bitsPerSecond }) })
}

// SetLoss makes both directions of the link called name drop each packet
// with probability p (netem's "loss random p").
func (n *Net) SetLoss(name string, p float64) {
	n.tb.Helper()
	n.ChangeLink(name, func(c *link.Config) { eachDir(c, func(c *link.Config) { c.Loss = link.RandomLoss(p, 0) }) })
}

// eachDir applies f to both directions of c.
func eachDir(c *link.Config, f func(*link.Config)) {
	f(c)
	if c.BtoA != nil {
		f(c.BtoA)
	}
}

// Crash crashes host: its stack ends without a FIN or a RST, and its
// peers find out by their own timers.
func (n *Net) Crash(host string) { n.tb.Helper(); n.check(n.Net.Crash(host)) }

// Restart gives host a new stack at its address (crashing it first if it
// is up): connections to it are refused until it listens again.
func (n *Net) Restart(host string) { n.tb.Helper(); n.check(n.Net.Restart(host)) }
