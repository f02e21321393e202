// Package topo describes a network's shape: hosts and routers, by name,
// joined by links, each a whole netemu link (link.Config: delay, rate,
// queue and qdisc, impairments, traces, per direction). It checks a
// description, gives every node its addresses and every router its
// forwarding table, and builds the usual shapes (Pair, Dumbbell, Star,
// Chain). Package emu runs a Topology; this package only describes one.
//
// Addresses. Link i (in the order of Topology.Links) is the subnet
// 198.18.i.0/24 when i < 256, 198.19.(i-256).0/24 after that: its A end
// is .1, its B end .2. A host has one interface, on the one link it has,
// and that end's address is the host's. So the two-host network (Pair)
// has its client at 198.18.0.1 and its server at 198.18.0.2, as it always
// had.
//
// Routing. Every router forwards a packet by its destination address to
// the next node on a shortest path: the path of least one-way delay (the
// sum over its links of the direction's Delay), then of fewest hops, then
// the one whose first link comes first in Topology.Links. A Route of the
// description overrides the next node a router picks for a destination
// host.
package topo

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/netemu/netemu/link"
)

// Topology is a network: hosts and routers joined by links.
type Topology struct {
	// Hosts are the nodes that run TCP stacks, each with one interface.
	Hosts []string
	// Routers forward IPv4 between their links, decrementing the TTL.
	Routers []string
	// Links join two nodes; each is a whole netemu link.
	Links []Link
	// Routes override the shortest path where given.
	Routes []Route
	// Addrs gives hosts addresses of their own, in 198.18.0.0/15, in
	// place of their link end's; nil for none.
	Addrs map[string]netip.Addr
}

// Range is where every address of a topology lies: 198.18.0.0/15,
// reserved for benchmarks (RFC 2544).
var Range = netip.MustParsePrefix("198.18.0.0/15")

// Link joins node A to node B. Config's direction AtoB carries A's
// packets to B; BtoA (Config.BtoA, when set) B's to A.
type Link struct {
	// Name names the link in statistics and files; "" means "A-B".
	Name   string
	A, B   string
	Config link.Config
}

// Label is the link's name: Name, or "A-B".
func (l Link) Label() string {
	if l.Name != "" {
		return l.Name
	}
	return l.A + "-" + l.B
}

// Route makes router At send packets for host To through its neighbour
// Via, instead of the shortest path's next node.
type Route struct {
	At, To, Via string
}

// MaxLinks is the most links a topology has: one /24 each in
// 198.18.0.0/15.
const MaxLinks = 512

// Error is a description that is not valid: what is wrong, in the
// description's words.
type Error struct{ Msg string }

func (e *Error) Error() string { return "topology: " + e.Msg }

