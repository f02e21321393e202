package emutest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
)

// Mesh makes the network a full mesh of the named hosts, in place of the
// client and the server: each pair of hosts joined by a link of its own,
// shaped by the link options (RTT, Rate, Loss, Netem, Outage, Link, ...)
// given before or after Mesh. Hosts reach each other by name:
// h.Dial(ctx, "n2:8300").
//
// A host has one interface, so each host sits on an access link (named
// "HOST/access": no delay, no rate limit, the links' MTU) to a router of
// its own ("HOST/router"), and every two routers are joined by the pair's
// link, named "A-B" for hosts A and B in the order given (its direction
// a>b carries A's packets to B). A packet from A to B crosses A's access
// link, the link A-B and B's access link, so RTT(d) is each pair's round
// trip. Cutting the link A-B (CutLink), or the path (Cut), parts A and B
// alone; changing it (SetDelay, SetRate, SetLoss, ChangeLink) shapes
// that pair alone. Host i (from 0) has the address 198.18.i.1.
func Mesh(hosts ...string) Option {
	return option(func(s *settings) error {
		if len(hosts) < 2 {
			return fmt.Errorf("emutest.Mesh(%q): want at least two hosts", hosts)
		}
		s.mesh, s.cfg.Topology = slices.Clone(hosts), nil
		return nil
	})
}

// Names returns n host names: prefix1 … prefixN, for Mesh.
func Names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// Topology makes the network t (package topo: hosts, routers, links,
// routes) in place of the client and the server. t's links carry their
// own configurations: the link options do not apply with it.
func Topology(t topo.Topology) Option {
	return option(func(s *settings) error {
		s.cfg.Topology, s.mesh = &t, nil
		return nil
	})
}

// network sets s.cfg.Topology for Mesh, and refuses link options beside
// a Topology.
func (s *settings) network() error {
	switch {
	case s.mesh != nil:
		t := topo.Mesh(s.mesh, s.cfg.Link)
		s.cfg.Topology, s.cfg.Link = &t, link.Config{}
	case s.cfg.Topology != nil && !reflect.ValueOf(s.cfg.Link).IsZero():
		return errors.New("link options (RTT, Rate, Loss, Netem, Outage, Link, ...) shape the pair or a Mesh; a Topology's links carry their own configurations")
	}
	return nil
}

// Host is a host of the network, by name, with the helpers a test needs
// to run a node of a cluster there: Dial and DialContext by name
// ("n2:8300"), Listen, HTTPServer, HTTPClient, Pipe. Each call acts on
// the host's stack of the moment, so after Restart the same Host dials
// from the new stack (and Listen is needed again).
type Host struct {
	n    *Net
	name string
	addr netip.Addr
}

// Host returns the host called name; the test fails if there is none.
// (The stack itself is n.Net.Host(name).)
func (n *Net) Host(name string) *Host {
	n.tb.Helper()
	addr, ok := n.Topology().HostAddr(name)
	if !ok {
		n.tb.Fatalf("emutest: no host %q; the hosts are %v", name, n.Topology().Hosts)
	}
	return &Host{n: n, name: name, addr: addr}
}

// Hosts returns every host, in the topology's order.
func (n *Net) Hosts() []*Host {
	var out []*Host
	for _, name := range n.Topology().Hosts {
		out = append(out, n.Host(name))
	}
	return out
}

// Name is the host's name.
func (h *Host) Name() string { return h.name }

// Addr is the host's address, which it keeps across restarts.
func (h *Host) Addr() netip.Addr { return h.addr }

// String is the host's name.
func (h *Host) String() string { return h.name }

// Stack is the host's stack of the moment.
func (h *Host) Stack() *tcpstack.Host { return h.n.Net.Host(h.name) }

// Listen listens on the host's port (0 picks a free one): a net.Listener
// to hand a library. It fails with net.ErrClosed on a crashed host.
func (h *Host) Listen(port uint16) (net.Listener, error) {
	ln, err := h.Stack().Listen(port)
	if err != nil {
		return nil, err
	}
	return ln, nil
}

// Dial connects from the host to addr, "name:port" or "ip:port".
func (h *Host) Dial(ctx context.Context, addr string) (emu.Conn, error) {
	ap, err := h.n.Resolve(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	c, err := h.Stack().Dial(ctx, ap)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DialContext is Dial shaped as net.Dialer's, for libraries that take
// one (http.Transport.DialContext, grpc.WithContextDialer, ...):
// network is "tcp" or "tcp4".
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("emutest: cannot dial %s %q: the emulated hosts speak TCP over IPv4", network, addr)}
	}
	c, err := h.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Resolve is the network's name service: "n2:8300" is host n2's address
