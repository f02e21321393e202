package tcpstack

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
)

var (
	addrA = netip.MustParseAddr("198.18.0.1")
	addrB = netip.MustParseAddr("198.18.0.2")
)

// pair is two hosts joined by a link on a virtual clock, with every
// delivered packet kept.
type pair struct {
	clk  *clock.Virtual
	a, b *Host
	mu   sync.Mutex
	pkts [][]byte
}

func newPair(t *testing.T, lc link.Config, tc TCPConfig) *pair {
	t.Helper()
	p := &pair{clk: clock.NewVirtual(0, nil)}
	l, err := link.New(lc, p.clk, func(dir link.Dir, pkt []byte) {
		p.mu.Lock()
		p.pkts = append(p.pkts, append([]byte(nil), pkt...))
		p.mu.Unlock()
		if dir == link.AtoB {
			p.b.Deliver(pkt)
		} else {
			p.a.Deliver(pkt)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.a, err = New(Config{Addr: addrA, Clock: p.clk, TCP: tc, Seed: 1}, func(b []byte) { l.Send(link.AtoB, b) }); err != nil {
		t.Fatal(err)
	}
	if p.b, err = New(Config{Addr: addrB, Clock: p.clk, TCP: tc, Seed: 1}, func(b []byte) { l.Send(link.BtoA, b) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.a.Close()
		p.b.Close()
		l.Close()
		p.clk.Close()
	})
	return p
}

// echoServer accepts one connection on b:port and echoes what it reads,
// in messages of size bytes (0: as it arrives).
func (p *pair) echoServer(t *testing.T, port uint16, size int) {
	ln, err := p.b.Listen(port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			return
		}
		defer c.Close()
		if size == 0 {
			io.Copy(c, c)
			return
		}
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
}

func TestPacketsAreWellFormed(t *testing.T) {
	p := newPair(t, link.Config{Delay: time.Millisecond, Rate: 100e6}, TCPConfig{})
	p.echoServer(t, 7, 0)
	c, err := p.a.Dial(context.Background(), p.b.AddrPort(7))
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("netemu "), 10000)
	go c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo: %v, equal %v", err, bytes.Equal(got, msg))
	}
	c.Close()
	clock.Sleep(context.Background(), p.clk, time.Second)

	p.mu.Lock()
	pkts := p.pkts
	p.mu.Unlock()
	if len(pkts) < 50 {
		t.Fatalf("only %d packets crossed the link", len(pkts))
	}
	var sawSYN, sawFIN, sawSACKPerm bool
	for i, b := range pkts {
		pk := gopacket.NewPacket(b, layers.LayerTypeIPv4, gopacket.Default)
		if el := pk.ErrorLayer(); el != nil {
			t.Fatalf("packet %d does not parse: %v", i, el.Error())
		}
		ip, _ := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		tcp, _ := pk.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if ip == nil || tcp == nil {
			t.Fatalf("packet %d is not IPv4/TCP: %v", i, pk)
		}
		if !Prefix.Contains(netip.AddrFrom4([4]byte(ip.SrcIP.To4()))) {
			t.Errorf("packet %d from %v, outside %v", i, ip.SrcIP, Prefix)
		}
		if len(b) > 1500 {
			t.Errorf("packet %d is %d bytes, above the MTU", i, len(b))
		}
		// Recompute the checksums and compare with what the stack sent.
		want := tcp.Checksum
		tcp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, tcp, gopacket.Payload(tcp.Payload)); err != nil {
			t.Fatal(err)
		}
		var re layers.TCP
		if err := re.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil || re.Checksum != want {
			t.Errorf("packet %d: TCP checksum %#04x, recomputed %#04x (%v)", i, want, re.Checksum, err)
		}
		sawSYN = sawSYN || tcp.SYN
		sawFIN = sawFIN || tcp.FIN
		for _, o := range tcp.Options {
			sawSACKPerm = sawSACKPerm || (tcp.SYN && o.OptionType == layers.TCPOptionKindSACKPermitted)
		}
	}
	if !sawSYN || !sawFIN || !sawSACKPerm {
		t.Errorf("saw SYN %v, FIN %v, SACK-permitted %v; want all", sawSYN, sawFIN, sawSACKPerm)
	}
}

