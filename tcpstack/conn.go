package tcpstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/internal/english"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// waitPoint blocks a goroutine until the endpoint signals one of mask. The
// signal goes through the clock's Wake, so that on the virtual clock the
// goroutine resumes as an event of its own, in order.
type waitPoint struct {
	wq    *waiter.Queue
	entry waiter.Entry
	ch    chan struct{}
}

func newWaitPoint(c clock.Clock, wq *waiter.Queue, mask waiter.EventMask) *waitPoint {
	w := &waitPoint{wq: wq, ch: make(chan struct{}, 1)}
	signal := clock.Signal(c, w.ch)
	w.entry = waiter.NewFunctionEntry(mask, func(waiter.EventMask) { signal() })
	return w
}

func (w *waitPoint) register()   { w.wq.EventRegister(&w.entry) }
func (w *waitPoint) unregister() { w.wq.EventUnregister(&w.entry) }

// deadline is a read or write deadline on the run's clock.
type deadline struct {
	clk   clock.Clock
	mu    sync.Mutex
	timer clock.Timer
	gen   uint64        // bumped by every set: a timer of an older set does nothing
	ch    chan struct{} // closed when the deadline passes
	err   error         // what it passes with instead of os.ErrDeadlineExceeded: a *WallDeadlineError
}

// WallDeadlineError is what a read or write fails with when a deadline
// taken from the wall clock passes on a run whose clock is far from it
// (the virtual clock starts in 2000): time.Now().Add(2*time.Second)
// passes only after decades of the run's time, which the virtual clock
// jumps when nothing else is scheduled. It matches os.ErrDeadlineExceeded
// with errors.Is, so code that handles a timeout handles it.
type WallDeadlineError struct {
	Deadline time.Time // the deadline given
	RunNow   time.Time // the run's clock when it was given
}

func (e *WallDeadlineError) Error() string {
	return fmt.Sprintf("deadline %s passed %.1f years of run time after it was set at %s: it was taken from the wall clock (time.Now()), but the run's clock is the virtual one; take deadlines from the run's clock (emu.Net.Now().Add(d)), or run the test inside testing/synctest, where both are one",
		e.Deadline.UTC().Format(time.RFC3339), e.Deadline.Sub(e.RunNow).Hours()/24/365.25, e.RunNow.UTC().Format(time.RFC3339))
}

func (e *WallDeadlineError) Unwrap() error { return os.ErrDeadlineExceeded }

// Timeout reports true, as os.ErrDeadlineExceeded does.
func (e *WallDeadlineError) Timeout() bool { return true }

// fromWall tells a deadline t taken from the wall clock (it carries the
// monotonic reading time.Now gives, which the virtual clock's instants
// never do), given on a run whose clock is more than a day from the wall
// clock and lying after the run's now: past says it is not after the
// wall clock's now (the caller meant "at once", as
// SetReadDeadline(time.Now()) does), wall that it is ahead of it. On the
// real clock and in a synctest bubble, where time.Now is the run's, both
// are false.
func fromWall(t, runNow time.Time) (past, wall bool) {
	if t == t.Round(0) {
		return false, false
	}
	now := time.Now()
	if d := runNow.Sub(now); d <= 24*time.Hour && d >= -24*time.Hour || !t.After(runNow) {
		return false, false
	}
	return !t.After(now), t.After(now)
}

// passed returns the error a read or write under the passed deadline
// fails with.
func (d *deadline) passed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	return os.ErrDeadlineExceeded
}

func newDeadline(c clock.Clock) deadline { return deadline{clk: c, ch: make(chan struct{})} }

// deadlines are a socket's read and write deadlines, with the methods
// of net.Conn and net.PacketConn that set them; t is an instant of the
// run's clock.
type deadlines struct{ rd, wd deadline }

func newDeadlines(c clock.Clock) deadlines { return deadlines{newDeadline(c), newDeadline(c)} }

// SetDeadline implements net.Conn and net.PacketConn.
func (d *deadlines) SetDeadline(t time.Time) error {
	d.rd.set(t)
	d.wd.set(t)
	return nil
}

// SetReadDeadline implements net.Conn and net.PacketConn.
func (d *deadlines) SetReadDeadline(t time.Time) error { d.rd.set(t); return nil }

