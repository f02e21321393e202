package proxy

import (
	"encoding/binary"
	"sync"

	"github.com/netemu/netemu/link"
)

// linkCount counts, from the link's events, the segments the link
// carries again, and gives each connection its share: the records'
// counts and the link's total are one count, split, so they cannot
// disagree.
//
// A retransmission is a data segment or a SYN that ends at or before the
// highest sequence number its sender had sent on the connection, the rule
// of netemu run's retransmits (report/explain's Tally); a FIN alone sent
// again is not one. Every emulated connection is dialed by the client
// host, so the two hosts' ports name it; a SYN from the client host with
// a new sequence number begins the next connection on the same ports.
type linkCount struct {
	mu sync.Mutex
	// flows are the connections on the wire: a connection is forgotten
	// once each side's FIN has been acknowledged, or a reset delivered,
	// after which neither side sends it a segment that could count.
	flows map[flowKey]*flow
	all   uint64 // every retransmission counted
}

// flowKey is a connection's ports: the client host's, then the server
// host's.
type flowKey struct{ client, server uint16 }

// flow is one connection's sequence state; index 0 is the client host's
// side (what it sends toward the server host), 1 the server host's.
type flow struct {
	isn  uint32    // the client host's SYN
	end  [2]uint32 // after the highest sequence number sent
	sent [2]bool   // whether end holds a segment
	fin  [2]uint32 // after a FIN sent
	// finSent and finAcked: a FIN was sent, and an acknowledgment of it
	// delivered.
	finSent, finAcked [2]bool
	// s is the connection's session, from its dial's return (claim) to
	// its record (release); before that, early holds what s will take
	// over.
	s     *session
	early uint64
}

// observe counts e's packet if the link is carrying it again, and
// forgets connections that are over. It runs under the link's lock, so
// it takes only c.mu.
func (c *linkCount) observe(e link.Event) {
	if e.Kind != link.EventSend && e.Kind != link.EventDeliver {
		return
	}
	sg, ok := segmentOf(e.Packet)
	if !ok {
		return
	}
	d, k := 0, flowKey{sg.src, sg.dst}
	if e.Dir == link.BtoA {
		d, k = 1, flowKey{sg.dst, sg.src}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flows[k]
	if e.Kind == link.EventDeliver {
		if f == nil {
			return
		}
		if sg.rst {
			delete(c.flows, k)
			return
		}
		if o := 1 - d; sg.ack && f.finSent[o] && int32(sg.ackNum-f.fin[o]) >= 0 {
			f.finAcked[o] = true
			if f.finAcked[d] {
				delete(c.flows, k)
			}
		}
		return
	}
	end := sg.seq + uint32(sg.payload)
	if sg.syn {
		end++
	}
	if d == 0 && sg.syn && !sg.ack && (f == nil || f.isn != sg.seq) {
		if c.flows == nil {
			c.flows = map[flowKey]*flow{}
		}
		c.flows[k] = &flow{isn: sg.seq, end: [2]uint32{end}, sent: [2]bool{true}}
		return
	}
	if f == nil {
		return // begun before the proxy observed the link, or over
	}
	if sg.fin {
		f.fin[d], f.finSent[d] = end+1, true
	}
	if sg.payload == 0 && !sg.syn {
		return
	}
	if !f.sent[d] || int32(end-f.end[d]) > 0 {
		f.end[d], f.sent[d] = end, true
		return
	}
	c.all++
	if f.s != nil {
		f.s.retransmits.Add(1)
	} else {
		f.early++
	}
}

// claim makes s the owner of its connection, the one between the two
// hosts' ports: what was counted on it so far (its handshake's) and what
// follows until release are s's.
func (c *linkCount) claim(k flowKey, s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.flow = k
	if f := c.flows[k]; f != nil {
		s.retransmits.Add(f.early)
		f.early, f.s = 0, s
	}
}

// release ends s's share: what the link carries again on its connection
// from now on is in the total only.
func (c *linkCount) release(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flows[s.flow]; f != nil && f.s == s {
		f.s = nil
	}
}

// total returns every retransmission counted.
func (c *linkCount) total() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all
}

// segment is what linkCount reads of a TCP segment.
type segment struct {
	src, dst           uint16
	seq, ackNum        uint32
	payload            int
	syn, ack, fin, rst bool
}

// segmentOf reads the TCP header of an IPv4 packet; false if the packet
// is not one.
func segmentOf(b []byte) (segment, bool) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != 6 {
		return segment{}, false
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || total > len(b) || total < ihl+20 {
		return segment{}, false
	}
	t := b[ihl:total]
	off := int(t[12]>>4) * 4
	if off < 20 || off > len(t) {
		return segment{}, false
	}
	flags := t[13]
	return segment{
		src:     binary.BigEndian.Uint16(t[0:2]),
		dst:     binary.BigEndian.Uint16(t[2:4]),
		seq:     binary.BigEndian.Uint32(t[4:8]),
		ackNum:  binary.BigEndian.Uint32(t[8:12]),
		payload: len(t) - off,
		fin:     flags&0x01 != 0,
		syn:     flags&0x02 != 0,
		rst:     flags&0x04 != 0,
		ack:     flags&0x10 != 0,
	}, true
}
