//go:build linux

package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

const devName = "netemu0"

// Net is a kernel-mode network. It implements emu.Env.
type Net struct {
	cfg            Config
	client, server *namespace
	facts          Facts
	// clientAddr and serverAddr are the two sides' addresses: ClientAddr
	// and ServerAddr on the pair, a flow's hosts' on a topology.
	clientAddr, serverAddr netip.Addr
	// onClose, if set, sees each connection just before it closes (a
	// topology's last TCP_INFO sample of it).
	onClose func(*net.TCPConn)

	// TUN bridge
	clk *clock.Precise
	// bridgeThread is the TUN bridge's thread's scheduling (Facts).
	bridgeThread string
	link         *link.Link
	tuns         [2]*os.File // client's, server's
	// writeErrors counts packets the bridge delivered but the kernel
	// refused (a TUN write that failed): drops the link cannot see.
	writeErrors atomic.Uint64
	wg          sync.WaitGroup
	closed      chan struct{}

	// The sockets handed out, closed by Close as the emulated network
	// closes its own: a socket in a namespace that is gone would otherwise
	// block or time out.
	socketsMu sync.Mutex
	sockets   map[io.Closer]struct{}

	closeOnce sync.Once
}

// track records c for Close; it reports false, and closes c, if the
// network is closed already.
func (n *Net) track(c io.Closer) bool {
	n.socketsMu.Lock()
	defer n.socketsMu.Unlock()
	if n.sockets == nil {
		c.Close()
		return false
	}
	n.sockets[c] = struct{}{}
	return true
}

func (n *Net) untrack(c io.Closer) {
	n.socketsMu.Lock()
	delete(n.sockets, c)
	n.socketsMu.Unlock()
}

// errClosed is what Dial, Listen and Accept return once the network is
// closed, as the emulated network does.
var errClosed = fmt.Errorf("kernel: the network is closed: %w", net.ErrClosed)

// trackedListener closes with the network and tracks the connections it
// accepts.
type trackedListener struct {
	net.Listener
	n *Net
}

func (l trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		select {
		case <-l.n.closed:
			return nil, errClosed
		default:
		}
		return nil, err
	}
	if !l.n.track(c) {
		return nil, errClosed
	}
	return trackedConn{c.(*net.TCPConn), l.n}, nil
}

func (l trackedListener) Close() error {
	l.n.untrack(l.Listener)
	return l.Listener.Close()
}

// trackedConn is a kernel TCP connection that closes with the network.
type trackedConn struct {
	*net.TCPConn
	n *Net
}

func (c trackedConn) Close() error {
	if c.n.onClose != nil {
		c.n.onClose(c.TCPConn)
	}
	c.n.untrack(c.TCPConn)
	return c.TCPConn.Close()
}

// SetCongestionControl picks the connection's congestion control with
// the TCP_CONGESTION socket option. A name the kernel does not have (not
// in net.ipv4.tcp_available_congestion_control, nor loadable) is an error
// that wraps errors.ErrUnsupported.
func (c trackedConn) SetCongestionControl(name string) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	}); err != nil {
		return err
	}
	switch {
	case errors.Is(serr, unix.ENOENT):
		avail, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
		return fmt.Errorf("kernel: congestion control %q: this kernel has %s: %w", name, strings.TrimSpace(string(avail)), errors.ErrUnsupported)
	case serr != nil:
		return fmt.Errorf("kernel: congestion control %q: %w", name, serr)
	}
	return nil
}

var _ emu.Env = (*Net)(nil)

