package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// Forward is one port forward: connections accepted on Listen, a real
// address, cross the link and are opened to Upstream from the server
// host's side.
type Forward struct {
	Listen   string // host:port of the real listening socket
	Upstream string // host:port to connect to; a name is resolved for each connection
}

func (f Forward) String() string { return f.Listen + "=" + f.Upstream }

// ParseForward reads a forward written LISTEN=UPSTREAM, each side
// host:port (127.0.0.1:8080=127.0.0.1:80); a listen side without a host
// (8080 or :8080) listens on 127.0.0.1, as ListenAddr says.
func ParseForward(s string) (Forward, error) {
	listen, upstream, ok := strings.Cut(s, "=")
	if !ok || strings.Contains(upstream, "=") {
		return Forward{}, fmt.Errorf("forward %q: want LISTEN=UPSTREAM, like 127.0.0.1:8080=127.0.0.1:80", s)
	}
	listen, err := ListenAddr(listen)
	if err != nil {
		return Forward{}, fmt.Errorf("forward %q: listen address %v", s, err)
	}
	if _, _, err := splitPort(upstream, false); err != nil {
		return Forward{}, fmt.Errorf("forward %q: upstream %q: %v", s, upstream, err)
	}
	return Forward{Listen: listen, Upstream: upstream}, nil
}

// ListenAddr reads a listen address: host:port, or a port alone (8080)
// or without a host (:8080), which mean loopback, 127.0.0.1. Listening
// on every interface takes an explicit 0.0.0.0:8080 or [::]:8080.
func ListenAddr(s string) (string, error) {
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		s = ":" + s
	}
	host, _, err := splitPort(s, true)
	if err != nil {
		return "", fmt.Errorf("%q: %v", s, err)
	}
	if host == "" {
		s = "127.0.0.1" + s
	}
	return s, nil
}

// listen listens on addr: an IPv4 address on IPv4 only (0.0.0.0 is
// every IPv4 interface, not every interface).
func listen(addr string) (net.Listener, error) {
	network := "tcp"
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
			network = "tcp4"
		}
	}
	return net.Listen(network, addr)
}

// Loopback reports whether a listen address (host:port) is reachable
// from this machine only: a loopback address, or localhost.
func Loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// splitPort splits host:port; the port is a number, 0 only if zeroOK,
// and the host is not empty unless zeroOK (a listen address may be :8080).
func splitPort(hostport string, zeroOK bool) (string, uint16, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, errors.New("want host:port")
	}
	p, err := strconv.ParseUint(port, 10, 16)
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("port %q is not a number from 1 to 65535", port)
	case p == 0 && !zeroOK:
		return "", 0, errors.New("port 0: want 1 to 65535")
	case host == "" && !zeroOK:
		return "", 0, errors.New("no host; want host:port, like 127.0.0.1:80")
	}
	return host, uint16(p), nil
}