// SetWriteDeadline implements net.Conn and net.PacketConn.
func (d *deadlines) SetWriteDeadline(t time.Time) error { d.wd.set(t); return nil }

// set arms the deadline at t, an instant of the run's clock; zero clears
// it. On a run far from the wall clock, a deadline taken from time.Now()
// (see fromWall) passes at once if it is not after the wall clock's now,
// and otherwise fails reads and writes with a *WallDeadlineError when it
// passes.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	d.err = nil
	select {
	case <-d.ch:
		d.ch = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return
	}
	now := d.clk.Now()
	past, wall := fromWall(t, now)
	if wall {
		// Armed as given, so that code that sets such deadlines while
		// traffic flows (http.Server's timeouts) works as before; if it
		// passes, the error says where it came from.
		d.err = &WallDeadlineError{Deadline: t, RunNow: now}
	}
	// Sub saturates: a deadline more than math.MaxInt64 away (the year
	// 2500, say) is past the end of the clock's time and never passes.
	wait := t.Sub(now)
	if wait <= 0 || past {
		close(d.ch)
		return
	}
	if wait == math.MaxInt64 {
		return
	}
	gen := d.gen
	d.timer = d.clk.AfterFunc(wait, func() {
		// On the real clock the callback may run after a later set has
		// stopped this timer too late; the generation tells.
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen == gen {
			close(d.ch)
			d.timer = nil
		}
	})
}

// stopLocked cancels a pending timer. d.mu is held.
func (d *deadline) stopLocked() {
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

func (d *deadline) stop() {
	d.mu.Lock()
	d.stopLocked()
	d.mu.Unlock()
}

func (d *deadline) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

// Conn is a TCP connection of an emulated host. It implements net.Conn;
// deadlines are instants of the run's clock (the host's Clock).
type Conn struct {
	h  *Host
	ep tcpip.Endpoint
	wq *waiter.Queue

	readMu  sync.Mutex
	rw      tcpip.SliceWriter // Read's destination; guarded by readMu
	peek    [1]byte           // WaitRead's destination; guarded by readMu
	writeMu sync.Mutex        // keeps each Write's bytes together
	closed  atomic.Bool
	in      *waitPoint
	out     *waitPoint

	deadlines
}

func newConn(h *Host, ep tcpip.Endpoint, wq *waiter.Queue) *Conn {
	c := &Conn{h: h, ep: ep, wq: wq,
		in:        newWaitPoint(h.cfg.Clock, wq, waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr),
		out:       newWaitPoint(h.cfg.Clock, wq, waiter.WritableEvents|waiter.EventHUp|waiter.EventErr),
		deadlines: newDeadlines(h.cfg.Clock),
	}
	ep.SocketOptions().SetDelayOption(false) // TCP_NODELAY, as in Go's net
	return c
}

// Ended reports whether the connection has ended, without reading from
// it: reset, or closed both ways.
func (c *Conn) Ended() bool {
	// Masked again: gVisor's TCP adds EventRdHUp to any answer once the
	// peer's FIN is in, and a half-closed connection has not ended.
	const ended = waiter.EventHUp | waiter.EventErr
	return c.ep.Readiness(ended)&ended != 0
}

// Endpoint returns the gVisor endpoint, for inspection.
func (c *Conn) Endpoint() tcpip.Endpoint { return c.ep }

// SetNoDelay controls Nagle's algorithm, as (*net.TCPConn).SetNoDelay:
// true (the default) sends small writes at once; false lets them wait
// while earlier data is unacknowledged.
func (c *Conn) SetNoDelay(noDelay bool) error {
	c.ep.SocketOptions().SetDelayOption(!noDelay)
	return nil
}

// SetCongestionControl picks the connection's congestion control, as
// Linux's TCP_CONGESTION socket option does: one the host's TCP runs
// (Impl.CongestionControls): cubic, reno or bbr with netemu's, cubic or
// reno with gVisor's. Another name is an error that wraps
// errors.ErrUnsupported and names what the host's TCP has.
func (c *Conn) SetCongestionControl(name string) error {
	if impl := c.h.cfg.TCP.Impl; !impl.runs(CongestionControl(name)) {
		return fmt.Errorf("tcpstack: congestion control %q: %s has %s: %w", name, impl.OrDefault().title(), english.And(names(impl.CongestionControls(), "%s")...), errors.ErrUnsupported)
	}
	o := tcpip.CongestionControlOption(name)
	if err := c.ep.SetSockOpt(&o); err != nil {
		return c.opError("setsockopt", tcpErr(err))
	}
	return nil
}

// Read implements net.Conn.
func (c *Conn) Read(b []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.gone() {
		return 0, c.opError("read", net.ErrClosed)
	}
	if len(b) == 0 {
		return 0, nil
	}
	return c.read(b, false)
}

// WaitRead blocks until a Read would return at once: data, the end of
// the stream or an error is there, or the read deadline passed. It
// consumes nothing and holds no buffer of the caller's while it waits,
// so a copy loop can take its buffer only once there is something to
// copy. The error is the one Read would return, io.EOF included, or nil
// when data is there.
func (c *Conn) WaitRead() error {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.gone() {
		return c.opError("read", net.ErrClosed)
	}
	_, err := c.read(c.peek[:], true)
	return err
}

// read is Read and WaitRead's loop, readMu held: it reads into b, or with
// peek looks at b's worth without consuming it.
func (c *Conn) read(b []byte, peek bool) (int, error) {
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
			return 0, c.opError("read", c.rd.passed())
		default:
		}
		// The writer lives in the Conn: a local one would escape to the
		// heap through the interface on every Read.
		c.rw = tcpip.SliceWriter(b)
		res, err := c.ep.Read(&c.rw, tcpip.ReadOptions{Peek: peek})
		c.rw = nil
		switch err.(type) {
		case nil:
			if !peek {
				c.ep.ModerateRecvBuf(res.Count)
			}
			return res.Count, nil
		case *tcpip.ErrWouldBlock:
		case *tcpip.ErrClosedForReceive:
			if c.gone() {
				return 0, c.opError("read", net.ErrClosed)
			}
			return 0, io.EOF
		default:
			if c.gone() {
				return 0, c.opError("read", net.ErrClosed)
			}
			return 0, c.opError("read", tcpErr(err))
		}
		if !registered {
			// Register, then try again: data may have arrived in between.
			c.in.register()
			registered = true
			continue
		}
		select {
		case <-c.in.ch:
		case <-dl:
		case <-c.h.done:
			return 0, c.opError("read", net.ErrClosed)
		}
	}
}