// New builds the namespaces and the link between them. On any error
// everything made so far is removed.
func New(cfg Config) (_ *Net, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CongestionControl == "" {
		cfg.CongestionControl = tcpstack.DefaultCongestionControl
	}
	cfg.Link.DelayedACK = 0
	if cfg.Link.MTU == 0 {
		cfg.Link.MTU = link.DefaultMTU
	}
	n := &Net{cfg: cfg, clientAddr: ClientAddr, serverAddr: ServerAddr, closed: make(chan struct{}), sockets: map[io.Closer]struct{}{}}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	if n.client, err = newNamespace(); err != nil {
		if permission(err) {
			return nil, notPermitted(err)
		}
		return nil, err
	}
	if n.server, err = newNamespace(); err != nil {
		return nil, err
	}
	via, err := linkVia(cfg.Via, cfg.Link, netemAvailable) // netem.go
	if err != nil {
		return nil, err
	}
	for _, ns := range []*namespace{n.client, n.server} {
		if err := prepare(ns); err != nil {
			return nil, err
		}
	}
	if via == Netem {
		err = n.setupNetem()
	} else {
		err = n.setupTUN()
	}
	if err != nil {
		return nil, err
	}
	n.facts, err = readFacts(n.client, via, n.cfg.CongestionControl)
	n.facts.BridgeThread = n.bridgeThread
	if err == nil && cfg.Probe != nil {
		every := cfg.ProbeEvery
		if every <= 0 {
			every = time.Millisecond
		}
		n.wg.Add(1)
		go n.probeLoop(cfg.Probe, every)
	}
	return n, err
}

func notPermitted(err error) error {
	return fmt.Errorf("%w: %v: kernel mode needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to create network namespaces and TUN devices; run it as root; %s", ErrUnsupported, err, reexecHint())
}

// prepare brings lo up and pins the namespace's TCP settings.
func prepare(ns *namespace) error {
	for _, s := range []struct{ path, value string }{
		{"net/ipv6/conf/all/disable_ipv6", "1"},
		{"net/ipv6/conf/default/disable_ipv6", "1"},
		{"net/ipv4/tcp_no_metrics_save", "1"},
	} {
		if err := ns.sysctl(s.path, s.value); err != nil && !(errors.Is(err, os.ErrNotExist) && strings.HasPrefix(s.path, "net/ipv6")) {
			return fmt.Errorf("sysctl %s=%s: %w", s.path, s.value, err)
		}
	}
	h, err := handle(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	return h.LinkSetUp(lo)
}

func handle(ns *namespace) (*netlink.Handle, error) {
	h, err := netlink.NewHandleAt(netns.NsHandle(ns.fd))
	if err != nil {
		return nil, fmt.Errorf("netlink in namespace: %w", err)
	}
	return h, nil
}

func prefix32(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(32, 32)}
}

// device returns a netlink handle in ns, which the caller closes, and
// the link's device there.
func device(ns *namespace) (*netlink.Handle, netlink.Link, error) {
	h, err := handle(ns)
	if err != nil {
		return nil, nil, err
	}
	l, err := h.LinkByName(devName)
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("find %s: %w", devName, err)
	}
	return h, l, nil
}