// Config says what a Proxy listens on and how it reaches upstreams. With
// neither Forwards nor SOCKS5 the proxy listens on nothing: it carries
// the connections its caller accepts and hands it with Serve.
type Config struct {
	// Forwards are the port forwards.
	Forwards []Forward

	// SOCKS5, if not empty, is a host:port on which a SOCKS5 server
	// (RFC 1928: no authentication, CONNECT) takes the upstream of each
	// connection from the client; a port without a host (:1080) means
	// 127.0.0.1.
	SOCKS5 string

	// Allow is the destination rule of the SOCKS5 listener: the
	// upstreams a client may name, by address (a name is resolved first,
	// and only its allowed addresses are dialed); nil means loopback
	// only, 127.0.0.0/8 and ::1. Forwards' upstreams are the operator's
	// and need no rule.
	Allow []netip.Prefix

	// LookupHost resolves a name a SOCKS5 client names; nil means
	// net.DefaultResolver.LookupNetIP.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)

	// BufferSize is the buffer of each direction of each connection, in
	// bytes, on each side of the link; 0 means 32 KiB. It bounds what a
	// connection holds in the proxy beyond the sockets' own buffers; a
	// direction with nothing to copy holds none.
	BufferSize int

	// DialUpstream opens the connection to an upstream; nil means a
	// net.Dialer with a 10-second timeout.
	DialUpstream func(ctx context.Context, network, addr string) (net.Conn, error)

	// OnEnd, if set, receives each connection's record when it ends, on
	// the connection's goroutine. The proxy itself keeps only the totals
	// and the last KeptRecords records.
	OnEnd func(Record)

	// FirstID is the first connection's Record.ID, the others following
	// in the order accepted; 0 means 1. A caller that makes a Proxy per
	// connection numbers them across its proxies with it.
	FirstID uint64

	// CloseRefused: an upstream that refuses (or cannot be reached)
	// closes the client's connection normally, a FIN, as toxiproxy does,
	// where the default resets it as a refused connect resets a real
	// path's SYN. A client that dials before its upstream is up then sees
	// its connection accepted and closed, never a reset it may take as
	// its connect failing.
	CloseRefused bool

	// Logf, if set, receives one line for each connection that fails
	// (an upstream that refuses, a dial across the link that times out).
	Logf func(format string, args ...any)

	// Shape, if set, is asked once for each direction of each connection,
	// when its bytes start to flow, for the Shaper that writes them to
	// the receiving program's socket, past the link; nil (or a nil
	// Shaper) writes them as they come.
	Shape func(*Stream) Shaper

	// Loops cuts loops at connect time (LoopGuard): an upstream
	// connection that reaches a listener of the guard's, or that a
	// listener of the guard's accepts back. nil means a guard of the
	// proxy's own, which knows its listeners; a caller that runs several
	// proxies gives them one guard, and tells it of listeners of its own.
	Loops *LoopGuard

	// Observe, if set, receives every event of the network's link. The
	// proxy counts each connection's retransmissions from those events,
	// so New makes itself the link's observer (emu.Net.Observe) and
	// passes each event on to this one; Close hands the link back to it.
	Observe link.Observer
}

// defaultBufferSize is Config.BufferSize's default.
const defaultBufferSize = 32 << 10

// KeptRecords is how many records of ended connections Records returns:
// the most recent. Older ones live on in Totals, so that a proxy's
// memory is bounded by the connections open, not by those served.
const KeptRecords = 1000

// loopbackOnly is Config.Allow's default.
var loopbackOnly = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// Totals sums the records of every connection that ended, and counts
// the link's retransmissions.
type Totals struct {
	Conns              int // connections ended
	Failed             int // of which ended abnormally (Record.Err not empty)
	BytesUp, BytesDown int64
	// Retransmits is the sum of the records' Retransmits.
	Retransmits uint64
	// LinkRetransmits counts every segment the link carried again, by
	// Record.Retransmits' rule, from the same count: the records' and
	// those in no record, of connections still open, of handshakes that
	// failed, and sent after a connection's record was filed. It is
	// never less than Retransmits.
	LinkRetransmits uint64
}

func (t *Totals) add(r Record) {
	t.Conns++
	if r.Err != "" {
		t.Failed++
	}
	t.BytesUp += r.BytesUp
	t.BytesDown += r.BytesDown
	t.Retransmits += r.Retransmits
}

// claimTimeout bounds how long the server host's side of a connection
// waits to learn, inside the process, which upstream it is for.
const claimTimeout = 10 * time.Second

// Proxy carries connections accepted on real sockets across an emulated
// link. New starts it; Shutdown stops it gracefully, Close at once.
type Proxy struct {
	n      *emu.Net
	cfg    Config
	ctx    context.Context // ends with Close: dials and claims give up
	cancel context.CancelFunc

	listeners []listener
	accepting sync.WaitGroup // the accept loops
	sessions  sync.WaitGroup // the connections
	all       sync.WaitGroup // every goroutine of the proxy

	count     linkCount // retransmissions, from the link's events
	observing bool      // whether New made the proxy the link's observer

	mu          sync.Mutex
	serverPorts map[uint16]*tcpstack.Listener // the server host's listeners, by port
	pending     map[flowKey]*match            // connections the server side has not claimed, by their ports
	live        map[*session]struct{}
	records     []Record // the last KeptRecords, a ring from next
	next        int
	totals      Totals
	nextID      uint64
	closed      bool

	buffers sync.Pool // *[]byte of Config.BufferSize

	closeOnce sync.Once
	stopOnce  sync.Once
}

