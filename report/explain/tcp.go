package explain

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/netemu/netemu/tcpstack"
)

// What the TCPs say of themselves.
//
// A TCP that delays its own ACKs (netemu's, like Linux) hands the link
// each ACK only when its delayed-ACK timer fires: the link sees a pure
// ACK leave, not that it waited. netemu's TCP reports each ACK its timer
// sends, with how long the timer held it (tcpstack.Sample's DelayedACKs
// and DelayedACKTime, probed at that instant), and the Analyzer takes
// those holds as it takes the link's delayed-ACK stage's: the same
// category of time, the same count, the same list. Where the link's
// stage is on for a TCP that also delays (one host on each TCP), both
// kinds of hold count, each once: they are different waits.
//
// TCPs that report tcp_info (netemu's, and kernel TCP through the
// kernel backend's samples) also leave their state: the Breakdown keeps
// each connection end's last sample, with tcp_info's names.

// HoldSource says whose delayed-ACK timer held ACKs.
type HoldSource uint8

// Hold sources.
const (
	ByLink HoldSource = 1 << iota // the link's delayed-ACK stage
	ByTCP                         // the receiving TCP's own timer, as the TCP reported it
)

// ACKCounts are the receivers' counts of their own ACKs, summed over the
// connections of TCPs that count them (netemu's), over the whole run;
// named as nstat names Linux's counters where Linux has one.
type ACKCounts struct {
	Counted        bool          // some TCP counted its ACKs; false leaves the rest zero
	DelayedACKs    int           // TcpExtDelayedACKs: ACKs the delayed-ACK timer sent
	DelayedACKLost int           // TcpExtDelayedACKLost: data that came again, answered at once
	QuickACKs      int           // ACKs sent at once only because of quick-ACK mode
	DelayedACKTime time.Duration // how long the timer held the DelayedACKs, in all
}

// TCPState is a connection end's TCP state as it was last sampled, with
// tcp_info's names and units: windows in segments where tcp_info has
// them so (cwnd, ssthresh), else in bytes.
type TCPState struct {
	At            time.Duration // when it was sampled (link time)
	Local, Remote netip.AddrPort
	CAState       string // tcpi_ca_state: Open, Disorder, CWR, Recovery, Loss
	Cwnd          int    // tcpi_snd_cwnd
	// Ssthresh is tcpi_snd_ssthresh; 0 while there is none (tcp_info's
	// infinite 2147483647, until a loss or HyStart ends slow start).
	Ssthresh     int
	SRTT         time.Duration // tcpi_rtt
	RTTVar       time.Duration // tcpi_rttvar
	RTO          time.Duration // tcpi_rto
	Unacked      int           // tcpi_unacked
	Sacked       int           // tcpi_sacked
	Lost         int           // tcpi_lost
	Retrans      int           // tcpi_retrans: retransmissions in flight
	TotalRetrans int           // tcpi_total_retrans
	Delivered    int           // tcpi_delivered
	RcvWnd       int           // tcpi_rcv_wnd, bytes
	RcvSsthresh  int           // tcpi_rcv_ssthresh, bytes
}

// noSsthresh is the slow-start threshold, in bytes, with which samples
// say there is none (report/timeline's NoSsthresh).
const noSsthresh = 1 << 62

// end is what the Analyzer keeps of a connection end's samples.
type end struct {
	last     tcpstack.Sample
	hasState bool     // last carries tcp_info's state
	bbr      bbrTrack // BBR's phases (bbr.go)
}

// TCP takes a sample of a connection end's TCP state (a tcpstack probe):
// the ACKs its delayed-ACK timer sent since the last one, and its state.
func (a *Analyzer) TCP(s tcpstack.Sample) {
	if s.CAState == "" && !s.ACKsCounted {
		return // gVisor's TCP: nothing the link does not say
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ends == nil {
		a.ends = map[flowID]*end{}
	}
	id := flowID{s.Local, s.Remote}
	e := a.ends[id]
	if e == nil {
		e = &end{}
		a.ends[id] = e
	}
	if s.ACKsCounted {
		a.acksCounted = true
		prev := e.last
		if prev.ACKsCounted && (s.DelayedACKs < prev.DelayedACKs || s.QuickACKs < prev.QuickACKs || s.DelayedACKLost < prev.DelayedACKLost) {
			// A new connection on the same addresses: keep the old one's
			// counts.
			a.retired.add(&prev)
			prev = tcpstack.Sample{}
		}
		if n := s.DelayedACKs - prev.DelayedACKs; n > 0 && a.started {
			// The probe sees each ACK the timer sends, at its instant:
			// n is 1. Were it more, the holds would share the time.
			at := s.At.Sub(a.start)
			held := (s.DelayedACKTime - prev.DelayedACKTime) / time.Duration(n)
			for range n {
				a.spans[DelayedACK].add(at-held, at)
				a.tcpHolds.add(Hold{At: at - held, Held: held, From: s.Local, By: ByTCP}, held)
			}
		}
	}
	if a.started && (s.BBR.Mode != "" || e.last.BBR.Mode != "") {
		a.bbr(e, &e.last, &s)
	}
	e.last, e.hasState = s, s.CAState != ""
}

// add adds a sample's ACK counts, if it has them.
func (c *ACKCounts) add(s *tcpstack.Sample) {
	if !s.ACKsCounted {
		return
	}
	c.Counted = true
	c.DelayedACKs += s.DelayedACKs
	c.DelayedACKLost += s.DelayedACKLost
	c.QuickACKs += s.QuickACKs
	c.DelayedACKTime += s.DelayedACKTime
}

// tcpSummary fills b's ACK counts and connection ends' states from the
// last sample of each end. a.mu is held.
func (a *Analyzer) tcpSummary(b *Breakdown) {
	b.ACKs = a.retired
	for _, e := range a.ends {
		s := &e.last
		b.ACKs.add(s)
		if e.hasState {
			b.TCP = append(b.TCP, a.stateOf(s))
		}
	}
	a.bbrSummary(b)
	slices.SortFunc(b.TCP, func(x, y TCPState) int {
		return cmp.Or(x.Local.Compare(y.Local), x.Remote.Compare(y.Remote))
	})
}

// stateOf converts a sample to tcp_info's names and units. a.mu is held.
func (a *Analyzer) stateOf(s *tcpstack.Sample) TCPState {
	st := TCPState{
		Local: s.Local, Remote: s.Remote, CAState: s.CAState,
		SRTT: s.SRTT, RTTVar: s.RTTVar, RTO: s.RTO,
		Unacked: s.Unacked, Sacked: s.Sacked, Lost: s.Lost, Retrans: s.Retrans, TotalRetrans: s.TotalRetrans,
		Delivered: s.Delivered, RcvWnd: s.RcvWnd, RcvSsthresh: s.RcvSsthresh,
	}
	if a.started {
		st.At = s.At.Sub(a.start)
	}
	if s.MSS > 0 {
		st.Cwnd = s.Cwnd / s.MSS
		if s.Ssthresh < noSsthresh {
			st.Ssthresh = s.Ssthresh / s.MSS
		}
	}
	return st
}
