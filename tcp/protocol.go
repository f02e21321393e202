package tcp

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netemu/netemu/clock"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"
)

// ProtocolNumber is TCP's IP protocol number.
const ProtocolNumber = header.TCPProtocolNumber

// Linux's defaults for the settings of Options (net.ipv4.tcp_rmem,
// tcp_wmem; include/net/tcp.h).
const (
	DefaultHZ               = 250
	DefaultReceiveBuffer    = 131072   // tcp_rmem[1]
	DefaultMaxReceiveBuffer = 33554432 // tcp_rmem[2] (32 MiB since Linux 6.14; 6 MiB before)
	DefaultSendBuffer       = 16384    // tcp_wmem[1]
	DefaultMaxSendBuffer    = 4194304  // tcp_wmem[2]
)

// Options configure netemu's TCP on one stack. Zero fields take the
// defaults named on each.
type Options struct {
	// Clock is the run's clock: every timer of every connection is one of
	// its timers, and every instant is read from it. Required.
	Clock clock.Clock

	// HZ is the tick rate of the Linux being modelled, for the rules that
	// Linux counts in jiffies (CUBIC's epoch, the delayed-ACK and RTO
	// floors). 0 means DefaultHZ.
	HZ int

	// CongestionControl names an algorithm of the registry that netemu's
	// TCP runs (CongestionControls, CongestionControl.Runs). "" means
	// DefaultCongestionControl, cubic.
	CongestionControl string

	// ReceiveBuffer and MaxReceiveBuffer are tcp_rmem[1] and [2]: the
	// receive buffer a connection starts with and the most auto-tuning
	// grows it to, in bytes of memory (Linux's truesize, of which the
	// window is a share; see receiver). 0 means the defaults above.
	ReceiveBuffer, MaxReceiveBuffer int

	// SendBuffer and MaxSendBuffer are tcp_wmem[1] and [2], in bytes of
	// memory. 0 means the defaults above.
	SendBuffer, MaxSendBuffer int

	// Seed seeds the initial sequence numbers, timestamp offsets and
	// ephemeral ports.
	Seed uint64

	// ClockPhase is how far into a second the modelled kernel's clocks
	// stand when the protocol starts, in [0, 1s). Linux's jiffies and its
	// millisecond timestamps run from boot, so a connection starts at an
	// arbitrary point of a tick and of a millisecond, and the rules that
	// count in them (timers rounded to jiffies, CUBIC's epoch, the
	// timestamps and the receiver's RTT in whole milliseconds) fall
	// differently with it. 0 starts the protocol on a tick.
	ClockPhase time.Duration

	// Probe, if set, receives a connection's state each time it handles
	// a segment and each time its delayed-ACK timer sends an ACK. It runs
	// under the connection's lock: it must be quick and must not call the
	// connection.
	Probe func(Info)
}

// WithDefaults is o with each zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.HZ == 0 {
		o.HZ = DefaultHZ
	}
	if o.CongestionControl == "" {
		o.CongestionControl = DefaultCongestionControl
	}
	if o.ReceiveBuffer == 0 {
		o.ReceiveBuffer = DefaultReceiveBuffer
	}
	if o.MaxReceiveBuffer == 0 {
		o.MaxReceiveBuffer = max(DefaultMaxReceiveBuffer, o.ReceiveBuffer)
	}
	if o.SendBuffer == 0 {
		o.SendBuffer = DefaultSendBuffer
	}
	if o.MaxSendBuffer == 0 {
		o.MaxSendBuffer = max(DefaultMaxSendBuffer, o.SendBuffer)
	}
	return o
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	d := o.WithDefaults()
	switch {
	case o.Clock == nil:
		return fmt.Errorf("tcp: Options.Clock is nil; give the run's clock")
	case o.HZ < 0 || o.HZ > 10000:
		return fmt.Errorf("tcp: HZ %d out of range; want 100 to 1000 as Linux builds it (0 means %d)", o.HZ, DefaultHZ)
	case o.ClockPhase < 0 || o.ClockPhase >= time.Second:
		return fmt.Errorf("tcp: ClockPhase %v out of range; want 0 to under 1s", o.ClockPhase)
	case o.ReceiveBuffer < 0 || o.MaxReceiveBuffer < 0 || o.SendBuffer < 0 || o.MaxSendBuffer < 0:
		return fmt.Errorf("tcp: a buffer size is negative; want 0 (the default) or a size in bytes")
	case d.ReceiveBuffer > d.MaxReceiveBuffer:
		return fmt.Errorf("tcp: ReceiveBuffer (%d) exceeds MaxReceiveBuffer (%d)", d.ReceiveBuffer, d.MaxReceiveBuffer)
	case d.SendBuffer > d.MaxSendBuffer:
		return fmt.Errorf("tcp: SendBuffer (%d) exceeds MaxSendBuffer (%d)", d.SendBuffer, d.MaxSendBuffer)
	}
	if _, err := newCongestion(d.CongestionControl); err != nil {
		return err
	}
	return nil
}

