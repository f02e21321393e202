package kernel

import (
	"fmt"
	"time"

	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
)

// TopoConfig describes a kernel-mode network of any shape: a network
// namespace per host and per router of Topology, every link netemu's own
// link on the real clock, bridged through a TUN device in each of its two
// ends' namespaces. The addresses and the routes are the emulated
// network's (package emu): a host's is topo.Topology.HostAddr, and every
// router forwards to each host's address through the next hop
// topo.Topology.Tables gives.
type TopoConfig struct {
	// Topology is the network. Its links' DelayedACK is ignored: kernel
	// TCP delays its own ACKs.
	Topology topo.Topology

	// Via is Auto (default) or TUN: both mean the TUN bridge. tc netem
	// joins two namespaces only, so Netem is refused with ErrUnsupported.
	Via Via

	// CongestionControl is pinned on every host's route, as Config's is;
	// "" means "cubic".
	CongestionControl tcpstack.CongestionControl

	// Seed seeds the impairments of each link whose configuration gives
	// no seed, as package emu seeds them: link 0 with Seed itself, link i
	// with a seed of its own derived from it (topo.LinkSeed). The flows'
	// environments report it as their Seed, as emu's do.
	Seed uint64

	// Probe, if set, receives the sender state of every connection the
	// flows' environments handed out, read from TCP_INFO every ProbeEvery
	// of wall time (0 means one millisecond) and once more as each is
	// closed. Calls are one at a time.
	Probe      func(tcpstack.Sample)
	ProbeEvery time.Duration
}

// Validate reports the first fault: the topology's, a link Via topologies
// do not run on, a congestion control the kernel does not have.
func (c TopoConfig) Validate() error {
	if err := c.Topology.Validate(); err != nil {
		return err
	}
	switch c.Via {
	case "", Auto, TUN:
	case Netem:
		return fmt.Errorf("%w: tc netem joins two namespaces only; a topology's links run through TUN devices: use the tun link (--link tun or auto)", ErrUnsupported)
	default:
		return fmt.Errorf("kernel: link %q is unknown; want auto, tun or netem", c.Via)
	}
	if cc := c.CongestionControl; cc != "" {
		avail, err := AvailableCongestionControls()
		return checkCongestionControl(string(cc), avail, err)
	}
	return nil
}