// listener is a real listening socket and what it serves.
type listener struct {
	ln       net.Listener
	forward  *Forward // nil for SOCKS5
	upstream uint16   // the forward's upstream port
	release  func()   // forgets the listener in Config.Loops
}

// match pairs the two sides of a connection: the client host's side
// registers the session under the connection's two ports, the server
// host's side claims it. Ports are reused as soon as a connection is
// gone, so a side that outlived its connection must not take a newer
// one's session: a registration whose session has ended is taken by no
// claim and replaced by the next, and a claim whose own connection has
// ended gives up (claim).
type match struct {
	s     *session
	ready chan struct{} // closed when s is set
}

// New listens on every forward's address and on SOCKS5's, and starts
// accepting. n must run on the real clock: the proxy carries real
// programs' connections. New fails, with nothing left open, if an address
// cannot be listened on.
func New(n *emu.Net, cfg Config) (*Proxy, error) {
	switch {
	case n == nil:
		return nil, errors.New("proxy: New needs a network; build one with emu.New")
	case n.Config().Clock != emu.Real:
		return nil, errors.New("proxy: the network runs on the virtual clock; real programs' connections need the real one: emu.Config{Clock: emu.Real}")
	case cfg.BufferSize < 0:
		return nil, fmt.Errorf("proxy: BufferSize is %d; want 0 (32 KiB) or more", cfg.BufferSize)
	}
	if cfg.BufferSize == 0 {
		cfg.BufferSize = defaultBufferSize
	}
	if cfg.DialUpstream == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		cfg.DialUpstream = d.DialContext
	}
	if cfg.Allow == nil {
		cfg.Allow = loopbackOnly
	}
	if cfg.LookupHost == nil {
		cfg.LookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if cfg.Loops == nil {
		cfg.Loops = &LoopGuard{}
	}
	cfg.Forwards = slices.Clone(cfg.Forwards)
	for i, f := range cfg.Forwards {
		l, err := ListenAddr(f.Listen)
		if err != nil {
			return nil, fmt.Errorf("proxy: forward %s: listen address %v", f, err)
		}
		cfg.Forwards[i].Listen = l
	}
	if cfg.SOCKS5 != "" {
		l, err := ListenAddr(cfg.SOCKS5)
		if err != nil {
			return nil, fmt.Errorf("proxy: SOCKS5 address %v", err)
		}
		cfg.SOCKS5 = l
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{n: n, cfg: cfg, ctx: ctx, cancel: cancel, nextID: max(cfg.FirstID, 1) - 1,
		serverPorts: map[uint16]*tcpstack.Listener{}, pending: map[flowKey]*match{}, live: map[*session]struct{}{}}
	fail := func(err error) (*Proxy, error) {
		p.Close()
		return nil, err
	}
	for i := range cfg.Forwards {
		f := &cfg.Forwards[i]
		_, port, err := splitPort(f.Upstream, false)
		if err != nil {
			return fail(fmt.Errorf("proxy: forward %s: upstream %q: %v", f, f.Upstream, err))
		}
		ln, err := listen(f.Listen)
		if err != nil {
			return fail(fmt.Errorf("proxy: forward %s: %w", f, err))
		}
		p.listeners = append(p.listeners, listener{ln: ln, forward: f, upstream: port, release: cfg.Loops.Listen(ln.Addr())})
		if err := p.serverPort(port); err != nil {
			return fail(fmt.Errorf("proxy: forward %s: %w", f, err))
		}
	}
	if cfg.SOCKS5 != "" {
		ln, err := listen(cfg.SOCKS5)
		if err != nil {
			return fail(fmt.Errorf("proxy: SOCKS5: %w", err))
		}
		p.listeners = append(p.listeners, listener{ln: ln, release: cfg.Loops.Listen(ln.Addr())})
	}
	// The forwards as bound: a port 0 is a port now.
	bound := make([]Forward, len(cfg.Forwards))
	for i, f := range cfg.Forwards {
		bound[i] = Forward{Listen: p.listeners[i].ln.Addr().String(), Upstream: f.Upstream}
	}
	if err := CheckLoops(ctx, bound, cfg.LookupHost); err != nil {
		return fail(fmt.Errorf("proxy: %w", err))
	}
	n.Observe(p.observe)
	p.observing = true
	for _, l := range p.listeners {
		p.accepting.Add(1)
		p.all.Add(1)
		go p.accept(l)
	}
	return p, nil
}

// Serve carries c, a connection the caller accepted itself, across the
// link to upstream (host:port), as a forward carries the connections it
// accepts. It returns at once; Config.OnEnd tells the connection's end,
// and Close aborts it with the others. Serve takes c over: when it
// fails (upstream is not host:port, the proxy is closed), c has been
// reset.
func (p *Proxy) Serve(c net.Conn, upstream string) error {
	_, port, err := splitPort(upstream, false)
	if err != nil {
		abort(c)
		return fmt.Errorf("proxy: upstream %q: %v", upstream, err)
	}
	s := p.newSession(c, "serve "+c.LocalAddr().String())
	if s == nil {
		return fmt.Errorf("proxy: %w", net.ErrClosed)
	}
	go func() {
		defer p.all.Done()
		p.serveClient(s, upstream, port, nil)
	}()
	return nil
}

// Addrs returns the addresses listened on: the forwards', in order, then
// SOCKS5's.
func (p *Proxy) Addrs() []net.Addr {
	var out []net.Addr
	for _, l := range p.listeners {
		out = append(out, l.ln.Addr())
	}
	return out
}

// Records returns the records of the last KeptRecords connections that
// have ended, in the order they ended.
func (p *Proxy) Records() []Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append(slices.Clone(p.records[p.next:]), p.records[:p.next]...)
}

