package tcpstack

import (
	"encoding/binary"

	netemutcp "github.com/netemu/netemu/tcp"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// direct hands an inbound TCP segment to netemu's TCP without gVisor's
// IPv4 receive path. netemu's TCP registers no endpoint with the stack,
// so gVisor's path would end in the same call
// (Protocol.HandleUnknownDestinationPacket) after validating the header,
// looking up the destination among the NIC's addresses twice, running the
// empty iptables hooks and the transport demultiplexer: a quarter of the
// CPU of a bulk transfer (docs/PERFORMANCE.md). direct takes only
// packets for which every one of those steps is known to pass: an IPv4
// header without options or fragmentation, exactly as long as the packet,
// from another address of the hosts' network to this host's address,
// carrying a TCP header that fits; and it counts them in the stack's
// statistics as gVisor would. Anything else takes gVisor's path, as does
// everything when the host checks checksums (Config.VerifyChecksums).
//
// Outbound, direct is netemu's TCP's Egress: a segment from the host's
// address to a peer on its network, which gVisor's IPv4 send path would
// only give a fixed header (no options, DF), run through the empty
// iptables hooks and count, goes to the NIC as netemu's TCP built it,
// counted as gVisor would.
type direct struct {
	proto *netemutcp.Protocol
	addr  [4]byte // the host's address
	nic   *nicEndpoint

	// The counters gVisor's path increments for a delivered packet and a
	// sent one: the NIC's and the IPv4 endpoint's, each with the stack's
	// total.
	rxPackets, rxBytes         tcpip.MultiCounterStat
	received, valid, delivered tcpip.MultiCounterStat
	txPackets, txBytes, sent   tcpip.MultiCounterStat
}

var _ netemutcp.Egress = (*direct)(nil)

// newDirect returns the direct path for a host whose TCP is netemu's, or
// nil when the host has none.
func newDirect(s *stack.Stack, cfg Config, ep *nicEndpoint) *direct {
	proto, ok := s.TransportProtocolInstance(header.TCPProtocolNumber).(*netemutcp.Protocol)
	if !ok || cfg.VerifyChecksums {
		return nil
	}
	nic, ok := s.NICInfo()[nicID]
	if !ok {
		return nil
	}
	ipStats, ok := nic.NetworkStats[ipv4.ProtocolNumber].(*ipv4.Stats)
	if !ok {
		return nil
	}
	d := &direct{proto: proto, addr: cfg.Addr.As4(), nic: ep}
	all := s.Stats()
	d.rxPackets.Init(nic.Stats.Rx.Packets, all.NICs.Rx.Packets)
	d.rxBytes.Init(nic.Stats.Rx.Bytes, all.NICs.Rx.Bytes)
	d.received.Init(ipStats.IP.PacketsReceived, all.IP.PacketsReceived)
	d.valid.Init(ipStats.IP.ValidPacketsReceived, all.IP.ValidPacketsReceived)
	d.delivered.Init(ipStats.IP.PacketsDelivered, all.IP.PacketsDelivered)
	d.txPackets.Init(nic.Stats.Tx.Packets, all.NICs.Tx.Packets)
	d.txBytes.Init(nic.Stats.Tx.Bytes, all.NICs.Tx.Bytes)
	d.sent.Init(ipStats.IP.PacketsSent, all.IP.PacketsSent)
	return d
}

// Direct implements netemutcp.Egress: from the host to a peer on its
// network.
func (d *direct) Direct(local, remote tcpip.Address) bool {
	return local.Len() == 4 && remote.Len() == 4 && local.As4() == d.addr && d.peer(remote.As4())
}

// Send implements netemutcp.Egress. As gVisor's path, it counts the
// packet sent when the NIC has been detached and drops it.
func (d *direct) Send(b []byte) {
	d.sent.Increment()
	d.txPackets.Increment()
	d.txBytes.IncrementBy(uint64(len(b)))
	if !d.nic.closed.Load() {
		d.nic.send(b)
	}
}

// deliver hands b to netemu's TCP and reports true, or reports false,
// having done nothing, if b must take gVisor's path.
func (d *direct) deliver(b []byte) bool {
	if len(b) < header.IPv4MinimumSize+header.TCPMinimumSize ||
		b[0] != 0x45 || // version 4, a 20-byte header: no options
		int(binary.BigEndian.Uint16(b[2:4])) != len(b) ||
		binary.BigEndian.Uint16(b[6:8])&0x3fff != 0 || // MF or a fragment offset
		b[9] != uint8(header.TCPProtocolNumber) ||
		[4]byte(b[16:20]) != d.addr || !d.peer([4]byte(b[12:16])) {
		return false
	}
	tcpLen := int(b[header.IPv4MinimumSize+12]>>4) * 4
	if tcpLen < header.TCPMinimumSize || header.IPv4MinimumSize+tcpLen > len(b) {
		return false
	}
	d.rxPackets.Increment()
	d.rxBytes.IncrementBy(uint64(len(b)))
	d.received.Increment()
	d.valid.Increment()
	d.delivered.Increment()
	id := stack.TransportEndpointID{
		LocalPort:     binary.BigEndian.Uint16(b[22:24]),
		LocalAddress:  tcpip.AddrFrom4([4]byte(b[16:20])),
		RemotePort:    binary.BigEndian.Uint16(b[20:22]),
		RemoteAddress: tcpip.AddrFrom4([4]byte(b[12:16])),
	}
	// The segment goes to the TCP as the link's bytes, without a copy
	// into a packet buffer: the TCP copies what it keeps. The checksum
	// is taken as good, as gVisor's path takes it where the host does
	// not verify (Config.VerifyChecksums takes gVisor's path).
	tcpHdr := b[header.IPv4MinimumSize : header.IPv4MinimumSize+tcpLen]
	d.proto.HandleSegment(id, header.TCP(tcpHdr), b[header.IPv4MinimumSize+tcpLen:])
	return true
}

// peer reports whether src is an address gVisor accepts as the source of
// a packet for this host without a second look: inside Prefix, neither
// the host's own address nor the network's first or last (its broadcast).
func (d *direct) peer(src [4]byte) bool {
	a := binary.BigEndian.Uint32(src[:])
	p := Prefix.Addr().As4()
	base := binary.BigEndian.Uint32(p[:])
	mask := ^uint32(0) << (32 - Prefix.Bits())
	return a&mask == base && a != base && a != base|^mask && src != d.addr
}
