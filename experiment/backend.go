package experiment

import (
	"context"
	"fmt"

	"github.com/netemu/netemu/internal/english"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/workloads"
)

// A Backend runs cases on one kind of network: it builds the network,
// runs the workload on it (as an emu.Env) and describes the run.
type Backend interface {
	// Name is the backend's name in records and on the command line.
	Name() string
	// Run runs c and returns the workload's result and the run's record.
	Run(ctx context.Context, c Case) (workloads.Result, Record, error)
}

// Options configure the backends that take options.
type Options struct {
	Via kernel.Via // kernel: how the namespaces are joined; "" means auto
}

// backends lists the backends the command line knows: one line each.
var backends = []struct {
	name  string
	about string
	new   func(Options) Backend
}{
	{"emulated", "netemu's TCP (or gVisor's, --tcp gvisor) on netemu's link", func(Options) Backend { return Emulated{} }},
	{"kernel", "kernel TCP in two network namespaces (root)", func(o Options) Backend { return Kernel{Via: o.Via} }},
}

// NewBackend returns the backend called name.
func NewBackend(name string, o Options) (Backend, error) {
	for _, b := range backends {
		if b.name == name {
			return b.new(o), nil
		}
	}
	return nil, fmt.Errorf("backend %q is unknown; want %s", name, BackendNames())
}

// BackendNames lists the backends for messages: "emulated or kernel".
func BackendNames() string {
	var names []string
	for _, b := range backends {
		names = append(names, b.name)
	}
	return english.Or(names...)
}
