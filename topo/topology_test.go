package topo

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// The pair keeps the addresses netemu's two hosts always had.
func TestPairAddresses(t *testing.T) {
	p := Pair(link.Config{})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for h, want := range map[string]string{"client": "198.18.0.1", "server": "198.18.0.2"} {
		if a, ok := p.HostAddr(h); !ok || a != netip.MustParseAddr(want) {
			t.Errorf("%s: %v, %v; want %s", h, a, ok, want)
		}
	}
	if a := Addr(300, 1); a != netip.MustParseAddr("198.19.44.2") {
		t.Errorf("link 300's B end: %v; want 198.19.44.2", a)
	}
}

// Each router's next hop is on the path of least delay; at equal delay,
// of fewest hops; then the first link. A route overrides it.
func TestShortestPaths(t *testing.T) {
	// a - r1 -(10ms)- r2 - b, and r1 -(2ms)- r3 -(2ms)- r2: the longer
	// path in hops is the shorter in delay.
	top := Topology{Hosts: []string{"a", "b"}, Routers: []string{"r1", "r2", "r3"}, Links: []Link{
		{A: "a", B: "r1"}, {A: "r2", B: "b"},
		{Name: "direct", A: "r1", B: "r2", Config: link.Config{Delay: ms(10)}},
		{A: "r1", B: "r3", Config: link.Config{Delay: ms(2)}},
		{A: "r3", B: "r2", Config: link.Config{Delay: ms(2)}},
	}}
	tables, err := top.Tables()
	if err != nil {
		t.Fatal(err)
	}
	if got := tables["r1"]["b"]; got != (Hop{Link: 3, Dir: link.AtoB}) {
		t.Errorf("r1 to b: %+v; want link 3 (to r3), a to b", got)
	}
	if got := tables["r2"]["a"]; got != (Hop{Link: 4, Dir: link.BtoA}) {
		t.Errorf("r2 to a: %+v; want link 4 backwards (to r3)", got)
	}
	// Equal delays: the path of fewer hops.
	top.Links[2].Config.Delay = ms(4)
	tables, _ = top.Tables()
	if got := tables["r1"]["b"]; got.Link != 2 {
		t.Errorf("r1 to b at equal delay: %+v; want the direct link, 2", got)
	}
	// A route overrides.
	top.Routes = []Route{{At: "r1", To: "b", Via: "r3"}}
	if err := top.Validate(); err != nil {
		t.Fatal(err)
	}
	tables, _ = top.Tables()
	if got := tables["r1"]["b"]; got.Link != 3 {
		t.Errorf("r1 to b routed via r3: %+v; want link 3", got)
	}
}

// Descriptions that cannot run are refused with what is wrong.
func TestValidate(t *testing.T) {
	good := func() Topology {
		return Topology{Hosts: []string{"a", "b"}, Routers: []string{"r1", "r2"}, Links: []Link{{A: "a", B: "r1"}, {A: "r1", B: "r2"}, {A: "r2", B: "b"}}}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*Topology)
		want string
	}{
		{"duplicate", func(t *Topology) { t.Routers[1] = "a" }, `"a" names a host and a router`},
		{"unnamed", func(t *Topology) { t.Hosts[0] = "" }, "a host has no name"},
		{"one host", func(t *Topology) { t.Hosts = t.Hosts[:1] }, "1 hosts; want at least 2"},
		{"unknown", func(t *Topology) { t.Links[1].B = "r9" }, `joins "r9", which is no host or router`},
		{"self", func(t *Topology) { t.Links[1].B = "r1" }, "joins r1 to itself"},
		{"two links", func(t *Topology) { t.Links = append(t.Links, Link{A: "a", B: "r2"}) }, "host a has 2 links"},
		{"bad link", func(t *Topology) { t.Links[1].Config.Delay = -1 }, "link r1-r2: link:"},
		{"no path", func(t *Topology) { t.Links[1] = Link{A: "r1", B: "r1x"}; t.Routers = append(t.Routers, "r1x") }, "has no path to host"},
		{"route at host", func(t *Topology) { t.Routes = []Route{{At: "a", To: "b", Via: "r1"}} }, `route at "a": want a router`},
		{"route via stranger", func(t *Topology) { t.Routes = []Route{{At: "r1", To: "b", Via: "b"}} }, "want a neighbour of r1"},
		{"loop", func(t *Topology) { t.Routes = []Route{{At: "r2", To: "b", Via: "r1"}} }, "the routes to host b loop"},
		{"same name", func(t *Topology) { t.Links[0].Name, t.Links[1].Name = "x", "x" }, `both named "x"`},
		{"address outside", func(t *Topology) { t.Addrs = map[string]netip.Addr{"a": netip.MustParseAddr("10.0.0.1")} }, "outside 198.18.0.0/15"},
		{"address twice", func(t *Topology) { t.Addrs = map[string]netip.Addr{"a": netip.MustParseAddr("198.18.2.2")} }, "both have the address 198.18.2.2"},
		{"address of a router", func(t *Topology) { t.Addrs = map[string]netip.Addr{"r1": netip.MustParseAddr("198.18.9.9")} }, `an address for "r1", which is no host`},
	} {
		top := good()
		c.edit(&top)
		err := top.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", c.name, err, c.want)
		}
	}
}

