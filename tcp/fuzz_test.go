package tcp

import (
	"encoding/binary"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// FuzzSegments feeds a connection, in each of its states, a sequence of
// segments from the peer (any flags, sequence and acknowledgement numbers
// near or far from the expected ones, any window, well-formed or broken
// options, SACK blocks anywhere), interleaved with the application's
// calls and the passing of time. Nothing may panic; after every step the
// sender's counters must agree with its retransmission queue; and once
// the application has closed everything and the peer falls silent, every
// connection must end within the longest of Linux's give-up times, with no
// timer left. The first byte picks the state (its low three bits) and the
// congestion control: CUBIC, or BBR, paced, when bit 3 is set.
func FuzzSegments(f *testing.F) {
	for st := range byte(fuzzStates) {
		f.Add([]byte{st})
		// Data both ways, a reordered ACK, a FIN.
		f.Add([]byte{st, 2, 40, 0, 0x18, 0, 0, 0, 0, 255, 8, 1, 1, 5, 6, 0, 0x10, 0xff, 0xf0, 0, 0, 255, 0, 1, 0, 0x11, 0, 0, 0, 0, 255, 0, 1, 1, 200})
		// SACK blocks, a reset in the window, a SYN in the window.
		f.Add([]byte{st, 2, 100, 0, 0x10, 0, 0, 0x10, 0, 255, 0, 2, 0, 0x04, 0, 50, 0, 0, 255, 0, 0, 0, 0x02, 0, 0, 0, 0, 255, 0, 0, 1, 3})
		// A shut window, time, probes.
		f.Add([]byte{st, 2, 200, 0, 0x10, 0, 0, 0, 0, 0, 0, 1, 1, 1, 150, 6, 1, 1, 60, 4, 7})
		// Garbage options, a FIN, close with unread data.
		f.Add([]byte{st, 0, 0x11, 0, 0, 0, 0, 255, 3, 3, 4, 0xff, 0x02, 0x08, 1, 1, 30, 7, 1, 1, 255})
	}
	// Data in flight, SACKed in part: an ACK of two segments with a
	// SACK block for the sixth.
	f.Add([]byte{5, 0, 0x10, 0, 0, 0xd2, 0xc0, 0xff, 0, 2, 0, 0xe3, 0xb8, 0xb5})
	// The same, then a timeout marks the rest lost, then all is ACKed.
	f.Add([]byte{5, 0, 0x10, 0, 0, 0xd2, 0xc0, 0xff, 0, 2, 0, 0xe3, 0xb8, 0xb5, 1, 0x85, 6, 0xff})
	// Our FIN, its ACK, the peer's FIN: TIME-WAIT.
	f.Add([]byte{2, 4, 6, 0xff, 0, 0x11, 0, 0, 0, 0, 0xff, 0, 1})
	// BBR: data in flight, SACKed in part, then a timeout.
	f.Add([]byte{8 | 5, 0, 0x10, 0, 0, 0xd2, 0xc0, 0xff, 0, 2, 0, 0xe3, 0xb8, 0xb5, 1, 0x85, 6, 0xff})
	// BBR without SACK: a write, an ACK opening a small window while
	// pacing holds the rest, close; the zero-window probe's timer must
	// give way to the RTO once pacing sends.
	f.Add([]byte{8 | 4, 2, 0x96, 6, 0x30, 0, 0x30})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || len(b) > 400 {
			return
		}
		runFuzz(t, b)
	})
}

const fuzzStates = 8

// fuzzReader hands out the fuzzer's bytes; past the end it gives zeros.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *fuzzReader) int16() int16 { return int16(uint16(r.byte())<<8 | uint16(r.byte())) }

func runFuzz(t *testing.T, b []byte) {
	r := &fuzzReader{b: b}
	var opts Options
	if b[0]&8 != 0 {
		opts.CongestionControl = "bbr"
	}
	h := newHarness(t, opts)
	var c *conn
	var ln tcpip.Endpoint
	switch r.byte() % fuzzStates {
	case 0: // a listener: the peer's segments open connections, or try to
		ln = h.listen()
		c = &conn{h: h, port: hostPort, peer: peerPort, p: linuxPeer, sndNxt: 5000}
	case 1: // SYN-SENT
		c, _ = h.dialSyn()
		c.p = linuxPeer
	case 2:
		c, _ = h.accept(linuxPeer)
	case 3:
		c, _ = h.dial(linuxPeer)
	case 4:
		c, _ = h.accept(noSACKPeer)
	case 5: // data in flight
		c, _ = h.accept(linuxPeer)
		c.write(fill(20000))
	case 6: // FIN-WAIT-1 with data in flight
		c, _ = h.accept(linuxPeer)
		c.write(fill(5000))
		c.ep.Shutdown(tcpip.ShutdownWrite)
	case 7: // CLOSE-WAIT
		c, _ = h.accept(linuxPeer)
		c.send(header.TCPFlagFin|header.TCPFlagAck, nil)
	}
	c.saw(h.take()...)
	closed := false
	for steps := 0; len(r.b) > 0 && steps < 100; steps++ {
		switch r.byte() % 8 {
		case 0:
			fuzzSegment(c, r)
		case 1:
			if v := r.byte(); v&0x80 != 0 {
				h.advance(time.Duration(v&0x7f) * time.Second)
			} else {
				h.advance(time.Duration(v) * 5 * time.Millisecond)
			}
		case 2:
			if c.ep != nil {
				n := int(r.byte()) * 100
				c.ep.Write(&payloadReader{n: n}, tcpip.WriteOptions{})
			}
		case 3:
			if c.ep != nil {
				c.read()
			}
		case 4:
			if c.ep != nil {
				c.ep.Shutdown(tcpip.ShutdownWrite)
			}
		case 5:
			if c.ep != nil {
				c.ep.Shutdown(tcpip.ShutdownRead)
			}
		case 6: // the peer acknowledges all it has seen, with a window
			c.p.window = uint16(r.byte()) << 4
			c.ackUpTo(c.rcvNxt)
		case 7:
			if c.ep != nil && !closed {
				if r.byte()&1 == 0 {
					c.ep.Close()
				} else {
					c.ep.Abort()
				}
				closed = true
			}
		}
		h.collect()
		c.saw(h.take()...)
		checkSenders(t, h)
	}
	// Everything closes; the peer falls silent.
	if c.ep != nil && !closed {
		c.ep.Close()
	}
	if ln != nil {
		ln.Close()
	}
	h.advance(3000 * time.Second)
	h.take()
	h.proto.mu.Lock()
	left := len(h.proto.conns)
	var states []state
	for _, e := range h.proto.conns {
		states = append(states, e.state)
	}
	h.proto.mu.Unlock()
	if left > 0 {
		t.Fatalf("%d connections left 3000 s after everything closed and the peer fell silent, in %v", left, states)
	}
	if due, ok := h.clk.Pending(); ok {
		t.Fatalf("a timer is still armed, due at %v, with every connection gone", due)
	}
}