// and port 8300; an IPv4 address stands for itself. An unknown name is a
// *net.DNSError that IsNotFound, as a resolver says.
func (n *Net) Resolve(hostport string) (netip.AddrPort, error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return netip.AddrPort{}, fmt.Errorf("emutest: %q: want a port from 1 to 65535", hostport)
	}
	if a, ok := n.Topology().HostAddr(host); ok {
		return netip.AddrPortFrom(a, uint16(port)), nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		return netip.AddrPortFrom(a, uint16(port)), nil
	}
	return netip.AddrPort{}, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Transport is an http.Transport whose connections the host dials, by
// the URL's host name ("http://n2:8080/"). Call CloseIdleConnections
// when done.
func (h *Host) Transport() *http.Transport {
	return &http.Transport{Proxy: nil, DialContext: h.DialContext}
}

// HTTPClient is an HTTP client on the host (see Transport); its idle
// connections close when the test ends.
func (h *Host) HTTPClient() *http.Client {
	tr := h.Transport()
	h.n.tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// HTTPServer serves handler over HTTP/1.1 on the host's port (0 means
// 80) until the test ends; its URL names the host.
func (h *Host) HTTPServer(port uint16, handler http.Handler) *Server {
	h.n.tb.Helper()
	s := &Server{Handler: handler, Port: port, host: h.name}
	if err := s.Start(h.Env(h.name)); err != nil {
		h.n.tb.Fatalf("%v", err)
	}
	h.n.tb.Cleanup(func() { s.Close() })
	return s
}

// Pipe returns both ends of a new TCP connection: client dialed from
// the host, server accepted on host to's port (0 picks a free one). Both
// close when the test ends.
func (h *Host) Pipe(ctx context.Context, to string, port uint16) (client, server emu.Conn) {
	h.n.tb.Helper()
	client, server, err := Pipe(ctx, h.Env(to), port)
	if err != nil {
		h.n.tb.Fatalf("emutest: %v", err)
	}
	h.n.tb.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// Env is the network as a workload sees it from the host to host to:
// the host dials, to listens (emu.Net.Between), each call on the hosts'
// stacks of the moment.
func (h *Host) Env(to string) emu.Env {
	return &hostEnv{n: h.n.Net, from: h.name, to: to}
}

// hostEnv is an emu.Env between two hosts by name.
type hostEnv struct {
	n        *emu.Net
	from, to string
}

func (e *hostEnv) Now() time.Time                                   { return e.n.Now() }
func (e *hostEnv) Sleep(ctx context.Context, d time.Duration) error { return e.n.Sleep(ctx, d) }
func (e *hostEnv) Go(f func())                                      { e.n.Go(f) }
func (e *hostEnv) Seed() uint64                                     { return e.n.Seed() }
func (e *hostEnv) Clock() clock.Clock                               { return e.n.Clock() }

// stack is the named host's stack, or an error naming the hosts.
func (e *hostEnv) stack(name string) (*tcpstack.Host, error) {
	if h := e.n.Host(name); h != nil {
		return h, nil
	}
	return nil, fmt.Errorf("emutest: no host %q; the hosts are %v", name, e.n.Topology().Hosts)
}

func (e *hostEnv) Listen(port uint16) (net.Listener, error) {
	h, err := e.stack(e.to)
	if err != nil {
		return nil, err
	}
	ln, err := h.Listen(port)
	if err != nil {
		return nil, err
	}
	return ln, nil
}

func (e *hostEnv) Dial(ctx context.Context, port uint16) (emu.Conn, error) {
	from, err := e.stack(e.from)
	if err != nil {
		return nil, err
	}
	to, err := e.stack(e.to)
	if err != nil {
		return nil, err
	}
	c, err := from.Dial(ctx, to.AddrPort(port))
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (e *hostEnv) ListenPacket(port uint16) (net.PacketConn, error) {
	h, err := e.stack(e.to)
	if err != nil {
		return nil, err
	}
	c, err := h.ListenUDP(port)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (e *hostEnv) DialPacket(ctx context.Context, port uint16) (net.PacketConn, net.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	from, err := e.stack(e.from)
	if err != nil {
		return nil, nil, err
	}
	to, err := e.stack(e.to)
	if err != nil {
		return nil, nil, err
	}
	c, err := from.ListenUDP(0)
	if err != nil {
		return nil, nil, err
	}
	return c, net.UDPAddrFromAddrPort(to.AddrPort(port)), nil
}