// Write implements net.Conn. It returns once all of b is in the send
// buffer.
func (c *Conn) Write(b []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.gone() {
		return 0, c.opError("write", net.ErrClosed)
	}
	dl := c.wd.done()
	var r bytes.Reader
	n := 0
	registered := false
	defer func() {
		if registered {
			c.out.unregister()
		}
	}()
	for n < len(b) {
		select {
		case <-dl:
			return n, c.opError("write", c.wd.passed())
		default:
		}
		r.Reset(b[n:])
		m, err := c.ep.Write(&r, tcpip.WriteOptions{})
		n += int(m)
		switch err.(type) {
		case nil:
			continue
		case *tcpip.ErrWouldBlock:
		default:
			if c.gone() {
				return n, c.opError("write", net.ErrClosed)
			}
			return n, c.opError("write", tcpErr(err))
		}
		if !registered {
			c.out.register()
			registered = true
			continue
		}
		select {
		case <-c.out.ch:
		case <-dl:
		case <-c.h.done:
			return n, c.opError("write", net.ErrClosed)
		}
	}
	return n, nil
}

// gone reports whether the connection or its host has been closed: from
// then on every call fails with net.ErrClosed, as on a closed kernel
// socket.
func (c *Conn) gone() bool { return c.closed.Load() || c.h.closed() }

// Close closes the connection (a FIN, or a RST if unread data remains).
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return c.opError("close", net.ErrClosed)
	}
	c.rd.stop()
	c.wd.stop()
	c.ep.Close()
	return nil
}

// SetLinger sets what Close does with data still to send, as
// (*net.TCPConn).SetLinger: sec < 0 (the default) sends it in the
// background, then a FIN; sec == 0 discards it and sends a RST, which
// aborts the connection, as a kernel socket with SO_LINGER 0 does. gVisor
// has no lingering Close, so sec > 0 acts as sec < 0.
func (c *Conn) SetLinger(sec int) error {
	c.ep.SocketOptions().SetLinger(tcpip.LingerOption{Enabled: sec >= 0, Timeout: time.Duration(max(sec, 0)) * time.Second})
	return nil
}