// Totals returns the sums over every connection that has ended, and the
// link's retransmissions so far.
func (p *Proxy) Totals() Totals {
	p.mu.Lock()
	t := p.totals
	p.mu.Unlock()
	// Read after the records' sum: a record's retransmits are counted
	// here before it is filed, so the link's count is never the smaller.
	t.LinkRetransmits = p.count.total()
	return t
}

// observe is the link's observer: the proxy's count, then Config.Observe.
func (p *Proxy) observe(e link.Event) {
	p.count.observe(e)
	if p.cfg.Observe != nil {
		p.cfg.Observe(e)
	}
}

// Active returns the number of connections not yet ended.
func (p *Proxy) Active() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

// Shutdown stops accepting and waits for the open connections to end. If
// ctx ends first, it aborts them (Close) and returns ctx's error.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.stopAccepting()
	done := make(chan struct{})
	go func() {
		p.sessions.Wait()
		close(done)
	}()
	select {
	case <-done:
		return p.Close()
	case <-ctx.Done():
		p.Close()
		return ctx.Err()
	}
}

// Drain stops p gracefully within grace: it stops accepting, lets the
// open connections go on until they end, for at most grace or until ctx
// ends, and then aborts those left (Close). It returns nil when every
// connection ended on its own; otherwise the connections left were
// reset, and the error is context.DeadlineExceeded when the grace ran
// out, ctx's error when ctx ended first. A grace of 0 or less aborts
// whatever is open at once. Like Shutdown, it leaves p closed.
func (p *Proxy) Drain(ctx context.Context, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, max(grace, 0))
	defer cancel()
	return p.Shutdown(ctx)
}

// Close stops accepting, aborts every open connection (with a reset, on
// both sides), and returns once every goroutine of the proxy has ended.
// It is idempotent. The network is the caller's to close; its link's
// events go to Config.Observe alone from then on, and Totals stays as
// Close left it.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.stopAccepting()
		p.cancel()
		p.mu.Lock()
		p.closed = true
		for s := range p.live {
			s.abort("aborted: the proxy closed")
		}
		for _, ln := range p.serverPorts {
			ln.Close()
		}
		p.mu.Unlock()
		p.all.Wait()
		if p.observing {
			p.n.Observe(p.cfg.Observe)
		}
	})
	return nil
}

