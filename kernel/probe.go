//go:build linux

package kernel

import (
	"encoding/binary"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"github.com/netemu/netemu/tcpstack"
	"golang.org/x/sys/unix"
)

// probeLoop samples TCP_INFO of every connection the network handed out,
// every interval, until Close: the kernel's counterpart of the emulated
// hosts' per-segment probe, so that timelines of both backends show the
// congestion window.
func (n *Net) probeLoop(probe func(tcpstack.Sample), every time.Duration) {
	defer n.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	var conns []*net.TCPConn
	for {
		select {
		case <-n.closed:
			return
		case <-t.C:
		}
		conns = n.appendConns(conns[:0])
		now := time.Now()
		for _, c := range conns {
			if s, ok := sampleOf(c, now); ok {
				probe(s)
			}
		}
	}
}

// appendConns appends to dst the TCP connections n handed out that are
// open.
func (n *Net) appendConns(dst []*net.TCPConn) []*net.TCPConn {
	n.socketsMu.Lock()
	defer n.socketsMu.Unlock()
	for s := range n.sockets {
		if c, ok := s.(*net.TCPConn); ok {
			dst = append(dst, c)
		}
	}
	return dst
}

// sampleOf reads c's TCP_INFO as a tcpstack.Sample.
func sampleOf(c *net.TCPConn, at time.Time) (tcpstack.Sample, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return tcpstack.Sample{}, false
	}
	var info *unix.TCPInfo
	var ierr error
	var bbr tcpstack.BBRState
	if err := raw.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		bbr = bbrStateOf(int(fd))
	}); err != nil || ierr != nil {
		return tcpstack.Sample{}, false
	}
	local, _ := netip.ParseAddrPort(c.LocalAddr().String())
	remote, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	mss := int(info.Snd_mss)
	ssthresh := int(info.Snd_ssthresh) * mss
	if info.Snd_ssthresh >= 0x7fffffff { // TCP_INFINITE_SSTHRESH
		ssthresh = 1 << 62 // as the emulated hosts report "infinite"
	}
	return tcpstack.Sample{
		At:           at,
		Local:        local,
		Remote:       remote,
		Cwnd:         int(info.Snd_cwnd) * mss,
		Ssthresh:     ssthresh,
		InFlight:     int(info.Unacked) * mss,
		SRTT:         time.Duration(info.Rtt) * time.Microsecond,
		RTTVar:       time.Duration(info.Rttvar) * time.Microsecond,
		RTO:          time.Duration(info.Rto) * time.Microsecond,
		MSS:          mss,
		RcvWnd:       int(info.Rcv_wnd),
		RcvSsthresh:  int(info.Rcv_ssthresh),
		CAState:      caStateName(info.Ca_state),
		Sacked:       int(info.Sacked),
		Lost:         int(info.Lost),
		Retrans:      int(info.Retrans),
		Delivered:    int(info.Delivered),
		Unacked:      int(info.Unacked),
		TotalRetrans: int(info.Total_retrans),

		PacingRate:             info.Pacing_rate,
		DeliveryRate:           info.Delivery_rate,
		DeliveryRateAppLimited: deliveryRateAppLimited(info),
		BBR:                    bbr,
	}, true
}

// deliveryRateAppLimited reads tcpi_delivery_rate_app_limited, the low
// bit of the byte after tcpi_snd_wscale and tcpi_rcv_wscale
// (include/uapi/linux/tcp.h), which unix.TCPInfo leaves as padding
// between Options and Rto.
func deliveryRateAppLimited(info *unix.TCPInfo) bool {
	const at = unsafe.Offsetof(unix.TCPInfo{}.Options) + 2
	bit := byte(1) // the first bitfield: the low bit, or the high one on a big-endian machine
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
		bit = 0x80
	}
	return (*[at + 1]byte)(unsafe.Pointer(info))[at]&bit != 0
}

// bbrStateOf reads fd's BBR state where it runs bbr: TCP_CC_INFO's
// struct tcp_bbr_info (include/uapi/linux/inet_diag.h: the bandwidth
// estimate in bytes per second as two 32-bit halves, the min RTT in µs,
// the pacing and cwnd gains in 256ths), the mode named by the gains
// (tcpstack.BBRModeOfGains; tcp_bbr_info has no mode, nor the long-term
// flag). The zero BBRState for another algorithm, where the kernel says
// nothing, or where the gains name no mode of BBR v1.
func bbrStateOf(fd int) tcpstack.BBRState {
	if cc, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err != nil || cc != "bbr" {
		return tcpstack.BBRState{}
	}
	b, err := unix.GetsockoptTCPCCBBRInfo(fd, unix.IPPROTO_TCP, unix.TCP_CC_INFO)
	if err != nil {
		return tcpstack.BBRState{}
	}
	mode := tcpstack.BBRModeOfGains(b.Pacing_gain, b.Cwnd_gain)
	if mode == "" {
		return tcpstack.BBRState{}
	}
	st := tcpstack.BBRState{
		Mode:       mode,
		Bandwidth:  uint64(b.Bw_hi)<<32 | uint64(b.Bw_lo),
		PacingGain: tcpstack.BBRGain(b.Pacing_gain),
		CwndGain:   tcpstack.BBRGain(b.Cwnd_gain),
	}
	if b.Min_rtt != ^uint32(0) { // ~0U before a sample
		st.MinRTT = time.Duration(b.Min_rtt) * time.Microsecond
	}
	return st
}

// caStateName names tcpi_ca_state (enum tcp_ca_state).
func caStateName(s uint8) string {
	names := [...]string{"Open", "Disorder", "CWR", "Recovery", "Loss"}
	if int(s) < len(names) {
		return names[s]
	}
	return ""
}