// CloseWrite shuts down the sending side (sends a FIN).
func (c *Conn) CloseWrite() error {
	if err := c.ep.Shutdown(tcpip.ShutdownWrite); err != nil {
		return c.opError("close", tcpErr(err))
	}
	return nil
}

// CloseRead shuts down the receiving side.
func (c *Conn) CloseRead() error {
	if err := c.ep.Shutdown(tcpip.ShutdownRead); err != nil {
		return c.opError("close", tcpErr(err))
	}
	return nil
}

// LocalAddr implements net.Conn.
func (c *Conn) LocalAddr() net.Addr {
	a, err := c.ep.GetLocalAddress()
	if err != nil {
		return nil
	}
	return tcpAddr(a)
}

// RemoteAddr implements net.Conn.
func (c *Conn) RemoteAddr() net.Addr {
	a, err := c.ep.GetRemoteAddress()
	if err != nil {
		return nil
	}
	return tcpAddr(a)
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

func tcpAddr(a tcpip.FullAddress) *net.TCPAddr {
	return &net.TCPAddr{IP: net.IP(a.Addr.AsSlice()), Port: int(a.Port)}
}

func fullAddr(ap netip.AddrPort) tcpip.FullAddress {
	return tcpip.FullAddress{NIC: nicID, Addr: tcpip.AddrFrom4(ap.Addr().As4()), Port: ap.Port()}
}

// tcpErr turns a gVisor error into the closest standard error, keeping the
// original reachable through errors.As(*Error).
func tcpErr(err tcpip.Error) error {
	switch err.(type) {
	case *tcpip.ErrConnectionReset:
		return &wrapped{std: errConnReset, orig: err}
	case *tcpip.ErrConnectionRefused:
		return &wrapped{std: errConnRefused, orig: err}
	case *tcpip.ErrTimeout:
		// The stack gave up retransmitting (no deadline was involved):
		// ETIMEDOUT, "connection timed out", as kernel sockets report.
		return &wrapped{std: errTimedOut, orig: err}
	case *tcpip.ErrClosedForSend:
		// A write after the peer's reset (once reported) or after
		// CloseWrite: EPIPE, as kernel sockets report. net.ErrClosed is
		// for use after the Conn's own Close (Conn.gone).
		return &wrapped{std: errBrokenPipe, orig: err}
	case *tcpip.ErrNotConnected:
		return &wrapped{std: errNotConn, orig: err}
	}
	return &Error{Op: "tcp", Err: err}
}

// Resets, refusals and broken pipes match the syscall errors that kernel
// sockets return, so errors.Is(err, syscall.ECONNRESET) works on both
// (docs/ERRORS.md).
var (
	errConnReset   error = syscall.ECONNRESET
	errConnRefused error = syscall.ECONNREFUSED
	errTimedOut    error = syscall.ETIMEDOUT
	errBrokenPipe  error = syscall.EPIPE
	errNotConn     error = syscall.ENOTCONN
)

// wrapped is a gVisor error that also matches a standard one with
// errors.Is.
type wrapped struct {
	std  error
	orig tcpip.Error
}

func (w *wrapped) Error() string        { return w.std.Error() }
func (w *wrapped) Is(target error) bool { return target == w.std }
func (w *wrapped) Unwrap() error        { return &Error{Op: "tcp", Err: w.orig} }
func (w *wrapped) Timeout() bool        { return w.std == errTimedOut }

// Dial opens a TCP connection to addr. It returns when the handshake
// completes, fails, or ctx is done. After the host's Close it fails with
// net.ErrClosed.
func (h *Host) Dial(ctx context.Context, addr netip.AddrPort) (*Conn, error) {
	if !addr.Addr().Is4() || !Prefix.Contains(addr.Addr()) || addr.Port() == 0 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: fmt.Errorf("want an IPv4 address in %v and a non-zero port", Prefix)}
	}
	if ctx == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: errors.New("nil context; pass context.Background() or the run's context")}
	}
	// As in Go's net: a closed host or a done context fails before any
	// packet is sent.
	if h.closed() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: net.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: err}
	}
	var wq waiter.Queue
	ep, err := h.stack.NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if err != nil {
		return nil, &Error{Op: "new endpoint", Err: err}
	}
	c := newConn(h, ep, &wq)
	c.out.register()
	defer c.out.unregister()
	opErr := func(err error) error {
		ep.Close()
		return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: err}
	}
	err = ep.Connect(fullAddr(addr))
	if _, ok := err.(*tcpip.ErrConnectStarted); ok {
		for ep.Readiness(waiter.WritableEvents|waiter.EventHUp|waiter.EventErr) == 0 {
			select {
			case <-c.out.ch:
			case <-ctx.Done():
				return nil, opErr(ctx.Err())
			case <-h.done:
				return nil, opErr(net.ErrClosed)
			}
		}
		err = ep.LastError()
	}
	if err != nil {
		if h.closed() {
			return nil, opErr(net.ErrClosed)
		}
		return nil, opErr(tcpErr(err))
	}
	return c, nil
}