// connKey names a connection by its four-tuple, from this host's side.
type connKey struct {
	localPort, remotePort uint16
	remote                tcpip.Address
}

// Protocol is netemu's TCP as a transport protocol of a gVisor stack. It
// does its own demultiplexing: no endpoint is registered with the stack,
// so every TCP packet reaches HandleUnknownDestinationPacket, which finds
// the connection in one map lookup.
type Protocol struct {
	st   *stack.Stack
	opts Options
	clk  clock.Clock
	seq  clock.Sequential // nil unless the clock is one
	mono clock.Monotonic  // nil unless the clock is one
	base time.Time
	// seqBase is base as seq.Elapsed reads it: now is one subtraction.
	seqBase time.Duration

	spare spares // rings the connections gave back (pool.go), under a lock of its own

	egress Egress // nil: every segment takes gVisor's IPv4 send path; set before traffic

	mu        sync.Mutex // guards the fields below; never held while taking an endpoint's lock
	conns     map[connKey]*endpoint
	listeners map[uint16]*endpoint
	bound     map[uint16]int // ports in use by any endpoint, with their count
	rng       *rand.Rand
	nextPort  uint16
}

var _ stack.TransportProtocol = (*Protocol)(nil)

// An Egress takes segments past gVisor's IPv4 send path, which for a
// segment to a peer on the NIC's own network only writes a fixed header
// and counts: a host that owns its NIC can do that itself, as tcpstack's
// direct path does.
type Egress interface {
	// Direct reports whether a packet from local to remote may go to Send.
	Direct(local, remote tcpip.Address) bool
	// Send sends a whole IPv4 packet, which is the caller's again once
	// Send returns.
	Send(pkt []byte)
}

// SetEgress sends the segments e takes through it, the rest through
// gVisor's route; nil sends all through the route. Call it before any
// connection sends.
func (p *Protocol) SetEgress(e Egress) { p.egress = e }

// NewProtocol returns a factory for stack.Options.TransportProtocols. It
// panics on invalid options; check them with Validate first.
func NewProtocol(o Options) stack.TransportProtocolFactory {
	if err := o.Validate(); err != nil {
		panic(err)
	}
	o = o.WithDefaults()
	return func(s *stack.Stack) stack.TransportProtocol {
		p := &Protocol{
			st: s, opts: o, clk: o.Clock,
			conns:     make(map[connKey]*endpoint),
			listeners: make(map[uint16]*endpoint),
			bound:     make(map[uint16]int),
			rng:       rand.New(rand.NewPCG(o.Seed, 0x6e65_7465_6d75_7463)),
		}
		p.seq, _ = o.Clock.(clock.Sequential)
		p.mono, _ = o.Clock.(clock.Monotonic)
		// The protocol's time starts at ClockPhase: now() is the time
		// since a tick ClockPhase before the protocol was built.
		p.base = o.Clock.Now().Add(-o.ClockPhase)
		p.seqBase = p.base.Sub(clock.Epoch)
		p.nextPort = ephemeralLow + uint16(p.rng.IntN(ephemeralHigh-ephemeralLow+1))
		return p
	}
}

