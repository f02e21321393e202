package toxiproxy

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
)

// conn is one client connection of a proxy, carried across a network of
// its own: an emu.Net on the real clock whose link is the base link with
// the link toxics that apply to this connection, and a proxy.Proxy that
// carries it to the upstream, with a Shaper per direction for the byte
// toxics. Both go when the connection ends.
type conn struct {
	r      *run
	client net.Conn
	id     uint64

	mu      sync.Mutex
	rng     *rand.Rand        // toxicity's rolls and the slicer's sizes
	rolled  map[uint64]*stage // by toxic id: the toxics seen, rolled
	dirs    [2]*direction     // by proxy.Direction
	gen     uint64            // the toxicSet.gen applied
	links   linkDirs          // the base link with the link toxics that act here
	linkErr error             // why links could not follow the last change: it is the one before
	n       *emu.Net
	p       *proxy.Proxy
	aborted bool
}

// stage is one toxic on one connection: whether its roll of toxicity
// made it act, and its state.
type stage struct {
	t      *toxic // the version rolled for
	active bool
	sent   int64 // limit_data: bytes passed on; the direction's goroutine only
}

// direction is one direction of a connection, and its Shaper.
type direction struct {
	c      *conn
	st     *proxy.Stream // nil until its bytes flow
	stages []*stage      // the active byte toxics, in order
	wake   chan struct{} // closed at each change of the toxics: a stall looks again

	timer    *time.Timer // the timeout toxic's, while one acts
	timerFor *toxic
}

func newConn(r *run, c net.Conn) *conn {
	id := r.px.srv.nextConn.Add(1)
	cn := &conn{r: r, client: c, id: id, rolled: map[uint64]*stage{},
		rng: rand.New(rand.NewPCG(r.px.srv.cfg.Seed, id)), links: baseDirs(r.px.srv.cfg.Link)}
	for i := range cn.dirs {
		cn.dirs[i] = &direction{c: cn, wake: make(chan struct{})}
	}
	return cn
}

// start builds the connection's network and carries it.
func (c *conn) start() {
	srv := c.r.px.srv
	c.mu.Lock()
	// An update may have come first (conn.update).
	if set := c.r.px.toxics.Load(); set.gen > c.gen {
		c.sync(set.list)
		c.gen = set.gen
	}
	lc, err := c.links.config()
	if c.linkErr != nil {
		err = c.linkErr
	}
	seed := c.rng.Uint64()
	c.mu.Unlock()
	var n *emu.Net
	if err == nil {
		n, err = emu.New(emu.Config{Link: lc, TCP: srv.cfg.TCP, Clock: emu.Real, Seed: seed})
	}
	var p *proxy.Proxy
	if err == nil {
		p, err = proxy.New(n, proxy.Config{Shape: c.shape, OnEnd: c.ended, DialUpstream: srv.upstreamDial(), FirstID: c.id, Loops: &srv.loops, CloseRefused: true,
			Logf: func(format string, args ...any) { srv.cfg.Logf("proxy "+c.r.px.name+": "+format, args...) }})
	}
	if err != nil {
		srv.cfg.Logf("proxy %s: connection from %s: %v", c.r.px.name, c.client.RemoteAddr(), err)
		if n != nil {
			srv.closeNet(n)
		}
		c.client.Close()
		c.r.remove(c)
		return
	}
	c.mu.Lock()
	c.n, c.p = n, p
	aborted := c.aborted
	c.mu.Unlock()
	if aborted {
		c.client.Close()
		c.teardown()
		return
	}
	if err := p.Serve(c.client, c.r.upstream); err != nil {
		srv.cfg.Logf("proxy %s: %v", c.r.px.name, err)
		c.teardown()
	}
}

// ended is the proxy's OnEnd: the connection is over; its network goes,
// off the proxy's goroutine (Close waits for it).
func (c *conn) ended(proxy.Record) { go c.teardown() }

