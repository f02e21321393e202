package emu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
)

// Fault is one fault of a run, as Faults lists them. Faults are what a
// test does to a running network at an instant it picks: cut the path
// between hosts (one way or both), isolate a host, cut a link, heal;
// change a link's parameters; crash a host and restart it. Each takes
// effect at the instant of the call on the run's clock and is recorded
// in the trace (Stats.TraceHash) and in Faults. Called from a
// goroutine the run's clock woke (after Sleep or SleepUntil), on the
// virtual clock or in a testing/synctest bubble, a fault falls at one
// place among the events of its instant, the same on every run.
//
// What each does to packets:
//
//   - A cut drops, counted in FaultDrops.Cut, each packet that would
//     enter the cut: a cut link's direction (from a host's interface, or
//     forwarded by a router), or, for the path from host a to host b,
//     a's packets to b at a's interface. Packets already on a link still
//     arrive, as after a cable pulled at the sender's end. Nothing tells
//     the hosts (no ICMP, no RST): their TCPs retransmit until the cut
//     heals or their own timers give up. Routes do not change.
//   - A crash ends the host's stack without a packet: its interface is
//     detached before its connections end, so no FIN and no RST leave
//     it, and each packet that reaches it until it restarts is dropped
//     (FaultDrops.Down). Code on the crashed host sees its connections
//     and listeners fail with net.ErrClosed; its peers learn only from
//     silence, by their own timers.
//   - A restart gives the host a new stack at the same address, with no
//     connection and no listener and a seed of its own (new initial
//     sequence numbers): a SYN is answered with a RST (connection
//     refused) until something listens again, and a segment of a
//     connection from before the crash with a RST, as a rebooted host
//     answers them.
//
// None of this costs the packet path anything while no fault is in
// force but one atomic load, and a network that never sees a fault runs,
// and hashes, exactly as before faults existed.
type Fault struct {
	At   time.Duration // run time since New (Elapsed)
	What string        // "cut n1>n2 n2>n1", "crash n3", ...
}

// FaultDrops counts the packets the faults dropped, by reason.
type FaultDrops struct {
	// Cut: packets that would have entered a cut link direction or path.
	Cut uint64
	// Down: packets that reached a crashed host, or left one as it
	// crashed.
	Down uint64
}

// faults is a network's fault state. The packet path reads active alone
// while no fault is in force; the rest is under mu, a leaf lock: nothing
// that sends a packet or closes a host runs while it is held.
type faults struct {
	n      *Net
	active atomic.Bool // a cut, or a host down
	ports  []*port     // by host index, written by build only

	mu    sync.Mutex
	cuts  []uint8         // by link: bit 1<<dir for each direction cut
	paths map[[2]int]bool // {from, to} host indexes: from's packets to to are cut
	drops FaultDrops
	log   []Fault
}

// port is a host's place in the network: its interface on its one link,
// and the stack there, which Restart replaces.
type port struct {
	name string
	i    int
	link int
	dir  link.Dir        // the direction of link that leaves the host
	cfg  tcpstack.Config // the first stack's
	send func(pkt []byte)
	host atomic.Pointer[tcpstack.Host]

	down  bool // crashed and not restarted; under faults.mu
	lives int  // restarts so far; under faults.mu
}

func newFaults(n *Net) *faults { return &faults{n: n, paths: map[[2]int]bool{}} }

// faults is the network's fault state, which every node carries.
func (n *Net) faults() *faults { return n.ends[0][0].f }

// port returns the port of the host called name; nil if there is none.
func (f *faults) port(name string) *port {
	for _, p := range f.ports {
		if p.name == name {
			return p
		}
	}
	return nil
}

// egress reports whether a packet host p sends may enter its link.
func (f *faults) egress(p *port, pkt []byte) bool {
	if !f.active.Load() {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case p.down:
		f.drops.Down++
	case f.cuts[p.link]&(1<<p.dir) != 0:
		f.drops.Cut++
	case f.pathCut(p.i, pkt):
		f.drops.Cut++
	default:
		return true
	}
	return false
}

// pathCut reports whether the path from host i to pkt's destination is
// cut. f.mu is held.
func (f *faults) pathCut(i int, pkt []byte) bool {
	if len(f.paths) == 0 || len(pkt) < 20 {
		return false
	}
	to, ok := f.n.byAddr[netip.AddrFrom4([4]byte(pkt[16:20]))]
	return ok && f.paths[[2]int{i, to}]
}

