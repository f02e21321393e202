//go:build linux

package kernel

import (
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/tcpstack"
	"golang.org/x/sys/unix"
)

// loopbackSender returns the sending end of a loopback connection that
// runs cc, after it has sent size bytes and they were read.
func loopbackSender(t *testing.T, cc string, size int) *net.TCPConn {
	t.Helper()
	avail, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil || !strings.Contains(" "+strings.TrimSpace(string(avail))+" ", " "+cc+" ") {
		t.Skipf("the kernel has no %s (%q, %v)", cc, avail, err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s := c.(*net.TCPConn)
	t.Cleanup(func() { s.Close() })
	raw, err := s.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	raw.Control(func(fd uintptr) { serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc) })
	if serr != nil {
		t.Skipf("cannot set %s: %v", cc, serr)
	}
	go func() { s.Write(make([]byte, size)) }()
	if _, err := io.ReadFull(client, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	return s
}

// Kernel samples carry TCP_INFO's rates and, for bbr, TCP_CC_INFO's
// tcp_bbr_info: a mode its gains name, a bandwidth estimate, the min
// RTT; a cubic connection has rates and no BBR state. A connection that
// has sent one small write has only an application-limited delivery
// rate (Linux keeps such a sample while it has no faster one).
func TestSampleReadsBBRInfo(t *testing.T) {
	s := loopbackSender(t, "bbr", 4<<20)
	time.Sleep(20 * time.Millisecond) // the last ACKs
	got, ok := sampleOf(s, time.Now())
	if !ok {
		t.Fatal("no sample")
	}
	b := got.BBR
	if b.Mode == "" || b.Bandwidth == 0 || b.MinRTT <= 0 || b.MinRTT > time.Second || b.CwndGain == 0 {
		t.Errorf("bbr: BBR state %+v; want a mode, a bandwidth, a min RTT and gains", b)
	}
	if got.PacingRate == 0 || got.DeliveryRate == 0 {
		t.Errorf("bbr: pacing rate %d, delivery rate %d; want both", got.PacingRate, got.DeliveryRate)
	}
	t.Logf("bbr: %+v, pacing %d B/s, delivery %d B/s", b, got.PacingRate, got.DeliveryRate)

	c := loopbackSender(t, "cubic", 1000)
	time.Sleep(20 * time.Millisecond)
	got, ok = sampleOf(c, time.Now())
	if !ok || got.BBR != (tcpstack.BBRState{}) || got.PacingRate == 0 || !got.DeliveryRateAppLimited {
		t.Errorf("cubic: BBR state %+v, pacing rate %d, app-limited %v (%v); want none, a rate, application-limited", got.BBR, got.PacingRate, got.DeliveryRateAppLimited, ok)
	}
}
