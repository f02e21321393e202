package explain

import (
	"encoding/binary"
	"net/netip"
)

// packet is the part of a packet's headers the analysis reads.
type packet struct {
	tcp      bool
	src, dst netip.AddrPort
	seq, ack uint32
	syn      bool
	hasACK   bool // the ACK flag: ack is meaningful
	sackOK   bool // a SYN that offers SACK
	len      int  // TCP payload bytes
	nsack    int
	sack     [4]sackBlock // SACK blocks, the first nsack of them
}

// sackBlock is one SACK block: [left, right) of the receiver's sequence
// space.
type sackBlock struct{ left, right uint32 }

// TCP option kinds the analysis reads.
const (
	optEnd       = 0
	optNop       = 1
	optSACKPerm  = 4
	optSACKBlock = 5
)

func decode(b []byte) (p packet) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != 6 {
		return p
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || total > len(b) || total < ihl+20 {
		return p
	}
	t := b[ihl:total]
	off := int(t[12]>>4) * 4
	if off < 20 || off > len(t) {
		return p
	}
	p.tcp = true
	p.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[12:16])), binary.BigEndian.Uint16(t[0:2]))
	p.dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[16:20])), binary.BigEndian.Uint16(t[2:4]))
	p.seq = binary.BigEndian.Uint32(t[4:8])
	p.ack = binary.BigEndian.Uint32(t[8:12])
	p.syn = t[13]&0x02 != 0
	p.hasACK = t[13]&0x10 != 0
	p.len = len(t) - off
	p.options(t[20:off])
	return p
}

// options reads the SACK-permitted option and the SACK blocks.
func (p *packet) options(o []byte) {
	for len(o) > 0 {
		switch o[0] {
		case optEnd:
			return
		case optNop:
			o = o[1:]
			continue
		}
		if len(o) < 2 || int(o[1]) < 2 || int(o[1]) > len(o) {
			return
		}
		body := o[2:o[1]]
		switch o[0] {
		case optSACKPerm:
			p.sackOK = p.syn
		case optSACKBlock:
			for ; len(body) >= 8 && p.nsack < len(p.sack); body = body[8:] {
				p.sack[p.nsack] = sackBlock{binary.BigEndian.Uint32(body[0:4]), binary.BigEndian.Uint32(body[4:8])}
				p.nsack++
			}
		}
		o = o[o[1]:]
	}
}

// end is the sequence number after p: a SYN takes one.
func (p packet) end() uint32 {
	if p.syn {
		return p.seq + uint32(p.len) + 1
	}
	return p.seq + uint32(p.len)
}

// intact reports whether an IPv4 packet's header checksum and, for TCP,
// its TCP checksum hold: a packet whose bit the link flipped fails one of
// them, and its receiver discards it. A zero TCP checksum (not computed)
// passes.
func intact(b []byte) bool {
	if len(b) < 20 {
		return false
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || total > len(b) || total < ihl {
		return false
	}
	if fold(sum(0, b[:ihl])) != 0xffff {
		return false
	}
	if b[9] != 6 || total < ihl+20 {
		return true
	}
	t := b[ihl:total]
	if t[16] == 0 && t[17] == 0 {
		return true
	}
	s := sum(0, b[12:20]) // the pseudo-header: addresses, protocol, length
	s += 6 + uint32(len(t))
	return fold(sum(s, t)) == 0xffff
}

// sum adds b to s as big-endian 16-bit words (one's-complement, unfolded).
func sum(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
