package explain

import (
	"sync"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

// Tally keeps the few totals a result reports, in memory that does not
// grow with the transfer: retransmissions (from the link's events), the
// largest congestion window, and the smoothed RTT of the connection that
// had the most bytes in flight (the data sender). Its Observe method is a
// link.Observer and TCP a tcpstack probe. The zero value is ready.
type Tally struct {
	mu          sync.Mutex
	maxSent     map[flowID]uint32
	retransmits int
	maxCwnd     int
	sender      struct {
		conn     flowID
		inFlight int
		srtt     time.Duration
	}
}

// Observe counts retransmitted data segments and SYNs, per connection:
// a new connection on the ports of an old one starts its count afresh.
func (t *Tally) Observe(e link.Event) {
	if e.Kind != link.EventSend {
		return
	}
	r := decode(e.Packet)
	if !r.tcp || r.len == 0 && !r.syn {
		return
	}
	f := flowID{r.src, r.dst}
	end := r.end()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.maxSent == nil {
		t.maxSent = map[flowID]uint32{}
	}
	prev, ok := t.maxSent[f]
	switch {
	case ok && r.syn && end != prev:
		// A SYN with another sequence number on the same ports is a new
		// connection (a retransmitted SYN repeats its number and has no
		// data after it): its sequence space starts afresh.
	case ok && int32(end-prev) <= 0:
		t.retransmits++
		return
	}
	t.maxSent[f] = end
}

// TCP takes a sample of a connection's sender state.
func (t *Tally) TCP(s tcpstack.Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maxCwnd = max(t.maxCwnd, s.Cwnd)
	f := flowID{s.Local, s.Remote}
	if s.InFlight > t.sender.inFlight {
		t.sender.conn, t.sender.inFlight = f, s.InFlight
	}
	if f == t.sender.conn {
		t.sender.srtt = s.SRTT
	}
}

// Totals returns the retransmissions, the largest congestion window (0
// without TCP samples) and the sender's last smoothed RTT.
func (t *Tally) Totals() (retransmits, maxCwnd int, srtt time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.retransmits, t.maxCwnd, t.sender.srtt
}
