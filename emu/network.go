package emu

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
)

// A network of any shape (Config.Topology): its hosts are tcpstack hosts,
// its routers forward between links, and every link is a link.Link whose
// far end hands packets to the node there (deliver, arrive). On the
// virtual clock a packet crosses a router within the event that
// delivers it, so the order of everything stays the clock's.

// node is one end of a link: host i (router false) or router i. Every
// node carries the network's faults (faults.go), which the packet path
// consults.
type node struct {
	router bool
	i      int
	f      *faults
}

// build makes the links, then the hosts, then the routers of n.topo,
// joined as it says: on the pair, exactly the link and the two hosts New
// always made, in the same order, so that its runs stay what they were.
func (n *Net) build() error {
	cfg, t := n.cfg, n.topo
	var linkClock clock.Clock = n.virtual
	switch {
	case n.precise != nil:
		linkClock = n.precise
	case cfg.Clock == Bubble:
		linkClock = n.clk
	}
	f := newFaults(n)
	index := map[string]node{}
	for i, h := range t.Hosts {
		index[h] = node{i: i, f: f}
	}
	for i, r := range t.Routers {
		index[r] = node{router: true, i: i, f: f}
	}
	verify := false // a link that corrupts needs hosts that check checksums, as kernels do
	for i, tl := range t.Links {
		lc := tl.Config
		if lc.Seed == 0 {
			lc.Seed = topo.LinkSeed(cfg.Seed, i)
		}
		if cfg.OwnDelayedACKs() {
			// netemu's TCP delays its own ACKs and grows its own window,
			// as a Linux receiver does: the links only carry the packets.
			lc.DelayedACK = 0
		}
		l, err := link.New(lc, linkClock, func(dir link.Dir, pkt []byte) { n.deliver(i, dir, pkt) })
		if err != nil {
			if len(t.Links) > 1 {
				return fmt.Errorf("emu: link %s: %w", tl.Label(), err)
			}
			return err
		}
		n.links = append(n.links, l)
		n.ends = append(n.ends, [2]node{index[tl.A], index[tl.B]})
		verify = verify || lc.Corrupt.P > 0 || lc.BtoA != nil && lc.BtoA.Corrupt.P > 0
	}
	n.link = n.links[0]
	n.byAddr = map[netip.Addr]int{}
	for i, name := range t.Hosts {
		addr, _ := t.HostAddr(name)
		li := t.LinksOf(name)[0]
		out, mtu := n.links[li], n.links[li].Config().MTU
		dir := link.AtoB
		if t.Links[li].B == name {
			dir = link.BtoA
		}
		tcp := cfg.TCP
		if i == 1 {
			tcp = cfg.ServerTCPConfig()
		}
		p := &port{name: name, i: i, link: li, dir: dir,
			cfg: tcpstack.Config{Addr: addr, Clock: n.clk, MTU: mtu, TCP: tcp, Seed: hostSeed(cfg.Seed, i), Probe: cfg.Probe, VerifyChecksums: verify}}
		p.send = func(pkt []byte) {
			if f.egress(p, pkt) {
				out.Send(dir, pkt)
			}
		}
		h, err := tcpstack.New(p.cfg, p.send)
		if err != nil {
			return err
		}
		p.host.Store(h)
		f.ports = append(f.ports, p)
		n.hosts = append(n.hosts, h)
		n.byAddr[addr] = i
	}
	f.cuts = make([]uint8, len(n.links))
	n.client, n.server = n.hosts[0], n.hosts[1]
	tables, err := t.Tables()
	if err != nil {
		return err
	}
	for _, name := range t.Routers {
		r := &router{name: name, next: map[netip.Addr]topo.Hop{}}
		for h, hop := range tables[name] {
			addr, _ := t.HostAddr(h)
			r.next[addr] = hop
		}
		n.routers = append(n.routers, r)
	}
	return nil
}

// hostSeed is host i's seed: the network's for the pair's two hosts, as
// they always had, one of its own for each other.
func hostSeed(seed uint64, i int) uint64 {
	if i < 2 {
		return seed
	}
	return seed ^ uint64(i)*0xbf58476d1ce4e5b9
}

// arrive hands pkt, delivered by a link, to node to: a host takes it, a
// router forwards it.
func (n *Net) arrive(to node, pkt []byte) {
	if !to.router {
		if p := to.f.ports[to.i]; to.f.arrive(p) {
			p.host.Load().Deliver(pkt)
		}
		return
	}
	r := n.routers[to.i]
	hop, ok := r.route(pkt)
	if !ok || !to.f.forward(hop) {
		return
	}
	n.links[hop.Link].Send(hop.Dir, pkt)
}

