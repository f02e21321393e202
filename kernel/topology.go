//go:build linux

package kernel

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TopoNet is a kernel-mode network of any shape (TopoConfig): a network
// namespace per host and per router, every link a link.Link on one
// precise real-time clock whose two ends are TUN devices in its two
// nodes' namespaces. Routers forward (net.ipv4.ip_forward=1) by the
// emulated network's tables; hosts send everything through their one
// link. Between gives the network as a workload sees it between two
// hosts.
//
// Like Net, it is made of unnamed namespaces held by open file
// descriptors, and TUN devices that live only while their descriptor is
// open: nothing outlives the process, however it ends.
type TopoNet struct {
	cfg   TopoConfig
	nodes map[string]*namespace // every host's and router's, by name
	facts Facts

	// The bridge: links[i] carries link i's packets between tuns[i][0]
	// (its A end's device) and tuns[i][1] (its B end's).
	clk          *clock.Precise
	bridgeThread string // clk's thread's scheduling (Facts)
	links        []*link.Link
	tuns         [][2]*os.File
	writeErrors  atomic.Uint64 // delivered packets a TUN refused

	wg     sync.WaitGroup // the pumps and the probe loop
	closed chan struct{}

	flowsMu sync.Mutex
	flows   []*Net // the environments Between made; nil once closed

	probeMu sync.Mutex // calls cfg.Probe one at a time

	closeOnce sync.Once
}

// tunName is the name of link i's device in both its ends' namespaces.
func tunName(i int) string { return fmt.Sprintf("netemu%d", i) }

// NewTopo builds the namespaces, the TUN devices, the routes and the
// links of cfg.Topology. On any error everything made so far is removed.
func NewTopo(cfg TopoConfig) (_ *TopoNet, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CongestionControl == "" {
		cfg.CongestionControl = tcpstack.DefaultCongestionControl
	}
	t := cfg.Topology
	n := &TopoNet{cfg: cfg, nodes: map[string]*namespace{}, closed: make(chan struct{}), flows: []*Net{},
		tuns: make([][2]*os.File, len(t.Links))}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	for _, name := range append(slices.Clone(t.Hosts), t.Routers...) {
		ns, err := newNamespace()
		if err != nil {
			if permission(err) {
				return nil, notPermitted(err)
			}
			return nil, err
		}
		n.nodes[name] = ns
		if err := prepareNode(ns, slices.Contains(t.Routers, name)); err != nil {
			return nil, fmt.Errorf("kernel: %s: %w", name, err)
		}
	}
	if err := n.openTUNs(); err != nil {
		return nil, err
	}
	if err := n.address(); err != nil {
		return nil, err
	}
	if err := n.route(); err != nil {
		return nil, err
	}
	if err := n.bridge(); err != nil {
		return nil, err
	}
	if n.facts, err = readFacts(n.nodes[t.Hosts[0]], TUN, cfg.CongestionControl); err != nil {
		return nil, err
	}
	n.facts.BridgeThread = n.bridgeThread
	if cfg.Probe != nil {
		every := cfg.ProbeEvery
		if every <= 0 {
			every = time.Millisecond
		}
		n.wg.Add(1)
		go n.probeLoop(every)
	}
	return n, nil
}

// prepareNode pins a node's settings (prepare), and makes a router
// forward as emulated routers do: IPv4 forwarding on, no reverse-path
// filter (routes may be asymmetric), no ICMP redirects.
func prepareNode(ns *namespace, router bool) error {
	if router {
		for _, s := range []struct{ path, value string }{
			{"net/ipv4/ip_forward", "1"},
			{"net/ipv4/conf/all/rp_filter", "0"},
			{"net/ipv4/conf/default/rp_filter", "0"},
			{"net/ipv4/conf/all/send_redirects", "0"},
			{"net/ipv4/conf/default/send_redirects", "0"},
		} {
			if err := ns.sysctl(s.path, s.value); err != nil {
				return fmt.Errorf("sysctl %s=%s: %w", s.path, s.value, err)
			}
		}
	}
	return prepare(ns)
}

