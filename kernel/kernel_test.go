//go:build linux

package kernel

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
)

// needRoot skips tests that need namespaces and TUN devices where the
// process cannot make them.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kernel mode needs root (network namespaces, TUN devices); run the tests as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("kernel mode needs /dev/net/tun: %v", err)
	}
}

func newNet(t *testing.T, cfg Config) *Net {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func TestNetemMissingIsAClearError(t *testing.T) {
	needRoot(t)
	if ok, _ := netemAvailable(); ok {
		t.Skip("this kernel has sch_netem")
	}
	_, err := New(Config{Via: Netem})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "sch_netem") || !strings.Contains(err.Error(), "--link tun") {
		t.Errorf("New(netem) = %v; want ErrUnsupported naming sch_netem and the TUN alternative", err)
	}
	n := newNet(t, Config{Via: Auto})
	if n.Facts().Link != TUN {
		t.Errorf("auto chose %q without netem; want tun", n.Facts().Link)
	}
}

func TestNetemQdisc(t *testing.T) {
	q := netemQdisc(7, link.Config{Delay: 25 * time.Millisecond, Rate: 10e6})
	if q.LinkIndex != 7 || q.Latency == 0 || q.Limit != 1000 || q.Rate64 != 1_250_000 {
		t.Errorf("netem for 25ms/10mbit: %+v", q)
	}
	q = netemQdisc(3, link.Config{Delay: time.Millisecond, Qdisc: link.Qdisc{Limit: 50}})
	if q.Limit != 50 || q.Rate64 != 0 {
		t.Errorf("netem limit 50, unlimited rate: %+v", q)
	}
}