// stopAccepting closes the real listeners and waits for their loops.
func (p *Proxy) stopAccepting() {
	p.stopOnce.Do(func() {
		for _, l := range p.listeners {
			l.ln.Close()
			l.release()
		}
	})
	p.accepting.Wait()
}

// accept serves one real listener.
func (p *Proxy) accept(l listener) {
	defer p.all.Done()
	defer p.accepting.Done()
	via := "socks5 " + l.ln.Addr().String()
	if l.forward != nil {
		via = "forward " + l.ln.Addr().String()
	}
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: wait a little, as net/http
			// does, rather than spin.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		s := p.newSession(c, via)
		if s == nil {
			continue
		}
		go func() {
			defer p.all.Done()
			if l.forward != nil {
				p.serveClient(s, l.forward.Upstream, l.upstream, nil)
			} else {
				p.serveSOCKS(s)
			}
		}()
	}
}

// newSession registers a connection just accepted; nil, with the
// connection aborted, if the proxy is closing.
func (p *Proxy) newSession(c net.Conn, via string) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		abort(c)
		return nil
	}
	p.nextID++
	s := &session{p: p, id: p.nextID, via: via, client: c, start: time.Now(), done: make(chan struct{})}
	s.sides.Store(1)
	s.conns = append(s.conns, c)
	p.live[s] = struct{}{}
	p.sessions.Add(1)
	p.all.Add(1)
	return s
}

// serverPort makes the server host listen on port, once, and accept
// there.
func (p *Proxy) serverPort(port uint16) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.serverPorts[port] != nil {
		return nil
	}
	if p.closed {
		return net.ErrClosed
	}
	ln, err := p.n.Server().Listen(port)
	if err != nil {
		return err
	}
	p.serverPorts[port] = ln
	p.all.Add(1)
	go func() {
		defer p.all.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return // closed: the proxy or the network
			}
			p.all.Add(1)
			go func() {
				defer p.all.Done()
				p.serveUpstream(c)
			}()
		}
	}()
	return nil
}

// serveClient is the client host's side of a connection: it dials the
// server host's port across the link, registers the session for the
// server side, and copies between the client and the link. ready, if not
// nil, is told the dial's outcome before any byte is copied (SOCKS5's
// reply).
func (p *Proxy) serveClient(s *session, target string, port uint16, ready func(error) bool) {
	s.target = target
	defer s.end()
	// A SOCKS5 or CONNECT client is answered once its upstream is
	// dialed (resolved, allowed, connected), so that a refusal is
	// answered as one rather than as a success and a reset. The dial
	// runs beside the link's handshake: the reply comes after both, one
	// RTT as a connect on a real path.
	var upstream chan dialResult
	if ready != nil {
		upstream = make(chan dialResult, 1)
		go func() {
			u, err := p.dialAllowed(target, s.client)
			upstream <- dialResult{u, err}
		}()
	}
	// refuse answers the client with err, then closes its socket
	// normally (the reply is the answer) and resets the rest.
	refuse := func(err error) {
		if ready != nil {
			if r := <-upstream; r.c != nil {
				r.c.Close()
			}
			ready(err)
			s.client.Close()
		}
		s.abort("")
	}
	if err := p.serverPort(port); err != nil {
		s.fail(fmt.Sprintf("the server host cannot listen on port %d: %v", port, err))
		refuse(err)
		return
	}
	ec, err := p.dialLink(s, port)
	if err != nil {
		s.fail(fmt.Sprintf("across the link: %v", err))
		refuse(err)
		return
	}
	local := uint16(ec.LocalAddr().(*net.TCPAddr).Port)
	p.count.claim(flowKey{local, port}, s)
	if !s.add(ec) {
		if upstream != nil {
			if r := <-upstream; r.c != nil {
				r.c.Close()
			}
		}
		return
	}
	if upstream != nil {
		r := <-upstream
		if r.err != nil {
			s.fail(fmt.Sprintf("upstream: %v", r.err))
			ready(r.err)
			s.client.Close()
			s.abort("")
			return
		}
		if !s.add(r.c) {
			return
		}
		s.upstream = r.c
	}
	p.register(flowKey{local, port}, s)
	defer p.unregister(flowKey{local, port}, s)
	if ready != nil && !ready(nil) {
		s.abort("")
		return
	}
	s.join(s.client, ec, "client", "link", nil, &s.down, nil, s.shaper(Down))
}

