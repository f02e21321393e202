package tcpstack

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// PacketConn is a UDP socket of an emulated host. It implements
// net.PacketConn; deadlines are instants of the run's clock (the host's
// Clock), and a blocked ReadFrom resumes through the clock as a TCP Read
// does, so that on the virtual clock it resumes in order.
type PacketConn struct {
	h    *Host
	ep   tcpip.Endpoint
	in   *waitPoint
	addr netip.AddrPort

	readMu  sync.Mutex
	rw      tcpip.SliceWriter // ReadFrom's destination; guarded by readMu
	writeMu sync.Mutex
	closed  atomic.Bool
	done    chan struct{} // closed by Close

	deadlines
}

// ListenUDP opens a UDP socket on port (0 picks a free one). A port in
// use is an error; so is a closed host (net.ErrClosed).
func (h *Host) ListenUDP(port uint16) (*PacketConn, error) {
	ap := netip.AddrPortFrom(h.cfg.Addr, port)
	opErr := func(err error) error {
		return &net.OpError{Op: "listen", Net: "udp", Addr: net.UDPAddrFromAddrPort(ap), Err: err}
	}
	if h.closed() {
		return nil, opErr(net.ErrClosed)
	}
	var wq waiter.Queue
	ep, err := h.stack.NewEndpoint(udp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if err != nil {
		return nil, &Error{Op: "new UDP endpoint", Err: err}
	}
	if err := ep.Bind(fullAddr(ap)); err != nil {
		ep.Close()
		if _, ok := err.(*tcpip.ErrPortInUse); ok {
			return nil, opErr(errors.New("port in use; pick another port or 0 for any"))
		}
		return nil, opErr(tcpErr(err))
	}
	if port == 0 {
		if a, err := ep.GetLocalAddress(); err == nil {
			ap = netip.AddrPortFrom(h.cfg.Addr, a.Port)
		}
	}
	return &PacketConn{h: h, ep: ep, addr: ap, done: make(chan struct{}),
		in:        newWaitPoint(h.cfg.Clock, &wq, waiter.ReadableEvents|waiter.EventErr),
		deadlines: newDeadlines(h.cfg.Clock)}, nil
}

func (c *PacketConn) gone() bool { return c.closed.Load() || c.h.closed() }

func (c *PacketConn) opError(op string, addr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: "udp", Source: c.LocalAddr(), Addr: addr, Err: err}
}

// ReadFrom implements net.PacketConn: it waits for a datagram and copies
// it to b; a datagram longer than b is cut to it, as on a kernel socket.
func (c *PacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.gone() {
		return 0, nil, c.opError("read", nil, net.ErrClosed)
	}
	dl := c.rd.done()
	registered := false
	defer func() {
		if registered {
			c.in.unregister()
		}
	}()
	for {
		select {
		case <-dl:
			return 0, nil, c.opError("read", nil, c.rd.passed())
		default:
		}
		c.rw = tcpip.SliceWriter(b)
		res, err := c.ep.Read(&c.rw, tcpip.ReadOptions{NeedRemoteAddr: true})
		c.rw = nil
		switch err.(type) {
		case nil:
			from := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4(res.RemoteAddr.Addr.As4()), res.RemoteAddr.Port))
			return min(res.Count, len(b)), from, nil
		case *tcpip.ErrWouldBlock:
		default:
			if c.gone() {
				return 0, nil, c.opError("read", nil, net.ErrClosed)
			}
			return 0, nil, c.opError("read", nil, tcpErr(err))
		}
		if !registered {
			c.in.register()
			registered = true
			continue
		}
		select {
		case <-c.in.ch:
		case <-dl:
		case <-c.done:
			return 0, nil, c.opError("read", nil, net.ErrClosed)
		case <-c.h.done:
			return 0, nil, c.opError("read", nil, net.ErrClosed)
		}
	}
}

// WriteTo implements net.PacketConn: it sends b as one datagram to addr,
// an IPv4 *net.UDPAddr of the emulated network.
func (c *PacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.gone() {
		return 0, c.opError("write", addr, net.ErrClosed)
	}
	select {
	case <-c.wd.done():
		return 0, c.opError("write", addr, c.wd.passed())
	default:
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, c.opError("write", addr, fmt.Errorf("want a *net.UDPAddr, not %T", addr))
	}
	ap := ua.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if !ap.Addr().Is4() || !Prefix.Contains(ap.Addr()) || ap.Port() == 0 {
		return 0, c.opError("write", addr, fmt.Errorf("want an IPv4 address in %v and a non-zero port", Prefix))
	}
	to := fullAddr(ap)
	var r bytes.Reader
	r.Reset(b)
	n, err := c.ep.Write(&r, tcpip.WriteOptions{To: &to})
	if err != nil {
		if c.gone() {
			return int(n), c.opError("write", addr, net.ErrClosed)
		}
		return int(n), c.opError("write", addr, tcpErr(err))
	}
	return int(n), nil
}

// Close closes the socket; a blocked ReadFrom returns net.ErrClosed.
func (c *PacketConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.done)
	c.ep.Close()
	c.rd.stop()
	c.wd.stop()
	return nil
}

// LocalAddr implements net.PacketConn.
func (c *PacketConn) LocalAddr() net.Addr { return net.UDPAddrFromAddrPort(c.addr) }

// AddrPort returns the socket's address.
func (c *PacketConn) AddrPort() netip.AddrPort { return c.addr }

// SetReadBuffer sets the socket's receive buffer, in bytes, as
// *net.UDPConn's does (the stack may cap it).
func (c *PacketConn) SetReadBuffer(bytes int) error {
	c.ep.SocketOptions().SetReceiveBufferSize(int64(bytes), true)
	return nil
}

// SetWriteBuffer sets the socket's send buffer, in bytes, as
// *net.UDPConn's does (the stack may cap it).
func (c *PacketConn) SetWriteBuffer(bytes int) error {
	c.ep.SocketOptions().SetSendBufferSize(int64(bytes), true)
	return nil
}