// address gives the device the side's address, brings it up, and routes
// the peer through it with the pinned congestion control.
func (n *Net) address(ns *namespace, self, peer netip.Addr) error {
	h, l, err := device(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.LinkSetMTU(l, n.cfg.Link.MTU); err != nil {
		return fmt.Errorf("set MTU %d: %w", n.cfg.Link.MTU, err)
	}
	if err := h.LinkSetTxQLen(l, 10000); err != nil {
		return fmt.Errorf("set txqueuelen: %w", err)
	}
	if err := h.AddrAdd(l, &netlink.Addr{IPNet: prefix32(self)}); err != nil {
		return fmt.Errorf("add address %v: %w", self, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("bring %s up: %w", devName, err)
	}
	r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: prefix32(peer), Scope: netlink.SCOPE_LINK, Src: net.IP(self.AsSlice()), Congctl: string(n.cfg.CongestionControl)}
	if err := h.RouteAdd(r); err != nil {
		return fmt.Errorf("add route to %v (congctl %s): %w", peer, n.cfg.CongestionControl, err)
	}
	return nil
}

// setupTUN joins the namespaces with a TUN device each, bridged by the
// link on a precise real-time clock.
func (n *Net) setupTUN() error {
	for i, ns := range []*namespace{n.client, n.server} {
		err := ns.do(func() error {
			var err error
			n.tuns[i], err = openTUN(devName)
			return err
		})
		if err != nil {
			return tunError(err)
		}
	}
	if err := n.address(n.client, ClientAddr, ServerAddr); err != nil {
		return err
	}
	if err := n.address(n.server, ServerAddr, ClientAddr); err != nil {
		return err
	}
	n.clk, n.bridgeThread = newBridgeClock()
	l, err := link.New(n.cfg.Link, n.clk, func(dir link.Dir, pkt []byte) {
		// a>b reaches the server's TUN, b>a the client's.
		if _, err := n.tuns[1-int(dir)].Write(pkt); err != nil {
			n.writeErrors.Add(1)
		}
	})
	if err != nil {
		return err
	}
	n.link = l
	for i, dir := range []link.Dir{link.AtoB, link.BtoA} {
		n.wg.Add(1)
		go n.pump(n.tuns[i], dir)
	}
	return nil
}

// pump reads packets a namespace sends into its TUN and offers them to
// the link, until the TUN is closed.
func (n *Net) pump(tun *os.File, dir link.Dir) {
	defer n.wg.Done()
	pumpTUN(tun, n.link, dir)
}

// pumpTUN reads the packets a namespace sends into tun and offers them to
// l in direction dir, until tun is closed.
func pumpTUN(tun *os.File, l *link.Link, dir link.Dir) {
	buf := make([]byte, 65536)
	for {
		m, err := tun.Read(buf)
		if err != nil {
			return
		}
		l.Send(dir, buf[:m])
	}
}

// Observe makes f receive every event of the TUN bridge's link (see
// link.Observer). With netem there is no userspace link to observe, and
// Observe reports false.
func (n *Net) Observe(f link.Observer) bool {
	if n.link == nil {
		return false
	}
	n.link.Observe(f)
	return true
}

// Facts returns what the results came from.
func (n *Net) Facts() Facts { return n.facts }

// readFacts reads the facts of kernel TCP in namespace ns, joined by via
// and running cc.
func readFacts(ns *namespace, via Via, cc tcpstack.CongestionControl) (Facts, error) {
	f := Facts{Link: via, HZ: kernelHZ()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		f.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	f.PingpongThresh, _ = ns.readSysctl("net/ipv4/tcp_pingpong_thresh")
	f.SlowStartAfterIdle, _ = ns.readSysctl("net/ipv4/tcp_slow_start_after_idle")
	f.CongestionControl = string(cc)
	return f, nil
}

// Now implements emu.Env: the wall clock.
func (n *Net) Now() time.Time { return time.Now() }

// Sleep implements emu.Env.
func (n *Net) Sleep(ctx context.Context, d time.Duration) error {
	if !clock.Sleep(ctx, clock.Real{}, d) {
		return ctx.Err()
	}
	return nil
}

// Go implements emu.Env: a plain go statement.
func (n *Net) Go(f func()) { go f() }

// Seed implements emu.Env: the seed of the link's impairments,
// Config.Link.Seed, which the workloads' own randomness derives from too.
func (n *Net) Seed() uint64 { return n.cfg.Link.Seed }

// Listen listens on the server namespace's port.
func (n *Net) Listen(port uint16) (net.Listener, error) {
	return n.listenIn(n.server, netip.AddrPortFrom(n.serverAddr, port))
}

// listenIn listens at addr in namespace ns; the listener and what it
// accepts close with the network.
func (n *Net) listenIn(ns *namespace, addr netip.AddrPort) (net.Listener, error) {
	select {
	case <-n.closed:
		return nil, errClosed
	default:
	}
	var ln net.Listener
	err := ns.do(func() error {
		var err error
		ln, err = net.Listen("tcp4", addr.String())
		return err
	})
	if err != nil {
		return nil, err
	}
	if !n.track(ln) {
		return nil, errClosed
	}
	return trackedListener{ln, n}, nil
}

// Dial connects from the client namespace to the server's port and
// checks that the connection runs the pinned congestion control.
func (n *Net) Dial(ctx context.Context, port uint16) (emu.Conn, error) {
	select {
	case <-n.closed:
		return nil, errClosed
	default:
	}
	var c *net.TCPConn
	err := n.client.do(func() error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp4", netip.AddrPortFrom(n.serverAddr, port).String())
		if err != nil {
			return err
		}
		c = conn.(*net.TCPConn)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if cc, err := congestionControl(c); err == nil && cc != string(n.cfg.CongestionControl) {
		c.Close()
		return nil, fmt.Errorf("kernel: connection runs %s, not the pinned %s", cc, n.cfg.CongestionControl)
	}
	if !n.track(c) {
		return nil, errClosed
	}
	return trackedConn{c, n}, nil
}

// ListenPacket opens a UDP socket on the server namespace's port.
func (n *Net) ListenPacket(port uint16) (net.PacketConn, error) {
	return n.packetConn(n.server, netip.AddrPortFrom(n.serverAddr, port))
}

// DialPacket opens a UDP socket in the client namespace, on a free port,
// and returns it with the server's address at port.
func (n *Net) DialPacket(ctx context.Context, port uint16) (net.PacketConn, net.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	c, err := n.packetConn(n.client, netip.AddrPortFrom(n.clientAddr, 0))
	if err != nil {
		return nil, nil, err
	}
	return c, net.UDPAddrFromAddrPort(netip.AddrPortFrom(n.serverAddr, port)), nil
}

// packetConn opens a UDP socket at addr in namespace ns, closed with the
// network.
func (n *Net) packetConn(ns *namespace, addr netip.AddrPort) (net.PacketConn, error) {
	select {
	case <-n.closed:
		return nil, errClosed
	default:
	}
	var pc net.PacketConn
	err := ns.do(func() error {
		var err error
		pc, err = net.ListenPacket("udp4", addr.String())
		return err
	})
	if err != nil {
		return nil, err
	}
	uc := pc.(*net.UDPConn)
	if !n.track(uc) {
		return nil, errClosed
	}
	return trackedPacketConn{uc, n}, nil
}

// trackedPacketConn is a kernel UDP socket that closes with the network.
// It keeps *net.UDPConn's methods (buffer sizes, the raw socket), which
// QUIC uses.
type trackedPacketConn struct {
	*net.UDPConn
	n *Net
}

func (c trackedPacketConn) Close() error {
	c.n.untrack(c.UDPConn)
	return c.UDPConn.Close()
}

// The sockets map holds each connection as its *net.TCPConn (probe.go
// reads their TCP_INFO), and listeners as net.Listener.

func congestionControl(c *net.TCPConn) (string, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var cc string
	var serr error
	err = raw.Control(func(fd uintptr) {
		cc, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	if err != nil {
		return "", err
	}
	return strings.TrimRight(cc, "\x00"), serr
}

// Stats returns the bridge's counters; zero for netem.
func (n *Net) Stats() Stats {
	var s Stats
	if n.link != nil {
		s.Link = n.link.Stats()
		s.Links = []link.Stats{s.Link}
		s.LateMean, s.LateP99, s.LateMax, s.LateSamples = n.clk.Lateness()
		s.TUNWriteErrors = n.writeErrors.Load()
	}
	return s
}

// Inodes returns the namespaces' inode numbers, to check from outside
// that they are gone.
func (n *Net) Inodes() [2]uint64 { return [2]uint64{n.client.inode(), n.server.inode()} }

// Close removes everything: the bridge stops, the TUN devices and the
// namespaces (with every socket left in them) go away. Idempotent.
func (n *Net) Close() error {
	n.closeOnce.Do(func() {
		close(n.closed)
		n.socketsMu.Lock()
		sockets := n.sockets
		n.sockets = nil
		n.socketsMu.Unlock()
		for c := range sockets {
			c.Close()
		}
		for _, t := range n.tuns {
			if t != nil {
				t.Close()
			}
		}
		n.wg.Wait()
		if n.link != nil {
			n.link.Close()
		}
		if n.clk != nil {
			n.clk.Close()
		}
		n.client.close()
		n.server.close()
	})
	return nil
}
