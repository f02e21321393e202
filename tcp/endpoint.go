package tcp

import (
	"io"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"
)

// state is a connection's state, numbered as Linux numbers them
// (include/net/tcp_states.h), which is what State returns.
type state uint8

const (
	stateEstablished state = 1 + iota
	stateSynSent
	stateSynRecv
	stateFinWait1
	stateFinWait2
	stateTimeWait
	stateClosed
	stateCloseWait
	stateLastAck
	stateListen
	stateClosing
)

var stateNames = [...]string{"", "ESTABLISHED", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT", "CLOSED", "CLOSE-WAIT", "LAST-ACK", "LISTEN", "CLOSING"}

func (s state) String() string {
	if int(s) < len(stateNames) && s > 0 {
		return stateNames[s]
	}
	return "INIT"
}

// synchronized reports a state past the handshake, in which segments
// carry ACKs (RFC 9293 section 3.10.7.4).
func (s state) synchronized() bool {
	switch s {
	case stateEstablished, stateFinWait1, stateFinWait2, stateCloseWait, stateClosing, stateLastAck, stateTimeWait:
		return true
	}
	return false
}

// endpoint is one socket of netemu's TCP: a listener or a connection.
//
// Everything runs under mu: segments from the NIC (handle), timers
// (timers.go) and the application's calls. Nothing blocks under mu and
// nothing calls back into the endpoint: segments go out through the
// route to the NIC, which never delivers synchronously; waiters are
// notified, and a closed listener's unaccepted children reset, after mu
// is released (unlock).
//
// Lock order: a child's mu, then its listener's mu, then the protocol's
// (Protocol.mu), then the leaves (the spare rings' and chunks' locks).
// A listener never takes a child's mu while it holds its own, with one
// exception that cannot wait: handleListen locks the child it has just
// made before anyone else can find it. So Accept takes the child out of
// the queue under the listener's mu and finishes with it after; a
// child that ends (done) or completes its handshake takes its
// listener's mu under its own. Churn tests guard this order
// (emu/churn_test.go): the race detector cannot see a lock-order
// deadlock.
type endpoint struct {
	tcpip.DefaultSocketOptionsHandler
	p   *Protocol
	wq  *waiter.Queue
	ops tcpip.SocketOptions

	mu     sync.Mutex
	notify waiter.EventMask // to signal once mu is released
	// stamp is the instant a pass under mu began, where the pass took
	// one (stamped; see now); unlock ends the pass.
	stamp   time.Duration
	stamped bool

	state      state
	opened     bool // the application has not closed it
	localAddr  tcpip.Address
	localPort  uint16
	remoteAddr tcpip.Address
	remotePort uint16
	bound      bool
	keyed      bool // registered in p.conns
	route      *stack.Route
	softErr    tcpip.Error // returned once by LastError
	hardErr    tcpip.Error // the connection's end: reset, refused, timed out
	shutRead   bool        // the application's SHUT_RD

	// A listener's children not yet accepted: pending counts those in
	// SYN-RECV, acceptQ holds the established ones. unaccepted holds
	// the ones a closing listener took out of acceptQ, to be reset once
	// its mu is released. A child knows its listener (parent, under the
	// child's mu) until it is accepted or ends; where it stands among
	// the listener's children (place) is guarded by the listener's mu.
	backlog    int
	acceptQ    []*endpoint
	pending    int
	unaccepted []*endpoint
	parent     *endpoint
	place      childPlace

	snd sender
	rcv receiver
	tm  timers

	// Timestamps (RFC 7323): negotiated, our offset, the peer's value to
	// echo (ts_recent) and when it was taken.
	tsOK          bool
	tsOff         uint32
	tsRecent      uint32
	tsRecentStamp time.Duration
	sackOK        bool

	// Keepalive (tcp_keepalive_time, _intvl, _probes).
	kaIdle, kaIntvl time.Duration
	kaProbes        int
	kaSent          int

	userTimeout time.Duration // TCP_USER_TIMEOUT; 0: none

	// The last ACK that answered an invalid segment (last_oow_ack_time).
	lastOOWAck time.Duration
	oowAckSent bool
}

func newEndpoint(p *Protocol, wq *waiter.Queue) *endpoint {
	e := &endpoint{p: p, wq: wq, opened: true,
		kaIdle: 2 * time.Hour, kaIntvl: 75 * time.Second, kaProbes: 9}
	e.ops.InitHandler(e, p.st, tcpip.GetStackSendBufferLimits, tcpip.GetStackReceiveBufferLimits)
	e.snd.init(e)
	e.rcv.init(e)
	e.tm.init(e)
	return e
}

var _ tcpip.Endpoint = (*endpoint)(nil)

// childPlace is where a child stands among its listener's children.
type childPlace uint8

const (
	childPending childPlace = iota // in SYN-RECV, counted by pending
	childQueued                    // established, in acceptQ
	childGone                      // accepted, reset or ended: the listener's no more
)

// unlock releases mu, then signals the waiters of what changed and
// resets the children a closed listener left unaccepted.
func (e *endpoint) unlock() {
	e.stamped = false
	n := e.notify
	e.notify = 0
	orphans := e.unaccepted
	e.unaccepted = nil
	e.mu.Unlock()
	if n != 0 {
		e.wq.Notify(n)
	}
	for _, c := range orphans {
		c.resetUnaccepted(e)
	}
}

// now is the connection's clock. In a pass under mu that began with
// stampNow (a segment's arrival, the application's read or write, a
// timer) it is the instant the pass began, as Linux's TCP reads
// tp->tcp_mstamp, refreshed once per pass (tcp_mstamp_refresh): on a wall
// clock that spares a clock read per use, about ten per segment; on the
// virtual clock no time passes within a pass anyway.
func (e *endpoint) now() time.Duration {
	if e.stamped {
		return e.stamp
	}
	return e.p.now()
}

// stampNow begins a pass under mu at the clock's present instant.
func (e *endpoint) stampNow() { e.stamp, e.stamped = e.p.now(), true }

// SocketOptions implements tcpip.Endpoint.
func (e *endpoint) SocketOptions() *tcpip.SocketOptions { return &e.ops }

// OnDelayOptionSet implements tcpip.SocketOptionsHandler: turning
// TCP_NODELAY on pushes what Nagle held (tcp_push_pending_frames).
func (e *endpoint) OnDelayOptionSet(v bool) {
	if v {
		return
	}
	e.mu.Lock()
	if e.state.synchronized() {
		e.snd.push()
	}
	e.unlock()
}

// OnKeepAliveSet implements tcpip.SocketOptionsHandler.
func (e *endpoint) OnKeepAliveSet(bool) {
	e.mu.Lock()
	e.tm.resetKeepalive()
	e.unlock()
}

// Bind implements tcpip.Endpoint: port 0 picks an ephemeral one.
func (e *endpoint) Bind(a tcpip.FullAddress) tcpip.Error {
	e.mu.Lock()
	defer e.unlock()
	if e.bound || e.state != 0 {
		return &tcpip.ErrAlreadyBound{}
	}
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	port := a.Port
	if port == 0 {
		var ok bool
		if port, ok = p.pickPortLocked(); !ok {
			return &tcpip.ErrNoPortAvailable{}
		}
	} else if p.bound[port] > 0 {
		return &tcpip.ErrPortInUse{}
	}
	p.bound[port]++
	e.localAddr, e.localPort, e.bound = a.Addr, port, true
	return nil
}

// release gives up the endpoint's port and its place in the tables, and
// its route. e.mu is held.
func (e *endpoint) release() {
	p := e.p
	p.mu.Lock()
	if e.keyed {
		delete(p.conns, e.key())
		e.keyed = false
	}
	if p.listeners[e.localPort] == e {
		delete(p.listeners, e.localPort)
	}
	if e.bound {
		if p.bound[e.localPort]--; p.bound[e.localPort] <= 0 {
			delete(p.bound, e.localPort)
		}
		e.bound = false
	}
	p.mu.Unlock()
	if e.route != nil {
		e.route.Release()
		e.route = nil
	}
}

func (e *endpoint) key() connKey {
	return connKey{localPort: e.localPort, remotePort: e.remotePort, remote: e.remoteAddr}
}

// Listen implements tcpip.Endpoint.
func (e *endpoint) Listen(backlog int) tcpip.Error {
	e.mu.Lock()
	defer e.unlock()
	if e.state == stateListen {
		e.backlog = max(backlog, 1)
		return nil
	}
	if !e.bound || e.state != 0 {
		return &tcpip.ErrInvalidEndpointState{}
	}
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listeners[e.localPort] != nil {
		return &tcpip.ErrPortInUse{}
	}
	p.listeners[e.localPort] = e
	e.state = stateListen
	e.backlog = max(backlog, 1)
	return nil
}

// Accept implements tcpip.Endpoint. The child leaves the queue under
// the listener's mu and is unlinked from it under its own, after: a
// child may meanwhile end (a reset), and is handed out all the same, as
// Linux's accept hands out a connection already reset.
func (e *endpoint) Accept(peer *tcpip.FullAddress) (tcpip.Endpoint, *waiter.Queue, tcpip.Error) {
	c, err := e.takeAccepted()
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if c.parent == e {
		c.parent = nil
	}
	if peer != nil {
		*peer = tcpip.FullAddress{Addr: c.remoteAddr, Port: c.remotePort}
	}
	c.unlock()
	return c, c.wq, nil
}

// takeAccepted takes the first child out of the accept queue.
func (e *endpoint) takeAccepted() (*endpoint, tcpip.Error) {
	e.mu.Lock()
	defer e.unlock()
	if e.state != stateListen {
		return nil, &tcpip.ErrInvalidEndpointState{}
	}
	if len(e.acceptQ) == 0 {
		return nil, &tcpip.ErrWouldBlock{}
	}
	c := e.acceptQ[0]
	copy(e.acceptQ, e.acceptQ[1:])
	e.acceptQ[len(e.acceptQ)-1] = nil
	e.acceptQ = e.acceptQ[:len(e.acceptQ)-1]
	c.place = childGone
	return c, nil
}

// Connect implements tcpip.Endpoint: it sends the SYN and returns
// ErrConnectStarted; the endpoint turns writable (or reports an error)
// when the handshake ends.
func (e *endpoint) Connect(a tcpip.FullAddress) tcpip.Error {
	e.mu.Lock()
	defer e.unlock()
	switch e.state {
	case 0:
	case stateSynSent:
		return &tcpip.ErrAlreadyConnecting{}
	case stateListen:
		return &tcpip.ErrInvalidEndpointState{}
	default:
		return &tcpip.ErrAlreadyConnected{}
	}
	r, err := e.p.st.FindRoute(a.NIC, e.localAddr, a.Addr, ipv4.ProtocolNumber, false)
	if err != nil {
		return err
	}
	p := e.p
	p.mu.Lock()
	if !e.bound {
		port, ok := p.pickPortLocked()
		if !ok {
			p.mu.Unlock()
			r.Release()
			return &tcpip.ErrNoPortAvailable{}
		}
		p.bound[port]++
		e.localPort, e.bound = port, true
	}
	e.localAddr = r.LocalAddress()
	e.remoteAddr, e.remotePort = a.Addr, a.Port
	if p.conns[e.key()] != nil {
		p.mu.Unlock()
		r.Release()
		return &tcpip.ErrPortInUse{}
	}
	p.conns[e.key()] = e
	e.keyed = true
	p.mu.Unlock()
	e.route = r
	e.tsOff = p.tsOffset()
	e.snd.start(p.isn())
	e.rcv.startWindow()
	e.state = stateSynSent
	e.snd.sendSyn()
	return &tcpip.ErrConnectStarted{}
}

// Disconnect implements tcpip.Endpoint.
func (*endpoint) Disconnect() tcpip.Error { return &tcpip.ErrNotSupported{} }

// Read implements tcpip.Endpoint.
func (e *endpoint) Read(dst io.Writer, opts tcpip.ReadOptions) (tcpip.ReadResult, tcpip.Error) {
	e.mu.Lock()
	defer e.unlock()
	e.stampNow()
	if e.state == stateListen || e.state == 0 || e.state == stateSynSent || e.state == stateSynRecv {
		if e.hardErr != nil {
			return tcpip.ReadResult{}, e.takeHardErr()
		}
		if e.state == stateListen || e.state == 0 {
			return tcpip.ReadResult{}, &tcpip.ErrNotConnected{}
		}
		return tcpip.ReadResult{}, &tcpip.ErrWouldBlock{}
	}
	n, err := e.rcv.read(dst, opts.Peek)
	if n > 0 {
		return tcpip.ReadResult{Count: n, Total: n}, nil
	}
	if err != nil {
		return tcpip.ReadResult{}, err
	}
	switch {
	case e.rcv.finRcvd || e.shutRead:
		return tcpip.ReadResult{}, &tcpip.ErrClosedForReceive{}
	case e.hardErr != nil:
		if _, reported := e.hardErr.(*tcpip.ErrClosedForSend); reported {
			// The reset was reported: reads see the end of the stream.
			return tcpip.ReadResult{}, &tcpip.ErrClosedForReceive{}
		}
		return tcpip.ReadResult{}, e.takeHardErr()
	case e.state == stateClosed:
		return tcpip.ReadResult{}, &tcpip.ErrClosedForReceive{}
	}
	return tcpip.ReadResult{}, &tcpip.ErrWouldBlock{}
}

// takeHardErr returns the connection's error. A reset is reported once
// as ECONNRESET; later calls see the socket as closed (EPIPE on write,
// end of stream on read), as on Linux, where sk_err is cleared when read.
func (e *endpoint) takeHardErr() tcpip.Error {
	err := e.hardErr
	if _, ok := err.(*tcpip.ErrConnectionReset); ok {
		e.hardErr = &tcpip.ErrClosedForSend{}
	}
	return err
}

// Write implements tcpip.Endpoint: it copies what fits in the send
// buffer and sends what the window allows.
func (e *endpoint) Write(src tcpip.Payloader, _ tcpip.WriteOptions) (int64, tcpip.Error) {
	e.mu.Lock()
	defer e.unlock()
	e.stampNow()
	if e.hardErr != nil {
		return 0, e.takeHardErr()
	}
	switch e.state {
	case stateEstablished, stateCloseWait:
	case stateSynSent, stateSynRecv:
		return 0, &tcpip.ErrWouldBlock{}
	case 0, stateListen:
		return 0, &tcpip.ErrNotConnected{}
	default:
		return 0, &tcpip.ErrClosedForSend{}
	}
	if e.snd.finQueued {
		return 0, &tcpip.ErrClosedForSend{}
	}
	n, err := e.snd.write(src)
	if n == 0 && err == nil {
		return 0, &tcpip.ErrWouldBlock{}
	}
	if n > 0 {
		e.snd.push()
	}
	return int64(n), err
}

// Shutdown implements tcpip.Endpoint.
func (e *endpoint) Shutdown(flags tcpip.ShutdownFlags) tcpip.Error {
	e.mu.Lock()
	defer e.unlock()
	if !e.state.synchronized() && e.state != stateSynRecv {
		if e.state == stateListen && flags&tcpip.ShutdownRead != 0 {
			e.closeListener()
			return nil
		}
		return &tcpip.ErrNotConnected{}
	}
	if flags&tcpip.ShutdownRead != 0 {
		e.shutRead = true
		e.notify |= waiter.ReadableEvents
	}
	if flags&tcpip.ShutdownWrite != 0 {
		e.sendFin()
	}
	return nil
}

// sendFin queues a FIN after the data and moves the state on
// (tcp_close_state). e.mu is held.
func (e *endpoint) sendFin() {
	switch e.state {
	case stateEstablished, stateSynRecv:
		e.state = stateFinWait1
	case stateCloseWait:
		e.state = stateLastAck
	default:
		return
	}
	e.snd.queueFin()
}

// Close implements tcpip.Endpoint, as Linux's tcp_close: a listener
// resets the connections it has not handed out; a connection with
// unread data, or with SO_LINGER 0, is reset; otherwise it sends its FIN
// after the data and lives on, orphaned, until the close completes.
func (e *endpoint) Close() {
	e.mu.Lock()
	defer e.unlock()
	if !e.opened {
		return
	}
	e.opened = false
	e.shutRead = true
	// A Read or Write blocked on another goroutine returns now, as
	// net.Conn's Close promises, whatever the connection goes on to send.
	e.notify |= waiter.EventHUp | waiter.ReadableEvents | waiter.WritableEvents
	switch e.state {
	case 0:
		e.state = stateClosed
		e.release()
	case stateListen:
		e.closeListener()
	case stateSynSent:
		e.done(nil)
	default:
		lo := e.ops.GetLinger()
		if e.rcv.unread() > 0 || (lo.Enabled && lo.Timeout == 0) {
			e.sendReset()
			e.done(nil)
			return
		}
		e.sendFin()
		if e.state == stateFinWait2 {
			// Closed after its FIN was ACKed: an orphan in FIN-WAIT-2
			// lives tcp_fin_timeout (tcp_close).
			e.tm.life.set(timeWaitLen)
		}
	}
}

// Abort implements tcpip.Endpoint: a reset, at once.
func (e *endpoint) Abort() {
	e.mu.Lock()
	defer e.unlock()
	e.opened = false
	if e.state.synchronized() || e.state == stateSynRecv {
		e.sendReset()
	}
	if e.state == stateListen {
		e.closeListener()
		return
	}
	e.done(nil)
}

// abandon ends the endpoint without a segment, its stack closing
// (Protocol.Close): a connection as if aborted, a listener as if closed.
func (e *endpoint) abandon() {
	e.mu.Lock()
	defer e.unlock()
	switch e.state {
	case stateClosed:
	case stateListen:
		e.closeListener()
	default:
		e.done(&tcpip.ErrConnectionAborted{}) // sends nothing
	}
}

// closeListener stops listening; the children nobody accepted are reset
// once e.mu is released (unlock), and those still in SYN-RECV when
// their handshake completes (completeHandshake). e.mu is held.
func (e *endpoint) closeListener() {
	for _, c := range e.acceptQ {
		c.place = childGone
	}
	e.unaccepted = append(e.unaccepted, e.acceptQ...)
	e.acceptQ = nil
	e.state = stateClosed
	e.release()
	e.notify |= waiter.EventHUp | waiter.ReadableEvents
}

// resetUnaccepted resets a child its closed listener par never handed
// out (inet_csk_listen_stop), unless it ended meanwhile.
func (e *endpoint) resetUnaccepted(par *endpoint) {
	e.mu.Lock()
	defer e.unlock()
	if e.parent != par {
		return
	}
	e.parent = nil
	if e.state == stateClosed {
		return
	}
	e.opened = false
	e.sendReset()
	e.done(nil)
}

// done ends the connection: timers stop, buffers go, the port is
// released, and waiters learn of err (nil for an orderly end). e.mu is
// held.
func (e *endpoint) done(err tcpip.Error) {
	if err != nil && e.hardErr == nil {
		e.hardErr = err
	}
	e.state = stateClosed
	e.tm.stopAll()
	e.release()
	e.snd.free()
	if !e.opened {
		e.rcv.free()
	}
	e.notify |= waiter.EventHUp | waiter.EventErr | waiter.ReadableEvents | waiter.WritableEvents
	if par := e.parent; par != nil {
		// A child that ends before it is accepted leaves its listener.
		e.parent = nil
		par.mu.Lock()
		par.removeChild(e)
		par.unlock()
	}
}

// removeChild forgets a child that ended before it was accepted. e.mu
// is held.
func (e *endpoint) removeChild(c *endpoint) {
	switch c.place {
	case childPending:
		e.pending--
	case childQueued:
		for i, x := range e.acceptQ {
			if x == c {
				e.acceptQ = append(e.acceptQ[:i], e.acceptQ[i+1:]...)
				break
			}
		}
	}
	c.place = childGone
}

// GetLocalAddress implements tcpip.Endpoint.
func (e *endpoint) GetLocalAddress() (tcpip.FullAddress, tcpip.Error) {
	e.mu.Lock()
	defer e.unlock()
	return tcpip.FullAddress{Addr: e.localAddr, Port: e.localPort}, nil
}

// GetRemoteAddress implements tcpip.Endpoint.
func (e *endpoint) GetRemoteAddress() (tcpip.FullAddress, tcpip.Error) {
	e.mu.Lock()
	defer e.unlock()
	if e.remotePort == 0 {
		return tcpip.FullAddress{}, &tcpip.ErrNotConnected{}
	}
	return tcpip.FullAddress{Addr: e.remoteAddr, Port: e.remotePort}, nil
}

// Readiness implements tcpip.Endpoint.
func (e *endpoint) Readiness(mask waiter.EventMask) waiter.EventMask {
	e.mu.Lock()
	defer e.unlock()
	var r waiter.EventMask
	switch e.state {
	case stateListen:
		if len(e.acceptQ) > 0 {
			r |= waiter.ReadableEvents
		}
	case 0, stateSynSent, stateSynRecv:
	case stateClosed:
		r |= waiter.EventHUp | waiter.ReadableEvents | waiter.WritableEvents
		if e.hardErr != nil {
			r |= waiter.EventErr
		}
	default:
		if e.rcv.unread() > 0 || e.rcv.finRcvd || e.shutRead {
			r |= waiter.ReadableEvents
		}
		if (e.state == stateEstablished || e.state == stateCloseWait) && e.snd.writable() {
			r |= waiter.WritableEvents
		}
		if e.state != stateEstablished && e.state != stateCloseWait {
			r |= waiter.WritableEvents // a write fails at once
		}
	}
	return r & mask
}

// SetSockOpt implements tcpip.Endpoint.
func (e *endpoint) SetSockOpt(opt tcpip.SettableSocketOption) tcpip.Error {
	e.mu.Lock()
	defer e.unlock()
	switch o := opt.(type) {
	case *tcpip.CongestionControlOption:
		cc, err := newCongestion(string(*o))
		if err != nil {
			return &tcpip.ErrNoSuchFile{}
		}
		e.snd.setCongestion(cc)
	case *tcpip.KeepaliveIdleOption:
		e.kaIdle = time.Duration(*o)
		e.tm.resetKeepalive()
	case *tcpip.KeepaliveIntervalOption:
		e.kaIntvl = time.Duration(*o)
	case *tcpip.TCPUserTimeoutOption:
		e.userTimeout = time.Duration(*o)
	default:
		return &tcpip.ErrUnknownProtocolOption{}
	}
	return nil
}

// SetSockOptInt implements tcpip.Endpoint.
func (e *endpoint) SetSockOptInt(opt tcpip.SockOptInt, v int) tcpip.Error {
	e.mu.Lock()
	defer e.unlock()
	switch opt {
	case tcpip.KeepaliveCountOption:
		e.kaProbes = v
	default:
		return &tcpip.ErrUnknownProtocolOption{}
	}
	return nil
}

// GetSockOpt implements tcpip.Endpoint.
func (e *endpoint) GetSockOpt(opt tcpip.GettableSocketOption) tcpip.Error {
	e.mu.Lock()
	defer e.unlock()
	switch o := opt.(type) {
	case *tcpip.CongestionControlOption:
		*o = tcpip.CongestionControlOption(e.snd.ops.name())
	case *tcpip.KeepaliveIdleOption:
		*o = tcpip.KeepaliveIdleOption(e.kaIdle)
	case *tcpip.KeepaliveIntervalOption:
		*o = tcpip.KeepaliveIntervalOption(e.kaIntvl)
	default:
		return &tcpip.ErrUnknownProtocolOption{}
	}
	return nil
}

// GetSockOptInt implements tcpip.Endpoint.
func (e *endpoint) GetSockOptInt(opt tcpip.SockOptInt) (int, tcpip.Error) {
	e.mu.Lock()
	defer e.unlock()
	switch opt {
	case tcpip.KeepaliveCountOption:
		return e.kaProbes, nil
	case tcpip.ReceiveQueueSizeOption:
		return e.rcv.unread(), nil
	case tcpip.SendQueueSizeOption:
		return e.snd.queued(), nil
	case tcpip.MaxSegOption:
		return int(e.snd.cc.mss), nil
	}
	return 0, &tcpip.ErrUnknownProtocolOption{}
}

// State implements tcpip.Endpoint: Linux's state number.
func (e *endpoint) State() uint32 {
	e.mu.Lock()
	defer e.unlock()
	return uint32(e.state)
}

// ModerateRecvBuf implements tcpip.Endpoint. Receive-buffer tuning runs
// inside Read (tcp_rcv_space_adjust); this does nothing.
func (*endpoint) ModerateRecvBuf(int) {}

// endpointInfo and endpointStats satisfy the marker interfaces.
type endpointInfo struct{}

func (endpointInfo) IsEndpointInfo() {}

type endpointStats struct{}

func (endpointStats) IsEndpointStats() {}

// Info implements tcpip.Endpoint.
func (*endpoint) Info() tcpip.EndpointInfo { return endpointInfo{} }

// Stats implements tcpip.Endpoint.
func (*endpoint) Stats() tcpip.EndpointStats { return endpointStats{} }

// SetOwner implements tcpip.Endpoint.
func (*endpoint) SetOwner(tcpip.PacketOwner) {}

// LastError implements tcpip.Endpoint: the error that ended a connect,
// once.
func (e *endpoint) LastError() tcpip.Error {
	e.mu.Lock()
	defer e.unlock()
	err := e.softErr
	e.softErr = nil
	if err == nil && e.state == stateClosed && e.hardErr != nil && !e.snd.everEstablished {
		err = e.hardErr
	}
	return err
}

// sendReset sends a RST for the connection (tcp_send_active_reset). e.mu
// is held.
func (e *endpoint) sendReset() {
	if e.route == nil {
		return
	}
	e.p.writeSegment(e.route, e.localPort, e.remotePort, e.snd.nxt, e.rcv.nxt, header.TCPFlagRst|header.TCPFlagAck, 0, nil, payload{})
}

// tsVal is the timestamp to send: milliseconds, as Linux's
// tcp_time_stamp_ts, plus the connection's offset.
func (e *endpoint) tsVal() uint32 { return uint32(e.now()/time.Millisecond) + e.tsOff }
