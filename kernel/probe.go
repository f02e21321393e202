//go:build linux

package kernel

import (
	"net"
	"net/netip"
	"time"

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
	if err := raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
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
	}, true
}

// caStateName names tcpi_ca_state (enum tcp_ca_state).
func caStateName(s uint8) string {
	names := [...]string{"Open", "Disorder", "CWR", "Recovery", "Loss"}
	if int(s) < len(names) {
		return names[s]
	}
	return ""
}
