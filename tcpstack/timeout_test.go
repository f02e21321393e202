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
	p := newPair(t, link.Config{Outages: []link.Outage{{Start: 0, End: time.Hour}}}, TCPConfig{})
	start := p.clk.Now()
	_, err := p.a.Dial(context.Background(), p.b.AddrPort(80))
	if !errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Dial into a dead link: %v; want ETIMEDOUT, not a deadline", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("Dial error %v is not a net.Error with Timeout()", err)
	}
	var ge *Error
	if !errors.As(err, &ge) {
		t.Errorf("Dial error %v does not carry the gVisor error", err)
	}
	// SYN at 0, retries after 1, 2, 4, 8, 16 and 32 s, give-up 64 s later.
	if d := p.clk.Now().Sub(start); d != 127*time.Second {
		t.Errorf("gave up after %v; want 127s", d)
	}
}
