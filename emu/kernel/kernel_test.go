package kernel

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads"
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

func TestTUNWorkloads(t *testing.T) {
	needRoot(t)
	const rtt = 20 * time.Millisecond
	n := newNet(t, Config{Link: link.Config{Delay: rtt / 2, Rate: 20e6}, Via: TUN})
	f := n.Facts()
	if f.Link != TUN || f.CongestionControl != "cubic" || f.Kernel == "" {
		t.Errorf("facts %+v", f)
	}
	t.Logf("facts %+v", f)
	ctx := context.Background()
	path := workloads.Path{RTT: rtt, Rate: 20e6, DelayedACK: 40 * time.Millisecond}

	ka, err := workloads.KeepAlive{Mode: workloads.Reuse, Requests: 5}.Run(ctx, n, path)
	if err != nil {
		t.Fatal(err)
	}
	// Shapes, never speed: 6 round trips at least, and not wildly more.
	if ka.Elapsed < 6*rtt || ka.Elapsed > 20*rtt || ka.Conns != 1 {
		t.Errorf("keepalive reuse, 5 requests at RTT %v: %v over %d conns", rtt, ka.Elapsed, ka.Conns)
	}
	b, err := workloads.Bulk{Size: 1 << 20}.Run(ctx, n, path)
	if err != nil {
		t.Fatal(err)
	}
	if b.Goodput > 20e6 || b.Bytes != 1<<20 {
		t.Errorf("bulk: goodput %.1f Mbit/s above the 20 Mbit/s link, or %d bytes", b.Goodput/1e6, b.Bytes)
	}
	st := n.Stats()
	if st.Link[link.BtoA].Packets < 700 || st.Link[link.BtoA].Drops.Total() != 0 {
		t.Errorf("bridge stats %+v", st.Link[link.BtoA])
	}
	t.Logf("keepalive %v, bulk %v (%.2f Mbit/s); delivery lateness mean %v p99 %v over %d", ka.Elapsed, b.Elapsed, b.Goodput/1e6, st.LateMean, st.LateP99, st.LateSamples)
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
	q = netemQdisc(3, link.Config{Delay: time.Millisecond, QueuePackets: 50})
	if q.Limit != 50 || q.Rate64 != 0 {
		t.Errorf("netem limit 50, unlimited rate: %+v", q)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Via: "wire"}, `link "wire"`},
		{Config{CongestionControl: "bbr"}, `"bbr"`},
		{Config{Link: link.Config{Delay: -1}}, "Delay"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
}
