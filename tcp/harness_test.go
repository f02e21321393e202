package tcp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/clock/clocktest"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"
)

// The segment-level harness: a real gVisor stack with netemu's TCP on a
// manual clock, behind a link endpoint that captures every segment the
// stack emits with its instant and lets a test inject crafted segments
// from a peer. Nothing runs by itself: time moves only in advance, which
// fires the timers due in order, each at its own instant.

// out is one segment the stack emitted.
type out struct {
	at      time.Duration // on the harness clock, from its start
	flags   header.TCPFlags
	seq     seqnum.Value
	ack     seqnum.Value
	wnd     uint16
	payload []byte
	rawOpts []byte
	syn     header.TCPSynOptions // SYN and SYN-ACK only
	opts    header.TCPOptions    // other segments
	srcPort uint16
	dstPort uint16
}

func (o out) String() string {
	s := fmt.Sprintf("%v %v seq=%d ack=%d wnd=%d len=%d", o.at, o.flags, o.seq, o.ack, o.wnd, len(o.payload))
	if len(o.opts.SACKBlocks) > 0 {
		s += fmt.Sprintf(" sack=%v", o.opts.SACKBlocks)
	}
	return s
}

func (o out) has(f header.TCPFlags) bool { return o.flags&f != 0 }

// segEnd is where a segment's data ends.
func segEnd(o out) seqnum.Value { return o.seq.Add(seqnum.Size(len(o.payload))) }

// harness is one host running netemu's TCP, 10.0.0.1, and a test playing
// the peer, 10.0.0.2.
type harness struct {
	t     *testing.T
	clk   *clocktest.Manual
	proto *Protocol
	st    *stack.Stack
	link  *channel.Endpoint
	outs  []out

	handshakeRTT time.Duration // how long accept's peer takes to ACK the SYN-ACK
}

var (
	localAddr = tcpip.AddrFrom4([4]byte{10, 0, 0, 1})
	peerAddr  = tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
)

// newHarness builds the host; opts.Clock is set by the harness.
func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, clk: &clocktest.Manual{}}
	opts.Clock = h.clk
	factory := NewProtocol(opts)
	h.st = stack.New(stack.Options{
		NetworkProtocols: []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{func(s *stack.Stack) stack.TransportProtocol {
			p := factory(s)
			h.proto = p.(*Protocol)
			return p
		}},
	})
	h.link = channel.New(4096, 1500, "")
	if err := h.st.CreateNIC(1, h.link); err != nil {
		t.Fatalf("CreateNIC: %v", err)
	}
	if err := h.st.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: localAddr.WithPrefix()}, stack.AddressProperties{}); err != nil {
		t.Fatalf("AddProtocolAddress: %v", err)
	}
	h.st.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: 1}})
	t.Cleanup(func() {
		h.link.Close()
		h.st.Close()
		h.st.Wait()
	})
	return h
}

// now is the harness clock's time from its start.
func (h *harness) now() time.Duration { return h.clk.At() }

// collect moves what the stack emitted into h.outs, stamped now.
func (h *harness) collect() {
	for {
		pkt := h.link.Read()
		if pkt == nil {
			return
		}
		b := pkt.ToView().AsSlice()
		ip := header.IPv4(b)
		if ip.More() || ip.FragmentOffset() != 0 || len(b) > 1500 {
			h.t.Fatalf("the stack emitted an IP fragment or a packet over the MTU: %d bytes, offset %d, more fragments %v", len(b), ip.FragmentOffset(), ip.More())
		}
		tb := ip.Payload()
		tc := header.TCP(tb)
		o := out{
			at: h.now(), flags: tc.Flags(),
			seq: seqnum.Value(tc.SequenceNumber()), ack: seqnum.Value(tc.AckNumber()),
			wnd: tc.WindowSize(), payload: bytes.Clone(tc.Payload()), rawOpts: bytes.Clone(tc.Options()),
			srcPort: tc.SourcePort(), dstPort: tc.DestinationPort(),
		}
		xsum := checksum.Checksum(tc.Payload(), 0)
		if !tc.IsChecksumValid(ip.SourceAddress(), ip.DestinationAddress(), xsum, uint16(len(tc.Payload()))) {
			h.t.Errorf("segment %v has a bad checksum", o)
		}
		if o.has(header.TCPFlagSyn) {
			o.syn = header.ParseSynOptions(o.rawOpts, o.has(header.TCPFlagAck))
		} else {
			o.opts = header.ParseTCPOptions(o.rawOpts)
		}
		pkt.DecRef()
		h.outs = append(h.outs, o)
	}
}