// dialLink dials the server host's port across the link for s, and
// gives up when the client resets meanwhile: a connection reset at once
// (a client that churns) must not hold its socket through the link's
// handshake, which may take seconds of SYN retransmissions.
func (p *Proxy) dialLink(s *session, port uint16) (*tcpstack.Conn, error) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	var reset error // the client's, which the watch's peek took
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		// nil: the client has sent data, and is there. A deadline is
		// this function's own, ending the watch.
		if err := waitRead(s.client); err != nil && !errors.Is(err, io.EOF) && !isTimeout(err) {
			reset = err
			cancel()
		}
	}()
	ec, err := p.n.Client().Dial(ctx, p.n.Server().AddrPort(port))
	s.client.SetReadDeadline(time.Unix(1, 0)) // ends the watch
	<-watched
	s.client.SetReadDeadline(time.Time{})
	if reset != nil { // also when the dial won the race: the reset is gone from the socket
		if ec != nil {
			abort(ec)
		}
		return nil, fmt.Errorf("the client reset the connection first: %w", reset)
	}
	return ec, err
}

// dialResult is an upstream dial's outcome.
type dialResult struct {
	c   net.Conn
	err error
}

// serveUpstream is the server host's side of a connection: it learns
// which session the connection is, opens the upstream (unless the
// client's side has, for SOCKS5) and copies between the link and the
// upstream.
func (p *Proxy) serveUpstream(ec *tcpstack.Conn) {
	ra, ok := ec.RemoteAddr().(*net.TCPAddr)
	if !ok {
		abort(ec) // reset already: its client side has ended
		return
	}
	la := ec.LocalAddr().(*net.TCPAddr)
	s := p.claim(flowKey{uint16(ra.Port), uint16(la.Port)}, ec)
	if s == nil {
		abort(ec)
		return
	}
	defer s.end()
	if !s.add(ec) {
		return
	}
	u := s.upstream
	if u == nil {
		var err error
		if u, err = p.cfg.Loops.Dial(p.ctx, p.cfg.DialUpstream, s.target, s.client); err != nil {
			s.fail(fmt.Sprintf("upstream: %v", err))
			if p.cfg.CloseRefused {
				s.close()
				return
			}
			// The client sees its connection reset, as a refused connect
			// resets a real path's SYN.
			s.abort("")
			return
		}
		if !s.add(u) {
			return
		}
	}
	s.join(ec, u, "link", "upstream", &s.up, nil, s.shaper(Up), nil)
}

// NotAllowedError is a SOCKS5 or CONNECT destination that Config.Allow
// does not allow.
type NotAllowedError struct {
	Target string       // as the client named it
	Addrs  []netip.Addr // what it resolved to
}

func (e *NotAllowedError) Error() string {
	return fmt.Sprintf("%s (%v) is not an allowed destination; the proxy reaches loopback unless told otherwise (--allow)", e.Target, e.Addrs)
}

// upstreamTimeout bounds a SOCKS5 or CONNECT upstream's resolution and
// dial, beside what Config.DialUpstream bounds itself.
const upstreamTimeout = 15 * time.Second

