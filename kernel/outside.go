//go:build linux

package kernel

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ForwardOutside makes the rest of the world, as this process's own
// namespace reaches it, reachable from the client namespace across the
// link, for TCP and for DNS:
//
//   - The client namespace routes every address through the link, via
//     ServerAddr.
//   - In the server namespace, a TCP connection to any address other
//     than ServerAddr is redirected (nftables, in that namespace only) to
//     one listener, which opens the connection the client asked for (its
//     original destination) from this process's namespace and copies
//     both ways, as ForwardHost does for the host's loopback. So the
//     server namespace's kernel TCP answers across the link, and the
//     connection onwards is the host's own.
//   - DNS over UDP to any address goes to a relay in the server
//     namespace that asks resolver from this process's namespace. A
//     query to a loopback address in loopback (the client's resolv.conf
//     is the host's, and may name 127.0.0.53) is taken by a relay on that
//     address in the client namespace and sent across the link to the
//     server's.
//
// Other protocols (ICMP, other UDP) do not leave. The rules live in the
// server namespace, so they go with it: nothing is added to the host. An
// invalid resolver means no DNS relay.
func (n *Net) ForwardOutside(resolver netip.AddrPort, loopback []netip.Addr) error {
	if err := n.defaultRoute(); err != nil {
		return fmt.Errorf("kernel: route the client's traffic through the link: %w", err)
	}
	ln, err := n.Listen(0)
	if err != nil {
		return fmt.Errorf("kernel: listen for the outside's connections: %w", err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	rules := [][]expr.Any{redirect(unix.IPPROTO_TCP, 0, port)}
	if resolver.IsValid() {
		rules = append(rules, redirect(unix.IPPROTO_UDP, 53, 53))
	}
	if err := nat(n.server, nftables.ChainHookPrerouting, rules); err != nil {
		ln.Close()
		return err
	}
	n.serve(ln, func(c trackedConn) {
		dst, err := originalDst(c.TCPConn)
		if err == nil {
			err = outsideAllowed(dst.Addr())
		}
		if err != nil {
			c.SetLinger(0) // a reset, as a refused connect gives
			c.Close()
			return
		}
		n.forward(c, dialHost(dst))
	})
	if !resolver.IsValid() {
		return nil
	}
	pc, err := n.ListenPacket(53)
	if err != nil {
		return fmt.Errorf("kernel: listen for DNS queries at %v:53: %w", ServerAddr, err)
	}
	n.relayDNS(pc.(trackedPacketConn), func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", resolver.String())
	})
	if len(loopback) == 0 {
		return nil
	}
	// Queries to a loopback name server cross the link to the server's
	// relays: UDP, and TCP for an answer too long for UDP. The server
	// namespace's port 53 passes TCP on to the resolver, unless the host's
	// own port 53 is forwarded there already (ForwardHost).
	if ln, err := n.Listen(53); err == nil {
		n.serve(ln, func(c trackedConn) { n.forward(c, dialHost(resolver)) })
	} else if !errors.Is(err, unix.EADDRINUSE) {
		return fmt.Errorf("kernel: listen for DNS over TCP at %v:53: %w", ServerAddr, err)
	}
	server := netip.AddrPortFrom(ServerAddr, 53)
	fromClient := func(ctx context.Context, network string) (c net.Conn, err error) {
		err = n.client.do(func() error {
			c, err = (&net.Dialer{}).DialContext(ctx, network, server.String())
			return err
		})
		return c, err
	}
	for _, a := range slices.Compact(slices.SortedFunc(slices.Values(loopback), netip.Addr.Compare)) {
		pc, err := n.packetConn(n.client, netip.AddrPortFrom(a, 53))
		if err != nil {
			return fmt.Errorf("kernel: listen for DNS queries at %v:53 in the client's namespace: %w", a, err)
		}
		n.relayDNS(pc.(trackedPacketConn), func(ctx context.Context) (net.Conn, error) { return fromClient(ctx, "udp4") })
		ln, err := n.listenIn(n.client, netip.AddrPortFrom(a, 53))
		if err != nil {
			return fmt.Errorf("kernel: listen for DNS over TCP at %v:53 in the client's namespace: %w", a, err)
		}
		n.serve(ln, func(c trackedConn) {
			n.forward(c, func(ctx context.Context) (net.Conn, error) { return fromClient(ctx, "tcp4") })
		})
	}
	return nil
}

// outsideAllowed refuses the original destinations that are not the
// outside but this host: loopback (127.0.0.0/8, which a command could
// route over the link), 0.0.0.0/8 (this host, to connect), the link's
// own addresses, and every address this process's namespace would
// deliver to itself (hostRoute): its interfaces' addresses and any other
// local route (`ip route add local 198.19.2.0/24 dev lo` makes a whole
// prefix answer on the host's wildcard listeners, though no interface
// lists it). The host's loopback services are reachable only as
// ForwardHost makes them, port by port.
func outsideAllowed(dst netip.Addr) error {
	dst = dst.Unmap()
	if dst.IsLoopback() || dst.IsUnspecified() || netip.MustParsePrefix("0.0.0.0/8").Contains(dst) || dst == ServerAddr || dst == ClientAddr {
		return fmt.Errorf("kernel: %v is this host, not the outside", dst)
	}
	typ, err := hostRoute(dst)
	switch {
	case err != nil:
		return fmt.Errorf("kernel: the route to %v: %w", dst, err)
	case typ == unix.RTN_LOCAL:
		return fmt.Errorf("kernel: %v is an address of this host, not the outside", dst)
	case typ != unix.RTN_UNICAST && typ != unix.RTN_UNSPEC:
		return fmt.Errorf("kernel: %v is no single host beyond this one (route type %d)", dst, typ)
	}
	return nil
}

// hostRoute asks the kernel what it does with a packet that this
// thread's network namespace sends to dst: the type of the route it
// finds (RTM_GETROUTE for dst alone, as `ip route get` asks),
// RTN_LOCAL when the namespace delivers the packet to itself.
// RTN_UNSPEC means no route: the packet goes nowhere.
//
// A lookup, rather than a list of the namespace's addresses or a read of
// its local table, because it is the decision itself: it takes the
// routing policy rules and every table they name, and a route added
// since the last connection, the same way the relay's own connect does.
// The relay's goroutines run, unlocked, on threads in this process's
// namespace, where it dials; the answer is for that namespace.
func hostRoute(dst netip.Addr) (int, error) {
	routes, err := netlink.RouteGet(net.IP(dst.AsSlice()))
	switch {
	case errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EHOSTUNREACH):
		return unix.RTN_UNSPEC, nil // a connect fails the same way
	case err != nil:
		return 0, err
	case len(routes) == 0:
		return 0, errors.New("the kernel gave no route")
	}
	return routes[0].Type, nil
}

