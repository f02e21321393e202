package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Loops. A proxy whose upstream is one of its own listeners (itself, or
// another forward that leads back) would carry each connection to itself
// again, a new connection at each turn, until descriptors or memory run
// out. CheckLoops refuses such forwards before they listen; what only
// shows at connect time (a name that resolves to a listener, a SOCKS5
// destination that is the proxy's own address) a LoopGuard cuts at the
// first turn, or the second (LoopGuard).

// LoopError is a connection, or a forward, that would lead back to a
// listener of the same proxy.
type LoopError struct {
	Upstream string // as it was named
	Listen   string // the listener it reaches; "" when seen from the accepted side
}

func (e *LoopError) Error() string {
	if e.Listen == "" {
		return fmt.Sprintf("upstream %s: the connection comes from this proxy's own upstream connection: a loop", Clip(e.Upstream))
	}
	return fmt.Sprintf("upstream %s is this proxy's own listen address %s: a loop", Clip(e.Upstream), e.Listen)
}

// localAddrs lists the host's interface addresses; a variable for tests.
var localAddrs = net.InterfaceAddrs

// IsLocal reports whether a is an address of this host: loopback, or an
// address of one of its interfaces. (An address the host answers on
// through a local route alone is not seen here; LoopGuard's check of
// the accepted side covers it.)
func IsLocal(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	addrs, err := localAddrs()
	if err != nil {
		return false
	}
	for _, x := range addrs {
		if p, err := netip.ParsePrefix(x.String()); err == nil && p.Addr().Unmap().WithZone("") == a {
			return true
		}
	}
	return false
}

// Catches reports whether a listener bound at listen receives the
// connections made to dst: the same port, and the same address, or a
// listener on every address (0.0.0.0 for IPv4, :: for both) and an
// address of this host. A connect to 0.0.0.0 or :: reaches loopback.
func Catches(listen, dst netip.AddrPort) bool {
	if listen.Port() == 0 || listen.Port() != dst.Port() {
		return false
	}
	l, d := listen.Addr().Unmap().WithZone(""), dst.Addr().Unmap().WithZone("")
	switch {
	case d == netip.IPv4Unspecified():
		d = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case d == netip.IPv6Unspecified():
		d = netip.IPv6Loopback()
	}
	if l.IsUnspecified() {
		if l.Is4() && !d.Is4() {
			return false // an IPv4 listener: IPv4 only
		}
		return IsLocal(d)
	}
	return l == d
}

// addrPort is a's IP and port; false if a is not an IP address.
func addrPort(a net.Addr) (netip.AddrPort, bool) {
	if ta, ok := a.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ap.IsValid()
	}
	if a == nil {
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), err == nil
}

// resolveTimeout bounds a name's lookup for a check of loops.
const resolveTimeout = 2 * time.Second

// ResolveAddrs is hostport's addresses: the address itself, or its
// name's addresses by lookup (nil: the system's resolver), within 2 s or
// ctx's end. A name that does not resolve gives none, and no error: the
// check of loops that asks cannot see where it leads.
func ResolveAddrs(ctx context.Context, hostport string, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) []netip.AddrPort {
	host, port, err := splitPort(hostport, true)
	if err != nil {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(a.Unmap(), port)}
	}
	if host == "" {
		return []netip.AddrPort{netip.AddrPortFrom(netip.IPv4Unspecified(), port)}
	}
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, _ := lookup(ctx, host)
	out := make([]netip.AddrPort, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, netip.AddrPortFrom(a.Unmap(), port))
	}
	return out
}

// CheckLoops refuses forwards that lead back to the proxy: a forward
// whose upstream is its own listen address, or another forward's that
// leads back to it, directly or through others. listens are the
// listeners' addresses, bound or as given (a port 0 reaches nothing);
// the upstreams' names are resolved with lookup (nil: the system's
// resolver). A SOCKS5 listener leads where its clients say; LoopGuard
// refuses its own addresses there.
func CheckLoops(ctx context.Context, forwards []Forward, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) error {
	listens := make([][]netip.AddrPort, len(forwards))
	ups := make([][]netip.AddrPort, len(forwards))
	for i, f := range forwards {
		listens[i] = ResolveAddrs(ctx, f.Listen, lookup)
		ups[i] = ResolveAddrs(ctx, f.Upstream, lookup)
	}
	// next is the forward whose listener f's upstream reaches; -1 if
	// none (two listeners cannot hold one address and port).
	next := func(f int) int {
		for j := range forwards {
			for _, l := range listens[j] {
				for _, u := range ups[f] {
					if Catches(l, u) {
						return j
					}
				}
			}
		}
		return -1
	}
	for i, f := range forwards {
		path := []int{i}
		for j := next(i); j >= 0 && len(path) <= len(forwards); j = next(j) {
			if j == i {
				return loopMessage(f, forwards, path)
			}
			path = append(path, j)
		}
	}
	return nil
}

// loopMessage says how forward f, through path, comes back to itself.
func loopMessage(f Forward, forwards []Forward, path []int) error {
	if len(path) == 1 {
		return fmt.Errorf("forward %s: upstream %s is its own listen address: a loop", Clip(f.String()), Clip(f.Upstream))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "forward %s: upstream %s is the listen address of forward %s", Clip(f.String()), Clip(f.Upstream), Clip(forwards[path[1]].String()))
	for _, j := range path[2:] {
		fmt.Fprintf(&b, ", whose upstream is the listen address of forward %s", Clip(forwards[j].String()))
	}
	b.WriteString(", whose upstream is this one's listen address: a loop")
	return errors.New(b.String())
}

