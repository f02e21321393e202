package tcpstack

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	randv2 "math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/internal/english"
	"github.com/netemu/netemu/link"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	netemutcp "github.com/netemu/netemu/tcp"
)

// CongestionControl names a congestion-control algorithm, by the name of
// package tcp's registry (tcp.CongestionControls).
type CongestionControl string

// The congestion controls both TCPs run, by name (netemu's runs bbr
// too).
const (
	Cubic CongestionControl = "cubic"
	Reno  CongestionControl = "reno"
)

// DefaultCongestionControl is the congestion control a host runs when its
// TCPConfig leaves it "": the registry's default, cubic.
const DefaultCongestionControl CongestionControl = netemutcp.DefaultCongestionControl

// gVisorCongestionControls are the congestion controls gVisor's TCP has
// (its transport/tcp registers cubic and reno, nothing else): a fact about
// gVisor, in the registry's order.
var gVisorCongestionControls = []CongestionControl{Cubic, Reno}

// CongestionControls returns the names of the congestion controls i runs,
// in the registry's order: for Netemu those package tcp's registry says it
// runs, for GVisor gVisor's two; none for an unknown Impl. "" is
// DefaultImpl.
func (i Impl) CongestionControls() []CongestionControl {
	switch i.OrDefault() {
	case Netemu:
		var out []CongestionControl
		for _, c := range netemutcp.CongestionControls() {
			if c.Runs() {
				out = append(out, CongestionControl(c.Name))
			}
		}
		return out
	case GVisor:
		return slices.Clone(gVisorCongestionControls)
	}
	return nil
}

// CongestionControlChoices lists the congestion controls i runs for a
// message: "cubic or reno".
func (i Impl) CongestionControlChoices() string {
	return english.Or(names(i.CongestionControls(), "%s")...)
}

// title names i in a sentence: "netemu's TCP", "gVisor".
func (i Impl) title() string {
	if i == GVisor {
		return "gVisor"
	}
	return "netemu's TCP"
}

// runs reports whether i runs cc.
func (i Impl) runs(cc CongestionControl) bool {
	return slices.Contains(i.CongestionControls(), cc)
}

// names writes each of ccs as verb formats it, for a message.
func names(ccs []CongestionControl, verb string) []string {
	out := make([]string, len(ccs))
	for k, cc := range ccs {
		out[k] = fmt.Sprintf(verb, cc)
	}
	return out
}

// Impl names a TCP implementation: the transport protocol registered
// with the host's gVisor stack.
type Impl string

// TCP implementations.
const (
	// GVisor is gVisor's own TCP (gvisor.dev/gvisor/pkg/tcpip/transport/tcp).
	GVisor Impl = "gvisor"
	// Netemu is netemu's TCP (package tcp): Linux's algorithms, run on the
	// run's clock without goroutines of its own.
	Netemu Impl = "netemu"
)

// DefaultImpl is the TCP a host runs when its TCPConfig leaves Impl "".
const DefaultImpl = Netemu

// Impls lists the implementations, the default first.
var Impls = []Impl{DefaultImpl, GVisor}

// OrDefault is i, or DefaultImpl where i is "".
func (i Impl) OrDefault() Impl {
	if i == "" {
		return DefaultImpl
	}
	return i
}

// Prefix is the network emulated hosts live in: 198.18.0.0/15, reserved
// for benchmarks (RFC 2544).
var Prefix = netip.MustParsePrefix("198.18.0.0/15")

// Config describes a host. The zero value is not valid: Addr and Clock are
// required.
type Config struct {
	// Addr is the host's IPv4 address, inside Prefix.
	Addr netip.Addr

	// Clock is the run's clock; every timer of the stack uses it.
	Clock clock.Clock

	// MTU is the NIC's MTU in bytes. 0 means 1500.
	MTU int

	// TCP settings; see TCPConfig.
	TCP TCPConfig

	// Seed seeds the stack's randomness (initial sequence numbers,
	// timestamp offsets, ephemeral ports). Equal seeds give equal runs.
	Seed uint64

	// Probe, if set, receives the sender state of every connection each
	// time the connection processes a segment. It runs inside the stack:
	// it must be quick and must not call the host, and on the virtual
	// clock it runs in a quiet event (clock.QuietTimers): a probe that
	// readies a goroutine calls clock.Stir first.
	Probe func(Sample)

	// VerifyChecksums makes the host check the IP and TCP checksums of
	// every packet it receives and discard those that fail, as a kernel
	// does. Set it when the link may corrupt packets; false skips the
	// check (the link delivers packets intact).
	VerifyChecksums bool
}

