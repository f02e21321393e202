package tcpstack

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// directCounters are the stack's counters that gVisor's IPv4 receive and
// send paths and the direct path both keep.
func directCounters(h *Host) [12]uint64 {
	s := h.Stack().Stats()
	nic := h.Stack().NICInfo()[nicID].Stats
	return [12]uint64{
		s.IP.PacketsReceived.Value(), s.IP.ValidPacketsReceived.Value(), s.IP.PacketsDelivered.Value(),
		s.NICs.Rx.Packets.Value(), s.NICs.Rx.Bytes.Value(), nic.Rx.Packets.Value(),
		s.NICs.MalformedL4RcvdPackets.Value(), s.IP.InvalidDestinationAddressesReceived.Value(),
		s.IP.PacketsSent.Value(), s.NICs.Tx.Packets.Value(), s.NICs.Tx.Bytes.Value(), nic.Tx.Bytes.Value(),
	}
}

// countingEgress counts the packets the direct path sends.
type countingEgress struct {
	*direct
	n *atomic.Int64
}

func (c countingEgress) Send(b []byte) { c.n.Add(1); c.direct.Send(b) }

// echoRun echoes 200 KB through a queue short enough to drop, with
// netemu's TCP, and returns every packet that crossed the link, the
// virtual time it took and both hosts' counters. With gvisorPath the
// hosts' direct paths are off, both ways.
func echoRun(t *testing.T, gvisorPath bool) (pkts [][]byte, took time.Duration, counters [2][12]uint64) {
	p := newPair(t, link.Config{Delay: 5 * time.Millisecond, Rate: 20e6, Qdisc: link.Qdisc{Limit: 8}}, TCPConfig{Impl: Netemu})
	if p.a.ep.direct == nil || p.b.ep.direct == nil {
		t.Fatal("a host with netemu's TCP has no direct path")
	}
	var egressed atomic.Int64
	if gvisorPath {
		p.a.ep.direct.proto.SetEgress(nil)
		p.b.ep.direct.proto.SetEgress(nil)
		p.a.ep.direct, p.b.ep.direct = nil, nil
	} else {
		p.a.ep.direct.proto.SetEgress(countingEgress{p.a.ep.direct, &egressed})
		p.b.ep.direct.proto.SetEgress(countingEgress{p.b.ep.direct, &egressed})
	}
	p.echoServer(t, 7, 0)
	start := p.clk.Now()
	c, err := p.a.Dial(context.Background(), p.b.AddrPort(7))
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("direct "), 200_000/7)
	go c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo: %v, equal %v", err, bytes.Equal(got, msg))
	}
	took = p.clk.Now().Sub(start)
	c.Close()
	if !gvisorPath && egressed.Load() == 0 {
		t.Error("the direct path sent no packet")
	}
	p.mu.Lock()
	pkts = p.pkts
	p.mu.Unlock()
	return pkts, took, [2][12]uint64{directCounters(p.a), directCounters(p.b)}
}

// The direct path changes nothing but the CPU a segment costs: the same
// packets cross the link at the same instants, and the stack counts them
// as gVisor's IPv4 path does.
func TestDirectPathSameAsGVisorPath(t *testing.T) {
	pkts, took, counters := echoRun(t, false)
	wantPkts, wantTook, wantCounters := echoRun(t, true)
	if took != wantTook || len(pkts) != len(wantPkts) {
		t.Fatalf("direct path: %d packets in %v; gVisor's path: %d in %v", len(pkts), took, len(wantPkts), wantTook)
	}
	for i := range pkts {
		if !bytes.Equal(pkts[i], wantPkts[i]) {
			t.Fatalf("packet %d differs:\n direct %x\n gVisor %x", i, pkts[i], wantPkts[i])
		}
	}
	if counters != wantCounters {
		t.Errorf("counters (IP received, valid, delivered; NIC rx packets, bytes, own packets; malformed L4; invalid destination; IP sent; NIC tx packets, bytes, own bytes):\n direct %v\n gVisor %v", counters, wantCounters)
	}
	t.Logf("%d packets in %v; counters %v", len(pkts), took, counters)
	if counters[0][0] == 0 {
		t.Error("the client's stack counted no packet received")
	}
}

