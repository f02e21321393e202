package link

import "encoding/binary"

// TCP flags as they appear in byte 13 of the TCP header.
const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagRST = 0x04
	flagACK = 0x10
)

// flowKey identifies one direction of a TCP connection: source address,
// destination address, source port, destination port.
type flowKey [12]byte

func (k flowKey) reverse() flowKey {
	var r flowKey
	copy(r[0:4], k[4:8])
	copy(r[4:8], k[0:4])
	copy(r[8:10], k[10:12])
	copy(r[10:12], k[8:10])
	return r
}

// segment is what the delayed-ACK stage needs to know about a packet.
type segment struct {
	key     flowKey
	seq     uint32
	ack     uint32
	flags   uint8
	payload int  // TCP payload bytes
	sack    bool // carries a SACK option
}

// pureACK reports whether s is an ACK with no payload and no SYN, FIN or
// RST: the only kind of packet the delayed-ACK stage may hold.
func (s *segment) pureACK() bool {
	return s.flags&(flagSYN|flagFIN|flagRST) == 0 && s.flags&flagACK != 0 && s.payload == 0
}

// seqLen is the sequence space s occupies (payload, plus one for SYN and
// for FIN).
func (s *segment) seqLen() uint32 {
	n := uint32(s.payload)
	if s.flags&flagSYN != 0 {
		n++
	}
	if s.flags&flagFIN != 0 {
		n++
	}
	return n
}

// parseTCP reads an IPv4 packet carrying a whole TCP segment. It reports
// false for anything else (IPv6, other protocols, fragments, truncated or
// inconsistent headers); such packets pass the link untouched.
func parseTCP(b []byte, s *segment) bool {
	if len(b) < 20 || b[0]>>4 != 4 {
		return false
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || total < ihl || total > len(b) {
		return false
	}
	if b[9] != 6 { // not TCP
		return false
	}
	if frag := binary.BigEndian.Uint16(b[6:8]); frag&0x3fff != 0 { // MF set or offset ≠ 0
		return false
	}
	t := b[ihl:total]
	if len(t) < 20 {
		return false
	}
	off := int(t[12]>>4) * 4
	if off < 20 || off > len(t) {
		return false
	}
	copy(s.key[0:8], b[12:20])
	copy(s.key[8:12], t[0:4])
	s.seq = binary.BigEndian.Uint32(t[4:8])
	s.ack = binary.BigEndian.Uint32(t[8:12])
	s.flags = t[13]
	s.payload = len(t) - off
	s.sack = hasSACK(t[20:off])
	return true
}

// hasSACK reports whether TCP options carry a SACK block (kind 5).
func hasSACK(opts []byte) bool {
	for i := 0; i < len(opts); {
		switch kind := opts[i]; kind {
		case 0: // end of options
			return false
		case 1: // no-op
			i++
		default:
			if i+1 >= len(opts) {
				return false
			}
			n := int(opts[i+1])
			if n < 2 || i+n > len(opts) {
				return false
			}
			if kind == 5 {
				return true
			}
			i += n
		}
	}
	return false
}

// seqAfter reports a > b in sequence-number arithmetic.
func seqAfter(a, b uint32) bool { return int32(a-b) > 0 }