// The built-in shapes are valid, with the hosts, links and flows they
// promise.
func TestShapes(t *testing.T) {
	bottleneck := link.Config{Delay: ms(10), Rate: 20e6}
	d, flows := Dumbbell(3, []time.Duration{ms(4), ms(80)}, bottleneck)
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(d.Hosts) != 6 || len(flows) != 3 || flows[2] != (Flow{From: "c3", To: "s3"}) || d.Links[0].Label() != "bottleneck" {
		t.Errorf("dumbbell: %+v, %+v", d, flows)
	}
	if d.Links[2].Config.Delay != ms(40) || d.Links[3].Config.Delay != 0 {
		t.Errorf("dumbbell access delays: %v, %v; want 40ms (80ms RTT), 0", d.Links[2].Config.Delay, d.Links[3].Config.Delay)
	}
	s, flows := Star(4, bottleneck)
	if err := s.Validate(); err != nil || len(flows) != 4 || flows[3].To != "server" {
		t.Errorf("star: %v, %+v", err, flows)
	}
	c, flows := Chain(3, bottleneck)
	if err := c.Validate(); err != nil || len(flows) != 4 {
		t.Fatalf("chain: %v, %+v", err, flows)
	}
	// The long flow crosses every hop: r0's next hop toward b0 is hop1.
	tables, _ := c.Tables()
	for i, r := range []string{"r0", "r1", "r2"} {
		if hop := tables[r]["b0"]; c.Links[hop.Link].Label() != "hop"+string(rune('1'+i)) {
			t.Errorf("%s toward b0: %s; want hop%d", r, c.Links[hop.Link].Label(), i+1)
		}
	}
}

// A flow's route is its host's link, then each router's next hop.
func TestRoute(t *testing.T) {
	c, _ := Chain(2, link.Config{Delay: ms(5)})
	hops, err := c.Route("b0", "a0")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hops {
		names = append(names, c.Links[h.Link].Label())
		if h.Dir != link.BtoA {
			t.Errorf("%s crossed %v; want BtoA, back toward a0", c.Links[h.Link].Label(), h.Dir)
		}
	}
	if got := strings.Join(names, " "); got != "r2-b0 hop2 hop1 a0-r0" {
		t.Errorf("b0 to a0 crosses %s; want r2-b0 hop2 hop1 a0-r0", got)
	}
}

// A mesh joins every two hosts by a link of their own, through a router
// of each host's.
func TestMesh(t *testing.T) {
	m := Mesh([]string{"n1", "n2", "n3"}, link.Config{Delay: ms(5)})
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	hops, err := m.Route("n1", "n3")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hops {
		names = append(names, m.Links[h.Link].Label())
	}
	if got := strings.Join(names, " "); got != "n1/access n1-n3 n3/access" {
		t.Errorf("n1 to n3 crosses %s; want n1/access n1-n3 n3/access", got)
	}
}