// TCPConfig pins the TCP settings of a host. Zero fields take the defaults
// documented on each field, which are chosen to be close to Linux's.
type TCPConfig struct {
	// Impl is the TCP implementation: Netemu or GVisor. "" means
	// DefaultImpl, Netemu.
	// netemu's TCP delays its own ACKs as a Linux receiver does, so the
	// link's delayed-ACK stage is for gVisor's TCP only.
	Impl Impl

	// CongestionControl is one Impl runs (Impl.CongestionControls):
	// cubic, reno or bbr with Netemu, cubic or reno with GVisor. ""
	// means DefaultCongestionControl, cubic (Linux's usual default;
	// gVisor's own default is Reno).
	CongestionControl CongestionControl

	// SendBuffer is the initial send buffer in bytes and ReceiveBuffer
	// the initial receive buffer; MaxSendBuffer and MaxReceiveBuffer
	// bound them. Zero fields take the implementation's defaults. With
	// Netemu they are Linux's tcp_wmem and tcp_rmem (16 KiB rising to
	// 4 MiB, 128 KiB rising to 32 MiB; package tcp's DefaultSendBuffer
	// and the rest), buffers are memory as Linux counts it, and a
	// maximum left 0 grows to the initial size. With GVisor they are
	// 1 MiB each, bounded by 4 MiB, and only receive buffers auto-tune.
	SendBuffer, ReceiveBuffer       int
	MaxSendBuffer, MaxReceiveBuffer int

	// SACK, RACK loss detection and tail-loss probes are always on, as on
	// Linux (see setTCPOptions). Nagle's algorithm is off by default on
	// every connection, as with Go's net package; Conn.SetNoDelay(false)
	// turns it on.
}

func (c TCPConfig) withDefaults() TCPConfig {
	c.Impl = c.Impl.OrDefault()
	if c.Impl == Netemu {
		// Linux's defaults, as netemu's TCP takes them.
		o := netemutcp.Options{CongestionControl: string(c.CongestionControl),
			SendBuffer: c.SendBuffer, MaxSendBuffer: c.MaxSendBuffer,
			ReceiveBuffer: c.ReceiveBuffer, MaxReceiveBuffer: c.MaxReceiveBuffer}.WithDefaults()
		c.CongestionControl = CongestionControl(o.CongestionControl)
		c.SendBuffer, c.MaxSendBuffer = o.SendBuffer, o.MaxSendBuffer
		c.ReceiveBuffer, c.MaxReceiveBuffer = o.ReceiveBuffer, o.MaxReceiveBuffer
		return c
	}
	if c.CongestionControl == "" {
		c.CongestionControl = DefaultCongestionControl
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = tcp.DefaultSendBufferSize
	}
	if c.ReceiveBuffer == 0 {
		c.ReceiveBuffer = tcp.DefaultReceiveBufferSize
	}
	if c.MaxSendBuffer == 0 {
		c.MaxSendBuffer = tcp.MaxBufferSize
	}
	if c.MaxReceiveBuffer == 0 {
		c.MaxReceiveBuffer = tcp.MaxBufferSize
	}
	return c
}

