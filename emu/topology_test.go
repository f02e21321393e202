package emu

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/netemu/netemu/internal/race"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
)

// transfer sends size bytes over a connection from one host to another
// for each flow at once, and returns when every byte has arrived.
func transfer(t *testing.T, n *Net, flows []topo.Flow, size int) {
	t.Helper()
	err := n.Run(context.Background(), func(ctx context.Context) error {
		done := make(chan error, len(flows))
		for i, f := range flows {
			env, err := n.Between(f.From, f.To)
			if err != nil {
				return err
			}
			ln, err := env.Listen(uint16(5000 + i))
			if err != nil {
				return err
			}
			defer ln.Close()
			env.Go(func() {
				c, err := ln.Accept()
				if err != nil {
					done <- err
					return
				}
				defer c.Close()
				got, err := io.Copy(io.Discard, c)
				if err == nil && got != int64(size) {
					err = fmt.Errorf("flow %s→%s: %d bytes; want %d", f.From, f.To, got, size)
				}
				done <- err
			})
			env.Go(func() {
				c, err := env.Dial(ctx, uint16(5000+i))
				if err != nil {
					done <- err
					return
				}
				defer c.Close()
				if _, err := c.Write(make([]byte, size)); err != nil {
					done <- err
				}
			})
		}
		for range flows {
			if err := <-done; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ipChecksumOK reports whether an IPv4 header's checksum is right.
func ipChecksumOK(pkt []byte) bool {
	ihl := int(pkt[0]&0x0f) * 4
	var sum uint32
	for i := 0; i < ihl; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(pkt[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum) == 0xffff
}

// A packet crosses a chain of routers hop by hop: every link of the path
// carries the flow, each router takes one from the TTL and keeps the
// header's checksum right.
func TestRoutersForward(t *testing.T) {
	defer goleak.VerifyNone(t)
	top, _ := topo.Chain(3, link.Config{Delay: 5 * time.Millisecond, Rate: 50e6})
	n := newNet(t, Config{Topology: &top, Seed: 1})
	ttls := map[string]map[byte]int{}
	bad := 0
	for _, name := range []string{"a0-r0", "hop1", "hop2", "hop3", "r3-b0"} {
		l, ok := n.Link(name)
		if !ok {
			t.Fatalf("no link %s", name)
		}
		seen := map[byte]int{}
		ttls[name] = seen
		l.Observe(func(e link.Event) {
			if e.Kind == link.EventDeliver && e.Dir == link.AtoB {
				seen[e.Packet[8]]++
				if !ipChecksumOK(e.Packet) {
					bad++
				}
			}
		})
	}
	transfer(t, n, []topo.Flow{{From: "a0", To: "b0"}}, 100<<10)
	n.Close()
	// a0 sends with TTL 64; the link into each router delivers it
	// before the router takes one.
	for i, name := range []string{"a0-r0", "hop1", "hop2", "hop3", "r3-b0"} {
		want := byte(64 - i)
		if ttls[name][want] == 0 || len(ttls[name]) != 1 {
			t.Errorf("%s delivered TTLs %v; want only %d", name, ttls[name], want)
		}
	}
	if bad > 0 {
		t.Errorf("%d packets with a wrong header checksum", bad)
	}
	st := n.Stats()
	if len(st.Routers) != 4 || st.Routers[1].Forwarded == 0 || st.Routers[1].NoRoute+st.Routers[1].TTLExpired != 0 {
		t.Errorf("routers: %+v", st.Routers)
	}
	// The hops of the short flows carried nothing.
	for i, tl := range top.Links {
		if tl.A == "a1" && st.Links[i][link.AtoB].Packets != 0 {
			t.Errorf("link %s carried %d packets; no flow crosses it", tl.Label(), st.Links[i][link.AtoB].Packets)
		}
	}
}

// A router drops what it cannot route and what has run out of TTL,
// counting each, and keeps the checksum right when it forwards.
func TestRouterDrops(t *testing.T) {
	b := netip.MustParseAddr("198.18.1.2")
	r := &router{name: "r", next: map[netip.Addr]topo.Hop{b: {Link: 1, Dir: link.AtoB}}}
	packet := func(ttl byte, dst netip.Addr) []byte {
		p := make([]byte, 20)
		p[0], p[8], p[9] = 0x45, ttl, 6
		binary.BigEndian.PutUint16(p[2:4], 20)
		copy(p[12:16], []byte{198, 18, 0, 1})
		d := dst.As4()
		copy(p[16:20], d[:])
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(p[i:]))
		}
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(p[10:12], ^uint16(sum))
		return p
	}
	for _, ttl := range []byte{255, 64, 2} {
		p := packet(ttl, b)
		if hop, ok := r.route(p); !ok || hop.Link != 1 || p[8] != ttl-1 || !ipChecksumOK(p) {
			t.Errorf("TTL %d: %+v, %v, TTL now %d, checksum right %v; want link 1, TTL %d, a right checksum", ttl, hop, ok, p[8], ipChecksumOK(p), ttl-1)
		}
	}
	for _, p := range [][]byte{packet(1, b), packet(0, b)} {
		if _, ok := r.route(p); ok {
			t.Errorf("TTL %d forwarded", p[8])
		}
	}
	if _, ok := r.route(packet(64, netip.MustParseAddr("198.18.9.9"))); ok {
		t.Error("a packet for no host forwarded")
	}
	if st := r.stats(); st.Forwarded != 3 || st.TTLExpired != 2 || st.NoRoute != 1 {
		t.Errorf("counts %+v; want 3 forwarded, 2 out of TTL, 1 without a route", st)
	}
}

// diamond is a, r1, then two paths to r2 (via r3, 2 ms each link; via
// r4, 3 ms each), then b; both paths' first links are narrow, so the
// path the flow takes is the one whose queue builds.
func diamond() topo.Topology {
	narrow := link.Config{Delay: 2 * time.Millisecond, Rate: 5e6, Qdisc: link.Qdisc{Limit: 30}}
	slow := narrow
	slow.Delay = 3 * time.Millisecond
	return topo.Topology{Hosts: []string{"a", "b"}, Routers: []string{"r1", "r2", "r3", "r4"}, Links: []topo.Link{
		{A: "a", B: "r1"}, {A: "r2", B: "b"},
		{Name: "via-r3", A: "r1", B: "r3", Config: narrow}, {A: "r3", B: "r2", Config: link.Config{Delay: 2 * time.Millisecond}},
		{Name: "via-r4", A: "r1", B: "r4", Config: slow}, {A: "r4", B: "r2", Config: link.Config{Delay: 3 * time.Millisecond}},
	}}
}

// The routes decide which link's queue a flow builds: the shortest path
// by default, another where a route says so.
func TestRouteMovesTheQueue(t *testing.T) {
	for _, c := range []struct {
		routes      []topo.Route
		busy, quiet string
	}{
		{nil, "via-r3", "via-r4"},
		{[]topo.Route{{At: "r1", To: "b", Via: "r4"}}, "via-r4", "via-r3"},
	} {
		top := diamond()
		top.Routes = c.routes
		n := newNet(t, Config{Topology: &top, Seed: 1})
		transfer(t, n, []topo.Flow{{From: "a", To: "b"}}, 300<<10)
		st := n.Stats()
		n.Close()
		at := func(name string) link.DirStats {
			for i, tl := range top.Links {
				if tl.Label() == name {
					return st.Links[i][link.AtoB]
				}
			}
			t.Fatalf("no link %s", name)
			return link.DirStats{}
		}
		if busy := at(c.busy); busy.Packets < 200 || busy.PeakQueuePackets < 5 {
			t.Errorf("routes %v: %s carried %d packets, peak queue %d; want the transfer and a queue", c.routes, c.busy, busy.Packets, busy.PeakQueuePackets)
		}
		if quiet := at(c.quiet); quiet.SentPackets != 0 {
			t.Errorf("routes %v: %s carried %d packets; want none", c.routes, c.quiet, quiet.SentPackets)
		}
	}
}

// Per-link drops, counted against a case worked by hand: 40 datagrams
// sent at one instant from a into a router whose link to b holds 10
// packets (the one on the wire among them) drop 30 there, with the
// queue-full reason, and none on the access link.
func TestPerLinkDrops(t *testing.T) {
	top := topo.Topology{Hosts: []string{"a", "b"}, Routers: []string{"r"}, Links: []topo.Link{
		{A: "a", B: "r", Config: link.Config{Delay: time.Millisecond}},
		{A: "r", B: "b", Config: link.Config{Delay: time.Millisecond, Rate: 1e6, Qdisc: link.Qdisc{Limit: 10}}},
	}}
	n := newNet(t, Config{Topology: &top, Seed: 1})
	env, err := n.Between("a", "b")
	if err != nil {
		t.Fatal(err)
	}
	err = n.Run(context.Background(), func(ctx context.Context) error {
		srv, err := env.ListenPacket(9)
		if err != nil {
			return err
		}
		defer srv.Close()
		c, to, err := env.DialPacket(ctx, 9)
		if err != nil {
			return err
		}
		defer c.Close()
		for range 40 {
			if _, err := c.WriteTo(make([]byte, 1000), to); err != nil {
				return err
			}
		}
		return n.Sleep(ctx, time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	access, bottleneck := st.Links[0][link.AtoB], st.Links[1][link.AtoB]
	if access.Packets != 40 || access.Drops.Total() != 0 {
		t.Errorf("access link: %d delivered, drops %v; want 40 and none", access.Packets, access.Drops)
	}
	if bottleneck.Packets != 10 || bottleneck.Drops[link.DropQueueFull] != 30 || bottleneck.Drops.Total() != 30 {
		t.Errorf("bottleneck: %d delivered, drops %v; want 10 delivered and 30 dropped, queue full", bottleneck.Packets, bottleneck.Drops)
	}
}

// Each built-in shape, with loss and several flows, gives one trace hash
// at GOMAXPROCS 1, 2 and 4; another seed another.
func TestTopologyDeterministic(t *testing.T) {
	bottleneck := link.Config{Delay: 10 * time.Millisecond, Rate: 20e6, Loss: link.RandomLoss(0.01, 0), Qdisc: link.Qdisc{Limit: 40}}
	type shape struct {
		name  string
		top   topo.Topology
		flows []topo.Flow
	}
	var shapes []shape
	d, df := topo.Dumbbell(2, []time.Duration{4 * time.Millisecond, 40 * time.Millisecond}, bottleneck)
	s, sf := topo.Star(3, bottleneck)
	c, cf := topo.Chain(2, bottleneck)
	shapes = append(shapes, shape{"dumbbell", d, df}, shape{"star", s, sf}, shape{"chain", c, cf})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, sh := range shapes {
		run := func(seed uint64) string {
			n := newNet(t, Config{Topology: &sh.top, Seed: seed})
			transfer(t, n, sh.flows, 150<<10)
			n.Close()
			return n.Stats().TraceHash
		}
		want := ""
		for _, procs := range []int{1, 2, 4} {
			runtime.GOMAXPROCS(procs)
			for i := range race.DeterministicRuns(3) {
				if got := run(1); want == "" {
					want = got
				} else if got != want {
					t.Fatalf("%s, GOMAXPROCS %d, run %d: trace %s; want %s", sh.name, procs, i, got[:16], want[:16])
				}
			}
		}
		if run(2) == want {
			t.Errorf("%s: seed 2 gave seed 1's trace", sh.name)
		}
	}
}