// A packet the direct path cannot vouch for goes to gVisor's path.
func TestDirectPathDeclines(t *testing.T) {
	p := newPair(t, link.Config{}, TCPConfig{Impl: Netemu})
	d := p.b.ep.direct
	// A SYN from a to b's port 7, nobody listening: the direct path
	// answers it with a reset, as gVisor's would.
	valid := func() []byte {
		b := make([]byte, 40)
		b[0] = 0x45
		binary.BigEndian.PutUint16(b[2:4], 40)
		b[8], b[9] = 64, 6
		a, bb := addrA.As4(), addrB.As4()
		copy(b[12:16], a[:])
		copy(b[16:20], bb[:])
		binary.BigEndian.PutUint16(b[20:22], 40000)
		binary.BigEndian.PutUint16(b[22:24], 7)
		b[32] = 5 << 4
		b[33] = 0x02 // SYN
		return b
	}
	for _, c := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"IP options", func(b []byte) []byte { b[0] = 0x46; return b }},
		{"IPv6", func(b []byte) []byte { b[0] = 0x65; return b }},
		{"longer than its total length", func(b []byte) []byte { return append(b, 0) }},
		{"more fragments", func(b []byte) []byte { b[6] = 0x20; return b }},
		{"a fragment offset", func(b []byte) []byte { b[7] = 1; return b }},
		{"UDP", func(b []byte) []byte { b[9] = 17; return b }},
		{"to another address", func(b []byte) []byte { b[19] = 9; return b }},
		{"from its own address", func(b []byte) []byte { b[15] = 2; return b }},
		{"from the network's broadcast", func(b []byte) []byte { copy(b[12:16], []byte{198, 19, 255, 255}); return b }},
		{"from outside the network", func(b []byte) []byte { copy(b[12:16], []byte{10, 0, 0, 1}); return b }},
		{"TCP header shorter than 20 bytes", func(b []byte) []byte { b[32] = 4 << 4; return b }},
		{"TCP header past the packet", func(b []byte) []byte { b[32] = 6 << 4; return b }},
	} {
		if d.deliver(c.edit(valid())) {
			t.Errorf("%s: the direct path took the packet", c.name)
		}
	}
	before := p.b.Stack().Stats().IP.PacketsDelivered.Value()
	if !d.deliver(valid()) {
		t.Fatal("the direct path declined a plain SYN")
	}
	if got := p.b.Stack().Stats().IP.PacketsDelivered.Value(); got != before+1 {
		t.Errorf("IP.PacketsDelivered went from %d to %d; want one more", before, got)
	}

	// Outbound, only from the host's address to a peer.
	addr := func(b ...byte) tcpip.Address { return tcpip.AddrFrom4([4]byte(b)) }
	own, peer := tcpip.AddrFrom4(addrB.As4()), tcpip.AddrFrom4(addrA.As4())
	for _, c := range []struct {
		name          string
		local, remote tcpip.Address
	}{
		{"to itself", own, own},
		{"to the network's broadcast", own, addr(198, 19, 255, 255)},
		{"to outside the network", own, addr(10, 0, 0, 1)},
		{"from another address", addr(198, 18, 0, 9), peer},
	} {
		if d.Direct(c.local, c.remote) {
			t.Errorf("%s: the direct path would send the packet", c.name)
		}
	}
	if !d.Direct(own, peer) {
		t.Error("the direct path would not send a packet to the peer")
	}
}

// Only netemu's TCP without checksum checks gets a direct path.
func TestDirectPathOnlyForNetemu(t *testing.T) {
	for _, c := range []struct {
		impl   Impl
		verify bool
		want   bool
	}{{GVisor, false, false}, {Netemu, false, true}, {Netemu, true, false}} {
		clk := clock.NewVirtual(0, nil)
		defer clk.Close()
		h, err := New(Config{Addr: addrA, Clock: clk, TCP: TCPConfig{Impl: c.impl}, VerifyChecksums: c.verify}, func([]byte) {})
		if err != nil {
			t.Fatal(err)
		}
		if got := h.ep.direct != nil; got != c.want {
			t.Errorf("%s, VerifyChecksums %v: direct path %v; want %v", c.impl, c.verify, got, c.want)
		}
		h.Close()
	}
}
