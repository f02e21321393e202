package tcp

import (
	"net/netip"
	"time"
)

// Info is a connection's state, its fields named as Linux's struct
// tcp_info names them (tcpi_*), and its ACK counts as nstat names
// Linux's (TcpExt*), so that a timeline or an explanation of netemu's
// TCP lines up with one of kernel TCP field by field. Windows are in
// segments where tcp_info has them in segments, else in bytes.
type Info struct {
	At            time.Duration // the connection's clock
	Local, Remote netip.AddrPort
	State         string

	CAState      string        // tcpi_ca_state: Open, Disorder, CWR, Recovery, Loss
	SndCwnd      uint32        // tcpi_snd_cwnd, segments
	SndSsthresh  uint32        // tcpi_snd_ssthresh, segments
	SndMSS       uint32        // tcpi_snd_mss
	RTT          time.Duration // tcpi_rtt (srtt)
	RTTVar       time.Duration // tcpi_rttvar (mdev/4... as Linux reports: mdev_us >> 2)
	RTO          time.Duration // tcpi_rto
	MinRTT       time.Duration // tcpi_min_rtt
	Unacked      uint32        // tcpi_unacked: packets_out
	Sacked       uint32        // tcpi_sacked
	Lost         uint32        // tcpi_lost
	Retrans      uint32        // tcpi_retrans: retransmissions in flight
	TotalRetrans uint32        // tcpi_total_retrans
	InFlight     uint32        // packets in flight (RFC 6675 pipe)
	Delivered    uint32        // tcpi_delivered
	Reordering   uint32        // tcpi_reordering
	SndWnd       uint32        // tcpi_snd_wnd, bytes
	RcvWnd       uint32        // the window last advertised, bytes
	RcvSsthresh  uint32        // tcpi_rcv_ssthresh, bytes
	RcvSpace     uint32        // tcpi_rcv_space
	RcvRTT       time.Duration // tcpi_rcv_rtt
	RcvMSS       uint32        // tcpi_rcv_mss
	ATO          time.Duration // tcpi_ato
	Backoff      int           // tcpi_backoff

	// Rates: tcpi_pacing_rate, the rate the sender paces at (or, for
	// an algorithm that does not pace, the rate tcp_update_pacing_rate
	// computes), 0 before it has one; tcpi_delivery_rate, the rate of
	// the last delivery-rate sample that was not application-limited
	// (or a higher one that was), and tcpi_delivery_rate_app_limited.
	// Bytes per second.
	PacingRate             uint64
	DeliveryRate           uint64
	DeliveryRateAppLimited bool

	// BBR is BBR's state (TCP_CC_INFO) when the connection runs bbr;
	// zero, its Mode "", otherwise.
	BBR BBRInfo

	// The receiver's ACKs, counted as Linux counts them for nstat
	// (TcpExt*, per host there, per connection here), and what Linux
	// does not count.
	DelayedACKs    uint32        // TcpExtDelayedACKs: ACKs the delayed-ACK timer sent
	DelayedACKLost uint32        // TcpExtDelayedACKLost: data that came again, answered by an ACK at once
	QuickACKs      uint32        // ACKs sent at once only because of quick-ACK mode (no Linux counter)
	DelayedACKTime time.Duration // how long the timer held the DelayedACKs, in all: each from when the timer was first armed for it (no Linux counter)
}

var caStateNames = [...]string{"Open", "Disorder", "CWR", "Recovery", "Loss"}

// fillInfo returns the connection's state. e.mu is held.
func (e *endpoint) fillInfo() Info {
	in := e.info()
	if b, ok := e.snd.ops.(*bbr); ok {
		in.BBR = b.info(&e.snd.cc)
	}
	return in
}

// info is fillInfo's every-algorithm part.
func (e *endpoint) info() Info {
	s, r := &e.snd, &e.rcv
	return Info{
		At:           e.now(),
		Local:        netip.AddrPortFrom(netip.AddrFrom4(e.localAddr.As4()), e.localPort),
		Remote:       netip.AddrPortFrom(netip.AddrFrom4(e.remoteAddr.As4()), e.remotePort),
		State:        e.state.String(),
		CAState:      caStateNames[s.ca],
		SndCwnd:      s.cc.cwnd,
		SndSsthresh:  s.cc.ssthresh,
		SndMSS:       s.cc.mss,
		RTT:          s.rtt.srtt,
		RTTVar:       s.rtt.mdev / 4,
		RTO:          s.rto,
		MinRTT:       s.minRTT.get(),
		Unacked:      s.packetsOut,
		Sacked:       s.sackedOut,
		Lost:         s.lostOut,
		Retrans:      s.retransOut,
		TotalRetrans: s.totalRetrans,
		InFlight:     s.inFlight(),
		Delivered:    s.delivered,
		Reordering:   s.reordering,
		SndWnd:       s.wnd,
		RcvWnd:       r.wnd,
		RcvSsthresh:  r.ssthresh,
		RcvSpace:     r.space,
		RcvRTT:       r.rttEst / 8,
		RcvMSS:       r.rcvMSS,
		ATO:          r.ato,
		Backoff:      s.backoff,

		PacingRate:             s.cc.pacingRate,
		DeliveryRate:           s.deliveryRate(),
		DeliveryRateAppLimited: s.rateAppLimited,

		DelayedACKs:    r.delayedACKs,
		DelayedACKLost: r.delayedACKLost,
		QuickACKs:      r.quickACKs,
		DelayedACKTime: r.delayedACKTime,
	}
}

// TCPInfo returns the connection's state now.
func (e *endpoint) TCPInfo() Info {
	e.mu.Lock()
	defer e.unlock()
	return e.fillInfo()
}

// probe hands the state to the protocol's probe, if any. e.mu is held.
func (e *endpoint) probe() {
	if f := e.p.opts.Probe; f != nil && e.state.synchronized() {
		f(e.fillInfo())
	}
}

// InfoOf returns the state of an endpoint of netemu's TCP; false for
// another endpoint.
func InfoOf(ep any) (Info, bool) {
	e, ok := ep.(*endpoint)
	if !ok {
		return Info{}, false
	}
	return e.TCPInfo(), true
}
