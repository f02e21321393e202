package tcpstack

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
)

// Each rejection names the field or argument and the accepted range.
func TestRejectionsNameTheField(t *testing.T) {
	clk := clock.Real{}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Addr: netip.MustParseAddr("10.0.0.1"), Clock: clk}, "tcpstack: Addr 10.0.0.1 is not an IPv4 address in 198.18.0.0/15; pick one like 198.18.0.1"},
		{Config{Addr: netip.MustParseAddr("2001:db8::1"), Clock: clk}, "tcpstack: Addr 2001:db8::1 is not an IPv4 address in 198.18.0.0/15"},
		{Config{Addr: addrA}, "tcpstack: Config.Clock is nil; give the run's clock"},
		{Config{Addr: addrA, Clock: clk, MTU: 70000}, "tcpstack: MTU 70000 out of range; want 576 to 65535 bytes (0 means 1500)"},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{CongestionControl: "vegas"}}, `tcpstack: CongestionControl "vegas" is unknown; want "cubic", "reno"`},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{Impl: GVisor, CongestionControl: "bbr"}}, `tcpstack: CongestionControl "bbr" is unknown; want "cubic" or "reno" ("" means "cubic")`},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{SendBuffer: -1}}, "tcpstack: SendBuffer is -1 bytes; want at least 4096 (0 means the default)"},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{ReceiveBuffer: 100}}, "tcpstack: ReceiveBuffer is 100 bytes; want at least 4096"},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{MaxSendBuffer: -7}}, "tcpstack: MaxSendBuffer is -7 bytes"},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{MaxReceiveBuffer: 1}}, "tcpstack: MaxReceiveBuffer is 1 bytes"},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{SendBuffer: 8 << 20, MaxSendBuffer: 4 << 20}}, "tcpstack: SendBuffer (8388608 bytes) exceeds its maximum, MaxSendBuffer (4194304); raise MaxSendBuffer or lower SendBuffer"},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{Impl: GVisor, SendBuffer: 8 << 20}}, "tcpstack: SendBuffer (8388608 bytes) exceeds its maximum, MaxSendBuffer (4194304); raise MaxSendBuffer or lower SendBuffer"},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{Impl: "linux"}}, `tcpstack: Impl "linux" is unknown; want "netemu" or "gvisor" ("" means "netemu")`},
		{Config{Addr: addrA, Clock: clk, TCP: TCPConfig{ReceiveBuffer: 1 << 20, MaxReceiveBuffer: 1 << 19}}, "tcpstack: ReceiveBuffer (1048576 bytes) exceeds its maximum, MaxReceiveBuffer (524288)"},
	} {
		if _, err := New(c.cfg, func([]byte) {}); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an error starting %q", c.cfg, err, c.want)
		}
	}
	if _, err := New(Config{Addr: addrA, Clock: clk}, nil); err == nil || err.Error() != "tcpstack: New needs a send function to receive the packets the host emits" {
		t.Errorf("New with a nil send function: %v", err)
	}
}

func TestDialRejections(t *testing.T) {
	p := newPair(t, link.Config{}, TCPConfig{})
	var nilCtx context.Context
	for _, c := range []struct {
		ctx  context.Context
		addr netip.AddrPort
		want string
	}{
		{context.Background(), netip.MustParseAddrPort("10.1.2.3:80"), "dial tcp 10.1.2.3:80: want an IPv4 address in 198.18.0.0/15 and a non-zero port"},
		{context.Background(), netip.MustParseAddrPort("[2001:db8::1]:80"), "dial tcp [2001:db8::1]:80: want an IPv4 address in 198.18.0.0/15"},
		{context.Background(), netip.AddrPortFrom(addrB, 0), "dial tcp 198.18.0.2:0: want an IPv4 address in 198.18.0.0/15 and a non-zero port"},
		{nilCtx, netip.AddrPortFrom(addrB, 80), "dial tcp 198.18.0.2:80: nil context; pass context.Background() or the run's context"},
	} {
		if _, err := p.a.Dial(c.ctx, c.addr); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Dial(%v) = %v; want %q", c.addr, err, c.want)
		}
	}
}
