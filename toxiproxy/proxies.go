package toxiproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netemu/netemu/proxy"
)

// proxyState is one proxy of the API: its settings and toxics, guarded
// by Server.mu, and, while enabled, the listener that serves it.
type proxyState struct {
	srv  *Server
	name string

	listen, upstream string
	enabled          bool
	run              *run // nil while disabled

	// upstreamAddrs are upstream's addresses, resolved before the lock
	// was taken (resolveProxy): what the check of loops follows.
	upstreamAddrs []netip.AddrPort

	// toxics is the list in the order added, both streams; replaced, never
	// changed in place, so that connections read it without Server.mu.
	toxics atomicToxics
}

// resolved is a proxy's listen and upstream addresses as resolveProxy
// found them, without Server.mu: a lookup may wait on the network.
type resolved struct {
	listen    string // the listen address as net.ResolveTCPAddr gives it
	port0     bool   // its port is 0
	listenErr error  // listen does not resolve
	listens   []netip.AddrPort
	upstreams []netip.AddrPort
}

// resolveProxy resolves a proxy's listen and upstream addresses, for
// differs and for the check of loops.
func resolveProxy(listen, upstream string) resolved {
	var res resolved
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	a, err := net.ResolveTCPAddr("tcp", listen)
	if err != nil {
		res.listenErr = err
	} else {
		res.listen, res.port0 = a.String(), a.Port == 0
		if ap := a.AddrPort(); ap.IsValid() {
			res.listens = []netip.AddrPort{netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())}
		}
	}
	res.upstreams = proxy.ResolveAddrs(context.Background(), upstream, nil)
	return res
}

// newProxy is a proxy of in's settings, not started; enabled unless in
// says otherwise.
func (s *Server) newProxy(in proxyInput, res resolved) *proxyState {
	px := &proxyState{srv: s, name: in.Name, listen: in.Listen, upstream: in.Upstream, enabled: in.Enabled == nil || *in.Enabled,
		upstreamAddrs: res.upstreams}
	px.toxics.Store(&toxicSet{list: []*toxic{}, gen: 1, all: baseDirs(s.cfg.Link)})
	return px
}

// list is a copy of the toxics, to change and store with setToxics.
func (px *proxyState) list() []*toxic { return slices.Clone(px.toxics.Load().list) }

// toxic is the toxic named name; nil if none.
func (px *proxyState) toxic(name string) *toxic {
	for _, t := range px.toxics.Load().list {
		if t.name == name {
			return t
		}
	}
	return nil
}

// setToxics stores list and, once Server.mu is released, applies it to
// the open connections. added, if not nil, is the one toxic list adds at
// the end of the list before: each connection then adds that one alone,
// so that an add costs one step per connection, whatever the number of
// toxics. Called with Server.mu held.
func (px *proxyState) setToxics(list []*toxic, added *toxic) {
	if list == nil {
		list = []*toxic{}
	}
	old := px.toxics.Load()
	set := &toxicSet{list: list, gen: old.gen + 1, added: added}
	if added != nil {
		set.all, set.allErr = old.all, old.allErr
		if set.allErr == nil {
			set.allErr = set.all.apply(added)
		}
	} else {
		set.all, set.allErr = linkDirsOf(px.srv.cfg.Link, list, func(*toxic) bool { return true })
	}
	px.toxics.Store(set)
	if r := px.run; r != nil {
		px.srv.later(func() { r.each(func(c *conn) { c.update(set) }) })
	}
}

// start listens on the proxy's listen address, which becomes the
// address bound (a port 0 becomes the port given), and serves it. If
// the check of loops refuses the address bound, it is closed before
// anything is accepted there (the check needs the port: a listen on
// port 0, a name). Called with Server.mu held.
func (px *proxyState) start() error {
	listen := px.listen
	if listen == "" {
		// toxiproxy listens on every interface; netemu on loopback,
		// unless told an address.
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	bound := netip.MustParseAddrPort(ln.Addr().String())
	bound = netip.AddrPortFrom(bound.Addr().Unmap(), bound.Port())
	if err := px.srv.checkLoop(px, px.upstream, px.upstreamAddrs, []netip.AddrPort{bound}); err != nil {
		ln.Close()
		return err
	}
	px.listen = ln.Addr().String()
	if !proxy.Loopback(px.listen) {
		px.srv.cfg.Logf("proxy %s listens on %s, beyond loopback: whoever reaches this machine reaches %s", px.name, px.listen, proxy.Clip(px.upstream))
	}
	r := &run{px: px, ln: ln, bound: bound, upstream: px.upstream, conns: map[*conn]struct{}{}, done: make(chan struct{}), quit: make(chan struct{}),
		release: px.srv.loops.Listen(ln.Addr())}
	px.srv.listening(r, true)
	r.wg.Add(1)
	go r.accept()
	px.run, px.enabled = r, true
	return nil
}

// stop closes the listener at once, and, once Server.mu is released,
// resets the open connections and lets their networks close in the
// background (Server.end). The toxics stay. Called with Server.mu held.
func (px *proxyState) stop() {
	if r := px.run; r != nil {
		r.ln.Close()
		r.release()
		px.srv.listening(r, false)
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.quit)
		px.srv.ending[r] = struct{}{} // now, so that a Close that follows waits for it
		px.srv.later(func() { px.srv.end(r) })
	}
	px.run, px.enabled = nil, false
}