func errorf(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

// Validate reports the first fault of t: a name given twice or empty, a
// link to an unknown node or from a node to itself, a host with other
// than one link, a link whose configuration is not valid, a route that
// names what does not exist, a host no path reaches, a routing loop.
func (t Topology) Validate() error {
	seen := map[string]string{}
	for _, g := range []struct {
		what  string
		names []string
	}{{"host", t.Hosts}, {"router", t.Routers}} {
		for _, n := range g.names {
			if n == "" {
				return errorf("a %s has no name", g.what)
			}
			if other, ok := seen[n]; ok {
				return errorf("%q names a %s and a %s; give each node its own name", n, other, g.what)
			}
			seen[n] = g.what
		}
	}
	if len(t.Hosts) < 2 {
		return errorf("%d hosts; want at least 2, one at each end of a flow", len(t.Hosts))
	}
	if len(t.Links) > MaxLinks {
		return errorf("%d links; want at most %d (a /24 each in 198.18.0.0/15)", len(t.Links), MaxLinks)
	}
	links := map[string]int{}
	for i, l := range t.Links {
		for _, end := range []string{l.A, l.B} {
			if _, ok := seen[end]; !ok {
				return errorf("link %s joins %q, which is no host or router; want one of %s", l.Label(), end, t.names())
			}
		}
		if l.A == l.B {
			return errorf("link %s joins %s to itself; a link joins two nodes", l.Label(), l.A)
		}
		if j, ok := links[l.Label()]; ok {
			return errorf("links %d and %d are both named %q; give each its own name", j+1, i+1, l.Label())
		}
		links[l.Label()] = i
		if err := l.Config.Validate(); err != nil {
			return errorf("link %s: %v", l.Label(), err)
		}
	}
	for _, h := range t.Hosts {
		if n := len(t.LinksOf(h)); n != 1 {
			return errorf("host %s has %d links; a host has one interface: join it to one router or host, and give a router the others", h, n)
		}
	}
	if err := t.checkAddrs(seen); err != nil {
		return err
	}
	for _, r := range t.Routes {
		if seen[r.At] != "router" {
			return errorf("route at %q: want a router, one of %v", r.At, t.Routers)
		}
		if seen[r.To] != "host" {
			return errorf("route at %s to %q: want a host, one of %v", r.At, r.To, t.Hosts)
		}
		if !slices.ContainsFunc(t.LinksOf(r.At), func(i int) bool { return t.Links[i].other(r.At) == r.Via }) {
			return errorf("route at %s to %s via %q: want a neighbour of %s", r.At, r.To, r.Via, r.At)
		}
	}
	_, err := t.Tables()
	return err
}

// checkAddrs checks the addresses Addrs gives: each a host's, in Range,
// and no two hosts with one address.
func (t Topology) checkAddrs(seen map[string]string) error {
	owner := map[netip.Addr]string{}
	for _, h := range t.Hosts {
		a, _ := t.HostAddr(h)
		if other, ok := owner[a]; ok {
			return errorf("hosts %s and %s both have the address %v; give each its own", other, h, a)
		}
		owner[a] = h
	}
	for h, a := range t.Addrs {
		if seen[h] != "host" {
			return errorf("an address for %q, which is no host; want one of %v", h, t.Hosts)
		}
		if !a.Is4() || !Range.Contains(a) {
			return errorf("host %s's address %v is outside %v, where emulated hosts live", h, a, Range)
		}
	}
	return nil
}

// names lists every node, for messages.
func (t Topology) names() string {
	return fmt.Sprint(append(slices.Clone(t.Hosts), t.Routers...))
}

// LinksOf returns the indexes of the links that have node n at an end,
// in order.
func (t Topology) LinksOf(n string) []int {
	var out []int
	for i, l := range t.Links {
		if l.A == n || l.B == n {
			out = append(out, i)
		}
	}
	return out
}

// other is the end of l that is not n.
func (l Link) other(n string) string {
	if l.A == n {
		return l.B
	}
	return l.A
}

// Addr is the address of end (0: A, 1: B) of link i.
func Addr(i, end int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18 + byte(i/256), byte(i % 256), 1 + byte(end)})
}

// HostAddr is host h's address: its link's end's. ok is false if h is no
// host of t with one link.
func (t Topology) HostAddr(h string) (netip.Addr, bool) {
	if !slices.Contains(t.Hosts, h) {
		return netip.Addr{}, false
	}
	if a, ok := t.Addrs[h]; ok {
		return a, true
	}
	ls := t.LinksOf(h)
	if len(ls) != 1 {
		return netip.Addr{}, false
	}
	end := 0
	if t.Links[ls[0]].B == h {
		end = 1
	}
	return Addr(ls[0], end), true
}

// A Hop is where a node sends a packet: on link Link, in direction Dir.
type Hop struct {
	Link int
	Dir  link.Dir
}

// Tables returns each router's forwarding table: for each host, by
// name, the hop toward it. It fails on a host a router cannot reach and
// on a routing loop (a route that sends a packet back where it came
// from, directly or around).
func (t Topology) Tables() (map[string]map[string]Hop, error) {
	tables := map[string]map[string]Hop{}
	for _, r := range t.Routers {
		tables[r] = map[string]Hop{}
	}
	for _, h := range t.Hosts {
		next := t.towards(h)
		for _, r := range t.Routers {
			hop, ok := next[r]
			if !ok {
				return nil, errorf("router %s has no path to host %s; join them with links", r, h)
			}
			tables[r][h] = hop
		}
	}
	for _, rt := range t.Routes {
		for _, i := range t.LinksOf(rt.At) {
			if l := t.Links[i]; l.other(rt.At) == rt.Via {
				tables[rt.At][rt.To] = Hop{Link: i, Dir: dirFrom(l, rt.At)}
				break
			}
		}
	}
	if err := t.checkLoops(tables); err != nil {
		return nil, err
	}
	return tables, nil
}

// dirFrom is the direction of l that leaves node n.
func dirFrom(l Link, n string) link.Dir {
	if l.A == n {
		return link.AtoB
	}
	return link.BtoA
}

// delayOf is l's one-way delay in direction d.
func delayOf(l Link, d link.Dir) time.Duration {
	if d == link.BtoA && l.Config.BtoA != nil {
		return l.Config.BtoA.Delay
	}
	return l.Config.Delay
}