// closed reports whether Close has been called.
func (h *Host) closed() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// Listener accepts TCP connections on a host's port.
type Listener struct {
	h    *Host
	ep   tcpip.Endpoint
	in   *waitPoint
	addr netip.AddrPort

	closeOnce sync.Once
	closed    chan struct{}
}

// Listen listens on port (0 picks a free one). A port in use is an error;
// so is a closed host (net.ErrClosed).
func (h *Host) Listen(port uint16) (*Listener, error) {
	if h.closed() {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(h.cfg.Addr, port)), Err: net.ErrClosed}
	}
	var wq waiter.Queue
	ep, err := h.stack.NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if err != nil {
		return nil, &Error{Op: "new endpoint", Err: err}
	}
	ap := netip.AddrPortFrom(h.cfg.Addr, port)
	fail := func(err tcpip.Error) error {
		ep.Close()
		if h.closed() {
			return &net.OpError{Op: "listen", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: net.ErrClosed}
		}
		if _, ok := err.(*tcpip.ErrPortInUse); ok {
			return &net.OpError{Op: "listen", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: errors.New("port in use; pick another port or 0 for any")}
		}
		return &net.OpError{Op: "listen", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: tcpErr(err)}
	}
	if err := ep.Bind(fullAddr(ap)); err != nil {
		return nil, fail(err)
	}
	if err := ep.Listen(1024); err != nil {
		return nil, fail(err)
	}
	if port == 0 {
		if a, err := ep.GetLocalAddress(); err == nil {
			ap = netip.AddrPortFrom(h.cfg.Addr, a.Port)
		}
	}
	l := &Listener{h: h, ep: ep, addr: ap, closed: make(chan struct{}),
		in: newWaitPoint(h.cfg.Clock, &wq, waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr)}
	return l, nil
}

// Accept waits for the next connection.
func (l *Listener) Accept() (net.Conn, error) { return l.AcceptTCP() }

// AcceptTCP is Accept returning the concrete type.
func (l *Listener) AcceptTCP() (*Conn, error) {
	registered := false
	defer func() {
		if registered {
			l.in.unregister()
		}
	}()
	for {
		ep, wq, err := l.ep.Accept(nil)
		switch err.(type) {
		case nil:
			return newConn(l.h, ep, wq), nil
		case *tcpip.ErrWouldBlock:
		default:
			select {
			case <-l.closed:
				return nil, l.opError(net.ErrClosed)
			default:
			}
			if l.h.closed() {
				return nil, l.opError(net.ErrClosed)
			}
			return nil, l.opError(tcpErr(err))
		}
		if !registered {
			l.in.register()
			registered = true
			continue
		}
		select {
		case <-l.in.ch:
		case <-l.closed:
			return nil, l.opError(net.ErrClosed)
		case <-l.h.done:
			return nil, l.opError(net.ErrClosed)
		}
	}
}

// Close stops listening. Pending Accepts return net.ErrClosed.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.ep.Close()
	})
	return nil
}

// Addr implements net.Listener.
func (l *Listener) Addr() net.Addr { return net.TCPAddrFromAddrPort(l.addr) }

// AddrPort returns the listening address.
func (l *Listener) AddrPort() netip.AddrPort { return l.addr }

func (l *Listener) opError(err error) error {
	return &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: err}
}
