// Package raftexample runs a three-node hashicorp/raft cluster on an
// emulated network inside a testing/synctest bubble: raft's own
// NetworkTransport, unchanged, over a raft.StreamLayer built on emutest
// hosts (StreamLayer), its timers and deadlines on the bubble's clock.
// The tests partition the leader, watch the other two elect a new one,
// heal, and check that the three logs agree (raft_test.go); beside them a
// failure detector of ours runs on the same cluster at exact instants
// (detector_test.go). docs/CLUSTERTESTS.md walks through both.
//
// This is a module of its own, so that netemu's users do not inherit
// raft: run its tests from this directory, go test -race ./...
package raftexample

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/netemu/netemu/emutest"
)

// StreamLayer is a raft.StreamLayer on an emulated host: it accepts on
// the host's port and dials other hosts by name ("n2:8300"), so a raft
// cluster's addresses are the hosts' names.
type StreamLayer struct {
	net.Listener
	host *emutest.Host
	addr nameAddr
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// NewStreamLayer listens on host's port.
func NewStreamLayer(host *emutest.Host, port uint16) (*StreamLayer, error) {
	ln, err := host.Listen(port)
	if err != nil {
		return nil, err
	}
	return &StreamLayer{Listener: ln, host: host, addr: nameAddr(net.JoinHostPort(host.Name(), strconv.Itoa(int(port))))}, nil
}

// Dial connects to address, "name:port", within timeout of the run's
// time (the bubble's, where raft runs).
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.host.DialContext(ctx, "tcp", string(address))
}

// Addr is the address peers dial, "name:port": raft advertises it as
// the node's own (NetworkTransport.LocalAddr).
func (s *StreamLayer) Addr() net.Addr { return s.addr }

// nameAddr is a TCP address by host name.
type nameAddr string

func (a nameAddr) Network() string { return "tcp" }
func (a nameAddr) String() string  { return string(a) }
