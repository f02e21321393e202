package experiment

import (
	"fmt"
	"strings"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/pcap"
)

// isPcapng reports whether Instruments.Pcap asks for pcapng, by its
// name: a file ending in .pcapng (any case) is a pcapng capture of both
// ends of the link with its drops; any other is a classic pcap of what
// arrived.
func isPcapng(path string) bool {
	return strings.HasSuffix(strings.ToLower(path), ".pcapng")
}

// CaptureLink names a link for a capture of its events: Name, the link
// ("" when it is the only one captured), and A and B, the hosts at its
// ends (link.AtoB runs from A to B).
type CaptureLink struct {
	Name, A, B string
}

// pairLink is the pair's link: the client at end A, the server at B.
var pairLink = CaptureLink{A: "client", B: "server"}

// iface is the name of a capture interface of l: what, prefixed by the
// link's name when it has one.
func (l CaptureLink) iface(what string) string {
	if l.Name == "" {
		return what
	}
	return l.Name + ":" + what
}

// LinkCapture writes one link's events to a pcapng file as three
// capture interfaces: one at each end of the link, holding what that
// end's host sends into the link (outbound, as it enters) and what
// reaches it (inbound, as it leaves), as a capture on that host would;
// and one of what the link discards, each packet at the instant it is
// discarded, its reason in the packet's comment. A packet lost on the
// way is thus at its sender's end and among the drops, never at the
// receiver's end.
//
// Each end alone is a consistent view of the connection from its host:
// the sender's end shows every transmission, so a TCP analyser reading
// it finds each retransmission there. Several links' captures may share
// one writer, each with its own interfaces.
type LinkCapture struct {
	w     *pcap.NgWriter
	l     CaptureLink
	end   [2]int // the interfaces of end A and end B
	drops int    // the interface of the discarded packets
}

// NewLinkCapture adds link l's interfaces to w (end A, end B, drops, in
// this order) and returns the capture; its Observe takes the link's
// events.
func NewLinkCapture(w *pcap.NgWriter, l CaptureLink) *LinkCapture {
	c := &LinkCapture{w: w, l: l}
	for i, end := range []string{l.A, l.B} {
		c.end[i] = w.Interface(l.iface(end), fmt.Sprintf("%s's end of the link: what %s sends into it (outbound) and what reaches %s (inbound)", end, end, end))
	}
	c.drops = w.Interface(l.iface("drops"), "what the link discarded, when it discarded it; the comment says why")
	return c
}

// Observe writes e where it belongs: a send at the sender's end, a
// delivery at the receiver's, a drop or a superseded ACK among the drops.
// Other events (a packet queued, an ACK held or released) are steps
// inside the link that no capture point sees.
func (c *LinkCapture) Observe(e link.Event) {
	from, to := c.ends(e.Dir)
	r := pcap.Record{Time: e.Time, Packet: e.Packet}
	switch e.Kind {
	case link.EventSend:
		r.Interface, r.Dir = c.end[from], pcap.DirOutbound
	case link.EventDeliver:
		r.Interface, r.Dir = c.end[to], pcap.DirInbound
	case link.EventDrop:
		r.Interface = c.drops
		r.Comment = fmt.Sprintf("dropped: %s (%s)", e.Reason, c.way(e.Dir))
	case link.EventSupersede:
		r.Interface = c.drops
		r.Comment = fmt.Sprintf("dropped: delayed ACK superseded by a newer ACK after %s held (%s)", e.Held, c.way(e.Dir))
	default:
		return
	}
	c.w.Write(r)
}

// ends returns the sending and receiving ends (0 for A, 1 for B) of a
// packet going d.
func (c *LinkCapture) ends(d link.Dir) (from, to int) {
	if d == link.AtoB {
		return 0, 1
	}
	return 1, 0
}

// way names direction d by its ends: "client→server".
func (c *LinkCapture) way(d link.Dir) string {
	if d == link.AtoB {
		return c.l.A + "→" + c.l.B
	}
	return c.l.B + "→" + c.l.A
}

// caseLink is the link whose events c's observer receives: the pair's,
// or the first link of c's shape (its bottleneck).
func caseLink(c *Case) CaptureLink {
	if c.Shape == nil || c.Shape.Build == nil {
		return pairLink
	}
	t, _ := c.Shape.Build(c.Link)
	if len(t.Links) == 0 {
		return pairLink
	}
	first := t.Links[0]
	return CaptureLink{Name: first.Label(), A: first.A, B: first.B}
}