// dialAllowed resolves the target a SOCKS5 or CONNECT client named and
// dials its addresses that Config.Allow allows, in order, for the client
// connection from. The rule is applied to the addresses dialed, so a
// name cannot lead past it; none may be the proxy's own (Config.Loops).
func (p *Proxy) dialAllowed(target string, from net.Conn) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, upstreamTimeout)
	defer cancel()
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = p.cfg.LookupHost(ctx, host); err != nil {
		return nil, err
	}
	var allowed []netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if slices.ContainsFunc(p.cfg.Allow, func(pr netip.Prefix) bool { return pr.Contains(a) }) {
			allowed = append(allowed, a)
		}
	}
	if len(allowed) == 0 {
		return nil, &NotAllowedError{Target: target, Addrs: addrs}
	}
	for _, a := range allowed {
		var u net.Conn
		if u, err = p.cfg.Loops.Dial(ctx, p.cfg.DialUpstream, net.JoinHostPort(a.String(), port), from); err == nil {
			return u, nil
		}
		var le *LoopError
		if errors.As(err, &le) {
			return nil, err
		}
	}
	return nil, err
}

// register hands s to the server side of the connection k. An
// unclaimed registration under k is a connection gone (its ports are in
// use again): it is replaced, its session's server share ended.
func (p *Proxy) register(k flowKey, s *session) {
	p.mu.Lock()
	s.sides.Add(1) // the server side's share, ended by it or by unregister
	m := p.pending[k]
	var stale *session
	if m != nil && m.s != nil {
		stale, m = m.s, nil
	}
	if m == nil {
		m = &match{ready: make(chan struct{})}
		p.pending[k] = m
	}
	m.s = s
	close(m.ready)
	p.mu.Unlock()
	if stale != nil {
		stale.end()
	}
}

// unregister ends the server side's share of s if it never claimed it.
func (p *Proxy) unregister(k flowKey, s *session) {
	p.mu.Lock()
	m := p.pending[k]
	unclaimed := m != nil && m.s == s
	if unclaimed {
		delete(p.pending, k)
	}
	p.mu.Unlock()
	if unclaimed {
		s.end()
	}
}

// claimPoll is how often a waiting claim looks at its own connection.
const claimPoll = 20 * time.Millisecond

// claim waits for the session of ec, the server host's side of the
// connection k; nil if none comes, or if ec ends first (a reset while
// it waited: whatever registers under k next is a newer connection's).
// A registration whose session has ended already is left to be
// replaced, never taken.
func (p *Proxy) claim(k flowKey, ec *tcpstack.Conn) *session {
	deadline := time.NewTimer(claimTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(claimPoll)
	defer tick.Stop()
	for {
		p.mu.Lock()
		m := p.pending[k]
		if m != nil && m.s != nil && !m.s.ended() && !ec.Ended() {
			delete(p.pending, k)
			p.mu.Unlock()
			return m.s
		}
		var ready chan struct{}
		if m == nil || m.s == nil {
			if m == nil {
				m = &match{ready: make(chan struct{})}
				p.pending[k] = m
			}
			ready = m.ready
		}
		p.mu.Unlock()
		if ec.Ended() {
			p.forget(k, m)
			return nil
		}
		select {
		case <-ready: // nil while a stale registration waits to be replaced
		case <-tick.C:
		case <-deadline.C:
			p.forget(k, m)
			return nil
		case <-p.ctx.Done():
			p.forget(k, m)
			return nil
		}
	}
}

// forget drops a claim's wait for k, if it is still m and still waits.
func (p *Proxy) forget(k flowKey, m *match) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending[k] == m && m.s == nil {
		delete(p.pending, k)
	}
}

// finish files the record of an ended session.
func (p *Proxy) finish(s *session) {
	s.stop()
	p.count.release(s)
	r := s.record()
	p.mu.Lock()
	delete(p.live, s)
	p.totals.add(r)
	if len(p.records) < KeptRecords {
		p.records = append(p.records, r)
	} else {
		p.records[p.next] = r
		p.next = (p.next + 1) % KeptRecords
	}
	p.mu.Unlock()
	if r.Err != "" && p.cfg.Logf != nil {
		p.cfg.Logf("connection %d (%s, %s → %s): %s", r.ID, r.Via, r.Client, r.Upstream, r.Err)
	}
	if p.cfg.OnEnd != nil {
		p.cfg.OnEnd(r)
	}
	p.sessions.Done()
}