// arrive reports whether a packet that reached host p may enter it.
func (f *faults) arrive(p *port) bool {
	if !f.active.Load() {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.down {
		f.drops.Down++
		return false
	}
	return true
}

// forward reports whether a packet a router forwards may enter hop.
func (f *faults) forward(hop topo.Hop) bool {
	if !f.active.Load() {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cuts[hop.Link]&(1<<hop.Dir) != 0 {
		f.drops.Cut++
		return false
	}
	return true
}

// update sets active from the state. f.mu is held.
func (f *faults) update() {
	on := len(f.paths) > 0 || slices.ContainsFunc(f.cuts, func(c uint8) bool { return c != 0 }) ||
		slices.ContainsFunc(f.ports, func(p *port) bool { return p.down })
	f.active.Store(on)
}

// record logs a fault and writes it into the trace: its instant, a
// marker no packet's direction has, and its words. In a bubble it goes
// into the first link's a>b hash, among that direction's packets in the
// order of the run's clock. f.mu is held.
func (f *faults) record(what string) {
	n := f.n
	at := n.Elapsed()
	f.log = append(f.log, Fault{At: at, What: what})
	var rec [11]byte
	binary.BigEndian.PutUint64(rec[0:8], uint64(at))
	rec[8] = 0xff
	binary.BigEndian.PutUint16(rec[9:11], uint16(len(what)))
	n.traceMu.Lock()
	defer n.traceMu.Unlock()
	tr := n.trace
	if n.dirTraces != nil {
		tr = n.dirTraces[0]
	}
	tr.Write(rec[:])
	tr.Write([]byte(what))
}

// Elapsed is the run time since New: on the virtual clock, the time
// since clock.Epoch; in a bubble or on the real clock, since New
// returned. Faults and the trace count instants on this scale, and so
// do link.Config.Outages.
func (n *Net) Elapsed() time.Duration {
	if n.virtual != nil {
		return n.virtual.Elapsed()
	}
	if m, ok := n.clk.(clock.Monotonic); ok {
		return m.Since(n.born) // one clock read: the trace asks per packet
	}
	return n.clk.Now().Sub(n.born)
}

// SleepUntil waits on the run's clock until Elapsed reaches at: "at
// 10 s, cut the leader from the rest". It returns ctx's error if ctx ends
// first, and an error at once if the instant has passed.
func (n *Net) SleepUntil(ctx context.Context, at time.Duration) error {
	now := n.Elapsed()
	if at < now {
		return fmt.Errorf("emu: SleepUntil(%v) at %v: that instant has passed", at, now)
	}
	return n.Sleep(ctx, at-now)
}

// Faults returns the faults of the run so far, in order.
func (n *Net) Faults() []Fault {
	f := n.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// FaultDrops returns the packets the faults have dropped so far.
func (n *Net) FaultDrops() FaultDrops {
	f := n.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drops
}

// errClosedNet is a fault asked of a closed network.
func errClosedNet(op string) error {
	return fmt.Errorf("emu: %s on a closed Net", op)
}

// hostIndexes returns the indexes of the named hosts.
func (n *Net) hostIndexes(names ...string) ([]int, error) {
	f := n.faults()
	var out []int
	for _, name := range names {
		p := f.port(name)
		if p == nil {
			return nil, fmt.Errorf("emu: no host %q; the hosts are %v", name, n.topo.Hosts)
		}
		out = append(out, p.i)
	}
	return out, nil
}

// cutPaths cuts (or heals) the paths of pairs, one way each, and records
// what. A fault on a closed network is refused.
func (n *Net) cutPaths(op, what string, cut bool, pairs [][2]int) error {
	f := n.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.closed.Load() {
		return errClosedNet(op)
	}
	for _, pr := range pairs {
		if cut {
			f.paths[pr] = true
		} else {
			delete(f.paths, pr)
		}
	}
	f.update()
	f.record(what)
	return nil
}

// Cut cuts the path between hosts a and b both ways: each one's packets
// to the other are dropped at its interface. Its other paths stay.
func (n *Net) Cut(a, b string) error {
	ix, err := n.twoHosts("Cut", a, b)
	if err != nil {
		return err
	}
	return n.cutPaths("Cut", fmt.Sprintf("cut %s>%s %s>%s", a, b, b, a), true, [][2]int{{ix[0], ix[1]}, {ix[1], ix[0]}})
}

// CutOneWay cuts the path from host from to host to: from's packets to
// it are dropped, its packets to from still arrive.
func (n *Net) CutOneWay(from, to string) error {
	ix, err := n.twoHosts("CutOneWay", from, to)
	if err != nil {
		return err
	}
	return n.cutPaths("CutOneWay", fmt.Sprintf("cut %s>%s", from, to), true, [][2]int{{ix[0], ix[1]}})
}

// HealPath heals the path between hosts a and b, both ways.
func (n *Net) HealPath(a, b string) error {
	ix, err := n.twoHosts("HealPath", a, b)
	if err != nil {
		return err
	}
	return n.cutPaths("HealPath", fmt.Sprintf("heal %s>%s %s>%s", a, b, b, a), false, [][2]int{{ix[0], ix[1]}, {ix[1], ix[0]}})
}

// twoHosts returns the indexes of two distinct hosts.
func (n *Net) twoHosts(op, a, b string) ([]int, error) {
	ix, err := n.hostIndexes(a, b)
	if err != nil {
		return nil, err
	}
	if ix[0] == ix[1] {
		return nil, fmt.Errorf("emu: %s(%q, %q): a path joins two hosts; name two", op, a, b)
	}
	return ix, nil
}

// Partition cuts every path between the hosts named and the others, both
// ways: "cut the leader from the rest" is Partition(leader). Paths within
// each side stay.
func (n *Net) Partition(hosts ...string) error {
	ix, err := n.hostIndexes(hosts...)
	if err != nil {
		return err
	}
	side := map[int]bool{}
	for _, i := range ix {
		side[i] = true
	}
	if len(side) == 0 || len(side) == len(n.topo.Hosts) {
		return fmt.Errorf("emu: Partition(%v): name some of the hosts %v, not none or all", hosts, n.topo.Hosts)
	}
	var pairs [][2]int
	var rest []string
	for j, h := range n.topo.Hosts {
		if side[j] {
			continue
		}
		rest = append(rest, h)
		for i := range side {
			pairs = append(pairs, [2]int{i, j}, [2]int{j, i})
		}
	}
	var named []string
	for i, h := range n.topo.Hosts {
		if side[i] {
			named = append(named, h)
		}
	}
	return n.cutPaths("Partition", "partition "+strings.Join(named, " ")+" | "+strings.Join(rest, " "), true, pairs)
}

// linkIndex returns the index of the link called name.
func (n *Net) linkIndex(name string) (int, error) {
	for i, tl := range n.topo.Links {
		if tl.Label() == name {
			return i, nil
		}
	}
	var names []string
	for _, tl := range n.topo.Links {
		names = append(names, tl.Label())
	}
	return 0, fmt.Errorf("emu: no link %q; the links are %v", name, names)
}

// dirBits is the cut bits of dirs; none means both directions.
func dirBits(dirs []link.Dir) (uint8, string) {
	if len(dirs) == 0 {
		dirs = []link.Dir{link.AtoB, link.BtoA}
	}
	var bits uint8
	for _, d := range dirs {
		bits |= 1 << d
	}
	var words []string
	for _, d := range []link.Dir{link.AtoB, link.BtoA} {
		if bits&(1<<d) != 0 {
			words = append(words, d.String())
		}
	}
	return bits, strings.Join(words, " ")
}

// setCut cuts (or heals) link i's directions bits and records what.
func (n *Net) setCut(op, what string, i int, bits uint8, cut bool) error {
	f := n.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.closed.Load() {
		return errClosedNet(op)
	}
	if cut {
		f.cuts[i] |= bits
	} else {
		f.cuts[i] &^= bits
	}
	f.update()
	f.record(what)
	return nil
}

// CutLink cuts the link called name (topo.Link.Label) in the directions
// given, both if none: each packet that would enter a cut direction is
// dropped; those already on the link arrive.
func (n *Net) CutLink(name string, dirs ...link.Dir) error {
	i, err := n.linkIndex(name)
	if err != nil {
		return err
	}
	bits, words := dirBits(dirs)
	return n.setCut("CutLink", "cut link "+name+" "+words, i, bits, true)
}

// HealLink heals the link called name in the directions given, both if
// none.
func (n *Net) HealLink(name string, dirs ...link.Dir) error {
	i, err := n.linkIndex(name)
	if err != nil {
		return err
	}
	bits, words := dirBits(dirs)
	return n.setCut("HealLink", "heal link "+name+" "+words, i, bits, false)
}

// Isolate cuts host's one link both ways: nothing leaves or reaches it.
// HealLink of that link, or Heal, ends it.
func (n *Net) Isolate(host string) error {
	p := n.faults().port(host)
	if p == nil {
		return fmt.Errorf("emu: no host %q; the hosts are %v", host, n.topo.Hosts)
	}
	return n.setCut("Isolate", "isolate "+host, p.link, 1<<link.AtoB|1<<link.BtoA, true)
}

// Heal heals every cut: links, paths, isolated hosts. Crashed hosts stay
// down until Restart.
func (n *Net) Heal() error {
	f := n.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.closed.Load() {
		return errClosedNet("Heal")
	}
	clear(f.paths)
	clear(f.cuts)
	f.update()
	f.record("heal")
	return nil
}

// ChangeLink changes the running link called name: change gets its
// configuration of the moment and edits it (delay, rate, loss, the other
// impairments, the queue discipline, per direction), and the link goes on
// with the result (link.Link.Reconfigure: what is under way keeps its
// course; MTU, DelayedACK, Outages and Seed are fixed). Routes do not
// change with delays.
func (n *Net) ChangeLink(name string, change func(*link.Config)) error {
	i, err := n.linkIndex(name)
	if err != nil {
		return err
	}
	if change == nil {
		return errors.New("emu: ChangeLink needs a function that edits the link's configuration")
	}
	f := n.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.closed.Load() {
		return errClosedNet("ChangeLink")
	}
	l := n.links[i]
	cfg := l.Config()
	if cfg.BtoA != nil {
		b := *cfg.BtoA // the link's own: change edits a copy
		cfg.BtoA = &b
	}
	change(&cfg)
	if err := l.Reconfigure(cfg); err != nil {
		return fmt.Errorf("emu: ChangeLink %s: %w", name, err)
	}
	f.record("change link " + name + ": " + describe(l.Config()))
	return nil
}

// describe words a link's per-direction parameters in netem's grammar,
// for the trace; the seed, which never changes, is left out.
func describe(c link.Config) string {
	c.Seed = 0
	ba := c
	if c.BtoA != nil {
		ba = *c.BtoA
	}
	return "a>b " + tc.NetemOf(c).String() + "; b>a " + tc.NetemOf(ba).String()
}

// Crash crashes host: its stack ends without a packet (no FIN, no RST),
// and each packet that reaches it is dropped until Restart. Its peers
// find out by their own timers; code on the host sees net.ErrClosed.
func (n *Net) Crash(host string) error {
	p := n.faults().port(host)
	if p == nil {
		return fmt.Errorf("emu: no host %q; the hosts are %v", host, n.topo.Hosts)
	}
	h, err := n.markDown("Crash", p)
	if err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("emu: Crash(%q): it is down already; Restart it first", host)
	}
	h.Close()
	return nil
}

// markDown marks p down and records its crash; it returns the stack to
// close, nil if p was down already. The stack is closed by the caller,
// without f.mu: it may still hand packets to its interface, which drops
// them.
func (n *Net) markDown(op string, p *port) (*tcpstack.Host, error) {
	f := n.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.closed.Load() {
		return nil, errClosedNet(op)
	}
	if p.down {
		return nil, nil
	}
	p.down = true
	f.update()
	f.record("crash " + p.name)
	return p.host.Load(), nil
}

// Restart gives host a new stack at its address: no connection, no
// listener, new initial sequence numbers. A host that is up crashes
// first, as a reboot does. Listen again on Host(host) for it to accept.
// Client, Server and Net's own Dial and Listen keep the first stacks:
// after a restart, reach the host through Host or Between.
func (n *Net) Restart(host string) error {
	f := n.faults()
	p := f.port(host)
	if p == nil {
		return fmt.Errorf("emu: no host %q; the hosts are %v", host, n.topo.Hosts)
	}
	old, err := n.markDown("Restart", p)
	if err != nil {
		return err
	}
	if old != nil {
		old.Close()
	}
	f.mu.Lock()
	p.lives++
	cfg := p.cfg
	cfg.Seed ^= uint64(p.lives) * 0x94d049bb133111eb
	f.mu.Unlock()
	h, err := tcpstack.New(cfg, p.send)
	if err != nil {
		return fmt.Errorf("emu: Restart(%q): %w", host, err)
	}
	f.mu.Lock()
	if n.closed.Load() {
		f.mu.Unlock()
		h.Close()
		return errClosedNet("Restart")
	}
	p.host.Store(h)
	n.hosts[p.i] = h // Close closes the stack of the moment
	p.down = false
	f.update()
	f.record("restart " + host)
	f.mu.Unlock()
	if n.closed.Load() {
		// Close began after the check above and may have closed the old
		// stack in h's place.
		h.Close()
	}
	return nil
}