// Validate reports the first invalid field.
func (c TCPConfig) Validate() error {
	d := c.withDefaults()
	if d.Impl != GVisor && d.Impl != Netemu {
		return fmt.Errorf("tcpstack: Impl %q is unknown; want %q or %q (\"\" means %q)", c.Impl, Netemu, GVisor, DefaultImpl)
	}
	if !d.Impl.runs(d.CongestionControl) {
		return fmt.Errorf("tcpstack: CongestionControl %q is unknown; want %s (\"\" means %q)", c.CongestionControl, english.Or(names(d.Impl.CongestionControls(), "%q")...), DefaultCongestionControl)
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"SendBuffer", c.SendBuffer}, {"ReceiveBuffer", c.ReceiveBuffer}, {"MaxSendBuffer", c.MaxSendBuffer}, {"MaxReceiveBuffer", c.MaxReceiveBuffer}} {
		if b.v < 0 || (b.v > 0 && b.v < tcp.MinBufferSize) {
			return fmt.Errorf("tcpstack: %s is %d bytes; want at least %d (0 means the default)", b.name, b.v, tcp.MinBufferSize)
		}
	}
	switch {
	case d.SendBuffer > d.MaxSendBuffer:
		return fmt.Errorf("tcpstack: SendBuffer (%d bytes) exceeds its maximum, MaxSendBuffer (%d); raise MaxSendBuffer or lower SendBuffer", d.SendBuffer, d.MaxSendBuffer)
	case d.ReceiveBuffer > d.MaxReceiveBuffer:
		return fmt.Errorf("tcpstack: ReceiveBuffer (%d bytes) exceeds its maximum, MaxReceiveBuffer (%d); raise MaxReceiveBuffer or lower ReceiveBuffer", d.ReceiveBuffer, d.MaxReceiveBuffer)
	}
	return nil
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case !c.Addr.Is4() || !Prefix.Contains(c.Addr):
		return fmt.Errorf("tcpstack: Addr %v is not an IPv4 address in %v; pick one like 198.18.0.1", c.Addr, Prefix)
	case c.Clock == nil:
		return fmt.Errorf("tcpstack: Config.Clock is nil; give the run's clock")
	case c.MTU != 0 && (c.MTU < link.MinMTU || c.MTU > link.MaxMTU):
		return fmt.Errorf("tcpstack: MTU %d out of range; want %d to %d bytes (0 means %d)", c.MTU, link.MinMTU, link.MaxMTU, link.DefaultMTU)
	}
	return c.TCP.Validate()
}

// Host is an emulated TCP/IP host.
type Host struct {
	cfg   Config
	stack *stack.Stack
	ep    *nicEndpoint
	clk   *gclock

	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

const nicID = 1

// New builds a host. send receives every packet the host emits, as raw
// IPv4 bytes valid only during the call; it must not block.
func New(cfg Config, send func(pkt []byte)) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if send == nil {
		return nil, fmt.Errorf("tcpstack: New needs a send function to receive the packets the host emits")
	}
	if cfg.MTU == 0 {
		cfg.MTU = link.DefaultMTU
	}
	cfg.TCP = cfg.TCP.withDefaults()
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], cfg.Seed)
	binary.LittleEndian.PutUint32(seed[8:], binary.BigEndian.Uint32(cfg.Addr.AsSlice()))
	gclk := newGClock(cfg.Clock)
	tcpFactory := tcpProtocol(cfg)
	if cfg.TCP.Impl == Netemu {
		tcpFactory = netemuProtocol(cfg)
	}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcpFactory, udp.NewProtocol},
		Clock:              gclk,
		// gVisor reads both from many goroutines; neither source is safe
		// for that on its own.
		RandSource: &lockedSource{src: rand.NewSource(int64(cfg.Seed ^ uint64(binary.BigEndian.Uint32(cfg.Addr.AsSlice()))))},
		SecureRNG:  &lockedReader{r: randv2.NewChaCha8(seed)},
	})
	h := &Host{cfg: cfg, stack: s, clk: gclk, done: make(chan struct{})}
	if err := h.setTCPOptions(); cfg.TCP.Impl == GVisor && err != nil {
		s.Destroy()
		return nil, err
	}
	h.ep = &nicEndpoint{mtu: uint32(cfg.MTU), send: send, verify: cfg.VerifyChecksums}
	if cfg.TCP.Impl != Netemu {
		// gVisor's TCP hands a segment to goroutines of its own.
		h.ep.stirs = cfg.Clock
	}
	if err := s.CreateNICWithOptions(nicID, h.ep, stack.NICOptions{QDisc: directQDisc{h.ep}}); err != nil {
		s.Destroy()
		return nil, &Error{Op: "create NIC", Err: err}
	}
	addr := tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(cfg.Addr.As4()), PrefixLen: Prefix.Bits()},
	}
	if err := s.AddProtocolAddress(nicID, addr, stack.AddressProperties{}); err != nil {
		s.Destroy()
		return nil, &Error{Op: "add address", Err: err}
	}
	subnet := addr.AddressWithPrefix.Subnet()
	s.SetRouteTable([]tcpip.Route{{Destination: subnet, NIC: nicID}})
	if h.ep.direct = newDirect(s, cfg, h.ep); h.ep.direct != nil {
		h.ep.direct.proto.SetEgress(h.ep.direct)
	}
	return h, nil
}

