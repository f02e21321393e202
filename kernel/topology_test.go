//go:build linux

package kernel

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/topo"
	"golang.org/x/sys/unix"
)

func newTopo(t *testing.T, cfg TopoConfig) *TopoNet {
	t.Helper()
	n, err := NewTopo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// crossing is one link a marked packet crossed: the link, the direction
// by its ends' names, and the packet's TTL there.
type crossing struct {
	Link, Dir string
	TTL       byte
}

// crossings watches every link of a network (by its link lookup) for
// delivered UDP packets that carry marker, in the order they arrive.
type crossings struct {
	mu  sync.Mutex
	got []crossing
}

func (c *crossings) watch(t topo.Topology, lookup func(string) (*link.Link, bool), marker []byte) {
	for _, tl := range t.Links {
		l, ok := lookup(tl.Label())
		if !ok {
			panic("no link " + tl.Label())
		}
		tl := tl
		l.Observe(func(e link.Event) {
			p := e.Packet
			if e.Kind != link.EventDeliver || len(p) < 28 || p[9] != unix.IPPROTO_UDP || !bytes.Contains(p[28:], marker) {
				return
			}
			dir := tl.A + ">" + tl.B
			if e.Dir == link.BtoA {
				dir = tl.B + ">" + tl.A
			}
			c.mu.Lock()
			c.got = append(c.got, crossing{tl.Label(), dir, p[8]})
			c.mu.Unlock()
		})
	}
}

func (c *crossings) list() []crossing {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// sendOne sends one datagram carrying marker from env's dialling host to
// its listening one and waits for it.
func sendOne(ctx context.Context, env emu.Env, marker []byte) ([]byte, error) {
	ln, err := env.ListenPacket(7000)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	c, to, err := env.DialPacket(ctx, 7000)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.WriteTo(marker, to); err != nil {
		return nil, err
	}
	buf := make([]byte, 100)
	m, _, err := ln.ReadFrom(buf)
	return buf[:m], err
}

// withOwnAddress is two routers in a row between hosts near and web,
// web with an address of its own outside every link's subnet, and a far
// host whose longer access moves nothing.
func withOwnAddress() (topo.Topology, topo.Flow) {
	return topo.Topology{
		Hosts:   []string{"near", "web", "far"},
		Routers: []string{"home", "isp"},
		Links: []topo.Link{
			{A: "near", B: "home", Config: link.Config{Delay: time.Millisecond}},
			{A: "far", B: "home", Config: link.Config{Delay: 5 * time.Millisecond}},
			{Name: "core", A: "home", B: "isp", Config: link.Config{Delay: 2 * time.Millisecond}},
			{A: "isp", B: "web", Config: link.Config{Delay: time.Millisecond}},
		},
		Addrs: map[string]netip.Addr{"web": netip.MustParseAddr("198.19.200.7")},
	}, topo.Flow{From: "near", To: "web"}
}

// triangle is three routers in a ring between hosts a (at r1) and b (at
// r2): the way round through r3 is shorter than the direct link, unless
// a route says otherwise.
func triangle(routes ...topo.Route) (topo.Topology, topo.Flow) {
	ms := func(d int) link.Config { return link.Config{Delay: time.Duration(d) * time.Millisecond} }
	return topo.Topology{
		Hosts:   []string{"a", "b"},
		Routers: []string{"r1", "r2", "r3"},
		Links: []topo.Link{
			{A: "a", B: "r1", Config: ms(1)},
			{A: "r2", B: "b", Config: ms(1)},
			{Name: "direct", A: "r1", B: "r2", Config: ms(10)},
			{A: "r1", B: "r3", Config: ms(1)},
			{A: "r3", B: "r2", Config: ms(1)},
		},
		Routes: routes,
	}, topo.Flow{From: "a", To: "b"}
}

// A datagram crosses the same links, routers decrementing its TTL, in
// kernel mode as on the emulator: between two hosts with no router,
// across a dumbbell's two routers, the parking lot's three, two routers
// to a host with an address of its own, and a ring of routers by its
// shortest path and by a route that overrides it.
func TestTopoRouteAndTTLAsEmulated(t *testing.T) {
	needRoot(t)
	lc := link.Config{Delay: 2 * time.Millisecond, Rate: 20e6}
	dumbbell, dflows := topo.Dumbbell(2, []time.Duration{4 * time.Millisecond}, lc)
	chain, cflows := topo.Chain(2, lc)
	own, oflow := withOwnAddress()
	ring, rflow := triangle()
	direct, _ := triangle(topo.Route{At: "r1", To: "b", Via: "r2"})
	for _, tc := range []struct {
		name    string
		t       topo.Topology
		flow    topo.Flow
		routers int
	}{
		{"pair", topo.Pair(lc), topo.Flow{From: "client", To: "server"}, 0},
		{"dumbbell", dumbbell, dflows[1], 2},
		{"chain", chain, cflows[0], 3},
		{"own-address", own, oflow, 2},
		{"shortest", ring, rflow, 3},
		{"route", direct, rflow, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := []byte("netemu-ttl-" + tc.name)
			emulated := emulatedCrossings(t, tc.t, tc.flow, marker)
			if len(emulated) != tc.routers+1 {
				t.Fatalf("emulated: the datagram crossed %v; want %d links", emulated, tc.routers+1)
			}
			if last := emulated[len(emulated)-1].TTL; last != 64-byte(tc.routers) {
				t.Errorf("emulated: TTL %d on the last link; want %d", last, 64-tc.routers)
			}

			n := newTopo(t, TopoConfig{Topology: tc.t, Seed: 1})
			var w crossings
			w.watch(tc.t, n.Link, marker)
			env, err := n.Between(tc.flow.From, tc.flow.To)
			if err != nil {
				t.Fatal(err)
			}
			ttl := recvTTL(t, env, marker)
			got := w.list()
			t.Logf("crossed %v, TTL %d at the socket", got, ttl)
			if !slices.Equal(got, emulated) {
				t.Errorf("kernel mode: the datagram crossed\n  %v\nemulated:\n  %v", got, emulated)
			}
			if ttl != int(64-tc.routers) {
				t.Errorf("kernel mode: the receiving socket saw TTL %d; want %d (64 less one per router)", ttl, 64-tc.routers)
			}
		})
	}
}

// emulatedCrossings sends one datagram on flow across t on the emulator.
func emulatedCrossings(t *testing.T, tp topo.Topology, flow topo.Flow, marker []byte) []crossing {
	t.Helper()
	n, err := emu.New(emu.Config{Topology: &tp, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var w crossings
	w.watch(tp, n.Link, marker)
	err = n.Run(context.Background(), func(ctx context.Context) error {
		env, err := n.Between(flow.From, flow.To)
		if err != nil {
			return err
		}
		got, err := sendOne(ctx, env, marker)
		if err == nil && !bytes.Equal(got, marker) {
			err = fmt.Errorf("received %q; want %q", got, marker)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.list()
}

// recvTTL sends one datagram across env and returns the TTL its
// receiving kernel socket saw (IP_RECVTTL).
func recvTTL(t *testing.T, env emu.Env, marker []byte) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := env.ListenPacket(7000)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	uc := ln.(interface {
		SyscallConn() (syscall.RawConn, error)
		ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
		SetReadDeadline(time.Time) error
	})
	raw, err := uc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTTL, 1) })
	if serr != nil {
		t.Fatal(serr)
	}
	c, to, err := env.DialPacket(ctx, 7000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.WriteTo(marker, to); err != nil {
		t.Fatal(err)
	}
	uc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf, oob := make([]byte, 100), make([]byte, 64)
	m, oobn, _, _, err := uc.ReadMsgUDP(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf[:m], marker) {
		t.Fatalf("received %q; want %q", buf[:m], marker)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range msgs {
		if cm.Header.Level == unix.IPPROTO_IP && cm.Header.Type == unix.IP_TTL && len(cm.Data) >= 1 {
			return int(cm.Data[0])
		}
	}
	t.Fatal("no IP_TTL control message")
	return 0
}

// Every flow of a dumbbell carries TCP at once, on the pinned congestion
// control, each across its own access links and the shared bottleneck.
func TestTopoTCPFlows(t *testing.T) {
	needRoot(t)
	tp, flows := topo.Dumbbell(2, nil, link.Config{Delay: 2 * time.Millisecond, Rate: 50e6})
	n := newTopo(t, TopoConfig{Topology: tp, CongestionControl: "reno"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const size = 200_000
	errs := make(chan error, len(flows))
	for i, f := range flows {
		env, err := n.Between(f.From, f.To)
		if err != nil {
			t.Fatal(err)
		}
		go func() { errs <- transferOnce(ctx, env, uint16(5000+i), size) }()
	}
	for range flows {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	st := n.Stats()
	if len(st.Links) != len(tp.Links) {
		t.Fatalf("%d links' stats; want %d", len(st.Links), len(tp.Links))
	}
	for i, tl := range tp.Links {
		if st.Links[i][link.BtoA].Bytes < size && st.Links[i][link.AtoB].Bytes < size {
			t.Errorf("link %s carried %d and %d bytes; want %d one way at least", tl.Label(), st.Links[i][0].Bytes, st.Links[i][1].Bytes, size)
		}
	}
	if st.Links[0][link.AtoB].Bytes < 2*size {
		t.Errorf("the bottleneck carried %d bytes left to right; want both flows' %d", st.Links[0][link.AtoB].Bytes, 2*size)
	}
	if st.LateSamples == 0 {
		t.Error("the bridge's clock fired no timer")
	}
	if n.Facts().CongestionControl != "reno" || n.Facts().Link != TUN {
		t.Errorf("facts %v; want reno over tun", n.Facts())
	}
}

// transferOnce sends size bytes from env's dialling host to its
// listening one, and checks that they all arrive.
func transferOnce(ctx context.Context, env emu.Env, port uint16, size int) error {
	ln, err := env.Listen(port)
	if err != nil {
		return err
	}
	defer ln.Close()
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		m, err := io.Copy(io.Discard, c)
		if err == nil && m != int64(size) {
			err = fmt.Errorf("%d bytes; want %d", m, size)
		}
		got <- err
	}()
	c, err := env.Dial(ctx, port)
	if err != nil {
		return err
	}
	if _, err := c.Write(make([]byte, size)); err != nil {
		c.Close()
		return err
	}
	c.Close()
	select {
	case err := <-got:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestTopoRefusesNetem(t *testing.T) {
	tp, _ := topo.Dumbbell(1, nil, link.Config{})
	_, err := NewTopo(TopoConfig{Topology: tp, Via: Netem})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "TUN") {
		t.Errorf("NewTopo over netem = %v; want ErrUnsupported naming the TUN link", err)
	}
}

func TestTopoCloseLeavesNothing(t *testing.T) {
	needRoot(t)
	tp, flows := topo.Chain(2, link.Config{Delay: time.Millisecond})
	n, err := NewTopo(TopoConfig{Topology: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	env, err := n.Between(flows[0].From, flows[0].To)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := env.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, ino := range n.Inodes() {
		inodes[fmt.Sprintf("net:[%d]", ino)] = true
	}
	if len(inodes) != len(tp.Hosts)+len(tp.Routers) {
		t.Fatalf("%d namespaces; want one per node, %d", len(inodes), len(tp.Hosts)+len(tp.Routers))
	}
	n.Close()
	n.Close()
	if _, err := ln.Accept(); err == nil {
		t.Error("a listener accepted after Close")
	}
	if _, err := n.Between(flows[0].From, flows[0].To); err == nil {
		t.Error("Between after Close gave an environment")
	}
	if h := namespaceHolders(t, inodes); len(h) != 0 {
		t.Errorf("after Close, namespaces are still held by %v", h)
	}
}

// holdTopology is the child of TestTopoSIGKILLLeavesNothing: it builds a
// dumbbell with a connection open across it, prints its namespaces'
// inodes, and waits to be killed.
func holdTopology() {
	tp, flows := topo.Dumbbell(2, nil, link.Config{Delay: time.Millisecond})
	n, err := NewTopo(TopoConfig{Topology: tp})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	env, err := n.Between(flows[0].From, flows[0].To)
	if err == nil {
		var ln net.Listener
		if ln, err = env.Listen(80); err == nil {
			go ln.Accept()
			_, err = env.Dial(context.Background(), 80)
		}
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Print("READY")
	for _, ino := range n.Inodes() {
		fmt.Printf(" %d", ino)
	}
	fmt.Println()
	select {}
}

func TestTopoSIGKILLLeavesNothing(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NETEMU_KERNEL_CHILD=hold-topology")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child said nothing: %v", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != "READY" {
		t.Fatalf("child: %q", line)
	}
	inodes := map[string]bool{}
	for _, f := range fields[1:] {
		inodes["net:["+f+"]"] = true
	}
	if len(inodes) != 6 { // 4 hosts, 2 routers
		t.Fatalf("child held %d namespaces; want 6", len(inodes))
	}
	if h := namespaceHolders(t, inodes); len(h) < len(inodes) {
		t.Fatalf("only %v of the child's namespaces %v are visible before the kill", h, inodes)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	if h := namespaceHolders(t, inodes); len(h) != 0 {
		t.Errorf("after SIGKILL, namespaces %v are still held by %v", inodes, h)
	}
	ifaces, _ := net.Interfaces()
	for _, i := range ifaces {
		if strings.HasPrefix(i.Name, "netemu") {
			t.Errorf("a %s device exists in the test's own namespace", i.Name)
		}
	}
}
