package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"golang.org/x/sys/unix"
)

// mixed is one kernel namespace and one emulated host joined by the link:
// kernel TCP on one side, an emulated host's TCP on the other, both on the
// real clock. The namespace's side is a TUN device, as in Net's TUN
// bridge; the host's side is its send function and Deliver.
//
// The kernel is the client (ClientAddr, its packets cross A→B) or the
// server (ServerAddr, B→A); the host has the other address.
type mixed struct {
	ns   *namespace
	tun  *os.File
	host *tcpstack.Host
	clk  *clock.Precise
	link *link.Link

	kernelAddr, hostAddr netip.Addr
	kernelDir            link.Dir // the direction the kernel's packets take

	// writeErrors counts packets the link delivered but the TUN refused.
	writeErrors atomic.Uint64
	wg          sync.WaitGroup // the TUN's pump

	// The kernel sockets handed out, closed by close: the namespace lives
	// as long as one of them does.
	socketsMu sync.Mutex
	sockets   []io.Closer

	closeOnce sync.Once
}

// newMixed builds the namespace, its TUN device, the link and the host.
// The host runs tcp with the link's MTU; it checks checksums if the link
// corrupts. On any error everything made so far is removed.
func newMixed(lc link.Config, tcp tcpstack.TCPConfig, kernelClient bool, seed uint64) (_ *mixed, err error) {
	lc.DelayedACK = 0 // both TCPs delay their own ACKs
	if lc.MTU == 0 {
		lc.MTU = link.DefaultMTU
	}
	m := &mixed{kernelAddr: ServerAddr, hostAddr: ClientAddr, kernelDir: link.BtoA}
	if kernelClient {
		m.kernelAddr, m.hostAddr, m.kernelDir = ClientAddr, ServerAddr, link.AtoB
	}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	if m.ns, err = newNamespace(); err != nil {
		if permission(err) {
			return nil, notPermitted(err)
		}
		return nil, err
	}
	if err := prepare(m.ns); err != nil {
		return nil, err
	}
	err = m.ns.do(func() error {
		var err error
		m.tun, err = openTUN(devName)
		return err
	})
	switch {
	case err == nil:
	case permission(err):
		return nil, notPermitted(err)
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENODEV):
		return nil, fmt.Errorf("%w: %v: the kernel has no TUN device; load the tun module (modprobe tun) or create /dev/net/tun (mknod /dev/net/tun c 10 200)", ErrUnsupported, err)
	default:
		return nil, err
	}
	// address reads only the MTU and the congestion control of its Net.
	addressing := &Net{cfg: Config{Link: lc, CongestionControl: tcpstack.Cubic}}
	if err := addressing.address(m.ns, m.kernelAddr, m.hostAddr); err != nil {
		return nil, err
	}
	m.clk, _ = newBridgeClock()
	if m.link, err = link.New(lc, m.clk, m.deliver); err != nil {
		return nil, err
	}
	verify := lc.Corrupt.P > 0 || lc.BtoA != nil && lc.BtoA.Corrupt.P > 0
	hostDir := 1 - m.kernelDir
	m.host, err = tcpstack.New(tcpstack.Config{Addr: m.hostAddr, Clock: clock.Real{}, MTU: lc.MTU, TCP: tcp, Seed: seed, VerifyChecksums: verify},
		func(pkt []byte) { m.link.Send(hostDir, pkt) })
	if err != nil {
		return nil, err
	}
	m.wg.Add(1)
	go m.pump()
	return m, nil
}

// deliver is the link's far end: the kernel's packets go to the host, the
// host's to the TUN device.
func (m *mixed) deliver(dir link.Dir, pkt []byte) {
	if dir == m.kernelDir {
		m.host.Deliver(pkt)
		return
	}
	if _, err := m.tun.Write(pkt); err != nil {
		m.writeErrors.Add(1)
	}
}

// pump offers the packets the namespace sends into its TUN to the link,
// until the TUN is closed.
func (m *mixed) pump() {
	defer m.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := m.tun.Read(buf)
		if err != nil {
			return
		}
		m.link.Send(m.kernelDir, buf[:n])
	}
}

func (m *mixed) track(c io.Closer) {
	m.socketsMu.Lock()
	m.sockets = append(m.sockets, c)
	m.socketsMu.Unlock()
}

// listen listens on the kernel's address at port, in the namespace.
func (m *mixed) listen(port uint16) (net.Listener, error) {
	var ln net.Listener
	err := m.ns.do(func() error {
		var err error
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(m.kernelAddr, port).String())
		return err
	})
	if err != nil {
		return nil, err
	}
	m.track(ln)
	return ln, nil
}

// dial connects from the namespace to the host's port.
func (m *mixed) dial(ctx context.Context, port uint16) (*net.TCPConn, error) {
	var c net.Conn
	err := m.ns.do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "tcp4", netip.AddrPortFrom(m.hostAddr, port).String())
		return err
	})
	if err != nil {
		return nil, err
	}
	m.track(c)
	return c.(*net.TCPConn), nil
}

// close removes everything: the kernel sockets, the TUN (and its pump),
// the link and its clock, the host, and the namespace. Idempotent.
func (m *mixed) close() {
	m.closeOnce.Do(func() {
		m.socketsMu.Lock()
		sockets := m.sockets
		m.sockets = nil
		m.socketsMu.Unlock()
		for _, c := range sockets {
			c.Close()
		}
		if m.tun != nil {
			m.tun.Close()
		}
		m.wg.Wait()
		if m.link != nil {
			m.link.Close()
		}
		if m.clk != nil {
			m.clk.Close() // no delivery runs after this
		}
		if m.host != nil {
			m.host.Close()
		}
		m.ns.close()
	})
}