// now is the protocol's time: a duration since the tick before the
// protocol was built (Options.ClockPhase).
func (p *Protocol) now() time.Duration {
	if p.seq != nil {
		return p.seq.Elapsed() - p.seqBase
	}
	if p.mono != nil {
		return p.mono.Since(p.base)
	}
	return p.clk.Now().Sub(p.base)
}

// Linux's ephemeral port range (net.ipv4.ip_local_port_range).
const (
	ephemeralLow  = 32768
	ephemeralHigh = 60999
)

// Number implements stack.TransportProtocol.
func (*Protocol) Number() tcpip.TransportProtocolNumber { return ProtocolNumber }

// NewEndpoint implements stack.TransportProtocol.
func (p *Protocol) NewEndpoint(netProto tcpip.NetworkProtocolNumber, wq *waiter.Queue) (tcpip.Endpoint, tcpip.Error) {
	if netProto != ipv4.ProtocolNumber {
		return nil, &tcpip.ErrUnknownProtocol{}
	}
	return newEndpoint(p, wq), nil
}

// NewRawEndpoint implements stack.TransportProtocol: netemu's TCP has no
// raw sockets.
func (*Protocol) NewRawEndpoint(tcpip.NetworkProtocolNumber, *waiter.Queue) (tcpip.Endpoint, tcpip.Error) {
	return nil, &tcpip.ErrNotSupported{}
}

// MinimumPacketSize implements stack.TransportProtocol.
func (*Protocol) MinimumPacketSize() int { return header.TCPMinimumSize }

// ParsePorts implements stack.TransportProtocol.
func (*Protocol) ParsePorts(b []byte) (src, dst uint16, err tcpip.Error) {
	h := header.TCP(b)
	return h.SourcePort(), h.DestinationPort(), nil
}

// SetOption implements stack.TransportProtocol. gVisor's TCP options are
// not netemu's: every one is refused.
func (*Protocol) SetOption(tcpip.SettableTransportProtocolOption) tcpip.Error {
	return &tcpip.ErrUnknownProtocolOption{}
}

// Option implements stack.TransportProtocol.
func (*Protocol) Option(tcpip.GettableTransportProtocolOption) tcpip.Error {
	return &tcpip.ErrUnknownProtocolOption{}
}

// Close implements stack.TransportProtocol: the stack is going away,
// and every connection and listener ends with it, at once and without a
// segment (the NIC is gone). The protocol has no goroutines of its own,
// but its connections' timers are the clock's: armed, on the real clock,
// they would keep the whole stack alive after it closed (TIME-WAIT's
// 60 s, a retransmission's minutes, keepalive's hours).
func (p *Protocol) Close() {
	p.mu.Lock()
	eps := make([]*endpoint, 0, len(p.conns)+len(p.listeners))
	for _, e := range p.conns {
		eps = append(eps, e)
	}
	for _, e := range p.listeners { // after their children, which leave them
		eps = append(eps, e)
	}
	p.mu.Unlock()
	for _, e := range eps { // no lock held: an endpoint's comes first
		e.abandon()
	}
}

// Wait implements stack.TransportProtocol.
func (*Protocol) Wait() {}

// Pause implements stack.TransportProtocol.
func (*Protocol) Pause() {}

// Resume implements stack.TransportProtocol.
func (*Protocol) Resume() {}

// Restore implements stack.TransportProtocol.
func (*Protocol) Restore() {}

// Parse implements stack.TransportProtocol: it sets the transport header
// (with its options) and leaves the payload as the packet's data.
func (*Protocol) Parse(pkt *stack.PacketBuffer) bool {
	hdr, ok := pkt.Data().PullUp(header.TCPMinimumSize)
	if !ok {
		return false
	}
	n := int(header.TCP(hdr).DataOffset())
	if n < header.TCPMinimumSize || n > pkt.Data().Size() {
		return false
	}
	_, ok = pkt.TransportHeader().Consume(n)
	return ok
}