// A LoopGuard cuts, at connect time, the loops that a check at the start
// cannot see. It knows the addresses its proxies listen on and the two
// ends of the upstream connections they opened; Dial refuses an
// upstream connection that reaches one of those listeners (its remote
// address), or one made for a client that is itself one of those
// upstream connections come back (the client's two ends are one of
// them, seen from the other side: a listener the address check missed,
// reached by a route only the kernel knows). Either way the loop ends
// at its first turn; where a name led to the listener, the connection
// its dial made may reach its own dial before the refusal is recorded,
// and that loop ends at its second. The zero value is ready; one guard may serve
// several proxies of a process, which is what makes a loop through
// another of them visible.
type LoopGuard struct {
	mu      sync.Mutex
	listens map[netip.AddrPort]int // the listeners' bound addresses, counted
	dials   map[pair]int           // the upstream connections open
	// refused are the upstream connections refused once connected (a
	// name that led to a listener), for refusedFor: the listener
	// accepted them meanwhile, and its side must not go on.
	refused map[pair]time.Time
}

// pair is a connection's two ends, as its dialer sees them: its local
// address, then its remote one. The same local port may serve
// connections to different peers, so an end alone names no connection.
type pair [2]netip.AddrPort

// pairOf is c's pair; false if an end is not an IP address.
func pairOf(c net.Conn) (pair, bool) {
	la, lok := addrPort(c.LocalAddr())
	ra, rok := addrPort(c.RemoteAddr())
	return pair{la, ra}, lok && rok
}

// refusedFor is how long a LoopGuard remembers a connection it refused
// once connected: far longer than its other end takes to be served.
const refusedFor = 5 * time.Second

// Listen tells g that a listener is bound at a; release forgets it, and
// may be called more than once.
func (g *LoopGuard) Listen(a net.Addr) (release func()) {
	ap, ok := addrPort(a)
	if !ok {
		return func() {}
	}
	g.mu.Lock()
	if g.listens == nil {
		g.listens = map[netip.AddrPort]int{}
	}
	g.listens[ap]++
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { forget(g, g.listens, ap) }) }
}

// forget takes one count of a off m.
func forget[K comparable](g *LoopGuard, m map[K]int, a K) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m[a]--; m[a] <= 0 {
		delete(m, a)
	}
}

// Reaches is the listener that a connection to dst would reach; false if
// none.
func (g *LoopGuard) Reaches(dst netip.AddrPort) (netip.AddrPort, bool) {
	g.mu.Lock()
	listens := make([]netip.AddrPort, 0, len(g.listens))
	for l := range g.listens {
		listens = append(listens, l)
	}
	g.mu.Unlock()
	for _, l := range listens {
		if Catches(l, dst) {
			return l, true
		}
	}
	return netip.AddrPort{}, false
}

// returned reports whether c, an accepted connection, is one of g's
// upstream connections come back.
func (g *LoopGuard) returned(c net.Conn) bool {
	p, ok := pairOf(c)
	if !ok {
		return false
	}
	p = pair{p[1], p[0]} // as the dialer saw it
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.refused[p]
	return g.dials[p] > 0 || ok && time.Since(at) < refusedFor
}

// refuse remembers a, a connection refused once connected, and forgets
// those older than refusedFor.
func (g *LoopGuard) refuse(a pair) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for x, at := range g.refused {
		if now.Sub(at) >= refusedFor {
			delete(g.refused, x)
		}
	}
	if g.refused == nil {
		g.refused = map[pair]time.Time{}
	}
	g.refused[a] = now
}

// Dial opens an upstream connection to addr with dial, for the client
// connection from (nil if none), unless it would close a loop: from is
// one of g's own upstream connections come back, or the connection
// reaches one of g's listeners. Then it fails with a *LoopError, with
// nothing left open. A connection it returns counts as g's own until it
// is closed.
func (g *LoopGuard) Dial(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string, from net.Conn) (net.Conn, error) {
	if from != nil && g.returned(from) {
		return nil, &LoopError{Upstream: addr}
	}
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		if l, hit := g.Reaches(ap); hit {
			return nil, &LoopError{Upstream: addr, Listen: l.String()}
		}
	}
	u, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if ra, ok := addrPort(u.RemoteAddr()); ok {
		if l, hit := g.Reaches(ra); hit {
			if p, ok := pairOf(u); ok {
				g.refuse(p)
			}
			abort(u)
			return nil, &LoopError{Upstream: addr, Listen: l.String()}
		}
	}
	tc, ok := u.(*net.TCPConn)
	p, pok := pairOf(u)
	if !ok || !pok {
		return u, nil // not a kernel socket of its own: nothing comes back as it
	}
	g.mu.Lock()
	if g.dials == nil {
		g.dials = map[pair]int{}
	}
	g.dials[p]++
	g.mu.Unlock()
	gc := &guardedConn{TCPConn: tc}
	gc.release = func() { forget(g, g.dials, p) }
	return gc, nil
}

// guardedConn is an upstream connection of a LoopGuard: a kernel socket
// whose Close also forgets its local address.
type guardedConn struct {
	*net.TCPConn
	once    sync.Once
	release func()
}

func (c *guardedConn) Close() error {
	c.once.Do(c.release)
	return c.TCPConn.Close()
}
