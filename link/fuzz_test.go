package link

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/netemu/netemu/clock/clocktest"
)

// Fuzz tests for everything the link parses. Their seed corpora live in
// testdata/fuzz/<name>/ and run with every go test; explore with
//
//	go test -run XXX -fuzz FuzzParseTCP -fuzztime 3m ./link/

// FuzzParseTCP feeds the delayed-ACK classifier arbitrary bytes:
// truncated, garbage, IPv6, options everywhere. It must never panic, must
// accept only what reference decoding (below, written from RFC 791 and
// 793) says is a whole, unfragmented IPv4 TCP segment, and must read its
// fields exactly; above all, a segment that carries data is never a pure
// ACK.
func FuzzParseTCP(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var s segment
		ok := parseTCP(b, &s)
		want, wantOK := referenceTCP(b)
		if ok != wantOK {
			t.Fatalf("parseTCP(% x) = %v; reference says %v", b, ok, wantOK)
		}
		if !ok {
			return
		}
		if s != want {
			t.Fatalf("parseTCP(% x) read %+v; reference %+v", b, s, want)
		}
		if want.payload > 0 && s.pureACK() {
			t.Fatalf("parseTCP(% x): a segment with %d payload bytes classified as a pure ACK", b, want.payload)
		}
	})
}

// FuzzSegmentFields builds well-formed segments from fuzzed fields (IP
// and TCP options, flags, payload, padding after the IP packet) and
// checks that parseTCP reads back exactly what was built; every
// truncation of the packet, the same bytes labeled IPv6, and a fragment
// are refused.
func FuzzSegmentFields(f *testing.F) {
	f.Fuzz(func(t *testing.T, seq, ack uint32, flags uint8, payload uint16, ipOpts, tcpOpts []byte, padding uint8) {
		n := int(payload % 2048)
		pkt := buildSegment(seq, ack, flags, n, ipOpts, tcpOpts, int(padding%64))
		total := int(binary.BigEndian.Uint16(pkt[2:4]))
		var s segment
		if !parseTCP(pkt, &s) {
			t.Fatalf("parseTCP refused a well-formed segment % x", pkt)
		}
		ihl := int(pkt[0]&0x0f) * 4
		off := int(pkt[ihl+12]>>4) * 4
		if s.seq != seq || s.ack != ack || s.flags != flags || s.payload != n ||
			s.sack != referenceSACK(pkt[ihl+20:ihl+off]) ||
			string(s.key[0:8]) != string(pkt[12:20]) || string(s.key[8:12]) != string(pkt[ihl:ihl+4]) {
			t.Fatalf("parseTCP read %+v from seq %d ack %d flags %#x payload %d: % x", s, seq, ack, flags, n, pkt)
		}
		pure := flags&flagACK != 0 && flags&(flagSYN|flagFIN|flagRST) == 0 && n == 0
		if s.pureACK() != pure {
			t.Fatalf("pureACK() = %v for flags %#x, payload %d", s.pureACK(), flags, n)
		}
		for cut := range total {
			if parseTCP(pkt[:cut], &s) {
				t.Fatalf("parseTCP accepted the first %d of %d bytes", cut, total)
			}
		}
		v6 := append([]byte(nil), pkt...)
		v6[0] = 0x60 | v6[0]&0x0f
		if parseTCP(v6, &s) {
			t.Fatalf("parseTCP accepted an IPv6-labeled packet")
		}
		frag := append([]byte(nil), pkt...)
		frag[6] |= 0x20 // more fragments
		if parseTCP(frag, &s) {
			t.Fatalf("parseTCP accepted a fragment")
		}
	})
}

// FuzzLinkSend sends fuzzed packets, in both directions and at fuzzed
// instants, through a link with every stage on (delayed ACKs, rate, a
// small queue, an outage). The link must not panic, and must account for
// every packet: delivered, dropped with a reason, or a held ACK a newer
// one superseded.
func FuzzLinkSend(f *testing.F) {
	f.Fuzz(func(t *testing.T, script []byte) {
		clk := &clocktest.Manual{}
		cfg := Config{Delay: 3 * time.Millisecond, Rate: 1e6, Qdisc: Qdisc{Limit: 8}, MTU: 1500,
			DelayedACK: LinuxDelayedACK, Outages: []Outage{{Start: 300 * time.Millisecond, End: 400 * time.Millisecond}}}
		l, err := New(cfg, clk, func(Dir, []byte) {})
		if err != nil {
			t.Fatal(err)
		}
		// The script is a sequence of steps: a header byte (direction in
		// bit 0, time to advance in the other bits, in ms) and a
		// length byte, then that many packet bytes.
		for len(script) >= 2 {
			dir, wait, n := Dir(script[0]&1), time.Duration(script[0]>>1)*time.Millisecond, int(script[1])
			script = script[2:]
			n = min(n, len(script))
			clk.Advance(wait)
			l.Send(dir, script[:n])
			script = script[n:]
		}
		clk.Advance(time.Second)
		l.Close()
		for dir, st := range l.Stats() {
			if st.SentPackets != st.Packets+st.Drops.Total()+st.ACKsSuperseded {
				t.Fatalf("%v: sent %d, delivered %d, dropped %v, superseded %d: packets unaccounted for",
					Dir(dir), st.SentPackets, st.Packets, st.Drops, st.ACKsSuperseded)
			}
		}
	})
}