// teardown closes the connection's proxy and network and forgets it.
func (c *conn) teardown() {
	c.mu.Lock()
	for _, d := range c.dirs {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
	p, n := c.p, c.n
	c.mu.Unlock()
	p.Close()
	c.r.px.srv.closeNet(n)
	c.r.remove(c)
}

// abort resets the connection: the proxy was disabled or deleted.
func (c *conn) abort() {
	c.mu.Lock()
	c.aborted = true
	p := c.p
	c.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// close ends the connection as toxiproxy's toxics do: both sockets
// closed.
func (c *conn) close() {
	c.mu.Lock()
	var st *proxy.Stream
	for _, d := range c.dirs {
		if d.st != nil {
			st = d.st
		}
	}
	c.mu.Unlock()
	if st != nil {
		st.Close()
	} else {
		c.abort() // nothing flows yet: nothing to close gracefully
	}
}

// roll decides, once per version of a toxic, whether it acts on this
// connection: toxiproxy's toxicity, the chance that it does. Called with
// c.mu held.
func (c *conn) roll(t *toxic) bool {
	s := c.rolled[t.id]
	if s == nil {
		s = &stage{}
		c.rolled[t.id] = s
	}
	if s.t == nil || s.t.version != t.version {
		s.t = t
		s.active = t.toxicity > 0 && c.rng.Float32() < t.toxicity
	}
	return s.active
}

// update applies a change of the proxy's toxics to the open connection,
// as toxiproxy applies them: rolled again where they changed, the byte
// toxics at once; the link toxics through relink. A set older than the
// one applied is passed over (two changes may reach a connection out of
// order); a set that adds one toxic to the one applied costs that
// toxic alone (add), any other change every toxic (sync).
func (c *conn) update(set *toxicSet) {
	c.mu.Lock()
	if set.gen <= c.gen {
		c.mu.Unlock()
		return
	}
	var closeNow, linkChanged bool
	if set.added != nil && set.gen == c.gen+1 {
		linkChanged = c.add(set.added)
	} else {
		closeNow, linkChanged = c.sync(set.list)
	}
	c.gen = set.gen
	var lc link.Config
	err := c.linkErr
	if linkChanged && err == nil {
		lc, err = c.links.config()
	}
	c.mu.Unlock()
	if linkChanged && err == nil {
		c.relink(lc)
	}
	if closeNow {
		c.close()
	}
}

// add applies one toxic added after those applied: rolled, its stage
// after the others of its direction, or its link added. It returns
// whether the link changed. Called with c.mu held.
func (c *conn) add(t *toxic) (linkChanged bool) {
	c.r.px.srv.reapplied.Add(1)
	active := c.roll(t)
	if active && (!t.kind.onLink || t.kind.name == "bandwidth") {
		d := c.dirs[t.dir]
		d.stages = append(d.stages, c.rolled[t.id])
		if _, ok := t.attrs.(*timeoutAttrs); ok {
			d.arm()
		}
	}
	for _, d := range c.dirs {
		close(d.wake)
		d.wake = make(chan struct{})
	}
	if !t.kind.onLink || !active || c.linkErr != nil {
		return false
	}
	if err := c.links.apply(t); err != nil {
		c.linkErr = err
		return false
	}
	return true
}

// relink gives the open connection's link the configuration cfg
// (emu.Net.SetLink): the packets under way keep their course, the next
// ones take the new delay, rate and impairments. A change the link
// refuses (a qdisc toxic replacing a discipline that holds packets) is
// logged, and the connection keeps the link it had.
func (c *conn) relink(cfg link.Config) {
	c.mu.Lock()
	n := c.n
	c.mu.Unlock()
	if n == nil {
		return
	}
	if err := n.SetLink(cfg); err != nil {
		c.r.px.srv.cfg.Logf("connection %d: its link keeps the toxics it had: %v", c.id, err)
	}
}

// sync brings the connection's stages to list: each toxic rolled if new
// or changed, each direction's active byte toxics in order, the timeout
// timers, the stalls woken, and, if a link toxic came, went or changed
// (linkChanged), the link's toxics applied again. closeNow: an acting
// timeout toxic was removed, which closes the connection in toxiproxy.
// Called with c.mu held.
func (c *conn) sync(list []*toxic) (closeNow, linkChanged bool) {
	c.r.px.srv.reapplied.Add(uint64(len(list)))
	seen := make(map[uint64]bool, len(list))
	for _, d := range c.dirs {
		d.stages = d.stages[:0]
	}
	for _, t := range list {
		seen[t.id] = true
		s := c.rolled[t.id]
		if t.kind.onLink && (s == nil || s.t.version != t.version) {
			linkChanged = true
		}
		// The byte toxics act past the link; so does a bandwidth, whose
		// rate 0 stops the traffic there (stalled).
		if c.roll(t) && (!t.kind.onLink || t.kind.name == "bandwidth") {
			d := c.dirs[t.dir]
			d.stages = append(d.stages, c.rolled[t.id])
		}
	}
	for id, s := range c.rolled {
		if seen[id] {
			continue
		}
		if s.t.kind.onLink {
			linkChanged = true
		}
		if s.active && s.t.kind.name == "timeout" {
			closeNow = true
		}
		delete(c.rolled, id)
	}
	for _, d := range c.dirs {
		d.arm()
		close(d.wake)
		d.wake = make(chan struct{})
	}
	if linkChanged {
		links, err := linkDirsOf(c.r.px.srv.cfg.Link, list, func(t *toxic) bool { return c.rolled[t.id].active })
		if err == nil {
			c.links = links
		}
		c.linkErr = err
	}
	return closeNow, linkChanged
}

// arm keeps the direction's timeout timer: running while a timeout toxic
// with a timeout acts, started again when that toxic changes. Called
// with c.mu held.
func (d *direction) arm() {
	var want *toxic
	for _, s := range d.stages {
		if a, ok := s.t.attrs.(*timeoutAttrs); ok && a.Timeout > 0 {
			want = s.t
			break
		}
	}
	if want == d.timerFor {
		return
	}
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.timerFor = nil
	if want == nil || d.st == nil {
		return
	}
	d.timerFor = want
	d.timer = time.AfterFunc(time.Duration(want.attrs.(*timeoutAttrs).Timeout)*time.Millisecond, d.c.close)
}

// kick starts the timeout timer again: a chunk came.
func (d *direction) kick() {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if d.timer != nil {
		d.timer.Reset(time.Duration(d.timerFor.attrs.(*timeoutAttrs).Timeout) * time.Millisecond)
	}
}

// shape is the proxy's Config.Shape: the direction's bytes start to flow.
func (c *conn) shape(st *proxy.Stream) proxy.Shaper {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.dirs[st.Direction()]
	d.st = st
	d.arm()
	return d
}

// now is what the direction's goroutine acts on: the active stages,
// with their toxics, and the channel a stall waits on.
func (d *direction) now() ([]stageNow, chan struct{}) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	out := make([]stageNow, len(d.stages))
	for i, s := range d.stages {
		out[i] = stageNow{s, s.t}
	}
	return out, d.wake
}

type stageNow struct {
	s *stage
	t *toxic
}

// stalled is whether a bandwidth of 0 acts: toxiproxy's way to stop the
// traffic and keep the connection.
func stalled(stages []stageNow) bool {
	for _, s := range stages {
		if a, ok := s.t.attrs.(*bandwidthAttrs); ok && a.Rate == 0 {
			return true
		}
	}
	return false
}

// Write passes p through the direction's byte toxics, in order, to w.
func (d *direction) Write(w io.Writer, p []byte) error {
	for {
		stages, wake := d.now()
		if !stalled(stages) {
			return d.run(stages, p, w)
		}
		select {
		case <-wake:
		case <-d.st.Done():
			return nil
		}
	}
}

// run passes p through stages to w.
func (d *direction) run(stages []stageNow, p []byte, w io.Writer) error {
	if d.stopped() {
		return nil
	}
	if len(stages) == 0 {
		_, err := w.Write(p)
		return err
	}
	s, rest := stages[0], stages[1:]
	switch a := s.t.attrs.(type) {
	case *timeoutAttrs:
		d.kick() // the bytes go nowhere; the timer starts again
		return nil
	case *resetPeerAttrs:
		// The first chunk goes nowhere; after the timeout, a reset.
		if d.sleep(time.Duration(a.Timeout) * time.Millisecond) {
			d.st.Reset("reset by the " + s.t.name + " toxic")
		}
		return nil
	case *limitDataAttrs:
		left := a.Bytes - s.s.sent
		if left <= 0 {
			d.st.Close()
			return nil
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
		s.s.sent += int64(len(p))
		err := d.run(rest, p, w)
		if s.s.sent >= a.Bytes {
			d.st.Close()
		}
		return err
	case *slicerAttrs:
		for len(p) > 0 && !d.stopped() {
			n := a.AverageSize
			if v := a.SizeVariation; v > 0 {
				d.c.mu.Lock()
				n += d.c.rng.IntN(2*v+1) - v
				d.c.mu.Unlock()
			}
			n = max(1, min(n, len(p)))
			if err := d.run(rest, p[:n], w); err != nil {
				return err
			}
			p = p[n:]
			if len(p) > 0 && !d.sleep(time.Duration(a.Delay)*time.Microsecond) {
				return nil
			}
		}
		return nil
	}
	return d.run(rest, p, w)
}

// EndOfStream holds the end of stream for the direction's slow_close
// toxics, and resets for a reset_peer toxic, as toxiproxy's do.
func (d *direction) EndOfStream() {
	for {
		stages, wake := d.now()
		if !stalled(stages) {
			for _, s := range stages {
				switch a := s.t.attrs.(type) {
				case *slowCloseAttrs:
					if !d.sleep(time.Duration(a.Delay) * time.Millisecond) {
						return
					}
				case *resetPeerAttrs:
					if d.sleep(time.Duration(a.Timeout) * time.Millisecond) {
						d.st.Reset("reset by the " + s.t.name + " toxic")
					}
					return
				}
			}
			return
		}
		select {
		case <-wake:
		case <-d.st.Done():
			return
		}
	}
}

// sleep waits for dt; false if the connection stopped first.
func (d *direction) sleep(dt time.Duration) bool {
	if dt <= 0 {
		return !d.stopped()
	}
	t := time.NewTimer(dt)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.st.Done():
		return false
	}
}

func (d *direction) stopped() bool {
	select {
	case <-d.st.Done():
		return true
	default:
		return false
	}
}
