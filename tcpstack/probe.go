package tcpstack

import (
	"math/rand/v2"
	"net/netip"
	"time"

	netemutcp "github.com/netemu/netemu/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// Sample is a connection's TCP state, taken each time the connection
// processes a segment (and, for netemu's TCP, each time its delayed-ACK
// timer sends an ACK); the kernel's are taken at intervals.
type Sample struct {
	At            time.Time // on the run's clock
	Local, Remote netip.AddrPort
	Cwnd          int // congestion window, bytes
	Ssthresh      int // slow-start threshold, bytes (large until the first loss)
	InFlight      int // bytes sent and not yet acknowledged
	SRTT          time.Duration
	RTTVar        time.Duration // tcpi_rttvar (kernel TCP and netemu's)
	RTO           time.Duration
	MSS           int
	RcvWnd        int // receive window last advertised to the peer, bytes
	// RcvSsthresh is the receiver's window-growth threshold (Linux's
	// rcv_ssthresh) where the stack has one: kernel TCP and netemu's. 0
	// for gVisor, whose receiver window the link's delayed-ACK stage
	// models (link/window.go).
	RcvSsthresh int

	// Loss recovery as tcp_info reports it, where the stack has it
	// (kernel TCP and netemu's; "" and 0 for gVisor): the congestion
	// state (Open, Disorder, CWR, Recovery, Loss) and packets SACKed,
	// marked lost, retransmitted and in flight, and delivered in all.
	CAState                          string
	Sacked, Lost, Retrans, Delivered int
	// Unacked is tcpi_unacked, packets sent and not yet acknowledged,
	// and TotalRetrans tcpi_total_retrans, packets retransmitted in all
	// (kernel TCP and netemu's).
	Unacked, TotalRetrans int

	// The receiver's ACKs, where the stack counts them per connection
	// (ACKsCounted: netemu's TCP; Linux counts them per host, gVisor
	// not at all): tcp.Info's DelayedACKs, DelayedACKLost, QuickACKs
	// and DelayedACKTime.
	ACKsCounted                            bool
	DelayedACKs, DelayedACKLost, QuickACKs int
	DelayedACKTime                         time.Duration

	// Rates, bytes per second, where the stack has them (kernel TCP and
	// netemu's; 0 for gVisor): tcpi_pacing_rate, the rate the sender
	// paces at (or, for an algorithm that does not pace, the rate
	// Linux's tcp_update_pacing_rate computes), 0 before it has one; and
	// tcpi_delivery_rate, the last delivery-rate sample,
	// DeliveryRateAppLimited when the sender was application-limited
	// while it was taken.
	PacingRate, DeliveryRate uint64
	DeliveryRateAppLimited   bool
	// BBR is BBR's state where the connection runs BBR (netemu's TCP;
	// kernel TCP through TCP_CC_INFO, as far as that says); its Mode ""
	// otherwise.
	BBR BBRState
}

// BBRState is BBR's state in a sample: what Linux's tcp_bbr_info
// reports, with the mode (which netemu's TCP reports, and kernel TCP's
// gains name) and the long-term flag (netemu's TCP only).
type BBRState struct {
	// Mode is BBRStartup, BBRDrain, BBRProbeBW or BBRProbeRTT; "" for a
	// connection that does not run BBR.
	Mode      string
	Bandwidth uint64        // the windowed-max bandwidth estimate (or the long-term one), bytes per second
	MinRTT    time.Duration // the min-RTT filter; 0 before a sample
	// PacingGain and CwndGain are bbr_pacing_gain and bbr_cwnd_gain as
	// ratios (Linux's 256ths over 256): 2.89 in STARTUP, 1.25, 0.75 or 1
	// in PROBE_BW's phases.
	PacingGain, CwndGain float64
	// LongTerm is set while the long-term (policed) rate is BBR's
	// estimate (lt_use_bw). netemu's TCP only: tcp_bbr_info does not
	// carry it, so kernel TCP's is always false.
	LongTerm bool
}

// BBR's modes, as a Sample's BBRState names them.
const (
	BBRStartup  = "startup"
	BBRDrain    = "drain"
	BBRProbeBW  = "probe_bw"
	BBRProbeRTT = "probe_rtt"
)

// bbrUnit is BBR's gain of one, in Linux's fixed point (BBR_UNIT).
const bbrUnit = 256

// BBRGain converts a gain in Linux's 256ths to the ratio a BBRState
// holds.
func BBRGain(g uint32) float64 { return float64(g) / bbrUnit }

// BBRModeOfGains names the mode that kernel BBR's gains say it is in
// (bbr_update_gains sets a pair for each mode): STARTUP's high gain on
// both (or no gains yet: BBR sets them at its first ACK, in STARTUP),
// DRAIN's inverse pacing gain, PROBE_BW's window gain of two,
// PROBE_RTT's gains of one. "" for another pair.
func BBRModeOfGains(pacing, cwnd uint32) string {
	const high = bbrUnit*2885/1000 + 1 // bbr_high_gain
	switch {
	case pacing == high && cwnd == high, pacing == 0 && cwnd == 0:
		return BBRStartup
	case pacing == bbrUnit*1000/2885 && cwnd == high: // bbr_drain_gain
		return BBRDrain
	case cwnd == 2*bbrUnit: // bbr_cwnd_gain
		return BBRProbeBW
	case pacing == bbrUnit && cwnd == bbrUnit:
		return BBRProbeRTT
	}
	return ""
}

// sampleOf converts gVisor's probe state.
func sampleOf(at time.Time, s *tcp.TCPEndpointState) Sample {
	snd := &s.Sender
	mss := snd.MaxPayloadSize
	return Sample{
		At:       at,
		Local:    netip.AddrPortFrom(netip.AddrFrom4(s.ID.LocalAddress.As4()), s.ID.LocalPort),
		Remote:   netip.AddrPortFrom(netip.AddrFrom4(s.ID.RemoteAddress.As4()), s.ID.RemotePort),
		Cwnd:     snd.SndCwnd * mss,
		Ssthresh: satMul(snd.Ssthresh, mss),
		InFlight: int(snd.SndUna.Size(snd.SndNxt)),
		SRTT:     snd.RTTState.SRTT,
		RTO:      snd.RTO,
		MSS:      mss,
		RcvWnd:   int(s.Receiver.RcvNxt.Size(s.Receiver.RcvAcc)),
	}
}

func satMul(a, b int) int {
	if b != 0 && a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// tcpProtocol is the TCP factory for a host: with the probe when the
// config asks for one. (Both factories start with Reno; the congestion
// control is set afterwards from TCPConfig.)
func tcpProtocol(cfg Config) stack.TransportProtocolFactory {
	if cfg.Probe == nil {
		return tcp.NewProtocol
	}
	clk, probe := cfg.Clock, cfg.Probe
	return tcp.NewProtocolProbe(func(s *tcp.TCPEndpointState) { probe(sampleOf(clk.Now(), s)) })
}

// netemuProtocol is netemu's TCP for a host, with the probe when the
// config asks for one.
func netemuProtocol(cfg Config) stack.TransportProtocolFactory {
	t := cfg.TCP
	seed := cfg.Seed ^ uint64(binaryAddr(cfg.Addr))
	o := netemutcp.Options{
		Clock:             cfg.Clock,
		CongestionControl: string(t.CongestionControl),
		ReceiveBuffer:     t.ReceiveBuffer,
		MaxReceiveBuffer:  t.MaxReceiveBuffer,
		SendBuffer:        t.SendBuffer,
		MaxSendBuffer:     t.MaxSendBuffer,
		Seed:              seed,
		ClockPhase:        clockPhase(seed),
	}
	if probe := cfg.Probe; probe != nil {
		clk := cfg.Clock
		o.Probe = func(in netemutcp.Info) { probe(sampleOfInfo(clk.Now(), &in)) }
	}
	return netemutcp.NewProtocol(o)
}

// clockPhase draws where in a second a host's kernel clocks stand when
// it starts (netemutcp.Options.ClockPhase): a kernel's ticks and
// milliseconds began at its boot, not at the run's first instant, so
// each seed puts a host at its own point of them.
func clockPhase(seed uint64) time.Duration {
	r := rand.New(rand.NewPCG(seed, 0x6a69_6666_6965_7321))
	return time.Duration(r.Int64N(int64(time.Second)))
}

func binaryAddr(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// sampleOfInfo converts netemu's TCP state.
func sampleOfInfo(at time.Time, in *netemutcp.Info) Sample {
	mss := int(in.SndMSS)
	ssthresh := satMul(int(in.SndSsthresh), mss)
	if in.SndSsthresh >= infiniteSsthresh {
		ssthresh = 1 << 62 // as gVisor's and the kernel's samples say "infinite"
	}
	return Sample{
		At:             at,
		Local:          in.Local,
		Remote:         in.Remote,
		Cwnd:           int(in.SndCwnd) * mss,
		Ssthresh:       ssthresh,
		InFlight:       int(in.Unacked) * mss, // tcpi_unacked, as kernel samples count it
		SRTT:           in.RTT,
		RTTVar:         in.RTTVar,
		RTO:            in.RTO,
		MSS:            mss,
		RcvWnd:         int(in.RcvWnd),
		RcvSsthresh:    int(in.RcvSsthresh),
		CAState:        in.CAState,
		Sacked:         int(in.Sacked),
		Lost:           int(in.Lost),
		Retrans:        int(in.Retrans),
		Delivered:      int(in.Delivered),
		Unacked:        int(in.Unacked),
		TotalRetrans:   int(in.TotalRetrans),
		ACKsCounted:    true,
		DelayedACKs:    int(in.DelayedACKs),
		DelayedACKLost: int(in.DelayedACKLost),
		QuickACKs:      int(in.QuickACKs),
		DelayedACKTime: in.DelayedACKTime,

		PacingRate:             in.PacingRate,
		DeliveryRate:           in.DeliveryRate,
		DeliveryRateAppLimited: in.DeliveryRateAppLimited,
		BBR:                    bbrStateOf(&in.BBR),
	}
}

// bbrStateOf converts netemu's TCP's BBR state; the zero BBRState for
// another algorithm.
func bbrStateOf(b *netemutcp.BBRInfo) BBRState {
	mode := bbrModeName(b.Mode)
	if mode == "" {
		return BBRState{}
	}
	return BBRState{
		Mode:       mode,
		Bandwidth:  b.Bandwidth,
		MinRTT:     b.MinRTT,
		PacingGain: BBRGain(b.PacingGain),
		CwndGain:   BBRGain(b.CwndGain),
		LongTerm:   b.LongTerm,
	}
}

// bbrModeName is a Sample's word for package tcp's name of a mode,
// without allocating (the probe runs at every segment).
func bbrModeName(mode string) string {
	switch mode {
	case "STARTUP":
		return BBRStartup
	case "DRAIN":
		return BBRDrain
	case "PROBE_BW":
		return BBRProbeBW
	case "PROBE_RTT":
		return BBRProbeRTT
	}
	return ""
}

// infiniteSsthresh is tcp_info's slow-start threshold before there is
// one (TCP_INFINITE_SSTHRESH).
const infiniteSsthresh = 0x7fffffff