func (h *Host) setTCPOptions() error {
	t := h.cfg.TCP
	opts := []tcpip.SettableTransportProtocolOption{
		func() *tcpip.CongestionControlOption {
			o := tcpip.CongestionControlOption(t.CongestionControl)
			return &o
		}(),
		func() *tcpip.TCPSACKEnabled { o := tcpip.TCPSACKEnabled(true); return &o }(),
		func() *tcpip.TCPDelayEnabled { o := tcpip.TCPDelayEnabled(false); return &o }(),
		// RACK loss detection and tail-loss probes, as Linux has them;
		// the host's monotonic clock keeps segments' send times distinct,
		// which gVisor's RACK needs (gclock.NowMonotonic).
		func() *tcpip.TCPRecovery { o := tcpip.TCPRACKLossDetection; return &o }(),
		func() *tcpip.TCPModerateReceiveBufferOption {
			o := tcpip.TCPModerateReceiveBufferOption(true)
			return &o
		}(),
		&tcpip.TCPSendBufferSizeRangeOption{Min: tcp.MinBufferSize, Default: t.SendBuffer, Max: t.MaxSendBuffer},
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: tcp.MinBufferSize, Default: t.ReceiveBuffer, Max: t.MaxReceiveBuffer},
	}
	for _, o := range opts {
		if err := h.stack.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			return &Error{Op: fmt.Sprintf("set TCP option %T", o), Err: err}
		}
	}
	return nil
}

// Addr returns the host's address.
func (h *Host) Addr() netip.Addr { return h.cfg.Addr }

// AddrPort returns the host's address with port.
func (h *Host) AddrPort(port uint16) netip.AddrPort { return netip.AddrPortFrom(h.cfg.Addr, port) }

// Clock returns the host's clock.
func (h *Host) Clock() clock.Clock { return h.cfg.Clock }

// TCP returns the host's TCP settings with defaults filled in.
func (h *Host) TCP() TCPConfig { return h.cfg.TCP }

// Stack returns the underlying gVisor stack, for inspection. With
// netemu's TCP, inbound TCP segments skip gVisor's IPv4 receive path
// (its counters still count them): iptables rules set through the stack
// do not see them.
func (h *Host) Stack() *stack.Stack { return h.stack }

// Deliver hands the host an IPv4 packet that arrived from the link. The
// host copies it.
func (h *Host) Deliver(pkt []byte) {
	h.ep.deliver(pkt)
}

// Close aborts every connection and stops the stack's goroutines. It is
// idempotent and waits for them.
func (h *Host) Close() {
	h.closeOnce.Do(func() {
		close(h.done)
		h.ep.detach()
		h.stack.Destroy()
	})
}