// take returns the segments emitted since the last take.
func (h *harness) take() []out {
	h.collect()
	o := h.outs
	h.outs = nil
	return o
}

// takeOne returns the one segment emitted since the last take.
func (h *harness) takeOne() out {
	h.t.Helper()
	o := h.take()
	if len(o) != 1 {
		h.t.Fatalf("the stack emitted %d segments; want 1:\n%s", len(o), outsString(o))
	}
	return o[0]
}

// none checks that the stack emitted nothing.
func (h *harness) none(why string) {
	h.t.Helper()
	if o := h.take(); len(o) > 0 {
		h.t.Fatalf("%s: the stack emitted %d segments; want none:\n%s", why, len(o), outsString(o))
	}
}

func outsString(o []out) string {
	var b strings.Builder
	for _, s := range o {
		b.WriteString("\t" + s.String() + "\n")
	}
	return b.String()
}

// advance moves time on by d, firing each timer due on the way at its
// own instant, and collecting what each emits.
func (h *harness) advance(d time.Duration) {
	h.collect()
	limit := h.now() + d
	for h.clk.Step(limit) {
		h.collect()
	}
	h.clk.Advance(limit - h.now())
}

// advanceUntilOut moves time until the stack emits something (at most
// limit) and returns what it emitted.
func (h *harness) advanceUntilOut(limit time.Duration) []out {
	h.t.Helper()
	h.collect()
	if len(h.outs) > 0 {
		return h.take()
	}
	end := h.now() + limit
	for {
		due, ok := h.clk.Pending()
		if !ok || due > end {
			h.advance(end - h.now())
			return h.take()
		}
		h.advance(due - h.now())
		if len(h.outs) > 0 {
			return h.take()
		}
	}
}

// seg is a segment for the peer to inject.
type seg struct {
	srcPort, dstPort uint16
	flags            header.TCPFlags
	seq, ack         seqnum.Value
	wnd              uint16
	opts             []byte
	payload          []byte
	badChecksum      bool
}

// inject delivers s to the stack as if from the peer.
func (h *harness) inject(s seg) {
	opts := s.opts
	for len(opts)%4 != 0 {
		opts = append(opts, header.TCPOptionNOP)
	}
	tcpLen := header.TCPMinimumSize + len(opts)
	total := header.IPv4MinimumSize + tcpLen + len(s.payload)
	b := make([]byte, total)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(total), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
		SrcAddr: peerAddr, DstAddr: localAddr,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	tc := header.TCP(b[header.IPv4MinimumSize:])
	tc.Encode(&header.TCPFields{
		SrcPort: s.srcPort, DstPort: s.dstPort, SeqNum: uint32(s.seq), AckNum: uint32(s.ack),
		DataOffset: uint8(tcpLen), Flags: s.flags, WindowSize: s.wnd,
	})
	copy(tc[header.TCPMinimumSize:], opts)
	copy(tc[tcpLen:], s.payload)
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, peerAddr, localAddr, uint16(tcpLen+len(s.payload)))
	xsum = checksum.Checksum(s.payload, xsum)
	tc.SetChecksum(^tc.CalculateChecksum(xsum))
	if s.badChecksum {
		tc.SetChecksum(tc.Checksum() ^ 0x0100)
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	h.link.InjectInbound(ipv4.ProtocolNumber, pkt)
	pkt.DecRef()
	h.collect()
}

// Option builders for injected segments.

