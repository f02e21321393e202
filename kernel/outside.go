//go:build linux

package kernel

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
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
//   - The client namespace routes every address through the link.
//   - In the server namespace, a TCP connection to any address other
//     than ServerAddr is redirected (nftables, in that namespace only) to
//     one listener, which opens the connection the client asked for (its
//     original destination) from this process's namespace and copies
//     both ways, as ForwardHost does for the host's loopback. So the
//     server namespace's kernel TCP answers across the link, and the
//     connection onwards is the host's own.
//   - DNS over UDP, to any address, goes to a relay in the server
//     namespace that asks resolver from this process's namespace (a query
//     to a resolver on the client's loopback, as resolv.conf may name
//     one, is sent across the link too).
//
// Other protocols (ICMP, other UDP) do not leave. The rules live in the
// two namespaces, so they go with them: nothing is added to the host.
// An invalid resolver means no DNS relay.
func (n *Net) ForwardOutside(resolver netip.AddrPort) error {
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
		pc, err := n.ListenPacket(53)
		if err != nil {
			ln.Close()
			return fmt.Errorf("kernel: listen for DNS queries at %v:53: %w", ServerAddr, err)
		}
		rules = append(rules, redirect(unix.IPPROTO_UDP, 53, 53))
		if err := nat(n.client, nftables.ChainHookOutput, [][]expr.Any{loopbackDNS()}); err != nil {
			ln.Close()
			pc.Close()
			return err
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.relayDNS(pc.(trackedPacketConn), resolver)
		}()
	}
	if err := nat(n.server, nftables.ChainHookPrerouting, rules); err != nil {
		ln.Close()
		return err
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				ln.Close()
				return
			}
			tc := c.(trackedConn)
			dst, err := originalDst(tc.TCPConn)
			if err != nil {
				tc.SetLinger(0)
				tc.Close()
				continue
			}
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				n.forward(tc, dst)
			}()
		}
	}()
	return nil
}

// defaultRoute routes every address from the client namespace through
// the link's device, with the pinned congestion control.
func (n *Net) defaultRoute() error {
	h, err := handle(n.client)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(devName)
	if err != nil {
		return fmt.Errorf("find %s: %w", devName, err)
	}
	return h.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Scope: netlink.SCOPE_LINK,
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

// loopbackDNS is the client's rule "ip daddr 127.0.0.0/8 udp dport 53 dnat
// to ServerAddr:53": a query to a resolver on the client's own loopback
// crosses the link to the relay.
func loopbackDNS() []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{127}},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, 53)},
		&expr.Immediate{Register: 1, Data: ServerAddr.AsSlice()},
		&expr.Immediate{Register: 2, Data: binary.BigEndian.AppendUint16(nil, 53)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}
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

// dnsTimeout bounds the wait for the resolver's answer to one query.
const dnsTimeout = 5 * time.Second

// relayDNS answers each query that reaches pc with resolver's answer,
// asked from this process's namespace, until pc is closed.
func (n *Net) relayDNS(pc trackedPacketConn, resolver netip.AddrPort) {
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
			up, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(resolver))
			if err != nil {
				return
			}
			defer up.Close()
			up.SetDeadline(time.Now().Add(dnsTimeout))
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
}

// HostResolver is the first name server of the host's /etc/resolv.conf,
// at port 53; the zero AddrPort if it names none.
func HostResolver() (netip.AddrPort, error) {
	f, err := os.Open("/etc/resolv.conf")
	if errors.Is(err, os.ErrNotExist) {
		return netip.AddrPort{}, nil
	}
	if err != nil {
		return netip.AddrPort{}, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			if a, err := netip.ParseAddr(fields[1]); err == nil {
				return netip.AddrPortFrom(a, 53), nil
			}
		}
	}
	return netip.AddrPort{}, s.Err()
}