// HandleUnknownDestinationPacket implements stack.TransportProtocol: every
// TCP packet arrives here. It verifies the checksum if the NIC did not,
// parses the segment and hands it to its connection or listener; a
// segment for neither is answered with a reset (RFC 9293 section 3.10.7.1).
func (p *Protocol) HandleUnknownDestinationPacket(id stack.TransportEndpointID, pkt *stack.PacketBuffer) stack.UnknownDestinationPacketDisposition {
	h := header.TCP(pkt.TransportHeader().Slice())
	if len(h) < header.TCPMinimumSize {
		return stack.UnknownDestinationPacketMalformed
	}
	payload, ok := pkt.Data().PullUp(pkt.Data().Size())
	if !ok {
		return stack.UnknownDestinationPacketMalformed
	}
	if !pkt.RXChecksumValidated {
		xsum := checksum.Checksum(payload, 0)
		if !h.IsChecksumValid(id.RemoteAddress, id.LocalAddress, xsum, uint16(len(payload))) {
			return stack.UnknownDestinationPacketMalformed
		}
	}
	p.HandleSegment(id, h, payload)
	return stack.UnknownDestinationPacketHandled
}

// HandleSegment takes a segment for this stack whose checksum is known to
// be good, as its TCP header h (at least header.TCPMinimumSize bytes, its
// options included) and its payload; both stay the caller's: the TCP
// copies what it keeps. It is HandleUnknownDestinationPacket without a
// gVisor packet buffer, for a receive path that has the packet's bytes.
func (p *Protocol) HandleSegment(id stack.TransportEndpointID, h header.TCP, payload []byte) {
	var s segment
	s.seq = seqnum.Value(h.SequenceNumber())
	s.ack = seqnum.Value(h.AckNumber())
	s.flags = h.Flags()
	s.wnd = h.WindowSize()
	s.payload = payload
	s.parseOptions(h.Options(), s.has(header.TCPFlagSyn))

	key := connKey{localPort: id.LocalPort, remotePort: id.RemotePort, remote: id.RemoteAddress}
	p.mu.Lock()
	ep := p.conns[key]
	if ep == nil {
		ep = p.listeners[id.LocalPort]
	}
	p.mu.Unlock()
	if ep != nil && ep.handle(id, &s) {
		return
	}
	p.replyReset(id, &s)
}

// replyReset answers a segment no connection takes, as Linux's
// tcp_v4_send_reset: never a reset to a reset; the reset's sequence
// number is the segment's ACK if it has one, else zero with an ACK of
// everything the segment occupied.
func (p *Protocol) replyReset(id stack.TransportEndpointID, s *segment) {
	if s.has(header.TCPFlagRst) {
		return
	}
	r, err := p.st.FindRoute(0, id.LocalAddress, id.RemoteAddress, ipv4.ProtocolNumber, false)
	if err != nil {
		return
	}
	defer r.Release()
	if s.has(header.TCPFlagAck) {
		p.writeSegment(r, id.LocalPort, id.RemotePort, s.ack, 0, header.TCPFlagRst, 0, nil, payload{})
		return
	}
	p.writeSegment(r, id.LocalPort, id.RemotePort, 0, s.seq.Add(s.length()), header.TCPFlagRst|header.TCPFlagAck, 0, nil, payload{})
}

// writeSegment builds a TCP segment with the given options and payload
// and sends it on r.
func (p *Protocol) writeSegment(r *stack.Route, src, dst uint16, seq, ack seqnum.Value, flags header.TCPFlags, wnd uint16, opts []byte, data payload) tcpip.Error {
	hdrLen := header.TCPMinimumSize + len(opts)
	if p.egress != nil && hdrLen+data.n <= int(r.MTU()) && p.egress.Direct(r.LocalAddress(), r.RemoteAddress()) {
		p.writeDirect(r, src, dst, seq, ack, flags, wnd, opts, data)
		return nil
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: hdrLen + int(r.MaxHeaderLength()),
		Payload:            data.buffer(),
	})
	defer pkt.DecRef()
	pkt.TransportProtocolNumber = ProtocolNumber
	h := header.TCP(pkt.TransportHeader().Push(hdrLen))
	encodeHeader(h, src, dst, seq, ack, flags, wnd, opts)
	length := uint16(pkt.Size())
	xsum := checksum.Combine(r.PseudoHeaderChecksum(ProtocolNumber, length), pkt.Data().Checksum())
	h.SetChecksum(^h.CalculateChecksum(xsum))
	// DF, as Linux sends TCP with path-MTU discovery on (ip_no_pmtu_disc 0).
	return r.WritePacket(stack.NetworkHeaderParams{Protocol: ProtocolNumber, TTL: r.DefaultTTL(), DF: true}, pkt)
}

