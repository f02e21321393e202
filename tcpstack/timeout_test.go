package tcpstack

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// When the stack gives up retransmitting (here its SYN, into a link that
// is down) the error is ETIMEDOUT, "connection timed out", as from a
// kernel socket: a timeout, but not a deadline the caller set.
func TestRetransmitGiveUpIsETIMEDOUT(t *testing.T) {
	for _, c := range []struct {
		impl Impl
		want time.Duration
	}{
		// gVisor: SYN at 0, retries after 1, 2, 4, 8, 16 and 32 s,
		// give-up 64 s later.
		{GVisor, 127 * time.Second},
		// Linux 6.18: SYNs at 0, 1, 2, 3, 4, 5, 7, 11, 19, 35 and 67 s
		// (tcp_syn_linear_timeouts), give-up 64 s after the last, each
		// timeout rounded up by the timer wheel as package tcp's
		// TestSynRetransmitSchedule pins; the host's clock phase places
		// the wheel's ticks.
		{Netemu, 133957909777 * time.Nanosecond},
	} {
		p := newPair(t, link.Config{Outages: []link.Outage{{Start: 0, End: time.Hour}}}, TCPConfig{Impl: c.impl})
		start := p.clk.Now()
		_, err := p.a.Dial(context.Background(), p.b.AddrPort(80))
		if !errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: Dial into a dead link: %v; want ETIMEDOUT, not a deadline", c.impl, err)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("%s: Dial error %v is not a net.Error with Timeout()", c.impl, err)
		}
		var ge *Error
		if !errors.As(err, &ge) {
			t.Errorf("%s: Dial error %v does not carry the stack's error", c.impl, err)
		}
		if d := p.clk.Now().Sub(start); d != c.want {
			t.Errorf("%s: gave up after %v; want %v", c.impl, d, c.want)
		}
	}
}