// openTUNs creates link i's device in each of its ends' namespaces.
func (n *TopoNet) openTUNs() error {
	for i, l := range n.cfg.Topology.Links {
		for end, node := range []string{l.A, l.B} {
			err := n.nodes[node].do(func() error {
				var err error
				n.tuns[i][end], err = openTUN(tunName(i))
				return err
			})
			if err != nil {
				return tunError(err)
			}
		}
	}
	return nil
}

// mtu is link i's MTU, its default where it gives none.
func (n *TopoNet) mtu(i int) int {
	return n.cfg.Topology.Links[i].Config.WithDefaults().MTU
}

// address gives every device its link's MTU and its node's address, and
// brings it up. A host's device has the host's address; a router's the
// link end's (topo.Addr), unless a host has that address of its own
// (topo.Topology.Addrs), where it has none, so that packets to that host
// are forwarded, never taken by the router.
func (n *TopoNet) address() error {
	t := n.cfg.Topology
	hostAddrs := map[netip.Addr]bool{}
	for _, h := range t.Hosts {
		a, _ := t.HostAddr(h)
		hostAddrs[a] = true
	}
	for i, l := range t.Links {
		for end, node := range []string{l.A, l.B} {
			addr, ok := t.HostAddr(node)
			if !ok { // a router
				addr = topo.Addr(i, end)
				if hostAddrs[addr] {
					addr = netip.Addr{}
				}
			}
			if err := n.device(node, i, addr); err != nil {
				return fmt.Errorf("kernel: %s's end of link %s: %w", node, l.Label(), err)
			}
		}
	}
	return nil
}