// referenceTCP decodes b as an IPv4 packet carrying a whole TCP segment,
// step by step from the RFCs, independently of parseTCP.
func referenceTCP(b []byte) (segment, bool) {
	var s segment
	if len(b) < 20 {
		return s, false // shorter than a minimal IPv4 header
	}
	version, ihl := b[0]>>4, int(b[0]&0x0f)*4
	totalLen := int(b[2])<<8 | int(b[3])
	moreFragments, fragOffset := b[6]&0x20 != 0, (int(b[6])&0x1f)<<8|int(b[7])
	switch {
	case version != 4, ihl < 20, totalLen < ihl, totalLen > len(b):
		return s, false
	case b[9] != 6, moreFragments, fragOffset != 0:
		return s, false
	}
	tcp := b[ihl:totalLen]
	if len(tcp) < 20 {
		return s, false
	}
	dataOff := int(tcp[12]>>4) * 4
	if dataOff < 20 || dataOff > len(tcp) {
		return s, false
	}
	copy(s.key[0:4], b[12:16])
	copy(s.key[4:8], b[16:20])
	copy(s.key[8:10], tcp[0:2])
	copy(s.key[10:12], tcp[2:4])
	s.seq = uint32(tcp[4])<<24 | uint32(tcp[5])<<16 | uint32(tcp[6])<<8 | uint32(tcp[7])
	s.ack = uint32(tcp[8])<<24 | uint32(tcp[9])<<16 | uint32(tcp[10])<<8 | uint32(tcp[11])
	s.flags = tcp[13]
	s.payload = len(tcp) - dataOff
	s.sack = referenceSACK(tcp[20:dataOff])
	return s, true
}

// referenceSACK reports whether a well-formed SACK option (kind 5) comes
// before the end of the option list or the first malformed option.
func referenceSACK(opts []byte) bool {
	i := 0
	for i < len(opts) {
		kind := opts[i]
		if kind == 0 {
			return false // end of option list
		}
		if kind == 1 {
			i++ // no-operation
			continue
		}
		if i+1 >= len(opts) {
			return false // no length byte
		}
		length := int(opts[i+1])
		if length < 2 || i+length > len(opts) {
			return false // malformed
		}
		if kind == 5 {
			return true
		}
		i += length
	}
	return false
}

// buildSegment returns an IPv4 TCP segment with the given fields, IP and
// TCP options (truncated to 40 bytes and padded with no-ops, or IP's
// end-of-list, to a multiple of 4), n payload bytes, and padding bytes
// after the IP packet (as an Ethernet frame pads a short one).
func buildSegment(seq, ack uint32, flags uint8, n int, ipOpts, tcpOpts []byte, padding int) []byte {
	pad := func(o []byte, filler byte) []byte {
		o = append([]byte(nil), o[:min(len(o), 40)]...)
		for len(o)%4 != 0 {
			o = append(o, filler)
		}
		return o
	}
	ipOpts, tcpOpts = pad(ipOpts, 0), pad(tcpOpts, 1)
	ihl, off := 20+len(ipOpts), 20+len(tcpOpts)
	total := ihl + off + n
	b := make([]byte, total+padding)
	b[0] = 0x40 | byte(ihl/4)
	binary.BigEndian.PutUint16(b[2:], uint16(total))
	b[6] = 0x40 // don't fragment
	b[8], b[9] = 64, 6
	copy(b[12:16], ipA[:])
	copy(b[16:20], ipB[:])
	copy(b[20:], ipOpts)
	t := b[ihl:]
	binary.BigEndian.PutUint16(t[0:], aPort)
	binary.BigEndian.PutUint16(t[2:], bPort)
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], ack)
	t[12] = byte(off/4) << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:], 65535)
	copy(t[20:], tcpOpts)
	for i := range n {
		t[off+i] = byte(i)
	}
	for i := range padding {
		b[total+i] = 0xee
	}
	return b
}