// fuzzSegment injects one segment the fuzzer describes, near the
// expected numbers or anywhere.
func fuzzSegment(c *conn, r *fuzzReader) {
	flags := header.TCPFlags(r.byte()) & (header.TCPFlagFin | header.TCPFlagSyn | header.TCPFlagRst | header.TCPFlagPsh | header.TCPFlagAck | header.TCPFlagUrg)
	seq := c.sndNxt.Add(seqnum.Size(int32(r.int16())))
	ack := c.rcvNxt.Add(seqnum.Size(int32(r.int16())))
	wnd := uint16(r.byte()) << 8
	n := int(r.byte()) * 8
	var opts []byte
	switch r.byte() % 5 {
	case 1:
		opts = c.opts()
	case 2: // SACK blocks around what the host sent
		k := int(r.byte()%4) + 1
		var blocks []seqnum.Value
		for range k {
			s := c.rcvNxt.Add(seqnum.Size(int32(r.int16())))
			blocks = append(blocks, s, s.Add(seqnum.Size(r.byte())*8))
		}
		opts = c.opts(optSACK(blocks...))
	case 3: // raw bytes
		k := int(r.byte() % 40)
		for range k {
			opts = append(opts, r.byte())
		}
	case 4: // SYN options
		opts = c.p.synOpts(c.h.peerTS(), c.tsRecent)
	}
	if len(opts) > 40 {
		opts = opts[:40]
	}
	c.h.inject(seg{srcPort: c.peer, dstPort: c.port, flags: flags, seq: seq, ack: ack, wnd: wnd, opts: opts, payload: fill(n)})
	// The peer moves on past what it sent in order.
	if seq == c.sndNxt {
		l := seqnum.Size(n)
		if flags&(header.TCPFlagSyn|header.TCPFlagFin) != 0 {
			l++
		}
		c.sndNxt = c.sndNxt.Add(l)
	}
}

// payloadReader is a tcpip.Payloader of n zero bytes.
type payloadReader struct{ n int }

func (p *payloadReader) Read(b []byte) (int, error) {
	k := min(len(b), p.n)
	clear(b[:k])
	p.n -= k
	if k == 0 {
		return 0, nil
	}
	return k, nil
}

func (p *payloadReader) Len() int { return p.n }

// checkSenders checks every connection's sender counters against its
// retransmission queue: packets_out is the queue's length, and sacked_out,
// lost_out and retrans_out count its marks.
func checkSenders(t *testing.T, h *harness) {
	t.Helper()
	h.proto.mu.Lock()
	var eps []*endpoint
	for _, e := range h.proto.conns {
		eps = append(eps, e)
	}
	h.proto.mu.Unlock()
	for _, e := range eps {
		e.mu.Lock()
		s := &e.snd
		var sacked, lost, retrans uint32
		for i := range s.qn {
			f := s.seg(i).flags
			if f&segSacked != 0 {
				sacked++
			}
			if f&segLost != 0 {
				lost++
			}
			if f&segRetrans != 0 {
				retrans++
			}
		}
		// Without SACK, sacked_out counts duplicate ACKs, within what
		// is out beside the lost (tcp_limit_reno_sacked).
		sackOK := s.sackedOut == sacked
		if !e.sackOK {
			sackOK = sacked == 0 && s.sackedOut+s.lostOut <= s.packetsOut
		}
		ok := s.packetsOut == uint32(s.qn) && sackOK && s.lostOut == lost && s.retransOut == retrans
		bad := *s
		e.mu.Unlock()
		if !ok {
			t.Fatalf("%v: packets_out %d sacked_out %d lost_out %d retrans_out %d; the queue holds %d segments, %d SACKed, %d lost, %d retransmitted", e.state, bad.packetsOut, bad.sackedOut, bad.lostOut, bad.retransOut, bad.qn, sacked, lost, retrans)
		}
	}
}

var _ = binary.BigEndian