// defaultRoute routes every address from the client namespace through
// the link's device via ServerAddr (a gateway: over the netem link's
// veth pair the client must resolve a neighbour that answers ARP), with
// the pinned congestion control.
func (n *Net) defaultRoute() error {
	h, l, err := device(n.client)
	if err != nil {
		return err
	}
	defer h.Close()
	return h.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.IP(ServerAddr.AsSlice()),
		Src: net.IP(ClientAddr.AsSlice()), Congctl: string(n.cfg.CongestionControl)})
}

// nat adds a table "netemu" with one NAT chain at hook, holding rules, to
// the namespace.
func nat(ns *namespace, hook *nftables.ChainHook, rules [][]expr.Any) error {
	c, err := nftables.New(nftables.WithNetNSFd(ns.fd))
	if err != nil {
		return fmt.Errorf("kernel: nftables: %w", err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "netemu"})
	ch := c.AddChain(&nftables.Chain{Name: "nat", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: hook, Priority: nftables.ChainPriorityNATDest})
	for _, r := range rules {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("kernel: nftables rules: %w", err)
	}
	return nil
}

// redirect is the rule "ip daddr != ServerAddr meta l4proto proto [th
// dport dport] redirect to :to": a packet for another address is taken
// by the server namespace's own socket on port to.
func redirect(proto byte, dport, to uint16) []expr.Any {
	e := []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: ServerAddr.AsSlice()},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
	if dport != 0 {
		e = append(e,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, dport)})
	}
	return append(e,
		&expr.Immediate{Register: 1, Data: binary.BigEndian.AppendUint16(nil, to)},
		&expr.Redir{RegisterProtoMin: 1})
}

// originalDst is where a redirected connection was going.
func originalDst(c *net.TCPConn) (netip.AddrPort, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var dst netip.AddrPort
	var gerr error
	err = rc.Control(func(fd uintptr) {
		// SO_ORIGINAL_DST returns a sockaddr_in; the IPv6 mreq getter
		// reads those 16 bytes as they are.
		m, err := unix.GetsockoptIPv6Mreq(int(fd), unix.IPPROTO_IP, unix.SO_ORIGINAL_DST)
		if err != nil {
			gerr = err
			return
		}
		b := m.Multiaddr
		dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
	})
	if err == nil {
		err = gerr
	}
	return dst, err
}

// dnsTimeout bounds the wait for the answer to one query.
const dnsTimeout = 5 * time.Second

// relayDNS answers each query that reaches pc, in the background, with
// the answer it gets over a socket that dial opens for the query, until
// pc or the network is closed.
func (n *Net) relayDNS(pc trackedPacketConn, dial func(context.Context) (net.Conn, error)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer pc.Close()
		buf := make([]byte, 65536)
		for {
			m, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			q := append([]byte(nil), buf[:m]...)
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				ctx, cancel := n.untilClosed(dnsTimeout)
				defer cancel()
				up, err := dial(ctx)
				if err != nil {
					return
				}
				defer up.Close()
				context.AfterFunc(ctx, func() { up.Close() })
				if _, err := up.Write(q); err != nil {
					return
				}
				a := make([]byte, 65536)
				k, err := up.Read(a)
				if err != nil {
					return
				}
				pc.WriteToUDPAddrPort(a[:k], from)
			}()
		}
	}()
}

// HostResolvers reads the host's /etc/resolv.conf: its first name server,
// at port 53 (the zero AddrPort if it names none), and those of its name
// servers that are IPv4 loopback addresses.
func HostResolvers() (first netip.AddrPort, loopback []netip.Addr, err error) {
	f, err := os.Open("/etc/resolv.conf")
	if errors.Is(err, os.ErrNotExist) {
		return netip.AddrPort{}, nil, nil
	}
	if err != nil {
		return netip.AddrPort{}, nil, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(fields[1])
		if err != nil {
			continue
		}
		if !first.IsValid() {
			first = netip.AddrPortFrom(a, 53)
		}
		if a.Is4() && a.IsLoopback() {
			loopback = append(loopback, a)
		}
	}
	return first, loopback, s.Err()
}