// device sets up link i's device in node's namespace with address addr
// (none if addr is not valid).
func (n *TopoNet) device(node string, i int, addr netip.Addr) error {
	h, err := handle(n.nodes[node])
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(tunName(i))
	if err != nil {
		return fmt.Errorf("find %s: %w", tunName(i), err)
	}
	if err := h.LinkSetMTU(l, n.mtu(i)); err != nil {
		return fmt.Errorf("set MTU %d: %w", n.mtu(i), err)
	}
	if err := h.LinkSetTxQLen(l, 10000); err != nil {
		return fmt.Errorf("set txqueuelen: %w", err)
	}
	if addr.IsValid() {
		if err := h.AddrAdd(l, &netlink.Addr{IPNet: prefix32(addr)}); err != nil {
			return fmt.Errorf("add address %v: %w", addr, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("bring %s up: %w", tunName(i), err)
	}
	return nil
}

// route writes the routes: every host sends everything through its link,
// from its address, with the pinned congestion control; every router
// sends each host's address to the next hop of topo.Topology.Tables, the
// neighbour's address on that link (on-link: a TUN device has no
// neighbours to resolve). Routers have no other route, so a packet to an
// address no host has is dropped, as emulated routers drop it.
func (n *TopoNet) route() error {
	t := n.cfg.Topology
	for _, host := range t.Hosts {
		self, _ := t.HostAddr(host)
		i := t.LinksOf(host)[0]
		r := func(l netlink.Link) *netlink.Route {
			return &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
				Scope: netlink.SCOPE_LINK, Src: net.IP(self.AsSlice()), Congctl: string(n.cfg.CongestionControl)}
		}
		if err := n.addRoute(host, i, r); err != nil {
			return fmt.Errorf("kernel: host %s's route through link %s (congctl %s): %w", host, t.Links[i].Label(), n.cfg.CongestionControl, err)
		}
	}
	tables, err := t.Tables()
	if err != nil {
		return err
	}
	for _, router := range t.Routers {
		for _, host := range t.Hosts {
			hop := tables[router][host]
			dst, _ := t.HostAddr(host)
			gw := neighbourAddr(t, hop.Link, router)
			r := func(l netlink.Link) *netlink.Route {
				return &netlink.Route{LinkIndex: l.Attrs().Index, Dst: prefix32(dst), Gw: net.IP(gw.AsSlice()), Flags: int(netlink.FLAG_ONLINK)}
			}
			if err := n.addRoute(router, hop.Link, r); err != nil {
				return fmt.Errorf("kernel: router %s's route to %s (%v) via %v on link %s: %w", router, host, dst, gw, t.Links[hop.Link].Label(), err)
			}
		}
	}
	return nil
}

// neighbourAddr is the address of the node at the other end of link i
// from node: a host's own, a router's end of the link.
func neighbourAddr(t topo.Topology, i int, node string) netip.Addr {
	l := t.Links[i]
	other, end := l.B, 1
	if l.B == node {
		other, end = l.A, 0
	}
	if a, ok := t.HostAddr(other); ok {
		return a
	}
	return topo.Addr(i, end)
}

// addRoute adds in node's namespace the route r makes for link i's
// device.
func (n *TopoNet) addRoute(node string, i int, r func(netlink.Link) *netlink.Route) error {
	h, err := handle(n.nodes[node])
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(tunName(i))
	if err != nil {
		return fmt.Errorf("find %s: %w", tunName(i), err)
	}
	return h.RouteAdd(r(l))
}

// bridge makes the links, on one precise clock, and starts a pump per
// device: what a node sends into its end of link i crosses the link in
// that end's direction and comes out of the other end's device.
func (n *TopoNet) bridge() error {
	n.clk, n.bridgeThread = newBridgeClock()
	for i, tl := range n.cfg.Topology.Links {
		lc := tl.Config
		lc.DelayedACK = 0 // kernel TCP delays its own ACKs
		if lc.Seed == 0 {
			lc.Seed = topo.LinkSeed(n.cfg.Seed, i)
		}
		tuns := n.tuns[i]
		l, err := link.New(lc, n.clk, func(dir link.Dir, pkt []byte) {
			// a>b reaches B's device, b>a A's.
			if _, err := tuns[1-int(dir)].Write(pkt); err != nil {
				n.writeErrors.Add(1)
			}
		})
		if err != nil {
			return fmt.Errorf("kernel: link %s: %w", tl.Label(), err)
		}
		n.links = append(n.links, l)
	}
	for i, l := range n.links {
		for end, dir := range []link.Dir{link.AtoB, link.BtoA} {
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				pumpTUN(n.tuns[i][end], l, dir)
			}()
		}
	}
	return nil
}

// Between returns the network as a workload sees it between two of its
// hosts: Listen (and ListenPacket) in to's namespace at to's address,
// Dial (and DialPacket) from from's. Its clock is the wall clock, its
// Seed TopoConfig.Seed. What it hands out closes with the network.
func (n *TopoNet) Between(from, to string) (emu.Env, error) {
	t := n.cfg.Topology
	a, okA := t.HostAddr(from)
	b, okB := t.HostAddr(to)
	switch {
	case !okA:
		return nil, fmt.Errorf("kernel: no host %q; the hosts are %v", from, t.Hosts)
	case !okB:
		return nil, fmt.Errorf("kernel: no host %q; the hosts are %v", to, t.Hosts)
	case from == to:
		return nil, fmt.Errorf("kernel: a flow from %s to itself; want two hosts", from)
	}
	client, err := n.nodes[from].dup()
	if err != nil {
		return nil, err
	}
	server, err := n.nodes[to].dup()
	if err != nil {
		client.close()
		return nil, err
	}
	f := &Net{cfg: Config{Link: link.Config{Seed: n.cfg.Seed}, Via: TUN, CongestionControl: n.cfg.CongestionControl},
		client: client, server: server, facts: n.facts, clientAddr: a, serverAddr: b,
		closed: make(chan struct{}), sockets: map[io.Closer]struct{}{}}
	if n.cfg.Probe != nil {
		f.onClose = n.sampleLast
	}
	n.flowsMu.Lock()
	defer n.flowsMu.Unlock()
	if n.flows == nil {
		f.Close()
		return nil, errClosed
	}
	n.flows = append(n.flows, f)
	return f, nil
}

