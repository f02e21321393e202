package experiment

import (
	"fmt"
	"time"

	"github.com/netemu/netemu/link/tc"
)

// TCP's timers against a link: links so slow or so long that TCP gives
// up before the data's answer can come back.

// MaxHandshakeRTT is the longest RTT over which a TCP handshake
// completes: a connect waits for its SYN to be answered through an
// initial timeout of 1 s doubled over 6 retransmissions (Linux's and
// gVisor's default), 127 s in all.
const MaxHandshakeRTT = 127 * time.Second

// MaxRTO is TCP's longest retransmission timeout (Linux's TCP_RTO_MAX,
// gVisor's MaxRTO).
const MaxRTO = 120 * time.Second

// A HandshakeError is a link whose RTT, over MaxHandshakeRTT, no TCP
// handshake completes.
type HandshakeError struct{ RTT time.Duration }

// Error says why no handshake completes, and the RTT that would.
func (e *HandshakeError) Error() string {
	return fmt.Sprintf("an RTT of %v cannot complete a TCP handshake: a connect gives up after %v (the SYN and 6 retransmissions, Linux's and gVisor's default); want an RTT under %v", e.RTT, MaxHandshakeRTT, MaxHandshakeRTT)
}

// A SlowLink is a link slower than TCP's timers: a full queue takes
// longer to drain than the longest retransmission timeout (MaxRTO), so
// every timeout fires before the data's ACK can come back and the
// sender retransmits until it gives up.
type SlowLink struct {
	Packets int           // the FIFO's limit, in packets
	Drain   time.Duration // how long a full queue takes to drain at Rate; over MaxRTO
	Rate    float64       // bits per second
	// MaxPackets is the longest queue of full-sized packets that drains
	// within MaxRTO at Rate.
	MaxPackets int
}

// String says why a connection was given up on, without the remedy:
// "the link is too slow for TCP's timers: a full queue of 1000 packets
// takes 2m0s to drain at 100kbit, …".
func (s SlowLink) String() string {
	return fmt.Sprintf("the link is too slow for TCP's timers: a full queue of %d packets takes %v to drain at %s, longer than TCP's longest retransmission timeout (%v), so the sender retransmits until it gives up",
		s.Packets, s.Drain.Round(time.Second), tc.FormatRate(s.Rate), MaxRTO)
}

// TooSlow reports whether c's link is a SlowLink in the server→client
// direction, where the workloads' bytes flow: a FIFO of full-sized
// packets at a rate that drains it in more than MaxRTO. A queue
// discipline that drops packets once they wait past a target (codel,
// fq_codel) never stays full, and an unlimited rate never makes a
// queue, so neither is.
func TooSlow(c Case) (SlowLink, bool) {
	full := c.Link.WithDefaults()
	lc := full
	if lc.BtoA != nil {
		lc = *lc.BtoA
	}
	if lc.Rate == 0 || !lc.Qdisc.IsFIFO() {
		return SlowLink{}, false
	}
	packets, mtu := lc.Qdisc.Limit, full.MTU
	drain := time.Duration(float64(packets*mtu*8) / lc.Rate * float64(time.Second))
	if drain <= MaxRTO {
		return SlowLink{}, false
	}
	return SlowLink{Packets: packets, Drain: drain, Rate: lc.Rate, MaxPackets: int(MaxRTO.Seconds() * lc.Rate / float64(mtu*8))}, true
}
