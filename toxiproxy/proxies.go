package toxiproxy

import (
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
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

	// toxics is the list in the order added, both streams; replaced, never
	// changed in place, so that connections read it without Server.mu.
	toxics atomic.Pointer[[]*toxic]
}

// newProxy is a proxy of in's settings, not started; enabled unless in
// says otherwise.
func (s *Server) newProxy(in proxyInput) *proxyState {
	px := &proxyState{srv: s, name: in.Name, listen: in.Listen, upstream: in.Upstream, enabled: in.Enabled == nil || *in.Enabled}
	px.toxics.Store(&[]*toxic{})
	return px
}

// list is a copy of the toxics, to change and store with setToxics.
func (px *proxyState) list() []*toxic { return slices.Clone(*px.toxics.Load()) }

// toxic is the toxic named name; nil if none.
func (px *proxyState) toxic(name string) *toxic {
	for _, t := range *px.toxics.Load() {
		if t.name == name {
			return t
		}
	}
	return nil
}

// setToxics stores list and applies it to the open connections.
func (px *proxyState) setToxics(list []*toxic) {
	if list == nil {
		list = []*toxic{}
	}
	px.toxics.Store(&list)
	if px.run != nil {
		px.run.each(func(c *conn) { c.update(list) })
	}
}

// start listens on the proxy's listen address, which becomes the
// address bound (a port 0 becomes the port given), and serves it.
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
	px.listen = ln.Addr().String()
	if !proxy.Loopback(px.listen) {
		px.srv.cfg.Logf("proxy %s listens on %s, beyond loopback: whoever reaches this machine reaches %s", px.name, px.listen, px.upstream)
	}
	r := &run{px: px, ln: ln, upstream: px.upstream, conns: map[*conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	px.run, px.enabled = r, true
	return nil
}

// stop closes the listener, resets every open connection and waits for
// them to end. The toxics stay.
func (px *proxyState) stop() {
	if px.run != nil {
		px.run.stop()
	}
	px.run, px.enabled = nil, false
}

// run is an enabled proxy's listener and the connections it accepted.
type run struct {
	px       *proxyState
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup // the accept loop and every connection

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
}

func (r *run) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond) // out of descriptors, say
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
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

// stop closes the listener, resets the connections and waits for them.
func (r *run) stop() {
	r.ln.Close()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.each((*conn).abort)
	r.wg.Wait()
}

// remove forgets an ended connection.
func (r *run) remove(c *conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	r.wg.Done()
}
