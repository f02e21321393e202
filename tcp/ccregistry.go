package tcp

import (
	"fmt"
	"slices"

	"github.com/netemu/netemu/internal/english"
)

// The registry of congestion controls: every algorithm netemu knows by its
// Linux name, with what it needs of the connection, whether netemu's TCP
// runs it, and, where it does, how a connection gets a fresh instance. The
// packages above (tcpstack, workloads, kernel, the CLI) ask it rather than
// keep lists of their own. An algorithm's file declares its descriptor
// (cubicControl in cubic.go, renoControl in cc.go,
// bbrControl in bbr.go); congestionControls
// lists the descriptors once. Adding one is its file plus its line here.
// An algorithm Linux has that netemu's TCP does not run would be listed
// by name only (a descriptor without fresh); none is today.

// A CongestionControl describes one congestion-control algorithm.
type CongestionControl struct {
	// Name is Linux's name for it, as TCP_CONGESTION and
	// net.ipv4.tcp_congestion_control take it: "cubic".
	Name string
	// About is one line for help texts.
	About string
	// Needs is what the algorithm needs of the connection beyond the
	// hooks every algorithm has.
	Needs CongestionNeeds

	// fresh returns a new instance, one per connection; nil for an
	// algorithm Linux has that netemu's TCP does not run yet.
	fresh func() congestion
}

// CongestionNeeds is what an algorithm needs of the connection beyond the
// hooks of tcp_congestion_ops that every algorithm has.
type CongestionNeeds struct {
	// Pacing: segments leave at sk_pacing_rate rather than in the bursts
	// the window allows (Linux: SK_PACING_NEEDED, met by the fq qdisc or
	// TCP's internal pacing).
	Pacing bool
	// RateSamples: a delivery-rate sample with every ACK (Linux's
	// tcp_rate.c, handed to .cong_control).
	RateSamples bool
}

// senderGives is what netemu's sender gives an algorithm: pacing at the
// rate the algorithm sets (pacing.go, once its init asks for it) and a
// delivery-rate sample with every ACK (rate.go, handed to
// .cong_control). An algorithm netemu's TCP runs needs no more.
var senderGives = CongestionNeeds{Pacing: true, RateSamples: true}

// covers reports whether g gives everything n asks.
func (g CongestionNeeds) covers(n CongestionNeeds) bool {
	return (g.Pacing || !n.Pacing) && (g.RateSamples || !n.RateSamples)
}

// Runs reports whether netemu's TCP runs the algorithm. One it does not
// run is known by name only: Linux has it, and kernel TCP can run it.
func (c CongestionControl) Runs() bool { return c.fresh != nil }

// DefaultCongestionControl is the algorithm a connection runs when its
// options name none: cubic, Linux's default.
const DefaultCongestionControl = "cubic"

// congestionControls is the registry, in its fixed order: the default
// first, then the others netemu's TCP runs, then those it knows by name
// only. Messages list names in this order ("cubic or reno").
var congestionControls = []CongestionControl{
	cubicControl,
	renoControl,
	bbrControl,
}

// CongestionControls returns every congestion control the registry
// knows, in its fixed order: the default (cubic) first, then reno and
// bbr.
func CongestionControls() []CongestionControl {
	return slices.Clone(congestionControls)
}

// LookupCongestionControl returns the congestion control of that name,
// and whether the registry knows it.
func LookupCongestionControl(name string) (CongestionControl, bool) {
	i := slices.IndexFunc(congestionControls, func(c CongestionControl) bool { return c.Name == name })
	if i < 0 {
		return CongestionControl{}, false
	}
	return congestionControls[i], true
}

// newCongestion returns a fresh instance of the algorithm of that name;
// one netemu's TCP does not run, or does not know, is an error that lists
// those it runs.
func newCongestion(name string) (congestion, error) {
	if c, ok := LookupCongestionControl(name); ok && c.Runs() {
		return c.fresh(), nil
	}
	return nil, fmt.Errorf("unknown congestion control %q: use %s", name, english.Or(runningNames()...))
}

// runningNames is the names of the algorithms netemu's TCP runs, in the
// registry's order.
func runningNames() []string {
	var names []string
	for _, c := range congestionControls {
		if c.Runs() {
			names = append(names, c.Name)
		}
	}
	return names
}