// With Nagle on, write-write-read stalls for the delayed ACK; with it off
// (the default) it does not. This is what SetNoDelay controls.
func TestSetNoDelayControlsNagle(t *testing.T) {
	for _, nodelay := range []bool{true, false} {
		p := newPair(t, link.Config{DelayedACK: link.LinuxDelayedACK}, TCPConfig{Impl: GVisor})
		p.echoServer(t, 7, 8) // answers once it has the 8 bytes
		c, err := p.a.Dial(context.Background(), p.b.AddrPort(7))
		if err != nil {
			t.Fatal(err)
		}
		c.SetNoDelay(nodelay)
		buf := make([]byte, 8)
		var last time.Duration
		for range 5 {
			start := p.clk.Now()
			c.Write([]byte("abcd"))
			c.Write([]byte("efgh"))
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
			last = p.clk.Now().Sub(start)
		}
		c.Close()
		want := time.Duration(0)
		if !nodelay {
			want = link.LinuxDelayedACK
		}
		if last != want {
			t.Errorf("SetNoDelay(%v): a round took %v; want %v", nodelay, last, want)
		}
		if got := c.Endpoint().SocketOptions().GetDelayOption(); got == nodelay {
			t.Errorf("SetNoDelay(%v) left the endpoint's delay option %v", nodelay, got)
		}
	}
}

func TestListenPortInUse(t *testing.T) {
	p := newPair(t, link.Config{}, TCPConfig{})
	ln, err := p.b.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := p.b.Listen(80); err == nil || !strings.Contains(err.Error(), "port in use") {
		t.Errorf("second Listen on :80 = %v; want a port-in-use error", err)
	}
	ln2, err := p.b.Listen(0)
	if err != nil || ln2.AddrPort().Port() == 0 {
		t.Errorf("Listen(0) = %v, %v; want a free port", ln2, err)
	} else {
		ln2.Close()
	}
}

func TestDialRefusedAndReset(t *testing.T) {
	p := newPair(t, link.Config{Delay: time.Millisecond}, TCPConfig{})
	_, err := p.a.Dial(context.Background(), p.b.AddrPort(81))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial to a closed port: %v; want ECONNREFUSED", err)
	}
	var te *Error
	if !errors.As(err, &te) || te.Err == nil {
		t.Errorf("Dial error %v does not keep the gVisor error", err)
	}

	ln, err := p.b.Listen(80)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			return
		}
		// Closing with unread data sends a RST.
		clock.Sleep(context.Background(), p.clk, 10*time.Millisecond)
		c.Close()
	}()
	c, err := p.a.Dial(context.Background(), p.b.AddrPort(80))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("unread"))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Read after the peer reset: %v; want ECONNRESET", err)
	}
}

func TestDialContextCancel(t *testing.T) {
	// A queue that drops everything: the SYN never arrives.
	p := newPair(t, link.Config{Delay: time.Hour}, TCPConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	p.clk.AfterFunc(3*time.Second, cancel)
	start := p.clk.Now()
	_, err := p.a.Dial(ctx, p.b.AddrPort(80))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Dial = %v; want context.Canceled", err)
	}
	if d := p.clk.Now().Sub(start); d != 3*time.Second {
		t.Errorf("Dial gave up after %v; want 3s", d)
	}
}

func TestConfigValidate(t *testing.T) {
	clk := clock.Real{}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Addr: netip.MustParseAddr("10.0.0.1"), Clock: clk}, "not an IPv4 address in 198.18.0.0/15"},
		{Config{Addr: addrA}, "Clock is nil"},
		{Config{Addr: addrA, Clock: clk, MTU: 100}, "MTU 100"},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{CongestionControl: "vegas"}}, `"vegas" is unknown`},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{Impl: GVisor, CongestionControl: "bbr"}}, `"bbr" is unknown`},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{Impl: GVisor, SendBuffer: 8 << 20}}, "exceeds its maximum"},
	} {
		if _, err := New(c.cfg, func([]byte) {}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
}

func TestCongestionControlPinned(t *testing.T) {
	for _, cc := range []CongestionControl{"", Reno, Cubic} {
		h, err := New(Config{Addr: addrA, Clock: clock.Real{}, TCP: TCPConfig{Impl: GVisor, CongestionControl: cc}}, func([]byte) {})
		if err != nil {
			t.Fatal(err)
		}
		var got tcpipCC
		if err := h.stack.TransportProtocolOption(6, &got); err != nil {
			t.Fatal(err)
		}
		want := cc
		if want == "" {
			want = Cubic
		}
		if string(got) != string(want) {
			t.Errorf("congestion control %q for config %q; want %q", got, cc, want)
		}
		h.Close()
	}
}

// Each host's kernel clocks stand at their own point of a second
// (clockPhase): a function of the seed, within [0, 1s), and not the same
// for every seed, so seeds sample the phase as kernels booted at
// different times do.
func TestClockPhaseFollowsSeed(t *testing.T) {
	seen := map[time.Duration]bool{}
	for seed := range uint64(8) {
		p := clockPhase(seed)
		if p < 0 || p >= time.Second {
			t.Fatalf("clockPhase(%d) = %v; want within [0, 1s)", seed, p)
		}
		if q := clockPhase(seed); q != p {
			t.Fatalf("clockPhase(%d) = %v, then %v; want one value per seed", seed, p, q)
		}
		seen[p] = true
	}
	if len(seen) < 8 {
		t.Errorf("8 seeds gave %d phases; want 8", len(seen))
	}
}
