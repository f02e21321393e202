package tcp

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// sackBlock is one SACK block, [start, end).
type sackBlock struct{ start, end seqnum.Value }

// maxSACKBlocks is how many SACK blocks fit in one header beside
// timestamps (RFC 2018 section 3: 3 with the 12 bytes of timestamps).
const maxSACKBlocks = 4

// segment is a received TCP segment, parsed once. Its payload points into
// the packet and is valid only while the segment is being handled.
type segment struct {
	seq, ack seqnum.Value
	flags    header.TCPFlags
	wnd      uint16 // the raw window field; scaled by the receiver
	payload  []byte

	// Options (RFC 9293 section 3.2; RFC 7323; RFC 2018).
	mss      uint16 // 0: absent
	ws       int    // window shift; -1: absent
	sackPerm bool
	hasTS    bool
	tsVal    uint32
	tsEcr    uint32
	nSACK    int
	sacks    [maxSACKBlocks]sackBlock
}

func (s *segment) has(f header.TCPFlags) bool { return s.flags&f != 0 }

// length is the sequence space the segment occupies: its payload, plus
// one for SYN and one for FIN.
func (s *segment) length() seqnum.Size {
	n := seqnum.Size(len(s.payload))
	if s.has(header.TCPFlagSyn) {
		n++
	}
	if s.has(header.TCPFlagFin) {
		n++
	}
	return n
}

// parseOptions reads the options of a TCP header. A malformed option ends
// the parse, keeping what came before it, as Linux's tcp_parse_options
// does. MSS, window scale and SACK-permitted count only on a SYN.
func (s *segment) parseOptions(opts []byte, syn bool) {
	s.mss, s.ws, s.sackPerm, s.hasTS, s.nSACK = 0, -1, false, false, 0
	for i := 0; i < len(opts); {
		kind := opts[i]
		switch kind {
		case header.TCPOptionEOL:
			return
		case header.TCPOptionNOP:
			i++
			continue
		}
		if i+1 >= len(opts) {
			return
		}
		size := int(opts[i+1])
		if size < 2 || i+size > len(opts) {
			return
		}
		b := opts[i+2 : i+size]
		switch kind {
		case header.TCPOptionMSS:
			if syn && size == 4 {
				s.mss = binary.BigEndian.Uint16(b)
			}
		case header.TCPOptionWS:
			if syn && size == 3 {
				// RFC 7323 section 2.3: a shift above 14 is taken as 14.
				s.ws = min(int(b[0]), maxWindowShift)
			}
		case header.TCPOptionSACKPermitted:
			if syn && size == 2 {
				s.sackPerm = true
			}
		case header.TCPOptionTS:
			if size == 10 {
				s.hasTS = true
				s.tsVal = binary.BigEndian.Uint32(b)
				s.tsEcr = binary.BigEndian.Uint32(b[4:])
			}
		case header.TCPOptionSACK:
			if !syn && (size-2)%8 == 0 {
				for j := 0; j+8 <= len(b) && s.nSACK < maxSACKBlocks; j += 8 {
					s.sacks[s.nSACK] = sackBlock{
						start: seqnum.Value(binary.BigEndian.Uint32(b[j:])),
						end:   seqnum.Value(binary.BigEndian.Uint32(b[j+4:])),
					}
					s.nSACK++
				}
			}
		}
		i += size
	}
}

// maxWindowShift is RFC 7323's largest window scale (TCP_MAX_WSCALE).
const maxWindowShift = 14

// synOptions are the options a SYN or SYN-ACK carries.
type synOptions struct {
	mss      uint16
	ws       int // -1: none
	sackPerm bool
	ts       bool
	tsVal    uint32
	tsEcr    uint32
}

// putSynOptions writes a SYN's options in Linux's layout
// (tcp_options_write): MSS, then SACK-permitted with timestamps, then
// window scale. It returns the length, a multiple of 4.
func putSynOptions(b []byte, o synOptions) int {
	n := 0
	binary.BigEndian.PutUint32(b[n:], uint32(header.TCPOptionMSS)<<24|4<<16|uint32(o.mss))
	n += 4
	switch {
	case o.ts && o.sackPerm:
		b[n], b[n+1], b[n+2], b[n+3] = header.TCPOptionSACKPermitted, 2, header.TCPOptionTS, 10
		n += 4
		n += putTSValues(b[n:], o.tsVal, o.tsEcr)
	case o.ts:
		n += putTS(b[n:], o.tsVal, o.tsEcr)
	case o.sackPerm:
		b[n], b[n+1], b[n+2], b[n+3] = header.TCPOptionNOP, header.TCPOptionNOP, header.TCPOptionSACKPermitted, 2
		n += 4
	}
	if o.ws >= 0 {
		b[n], b[n+1], b[n+2], b[n+3] = header.TCPOptionNOP, header.TCPOptionWS, 3, byte(o.ws)
		n += 4
	}
	return n
}

// putTS writes NOP, NOP, timestamps: 12 bytes.
func putTS(b []byte, val, ecr uint32) int {
	b[0], b[1], b[2], b[3] = header.TCPOptionNOP, header.TCPOptionNOP, header.TCPOptionTS, 10
	return 4 + putTSValues(b[4:], val, ecr)
}

func putTSValues(b []byte, val, ecr uint32) int {
	binary.BigEndian.PutUint32(b, val)
	binary.BigEndian.PutUint32(b[4:], ecr)
	return 8
}

// putSACK writes NOP, NOP, SACK with the blocks: 4 + 8n bytes.
func putSACK(b []byte, blocks []sackBlock) int {
	b[0], b[1], b[2], b[3] = header.TCPOptionNOP, header.TCPOptionNOP, header.TCPOptionSACK, byte(2+8*len(blocks))
	n := 4
	for _, s := range blocks {
		binary.BigEndian.PutUint32(b[n:], uint32(s.start))
		binary.BigEndian.PutUint32(b[n+4:], uint32(s.end))
		n += 8
	}
	return n
}

// after reports whether a comes after b in sequence space (Linux's
// after()).
func after(a, b seqnum.Value) bool { return b.LessThan(a) }
