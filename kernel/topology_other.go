//go:build !linux

package kernel

import (
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
)

// TopoNet is a kernel-mode network of any shape. Outside Linux there is
// none: NewTopo never returns one, and its methods exist only so that the
// API is the same.
type TopoNet struct{}

// NewTopo validates cfg and reports that kernel mode needs Linux.
func NewTopo(cfg TopoConfig) (*TopoNet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, errNotLinux
}

// The methods below keep the API of Linux's TopoNet; they do nothing useful.

func (n *TopoNet) Between(from, to string) (emu.Env, error) { return nil, errNotLinux }
func (n *TopoNet) Link(name string) (*link.Link, bool)      { return nil, false }
func (n *TopoNet) Topology() topo.Topology                  { return topo.Topology{} }
func (n *TopoNet) Facts() Facts                             { return Facts{} }
func (n *TopoNet) Stats() Stats                             { return Stats{} }
func (n *TopoNet) Inodes() map[string]uint64                { return nil }
func (n *TopoNet) Close() error                             { return nil }