// dup returns a namespace of its own that is ns, held by a descriptor of
// its own: closing one leaves the other.
func (ns *namespace) dup() (*namespace, error) {
	fd, err := unix.FcntlInt(uintptr(ns.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("kernel: hold a namespace: %w", err)
	}
	return &namespace{fd: fd}, nil
}

// probeLoop samples TCP_INFO of every connection the flows handed out,
// every interval, until Close, as Net's probe loop does for the pair.
func (n *TopoNet) probeLoop(every time.Duration) {
	defer n.wg.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var conns []*net.TCPConn
	for {
		select {
		case <-n.closed:
			return
		case <-tick.C:
		}
		conns = conns[:0]
		n.flowsMu.Lock()
		for _, f := range n.flows {
			conns = f.appendConns(conns)
		}
		n.flowsMu.Unlock()
		now := time.Now()
		for _, c := range conns {
			if s, ok := sampleOf(c, now); ok {
				n.probe(s)
			}
		}
	}
}

// sampleLast samples c as it closes: the counts of its whole life,
// which the last tick may have missed.
func (n *TopoNet) sampleLast(c *net.TCPConn) {
	if s, ok := sampleOf(c, time.Now()); ok {
		n.probe(s)
	}
}

// probe hands s to TopoConfig.Probe, one call at a time.
func (n *TopoNet) probe(s tcpstack.Sample) {
	n.probeMu.Lock()
	defer n.probeMu.Unlock()
	n.cfg.Probe(s)
}

// Link returns the link called name (topo.Link.Label), to observe it;
// ok is false if there is none.
func (n *TopoNet) Link(name string) (*link.Link, bool) {
	for i, tl := range n.cfg.Topology.Links {
		if tl.Label() == name && i < len(n.links) {
			return n.links[i], true
		}
	}
	return nil, false
}

// Topology returns the network's description.
func (n *TopoNet) Topology() topo.Topology { return n.cfg.Topology }

// Facts returns what the results came from (read in the first host's
// namespace).
func (n *TopoNet) Facts() Facts { return n.facts }

// Stats returns every link's counters, the first's as Link, and how late
// the bridge, one clock for all the links, delivered.
func (n *TopoNet) Stats() Stats {
	var s Stats
	for _, l := range n.links {
		s.Links = append(s.Links, l.Stats())
	}
	if len(s.Links) > 0 {
		s.Link = s.Links[0]
	}
	if n.clk != nil {
		s.LateMean, s.LateP99, s.LateMax, s.LateSamples = n.clk.Lateness()
	}
	s.TUNWriteErrors = n.writeErrors.Load()
	return s
}

// Inodes returns each node's namespace's inode number, by name, to check
// from outside that they are gone.
func (n *TopoNet) Inodes() map[string]uint64 {
	out := map[string]uint64{}
	for name, ns := range n.nodes {
		out[name] = ns.inode()
	}
	return out
}

// Close removes everything: the flows' sockets close, the bridge stops,
// the TUN devices and the namespaces go away. Idempotent.
func (n *TopoNet) Close() error {
	n.closeOnce.Do(func() {
		close(n.closed)
		n.flowsMu.Lock()
		flows := n.flows
		n.flows = nil
		n.flowsMu.Unlock()
		for _, f := range flows {
			f.Close()
		}
		for _, pair := range n.tuns {
			for _, tun := range pair {
				if tun != nil {
					tun.Close()
				}
			}
		}
		n.wg.Wait()
		for _, l := range n.links {
			l.Close()
		}
		if n.clk != nil {
			n.clk.Close()
		}
		for _, ns := range n.nodes {
			ns.close()
		}
	})
	return nil
}