// nicEndpoint is the stack's link endpoint: outbound packets go to send,
// inbound ones come through deliver. It has no link-layer header.
//
// Both directions run once per packet: the endpoint's state is read with
// atomic loads, and an outbound packet is gathered into a reused buffer
// (send copies what it keeps), or goes out without a copy if it lies in
// one view (docs/PERFORMANCE.md).
type nicEndpoint struct {
	mtu    uint32
	send   func([]byte)
	verify bool // check checksums on receive

	dispatcher atomic.Pointer[dispatcherRef] // nil until Attach
	closed     atomic.Bool
	scratch    sync.Pool // *[]byte of capacity mtu

	// direct, if not nil, takes the TCP segments of netemu's TCP past
	// gVisor's IPv4 receive path (direct.go). Set once, before traffic.
	direct *direct
	// stirs, if not nil, is the clock to stir (clock.QuietTimers) before
	// a packet takes gVisor's receive path, which readies goroutines of
	// the stack's own; where the host's TCP is netemu's that path runs
	// inline, and readies waiting goroutines only through the clock's
	// Wake. Set once, before traffic.
	stirs clock.Clock
}

type dispatcherRef struct{ d stack.NetworkDispatcher }

func (e *nicEndpoint) deliver(b []byte) {
	r := e.dispatcher.Load()
	if r == nil || r.d == nil || len(b) < header.IPv4MinimumSize {
		return
	}
	if e.direct != nil && !e.closed.Load() && e.direct.deliver(b) {
		return
	}
	if e.stirs != nil {
		clock.Stir(e.stirs)
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	r.d.DeliverNetworkPacket(header.IPv4ProtocolNumber, pkt)
	pkt.DecRef()
}

func (e *nicEndpoint) detach() { e.closed.Store(true) }

// WritePackets sends each packet as contiguous bytes.
func (e *nicEndpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	n := 0
	for _, pkt := range pkts.AsSlice() {
		if !e.closed.Load() {
			e.writePacket(pkt)
		}
		n++
	}
	return n, nil
}

func (e *nicEndpoint) writePacket(pkt *stack.PacketBuffer) {
	views, off := pkt.AsViewList()
	size := pkt.Size()
	// The packet starts off bytes into the first views.
	v := views.Front()
	for v != nil && off >= v.Size() {
		off -= v.Size()
		v = v.Next()
	}
	if v == nil {
		return // an empty packet: nothing to send
	}
	if s := v.AsSlice()[off:]; len(s) >= size {
		e.send(s[:size])
		return
	}
	bp, _ := e.scratch.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 0, e.mtu)
		bp = &b
	}
	b := (*bp)[:0]
	for ; v != nil && len(b) < size; v = v.Next() {
		b = append(b, v.AsSlice()[off:]...)
		off = 0
	}
	e.send(b[:min(len(b), size)])
	*bp = b[:0]
	e.scratch.Put(bp)
}

// directQDisc hands each packet to the NIC as it is written. gVisor's
// stand-in for no queueing discipline wraps every packet in a list on the
// heap; this one does not.
type directQDisc struct{ e *nicEndpoint }

var _ stack.QueueingDiscipline = directQDisc{}

// WritePacket implements stack.QueueingDiscipline.
func (q directQDisc) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	if !q.e.closed.Load() {
		q.e.writePacket(pkt)
	}
	return nil
}

// Close implements stack.QueueingDiscipline.
func (directQDisc) Close() {}

// nicEndpoint is the host's one NIC: a stack.LinkEndpoint whose packets
// go to the link and come from it. The methods below implement
// stack.LinkEndpoint.
var _ stack.LinkEndpoint = (*nicEndpoint)(nil)

func (e *nicEndpoint) Attach(d stack.NetworkDispatcher) {
	e.dispatcher.Store(&dispatcherRef{d})
}

func (e *nicEndpoint) IsAttached() bool {
	r := e.dispatcher.Load()
	return r != nil && r.d != nil
}

func (e *nicEndpoint) MTU() uint32                           { return e.mtu }
func (e *nicEndpoint) SetMTU(mtu uint32)                     {}
func (*nicEndpoint) Wait()                                   {}
func (*nicEndpoint) MaxHeaderLength() uint16                 { return 0 }
func (*nicEndpoint) LinkAddress() tcpip.LinkAddress          { return "" }
func (*nicEndpoint) SetLinkAddress(tcpip.LinkAddress)        {}
func (*nicEndpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareNone }
func (*nicEndpoint) AddHeader(*stack.PacketBuffer)           {}
func (*nicEndpoint) ParseHeader(*stack.PacketBuffer) bool    { return true }
func (*nicEndpoint) Close()                                  {}
func (*nicEndpoint) SetOnCloseAction(func())                 {}

