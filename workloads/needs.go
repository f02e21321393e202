package workloads

import (
	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/workloads/web"
)

// A Requirement is something a workload may need of the network that
// not every backend or clock gives.
type Requirement uint8

// The requirements.
const (
	// RealClock is Go's own time as the run's clock: the real clock, or
	// a synctest bubble's; not a discrete-event clock.
	RealClock Requirement = iota + 1
	// KernelTCP is the kernel's TCP, not the emulated hosts'.
	KernelTCP
)

// A Need is a requirement of one workload, the parameter that makes it,
// and why.
type Need struct {
	Of Requirement
	// Param and Value are the workload's parameter that makes the need,
	// by its name on the command line, and its value: "proto", "h3".
	Param, Value string
	// Why says what the workload asks that the network would lack.
	Why string
}

// Needer is implemented by a workload that needs more of the network
// than every backend gives.
type Needer interface {
	Needs() []Need
}

// Needs returns what w needs of the network; none for a workload that
// runs anywhere.
func Needs(w Workload) []Need {
	if n, ok := w.(Needer); ok {
		return n.Needs()
	}
	return nil
}

// A NeedError is the error of a run on a network that lacks what the
// workload needs.
type NeedError struct{ Need Need }

func (e *NeedError) Error() string { return e.Need.Why }

// unmet returns the first need of w that env does not meet, as a
// *NeedError. Only the clock can be told from an emu.Env: kernel TCP
// shows by the emulated hosts refusing what they lack.
func unmet(w Workload, env emu.Env) error {
	for _, n := range Needs(w) {
		if n.Of == RealClock && onVirtualClock(env) {
			return &NeedError{n}
		}
	}
	return nil
}

// onVirtualClock reports whether env runs on a discrete-event clock.
func onVirtualClock(env emu.Env) bool {
	c, ok := env.(interface{ Clock() clock.Clock })
	if !ok {
		return false
	}
	_, seq := c.Clock().(clock.Sequential)
	return seq
}

// protoNeeds is the needs of an HTTP workload over protocol p: the real
// clock where p reads Go's time itself.
func protoNeeds(p web.Proto) []Need {
	if q := p.Protocol(); q != nil && q.WallClock() != "" {
		return []Need{{Of: RealClock, Param: "proto", Value: string(q.Name()), Why: q.WallClock()}}
	}
	return nil
}
