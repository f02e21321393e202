//go:build linux

package kernel

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/netemu/netemu/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netemQdisc is the netem qdisc for one side's egress: half the RTT of
// delay, the link's rate and its packet limit. netem counts its limit in
// packets, delayed ones included.
func netemQdisc(linkIndex int, c link.Config) *netlink.Netem {
	limit := c.QueuePackets
	if limit == 0 {
		limit = link.DefaultQueuePackets
	}
	return netlink.NewNetem(netlink.QdiscAttrs{
		LinkIndex: linkIndex,
		Handle:    netlink.MakeHandle(1, 0),
		Parent:    netlink.HANDLE_ROOT,
	}, netlink.NetemQdiscAttrs{
		Latency: uint32(c.Delay.Microseconds()),
		Limit:   uint32(limit),
		Rate64:  uint64(c.Rate / 8), // bytes per second
	})
}

var netemProbe struct {
	once sync.Once
	ok   bool
	why  error
}

// netemAvailable reports whether the kernel has sch_netem, by adding a
// netem qdisc to the loopback device of a scratch namespace.
func netemAvailable() (bool, error) {
	netemProbe.once.Do(func() {
		ns, err := newNamespace()
		if err != nil {
			netemProbe.why = err
			return
		}
		defer ns.close()
		h, err := handle(ns)
		if err != nil {
			netemProbe.why = err
			return
		}
		defer h.Close()
		l, err := h.LinkByName("lo") // every namespace has one
		if err != nil {
			netemProbe.why = err
			return
		}
		if err := h.QdiscAdd(netemQdisc(l.Attrs().Index, link.Config{})); err != nil {
			netemProbe.why = fmt.Errorf("add netem qdisc: %w", err)
			return
		}
		netemProbe.ok = true
	})
	return netemProbe.ok, netemProbe.why
}

// setupNetem joins the namespaces with a veth pair shaped by netem on
// each side's egress, offloads off so that netem sees wire-sized packets.
func (n *Net) setupNetem() error {
	h, err := handle(n.client)
	if err != nil {
		return err
	}
	defer h.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: devName},
		PeerName:      devName,
		PeerNamespace: netlink.NsFd(n.server.fd),
	}
	if err := h.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth pair: %w", err)
	}
	if err := n.address(n.client, ClientAddr, ServerAddr); err != nil {
		return err
	}
	if err := n.address(n.server, ServerAddr, ClientAddr); err != nil {
		return err
	}
	for _, ns := range []*namespace{n.client, n.server} {
		if err := ns.do(func() error { return offloadsOff(devName) }); err != nil {
			return err
		}
		hh, err := handle(ns)
		if err != nil {
			return err
		}
		l, err := hh.LinkByName(devName)
		if err == nil {
			err = hh.QdiscAdd(netemQdisc(l.Attrs().Index, n.cfg.Link))
		}
		hh.Close()
		if err != nil {
			return fmt.Errorf("add netem qdisc: %w", err)
		}
	}
	return nil
}

// offloadsOff turns off TSO, GSO and GRO on a device of the calling
// thread's namespace (ethtool's legacy set commands).
func offloadsOff(dev string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, cmd := range []uint32{unix.ETHTOOL_STSO, unix.ETHTOOL_SGSO, unix.ETHTOOL_SGRO} {
		value := struct{ cmd, data uint32 }{cmd: cmd}
		var req struct {
			name [unix.IFNAMSIZ]byte
			data uintptr
			_    [16]byte
		}
		copy(req.name[:], dev)
		req.data = uintptr(unsafe.Pointer(&value))
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req))); errno != 0 && errno != unix.EOPNOTSUPP {
			return fmt.Errorf("ethtool %#x off on %s: %w", cmd, dev, errno)
		}
	}
	return nil
}