// towards returns, for every node that can reach host h, its first hop
// on its shortest path to h (Dijkstra from h over the reversed links:
// least delay, then fewest hops, then the first link in order; at equal
// costs the node first in Hosts, then Routers, is settled first).
// Packets are forwarded only by routers: a path passes through no other
// host.
func (t Topology) towards(h string) map[string]Hop {
	type cost struct {
		delay time.Duration
		hops  int
		link  int // the first link of the path, for ties
	}
	less := func(a, b cost) bool {
		if a.delay != b.delay {
			return a.delay < b.delay
		}
		if a.hops != b.hops {
			return a.hops < b.hops
		}
		return a.link < b.link
	}
	nodes := append(slices.Clone(t.Hosts), t.Routers...)
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n] = i
	}
	adj := make([][]int, len(nodes)) // each node's links
	for i, l := range t.Links {
		adj[index[l.A]] = append(adj[index[l.A]], i)
		adj[index[l.B]] = append(adj[index[l.B]], i)
	}
	best := make([]cost, len(nodes))
	reached := make([]bool, len(nodes))
	done := make([]bool, len(nodes))
	hop := make([]Hop, len(nodes))
	start := index[h]
	reached[start] = true
	for {
		cur := -1
		for i := range nodes {
			if reached[i] && !done[i] && (cur < 0 || less(best[i], best[cur])) {
				cur = i
			}
		}
		if cur < 0 {
			break
		}
		done[cur] = true
		if cur != start && cur < len(t.Hosts) {
			continue // a host forwards nothing
		}
		for _, li := range adj[cur] {
			l := t.Links[li]
			from := index[l.other(nodes[cur])]
			d := dirFrom(l, nodes[from])
			c := cost{delay: best[cur].delay + delayOf(l, d), hops: best[cur].hops + 1, link: li}
			if !done[from] && (!reached[from] || less(c, best[from])) {
				best[from], reached[from] = c, true
				hop[from] = Hop{Link: li, Dir: d}
			}
		}
	}
	next := map[string]Hop{}
	for i, n := range nodes {
		if reached[i] && i != start {
			next[n] = hop[i]
		}
	}
	return next
}

// checkLoops follows, for every host, each router's hops toward it: a
// path that comes back to a router it passed is a loop.
func (t Topology) checkLoops(tables map[string]map[string]Hop) error {
	for _, h := range t.Hosts {
		for _, start := range t.Routers {
			at, passed := start, map[string]bool{}
			for at != h && slices.Contains(t.Routers, at) {
				if passed[at] {
					return errorf("the routes to host %s loop at router %s; fix the routes that lead back to it", h, at)
				}
				passed[at] = true
				hop := tables[at][h]
				l := t.Links[hop.Link]
				at = l.other(at)
			}
			if at != h {
				return errorf("router %s's route to host %s ends at host %s, which forwards nothing", start, h, at)
			}
		}
	}
	return nil
}

// Route returns the hops a packet from host from takes to host to: the
// link of from, then each router's next hop. It computes the routers'
// tables; RouteWith takes them, computed once, for many routes.
func (t Topology) Route(from, to string) ([]Hop, error) {
	tables, err := t.Tables()
	if err != nil {
		return nil, err
	}
	return t.RouteWith(tables, from, to)
}

// RouteWith is Route with the routers' tables t.Tables returned.
func (t Topology) RouteWith(tables map[string]map[string]Hop, from, to string) ([]Hop, error) {
	ls := t.LinksOf(from)
	if len(ls) != 1 || !slices.Contains(t.Hosts, to) || from == to {
		return nil, errorf("no route from %q to %q: want two hosts of %v", from, to, t.Hosts)
	}
	hops := []Hop{{Link: ls[0], Dir: dirFrom(t.Links[ls[0]], from)}}
	at := t.Links[ls[0]].other(from)
	for at != to {
		hop, ok := tables[at][to]
		if !ok {
			return nil, errorf("no route from %s to %s: it reaches host %s, which forwards nothing", from, to, at)
		}
		hops = append(hops, hop)
		at = t.Links[hop.Link].other(at)
	}
	return hops, nil
}

// DirConfig is the configuration of hop h: its link's Config in
// direction AtoB, or Config.BtoA in direction BtoA where set.
func (t Topology) DirConfig(h Hop) link.Config {
	c := t.Links[h.Link].Config
	if h.Dir == link.BtoA && c.BtoA != nil {
		return *c.BtoA
	}
	return c
}

// LinkSeed is link i's seed when its configuration gives none, from the
// network's seed: the network's own for the first link, as the pair has
// always had, and one of its own for each other, so that two links'
// impairments do not fall in step. Both backends seed a topology's links
// with it, so a link draws the same on each.
func LinkSeed(seed uint64, i int) uint64 {
	if i == 0 {
		return seed
	}
	return seed ^ uint64(i)*0x9e3779b97f4a7c15
}
