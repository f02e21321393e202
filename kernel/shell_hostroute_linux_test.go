//go:build linux

package kernel

import (
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The relay's check treats as this host every address its namespace
// would deliver to itself, not only those its interfaces list: a local
// route for a whole prefix on lo (`ip route add local 198.19.2.0/24 dev
// lo`) makes 198.19.2.5 answer on the wildcard listeners though no
// interface has it. The namespace is the test's own, unnamed, so it goes
// when the test ends, however it ends; the check runs on a thread inside
// it, as the relay's runs in the host's.
func TestOutsideRefusesLocalRoutes(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace and add routes in it; run the tests as root")
	}
	ns, err := newNamespace()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.close)
	err = ns.do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return err
		}
		// out0 is the way out: its prefix, 198.18.0.0/15, is the outside,
		// but for the address out0 itself has.
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "out0"}, PeerName: "out1"}
		if err := netlink.LinkAdd(veth); err != nil {
			return err
		}
		for _, name := range []string{"out0", "out1"} {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return err
			}
			if err := netlink.LinkSetUp(l); err != nil {
				return err
			}
		}
		addr, _ := netlink.ParseAddr("198.18.0.1/15")
		if err := netlink.AddrAdd(veth, addr); err != nil {
			return err
		}
		_, local, _ := net.ParseCIDR("198.19.2.0/24")
		return netlink.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: local,
			Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST})
	})
	if err != nil {
		t.Fatalf("set up the test's namespace: %v", err)
	}
	for _, c := range []struct {
		dst  string
		host bool
	}{
		{"198.19.2.5", true},   // the local route's, on no interface
		{"198.19.2.200", true}, // the same
		{"198.18.0.1", true},   // out0's own address
		{"198.18.7.7", false},  // beyond out0
		{"198.19.3.5", false},  // beyond out0, next to the local prefix
		{"192.0.2.1", false},   // no route: a connect fails, and it is not this host
	} {
		var got error
		if err := ns.do(func() error { got = outsideAllowed(netip.MustParseAddr(c.dst)); return nil }); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.host && got == nil:
			t.Errorf("outsideAllowed(%s) in a namespace that delivers it to itself: allowed; want it refused, this host", c.dst)
		case !c.host && got != nil:
			t.Errorf("outsideAllowed(%s): %v; want it allowed, the outside", c.dst, got)
		}
	}
}