func optMSS(v uint16) []byte { return []byte{header.TCPOptionMSS, 4, byte(v >> 8), byte(v)} }
func optWS(v int) []byte     { return []byte{header.TCPOptionNOP, header.TCPOptionWS, 3, byte(v)} }
func optSACKPerm() []byte {
	return []byte{header.TCPOptionNOP, header.TCPOptionNOP, header.TCPOptionSACKPermitted, 2}
}
func optTS(val, ecr uint32) []byte {
	b := []byte{header.TCPOptionNOP, header.TCPOptionNOP, header.TCPOptionTS, 10, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[4:], val)
	binary.BigEndian.PutUint32(b[8:], ecr)
	return b
}
func optSACK(blocks ...seqnum.Value) []byte {
	b := []byte{header.TCPOptionNOP, header.TCPOptionNOP, header.TCPOptionSACK, byte(2 + 4*len(blocks))}
	for _, v := range blocks {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// peerOpts is what the peer offers in its SYN.
type peerOpts struct {
	mss    uint16 // 0: none
	ws     int    // -1: none
	sack   bool
	ts     bool
	window uint16
}

var linuxPeer = peerOpts{mss: 1460, ws: 7, sack: true, ts: true, window: 64240}

func (p peerOpts) synOpts(tsval, tsecr uint32) []byte {
	var b []byte
	if p.mss != 0 {
		b = append(b, optMSS(p.mss)...)
	}
	if p.sack {
		b = append(b, optSACKPerm()...)
	}
	if p.ts {
		b = append(b, optTS(tsval, tsecr)...)
	}
	if p.ws >= 0 {
		b = append(b, optWS(p.ws)...)
	}
	return b
}

// conn is one connection of the harness host, with the peer's side of
// it kept by the test.
type conn struct {
	h          *harness
	ep         tcpip.Endpoint
	wq         *waiter.Queue
	port, peer uint16 // the host's port and the peer's

	p        peerOpts
	sndNxt   seqnum.Value // the peer's next sequence number
	rcvNxt   seqnum.Value // what the peer acknowledges
	tsRecent uint32       // the host's last TSval, which the peer echoes
	seen     seqnum.Value // the end of the highest segment the peer saw
	hostWS   int          // the shift the host announced
}

// peerTS is the peer's timestamp clock: milliseconds plus an offset.
func (h *harness) peerTS() uint32 { return uint32(h.now()/time.Millisecond) + 1_000_000 }

// opts returns the peer's options for an established segment.
func (c *conn) opts(extra ...[]byte) []byte {
	var b []byte
	if c.p.ts {
		b = optTS(c.h.peerTS(), c.tsRecent)
	}
	for _, e := range extra {
		b = append(b, e...)
	}
	return b
}

// send injects a segment from the peer at its current sequence number,
// acknowledging what it has received, and advances its sequence number.
func (c *conn) send(flags header.TCPFlags, payload []byte, extra ...[]byte) {
	c.sendAt(c.sndNxt, flags, payload, extra...)
	n := seqnum.Size(len(payload))
	if flags&(header.TCPFlagSyn|header.TCPFlagFin) != 0 {
		n++
	}
	if end := c.sndNxt.Add(n); c.sndNxt.LessThan(end) {
		c.sndNxt = end
	}
}

// sendAt injects a segment at seq without moving the peer's state.
func (c *conn) sendAt(seq seqnum.Value, flags header.TCPFlags, payload []byte, extra ...[]byte) {
	c.h.inject(seg{srcPort: c.peer, dstPort: c.port, flags: flags, seq: seq, ack: c.rcvNxt,
		wnd: c.p.window, opts: c.opts(extra...), payload: payload})
}

// ack acknowledges up to v (and records the host's timestamp from o).
func (c *conn) ackUpTo(v seqnum.Value, extra ...[]byte) {
	c.rcvNxt = v
	c.send(header.TCPFlagAck, nil, extra...)
}

// saw records what the peer learns from a segment of the host: its
// timestamp (to echo) and the data it carries (acknowledged by the next
// segment the peer sends, if in order).
func (c *conn) saw(outs ...out) {
	for _, o := range outs {
		if o.opts.TS {
			c.tsRecent = o.opts.TSVal
		}
		if o.syn.TS {
			c.tsRecent = o.syn.TSVal
		}
		end := segEnd(o)
		if o.has(header.TCPFlagSyn) || o.has(header.TCPFlagFin) {
			end++
		}
		if o.seq.LessThanEq(c.rcvNxt) && c.rcvNxt.LessThan(end) {
			c.rcvNxt = end
		}
		if c.seen.LessThan(end) || c.seen == 0 {
			c.seen = end
		}
	}
}

const (
	hostPort = 80
	peerPort = 40000
)

// accept runs a passive open: the peer's SYN to a listener on hostPort,
// the host's SYN-ACK, the peer's ACK; it returns the accepted connection
// and the SYN-ACK.
func (h *harness) accept(p peerOpts) (*conn, out) {
	h.t.Helper()
	ln := h.listen()
	c := &conn{h: h, port: hostPort, peer: peerPort, p: p, sndNxt: 5000}
	h.inject(seg{srcPort: peerPort, dstPort: hostPort, flags: header.TCPFlagSyn, seq: c.sndNxt, wnd: p.window, opts: p.synOpts(h.peerTS(), 0)})
	c.sndNxt++
	sa := h.takeOne()
	if sa.flags != header.TCPFlagSyn|header.TCPFlagAck || sa.ack != c.sndNxt {
		h.t.Fatalf("answer to a SYN: %v; want a SYN-ACK of %d", sa, c.sndNxt)
	}
	c.rcvNxt = sa.seq + 1
	c.tsRecent = sa.syn.TSVal
	c.hostWS = sa.syn.WS
	h.advance(h.handshakeRTT)
	h.none("before the handshake's ACK")
	c.send(header.TCPFlagAck, nil)
	h.none("after the handshake's ACK")
	ep, cwq, err := ln.Accept(nil)
	if err != nil {
		h.t.Fatalf("Accept after the handshake: %v", err)
	}
	c.ep, c.wq = ep, cwq
	h.t.Cleanup(ep.Abort)
	return c, sa
}

// listen opens a listener on hostPort.
func (h *harness) listen() tcpip.Endpoint {
	h.t.Helper()
	ln, err := h.st.NewEndpoint(ProtocolNumber, ipv4.ProtocolNumber, &waiter.Queue{})
	if err != nil {
		h.t.Fatalf("NewEndpoint: %v", err)
	}
	if err := ln.Bind(tcpip.FullAddress{Port: hostPort}); err != nil {
		h.t.Fatalf("Bind: %v", err)
	}
	if err := ln.Listen(10); err != nil {
		h.t.Fatalf("Listen: %v", err)
	}
	h.t.Cleanup(ln.Close)
	return ln
}

// dial runs an active open to the peer and returns the connection and
// the host's SYN; the peer answers with p.
func (h *harness) dial(p peerOpts) (*conn, out) {
	h.t.Helper()
	c, syn := h.dialSyn()
	c.p = p
	c.answerSyn(syn)
	return c, syn
}

// dialSyn starts an active open and returns the host's SYN.
func (h *harness) dialSyn() (*conn, out) {
	h.t.Helper()
	wq := &waiter.Queue{}
	ep, err := h.st.NewEndpoint(ProtocolNumber, ipv4.ProtocolNumber, wq)
	if err != nil {
		h.t.Fatalf("NewEndpoint: %v", err)
	}
	h.t.Cleanup(ep.Abort)
	if err := ep.Connect(tcpip.FullAddress{NIC: 1, Addr: peerAddr, Port: peerPort}); err != nil {
		if _, ok := err.(*tcpip.ErrConnectStarted); !ok {
			h.t.Fatalf("Connect: %v", err)
		}
	}
	syn := h.takeOne()
	if syn.flags != header.TCPFlagSyn {
		h.t.Fatalf("first segment of a connect: %v; want a SYN", syn)
	}
	c := &conn{h: h, ep: ep, wq: wq, port: syn.srcPort, peer: peerPort, sndNxt: 9000}
	return c, syn
}

// answerSyn sends the peer's SYN-ACK to syn and checks the host's ACK.
func (c *conn) answerSyn(syn out) {
	h := c.h
	h.t.Helper()
	c.rcvNxt = syn.seq + 1
	c.tsRecent = syn.syn.TSVal
	c.hostWS = syn.syn.WS
	h.inject(seg{srcPort: c.peer, dstPort: c.port, flags: header.TCPFlagSyn | header.TCPFlagAck, seq: c.sndNxt, ack: c.rcvNxt, wnd: c.p.window, opts: c.p.synOpts(h.peerTS(), c.tsRecent)})
	c.sndNxt++
	a := h.takeOne()
	if a.flags != header.TCPFlagAck || a.ack != c.sndNxt || a.seq != c.rcvNxt {
		h.t.Fatalf("answer to the SYN-ACK: %v; want an ACK of %d at %d", a, c.sndNxt, c.rcvNxt)
	}
	c.saw(a)
}

// write queues data on the host's connection.
func (c *conn) write(b []byte) {
	c.h.t.Helper()
	var r bytes.Reader
	r.Reset(b)
	n, err := c.ep.Write(&r, tcpip.WriteOptions{})
	if err != nil || int(n) != len(b) {
		c.h.t.Fatalf("Write of %d bytes: %d, %v", len(b), n, err)
	}
	c.h.collect()
}

// writeInitialWindow writes segs full segments of data and returns what
// the host sends at once: the initial window, 10 segments, or the test
// fails.
func (c *conn) writeInitialWindow(segs int) []out {
	c.h.t.Helper()
	c.write(fill(segs * 1448))
	o := c.h.take()
	if len(o) != 10 {
		c.h.t.Fatalf("sent %d segments at once; want the initial window, 10:\n%s", len(o), outsString(o))
	}
	return o
}

// writeAll queues b on the host's connection as the send buffer takes
// it, and returns what the host sends at once; the rest of b waits for
// the peer's ACKs (writeMore).
func (c *conn) writeAll(b []byte) (rest []byte) {
	c.h.t.Helper()
	n, err := c.ep.Write(bytes.NewReader(b), tcpip.WriteOptions{})
	if _, full := err.(*tcpip.ErrWouldBlock); err != nil && !full {
		c.h.t.Fatalf("Write of %d bytes: %v", len(b), err)
	}
	c.h.collect()
	return b[n:]
}

// read reads what the host's connection has.
func (c *conn) read() ([]byte, tcpip.Error) {
	var b bytes.Buffer
	_, err := c.ep.Read(&b, tcpip.ReadOptions{})
	c.h.collect()
	return b.Bytes(), err
}

// state is the host's connection state, as Linux numbers it.
func (c *conn) state() state { return state(c.ep.State()) }

// dataOuts keeps the segments that carry data.
func dataOuts(o []out) []out {
	return slices.DeleteFunc(slices.Clone(o), func(s out) bool { return len(s.payload) == 0 })
}

// fill returns n bytes of a pattern.
func fill(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// onWheel is when a timer Linux keeps on its timer wheel, armed at the
// connection's time at for d, runs (wheelExpiry at DefaultHZ): on a
// jiffy tick after ⌈d⌉ jiffies, rounded up to its level's granularity.
func onWheel(at, d time.Duration) time.Duration {
	hz := DefaultHZ
	clk := jiffies64(at, hz)
	return jiffyInstant(wheelExpiry(clk+uint64(ticks(d, hz)/jiffy(hz)), clk, hz), hz)
}

// wheelChain is when each timer of a chain runs, counted from at: the
// first armed at at for ds[0], each next armed for the next duration
// when the one before ran (a backoff).
func wheelChain(at time.Duration, ds ...time.Duration) []time.Duration {
	var out []time.Duration
	t := at
	for _, d := range ds {
		t = onWheel(t, d)
		out = append(out, t-at)
	}
	return out
}