// A router forwards IPv4 packets by their destination to the next hop of
// its table, decrementing the TTL, as a router's forwarding path does
// (RFC 1812 section 5.2.4, 5.3.1). It queues nothing itself: its output
// queue on a link is that link's queue discipline.
type router struct {
	name string
	next map[netip.Addr]topo.Hop // by destination host

	mu    sync.Mutex
	count RouterStats
}

// RouterStats counts what a router did with the packets it received.
type RouterStats struct {
	Name      string
	Forwarded uint64
	// NoRoute: a destination no host of the network has. TTLExpired: a
	// packet whose TTL would reach 0 here (RFC 1812 section 5.3.1; no
	// ICMP is sent back).
	NoRoute, TTLExpired uint64
}

func (r *router) stats() RouterStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.count
	s.Name = r.name
	return s
}

// route returns where pkt goes next, its TTL decremented and its header
// checksum updated to match (RFC 1624's incremental update); ok is false
// for a packet dropped here, counted by reason.
func (r *router) route(pkt []byte) (topo.Hop, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		r.count.NoRoute++
		return topo.Hop{}, false
	}
	dst := netip.AddrFrom4([4]byte(pkt[16:20]))
	hop, ok := r.next[dst]
	if !ok {
		r.count.NoRoute++
		return hop, false
	}
	if pkt[8] <= 1 {
		r.count.TTLExpired++
		return hop, false
	}
	old := binary.BigEndian.Uint16(pkt[8:10])
	pkt[8]--
	updateChecksum(pkt[10:12], old, binary.BigEndian.Uint16(pkt[8:10]))
	r.count.Forwarded++
	return hop, true
}

// updateChecksum updates the Internet checksum at sum for a 16-bit word
// of the data it covers that changed from old to new: HC' = ~(~HC + ~m +
// m'), in one's-complement arithmetic (RFC 1624, equation 3).
func updateChecksum(sum []byte, old, new uint16) {
	c := uint32(^binary.BigEndian.Uint16(sum)) + uint32(^old) + uint32(new)
	for c>>16 != 0 {
		c = c&0xffff + c>>16
	}
	binary.BigEndian.PutUint16(sum, ^uint16(c))
}

// Topology returns the network's topology: Config.Topology, or the pair.
func (n *Net) Topology() topo.Topology { return n.topo }

// Host returns the host called name; nil if there is none. After
// Restart it is the host's new stack: call Host again.
func (n *Net) Host(name string) *tcpstack.Host {
	if p := n.faults().port(name); p != nil {
		return p.host.Load()
	}
	return nil
}

// Link returns the link called name (topo.Link.Label), to change it
// while it runs (Reconfigure, AddOutage) or observe it; ok is false if
// there is none.
func (n *Net) Link(name string) (l *link.Link, ok bool) {
	for i, tl := range n.topo.Links {
		if tl.Label() == name {
			return n.links[i], true
		}
	}
	return nil, false
}

// Between returns the network as a workload sees it between two of its
// hosts: from dials, to listens. Its clock, goroutines and seed are the
// network's. It holds the hosts' stacks of the moment: after Restart of
// either, call Between again.
func (n *Net) Between(from, to string) (Env, error) {
	c, s := n.Host(from), n.Host(to)
	switch {
	case c == nil:
		return nil, fmt.Errorf("emu: no host %q; the hosts are %v", from, n.topo.Hosts)
	case s == nil:
		return nil, fmt.Errorf("emu: no host %q; the hosts are %v", to, n.topo.Hosts)
	case c == s:
		return nil, fmt.Errorf("emu: a flow from %s to itself; want two hosts", from)
	}
	return &pairEnv{n: n, client: c, server: s}, nil
}

// pairEnv is Net between two of its hosts.
type pairEnv struct {
	n              *Net
	client, server *tcpstack.Host
}

func (e *pairEnv) Now() time.Time                                   { return e.n.Now() }
func (e *pairEnv) Sleep(ctx context.Context, d time.Duration) error { return e.n.Sleep(ctx, d) }
func (e *pairEnv) Go(f func())                                      { e.n.Go(f) }
func (e *pairEnv) Seed() uint64                                     { return e.n.Seed() }
func (e *pairEnv) Listen(port uint16) (net.Listener, error)         { return e.server.Listen(port) }

func (e *pairEnv) Dial(ctx context.Context, port uint16) (Conn, error) {
	c, err := e.client.Dial(ctx, e.server.AddrPort(port))
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (e *pairEnv) ListenPacket(port uint16) (net.PacketConn, error) {
	return e.server.ListenUDP(port)
}

func (e *pairEnv) DialPacket(ctx context.Context, port uint16) (net.PacketConn, net.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	c, err := e.client.ListenUDP(0)
	if err != nil {
		return nil, nil, err
	}
	return c, net.UDPAddrFromAddrPort(e.server.AddrPort(port)), nil
}