// checkLoop refuses px listening on listens, with upstream (whose
// addresses are ups), if its upstream leads back to it: its own listen
// address, or a listening proxy's whose upstream leads back, directly or
// through others. The error names the proxies in turn. Called with
// Server.mu held.
func (s *Server) checkLoop(px *proxyState, upstream string, ups, listens []netip.AddrPort) error {
	// next lists the listening proxies (px with listens and ups in its
	// own place) that a connection to from's upstream reaches.
	next := func(from *proxyState) []*proxyState {
		var out []*proxyState
		fromUps := from.upstreamAddrs
		if from == px {
			fromUps = ups
		}
		for _, u := range fromUps {
			for _, l := range listens {
				if proxy.Catches(l, u) && !slices.Contains(out, px) {
					out = append(out, px)
				}
			}
			for r := range s.byPort[u.Port()] {
				if r.px != px && proxy.Catches(r.bound, u) && !slices.Contains(out, r.px) {
					out = append(out, r.px)
				}
			}
		}
		return out
	}
	seen := map[*proxyState]bool{}
	var path []*proxyState
	var walk func(at *proxyState) bool
	walk = func(at *proxyState) bool {
		path = append(path, at)
		for _, n := range next(at) {
			if n == px {
				return true
			}
			if !seen[n] {
				seen[n] = true
				if walk(n) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if !walk(px) {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "proxy %s's upstream %s is ", proxy.Clip(px.name), proxy.Clip(upstream))
	if len(path) == 1 {
		b.WriteString("its own listen address")
	} else {
		fmt.Fprintf(&b, "proxy %s's listen address", proxy.Clip(path[1].name))
		for _, q := range path[2:] {
			fmt.Fprintf(&b, ", whose upstream is proxy %s's", proxy.Clip(q.name))
		}
		fmt.Fprintf(&b, ", whose upstream is proxy %s's", proxy.Clip(px.name))
	}
	b.WriteString(": a loop")
	return &apiError{b.String(), http.StatusBadRequest}
}

// listening adds r to the index of listeners by port, or takes it off.
// Called with Server.mu held.
func (s *Server) listening(r *run, on bool) {
	port := r.bound.Port()
	if on {
		if s.byPort[port] == nil {
			s.byPort[port] = map[*run]struct{}{}
		}
		s.byPort[port][r] = struct{}{}
		return
	}
	delete(s.byPort[port], r)
	if len(s.byPort[port]) == 0 {
		delete(s.byPort, port)
	}
}

// run is an enabled proxy's listener and the connections it accepted.
type run struct {
	px       *proxyState
	ln       net.Listener
	bound    netip.AddrPort // ln's address
	upstream string
	release  func()         // forgets ln in Server.loops
	wg       sync.WaitGroup // the accept loop and every connection
	done     chan struct{}  // closed once wg is done, after stop
	quit     chan struct{}  // closed by stop: the accept loop waits for no slot

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
}

// Each connection takes one of the server's slots (Config.MaxConns)
// once it is accepted, before anything is built for it, and gives it
// back once its network is closed (remove): when the connections come
// faster than networks are built and torn down, each proxy holds one
// accepted socket waiting for a slot and the rest wait in the kernel's
// listen backlog, rather than in memory. An idle proxy holds no slot.
func (r *run) accept() {
	defer r.wg.Done()
	slots := r.px.srv.slots
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond) // out of descriptors, say
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-r.quit:
			c.Close()
			return
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			<-slots
			c.Close()
			continue
		}
		cn := newConn(r, c)
		r.conns[cn] = struct{}{}
		r.wg.Add(1)
		r.mu.Unlock()
		go cn.start()
	}
}

// each calls f for every open connection, without r.mu.
func (r *run) each(f func(*conn)) {
	r.mu.Lock()
	conns := make([]*conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		f(c)
	}
}

// open is the number of connections not yet ended.
func (r *run) open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

// remove forgets an ended connection.
func (r *run) remove(c *conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	<-r.px.srv.slots
	r.wg.Done()
}
