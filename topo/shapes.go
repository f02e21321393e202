package topo

import (
	"fmt"
	"slices"
	"time"

	"github.com/netemu/netemu/link"
)

// The usual shapes. Each takes its bottleneck's link configuration;
// access links (host to router) are ideal but for their delay.

// Pair is two hosts, client and server, joined by one link: the network
// netemu has always emulated.
func Pair(lc link.Config) Topology {
	return Topology{Hosts: []string{"client", "server"}, Links: []Link{{Name: "link", A: "client", B: "server", Config: lc}}}
}

// A Flow is a pair of hosts a shape's workload runs between: From dials,
// To listens.
type Flow struct{ From, To string }

// Dumbbell is n clients (c1…cn) and n servers (s1…sn) on either side of
// one bottleneck between routers left and right. accessRTT[i], if given,
// is client i+1's round-trip time to the left router (each direction
// half of it); the servers' access links have no delay. The bottleneck
// is lc, its direction AtoB left to right, clients to servers, as the
// pair's is. Flows pair ci with si: ci dials.
func Dumbbell(n int, accessRTT []time.Duration, lc link.Config) (Topology, []Flow) {
	t := Topology{Routers: []string{"left", "right"}}
	var clients, servers []Link
	var flows []Flow
	for i := range n {
		c, s := fmt.Sprintf("c%d", i+1), fmt.Sprintf("s%d", i+1)
		t.Hosts = append(t.Hosts, c, s)
		var d time.Duration
		if i < len(accessRTT) {
			d = accessRTT[i] / 2
		}
		clients = append(clients, Link{A: c, B: "left", Config: access(d, lc.MTU)})
		servers = append(servers, Link{A: "right", B: s, Config: access(0, lc.MTU)})
		flows = append(flows, Flow{From: c, To: s})
	}
	t.Links = append(append(append(t.Links, Link{Name: "bottleneck", A: "left", B: "right", Config: lc}), clients...), servers...)
	return t, flows
}

// Star is n hosts (h1…hn) around one router, each with a flow to one
// server. The router's link to the server is the bottleneck, lc: its
// direction AtoB carries what the hosts send the server, BtoA what the
// server sends them.
func Star(n int, lc link.Config) (Topology, []Flow) {
	t := Topology{Hosts: []string{"server"}, Routers: []string{"router"},
		Links: []Link{{Name: "bottleneck", A: "router", B: "server", Config: lc}}}
	var flows []Flow
	for i := range n {
		h := fmt.Sprintf("h%d", i+1)
		t.Hosts = append(t.Hosts, h)
		t.Links = append(t.Links, Link{A: h, B: "router", Config: access(0, lc.MTU)})
		flows = append(flows, Flow{From: h, To: "server"})
	}
	return t, flows
}

// Chain is the parking lot: k bottlenecks in a row between routers
// r0…rk, each lc; one flow (a0 to b0) crosses all of them, and one per
// hop (ai to bi) crosses hop i alone.
func Chain(k int, lc link.Config) (Topology, []Flow) {
	t := Topology{}
	for i := 0; i <= k; i++ {
		t.Routers = append(t.Routers, fmt.Sprintf("r%d", i))
	}
	for i := 1; i <= k; i++ {
		t.Links = append(t.Links, Link{Name: fmt.Sprintf("hop%d", i), A: t.Routers[i-1], B: t.Routers[i], Config: lc})
	}
	flows := []Flow{{From: "a0", To: "b0"}}
	t.Hosts = append(t.Hosts, "a0", "b0")
	t.Links = append(t.Links, Link{A: "a0", B: "r0", Config: access(0, lc.MTU)}, Link{A: t.Routers[k], B: "b0", Config: access(0, lc.MTU)})
	for i := 1; i <= k; i++ {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		t.Hosts = append(t.Hosts, a, b)
		t.Links = append(t.Links, Link{A: a, B: t.Routers[i-1], Config: access(0, lc.MTU)}, Link{A: t.Routers[i], B: b, Config: access(0, lc.MTU)})
		flows = append(flows, Flow{From: a, To: b})
	}
	return t, flows
}

// access is an access link: one-way delay d, no rate limit, the
// bottleneck's MTU.
func access(d time.Duration, mtu int) link.Config {
	return link.Config{Delay: d, MTU: mtu}
}

// Mesh joins every two hosts by a link of lc of their own: each host
// has an access link (HOST/access, no delay) to a router of its own
// (HOST/router), and the routers are joined pairwise by links named
// "A-B", so that cutting or changing one pair's link leaves the others.
// A packet between two hosts crosses three links.
func Mesh(hosts []string, lc link.Config) Topology {
	t := Topology{Hosts: slices.Clone(hosts)}
	for _, h := range hosts {
		r := h + "/router"
		t.Routers = append(t.Routers, r)
		t.Links = append(t.Links, Link{Name: h + "/access", A: h, B: r, Config: link.Config{MTU: lc.MTU}})
	}
	for i, a := range hosts {
		for _, b := range hosts[i+1:] {
			t.Links = append(t.Links, Link{Name: a + "-" + b, A: a + "/router", B: b + "/router", Config: lc})
		}
	}
	return t
}