// Checksums are computed on transmit (captures stay valid), and verified
// on receive only when the link may corrupt a packet (Config.VerifyChecksums).
func (e *nicEndpoint) Capabilities() stack.LinkEndpointCapabilities {
	if e.verify {
		return 0
	}
	return stack.CapabilityRXChecksumOffload
}

// gclock adapts a clock.Clock to gVisor's tcpip.Clock. Monotonic time
// counts from one second before the host was created: gVisor reads a zero
// MonotonicTime as "unset".
//
// gVisor reads the monotonic clock several times per segment, so clocks
// that offer a cheaper reading get it: a clock.Sequential's Elapsed (one
// atomic load on the virtual clock), else a clock.Monotonic's Since (the
// runtime's monotonic clock only, on the real clock).
type gclock struct {
	c    clock.Clock
	base time.Time

	seq   clock.Sequential // nil unless the clock is one
	sbase time.Duration    // seq.Elapsed() at base
	mono  clock.Monotonic  // nil unless the clock is one
	last  atomic.Int64     // the last monotonic reading, nanoseconds

	onRead atomic.Pointer[func()] // tests: called on every monotonic read
	ties   atomic.Bool            // tests: allow equal readings, as gVisor's own clocks do
}

var _ tcpip.Clock = (*gclock)(nil)

func newGClock(c clock.Clock) *gclock {
	g := &gclock{c: c, base: c.Now().Add(-time.Second)}
	if s, ok := c.(clock.Sequential); ok {
		g.seq, g.sbase = s, g.base.Sub(clock.Epoch)
	} else if m, ok := c.(clock.Monotonic); ok {
		g.mono = m
	}
	return g
}

func (g *gclock) Now() time.Time { return g.c.Now() }

// NowMonotonic never returns the same instant twice: a read at the same
// instant as the last one gets the next nanosecond. gVisor's RACK
// (rack.go, detectLoss) orders segments sent at one instant the wrong way
// round (docs/UPSTREAM.md), and on the virtual clock a burst is sent at
// one instant; distinct times give RFC 8985's order. The offsets depend
// only on the order of this host's reads, which the virtual scheduler
// keeps fixed: one event at a time, and within an event one goroutine of
// the host at a time (TestMonotonicReadsAreSequential checks it).
func (g *gclock) NowMonotonic() tcpip.MonotonicTime {
	if f := g.onRead.Load(); f != nil {
		(*f)()
	}
	var t time.Duration
	switch {
	case g.seq != nil:
		t = g.seq.Elapsed() - g.sbase
	case g.mono != nil:
		t = g.mono.Since(g.base)
	default:
		t = g.c.Now().Sub(g.base)
	}
	if g.ties.Load() {
		return tcpip.MonotonicTime{}.Add(t)
	}
	for {
		last := g.last.Load()
		next := max(int64(t), last+1)
		if g.last.CompareAndSwap(last, next) {
			return tcpip.MonotonicTime{}.Add(time.Duration(next))
		}
	}
}

func (g *gclock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	return gtimer{g.c.AfterFunc(d, f)}
}

// gtimer adapts clock.Timer to tcpip.Timer, whose Reset returns nothing.
type gtimer struct{ t clock.Timer }

var _ tcpip.Timer = gtimer{}

func (g gtimer) Stop() bool            { return g.t.Stop() }
func (g gtimer) Reset(d time.Duration) { g.t.Reset(d) }

// Error is a gVisor error with the operation that produced it.
type Error struct {
	Op  string
	Err tcpip.Error
}

func (e *Error) Error() string { return "tcpstack: " + e.Op + ": " + e.Err.String() }

// lockedSource is a math/rand source safe for concurrent use.
type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (s *lockedSource) Int63() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Int63()
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.(rand.Source64).Uint64()
}

func (s *lockedSource) Seed(seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src.Seed(seed)
}

// lockedReader is an io.Reader safe for concurrent use.
type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}