// encodeHeader writes a TCP header with opts into h, its checksum 0.
func encodeHeader(h header.TCP, src, dst uint16, seq, ack seqnum.Value, flags header.TCPFlags, wnd uint16, opts []byte) {
	hdrLen := header.TCPMinimumSize + len(opts)
	h.Encode(&header.TCPFields{
		SrcPort: src, DstPort: dst,
		SeqNum: uint32(seq), AckNum: uint32(ack),
		DataOffset: uint8(hdrLen),
		Flags:      flags,
		WindowSize: wnd,
	})
	copy(h[header.TCPMinimumSize:hdrLen], opts)
}

// packetScratch holds the buffers writeDirect builds packets in.
var packetScratch = sync.Pool{New: func() any { return new([]byte) }}

// writeDirect is writeSegment through the egress: the packet gVisor's
// IPv4 path would build (ipv4 addIPHeader: no options, DF and so an ID
// of 0, the route's TTL, TOS 0), built whole and handed over at once.
func (p *Protocol) writeDirect(r *stack.Route, src, dst uint16, seq, ack seqnum.Value, flags header.TCPFlags, wnd uint16, opts []byte, data payload) {
	hdrLen := header.TCPMinimumSize + len(opts)
	size := header.IPv4MinimumSize + hdrLen + data.n
	bp := packetScratch.Get().(*[]byte)
	defer packetScratch.Put(bp)
	if cap(*bp) < size {
		*bp = make([]byte, size)
	}
	b := (*bp)[:size]
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(size),
		Flags:       header.IPv4FlagDontFragment,
		TTL:         r.DefaultTTL(),
		Protocol:    uint8(ProtocolNumber),
		SrcAddr:     r.LocalAddress(),
		DstAddr:     r.RemoteAddress(),
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	h := header.TCP(b[header.IPv4MinimumSize:])
	encodeHeader(h, src, dst, seq, ack, flags, wnd, opts)
	data.copyTo(h[hdrLen:])
	xsum := header.PseudoHeaderChecksum(ProtocolNumber, r.LocalAddress(), r.RemoteAddress(), uint16(len(h)))
	h.SetChecksum(^checksum.Checksum(h, xsum))
	p.egress.Send(b)
}

// pickPort reserves an ephemeral port for a connection to remote:
// Linux walks its range from a random offset; netemu's offset comes from
// the seed. p.mu is held.
func (p *Protocol) pickPortLocked() (uint16, bool) {
	for range ephemeralHigh - ephemeralLow + 1 {
		port := p.nextPort
		p.nextPort++
		if p.nextPort > ephemeralHigh {
			p.nextPort = ephemeralLow
		}
		if p.bound[port] == 0 {
			return port, true
		}
	}
	return 0, false
}

// isn draws an initial sequence number.
func (p *Protocol) isn() seqnum.Value {
	p.mu.Lock()
	defer p.mu.Unlock()
	return seqnum.Value(p.rng.Uint32())
}

// tsOffset draws a connection's timestamp offset (Linux randomises it per
// connection, tcp_v4_init_ts_off).
func (p *Protocol) tsOffset() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Uint32()
}

// randBelow draws a number in [0, n) for a connection's congestion
// control (get_random_u32_below: BBR's PROBE_BW phase), from the
// protocol's generator, which the host's seed seeds: a run on the
// virtual clock draws the same numbers in the same order every time.
func (p *Protocol) randBelow(n uint32) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Uint32N(n)
}
