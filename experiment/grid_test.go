package experiment

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// testAxis is an axis of n values of one setting, value i set by set.
func testAxis(name string, n int, set func(i int, c *link.Config)) Axis {
	return Axis{Name: name, N: n, Label: func(i int) string { return fmt.Sprintf("%s %d", name, i) },
		Slug: func(i int) string { return fmt.Sprintf("%s%d", name, i) }, Apply: set}
}

// A grid's cases come in its order (the last axis fastest, then the
// TCPs, then the workloads), as many as Cells counts, each from Case
// with its values set; Swept, CaseName and Variant name a case by the
// values that set it apart.
func TestGridCases(t *testing.T) {
	rtt := testAxis("rtt", 2, func(i int, c *link.Config) { c.Delay = time.Duration(10*(i+1)) * time.Millisecond })
	rtt.Column = true
	loss := testAxis("loss", 3, func(i int, c *link.Config) { c.Loss = link.RandomLoss(float64(i)/100, 0) })
	g := &Grid{Axes: []Axis{rtt, loss}, TCPs: []tcpstack.Impl{tcpstack.GVisor, tcpstack.Netemu},
		Workloads: []workloads.Workload{workloads.Bulk{}, workloads.RPC{}}, Case: Case{Link: link.Config{MTU: 1400}, Seed: 7}}
	cases, err := g.Cases()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 24 || g.Cells() != 24 {
		t.Fatalf("%d cases, Cells %d; want 2×3×2×2 = 24", len(cases), g.Cells())
	}
	c := cases[1*12+2*4+1*2+1] // rtt 1, loss 2, netemu, rpc
	if c.Link.Delay != 20*time.Millisecond || c.Link.Loss.P != 0.02 || c.TCP.Impl != tcpstack.Netemu || c.Workload.Name() != "rpc" || c.Seed != 7 || c.Link.MTU != 1400 {
		t.Errorf("case %+v", c)
	}
	if name := g.CaseName(c); name != "loss 2, tcp netemu" {
		t.Errorf("CaseName %q; want the swept values but the RTT's, which has a column", name)
	}
	if v := g.Variant(c); v != "rtt40.0ms-unlimited-loss2-tcp-netemu" {
		t.Errorf("Variant %q", v)
	}
	one := &Grid{Axes: []Axis{testAxis("rtt", 1, func(int, *link.Config) {})}, Workloads: []workloads.Workload{workloads.Bulk{}}}
	if v := one.Variant(c); v != "" {
		t.Errorf("Variant of a grid of one case %q; want none", v)
	}
}

// Cells counts without building, and stops past MaxCells.
func TestGridCells(t *testing.T) {
	big := testAxis("rtt", MaxCells, func(int, *link.Config) {})
	g := &Grid{Axes: []Axis{big, big, big}, TCPs: []tcpstack.Impl{tcpstack.GVisor, tcpstack.Netemu}, Workloads: []workloads.Workload{workloads.Bulk{}}}
	if n := g.Cells(); n != MaxCells+1 {
		t.Errorf("Cells %d; want MaxCells+1", n)
	}
}

// A link that is not valid is a CellError named by its values; an RTT no
// handshake completes is a HandshakeError; Shape's error comes as it is.
func TestGridRefusals(t *testing.T) {
	ws := []workloads.Workload{workloads.Bulk{}}
	delay := func(d time.Duration) Axis {
		return testAxis("rtt", 2, func(i int, c *link.Config) { c.Delay = time.Duration(i) * d })
	}
	_, err := (&Grid{Axes: []Axis{delay(-time.Second)}, Workloads: ws}).Cases()
	var ce *CellError
	if !errors.As(err, &ce) || ce.Label != "rtt 1" || !strings.HasPrefix(err.Error(), "rtt 1: link: ") {
		t.Errorf("negative delay: %v; want a CellError of rtt 1", err)
	}
	_, err = (&Grid{Axes: []Axis{delay(100 * time.Second)}, Workloads: ws}).Cases()
	var he *HandshakeError
	if !errors.As(err, &he) || he.RTT != 200*time.Second {
		t.Errorf("RTT of 200 s: %v; want a HandshakeError", err)
	}
	bad := errors.New("bad")
	g := &Grid{Axes: []Axis{delay(time.Millisecond)}, Workloads: ws, Shape: func(c link.Config) (link.Config, error) { return c, bad }}
	if _, err := g.Cases(); err != bad {
		t.Errorf("Shape's error: %v", err)
	}
}

// TooSlow: a FIFO that takes longer than MaxRTO to drain, in the
// direction the data flows; codel's queue does not stay full.
func TestTooSlow(t *testing.T) {
	slow := Case{Link: link.Config{Rate: 50e3}} // 1000 packets of 1500 bytes: 240 s
	s, ok := TooSlow(slow)
	if !ok || s.Packets != 1000 || s.Drain != 240*time.Second || s.MaxPackets != 500 {
		t.Errorf("TooSlow %+v, %v", s, ok)
	}
	if want := "a full queue of 1000 packets takes 4m0s to drain at 50kbit"; !strings.Contains(s.String(), want) {
		t.Errorf("%q; want %q in it", s, want)
	}
	codel := slow
	codel.Link.Qdisc = link.Qdisc{Kind: link.CoDel}
	if _, ok := TooSlow(codel); ok {
		t.Errorf("codel's queue counted as one that stays full")
	}
	if _, ok := TooSlow(Case{Link: link.Config{Rate: 10e6}}); ok {
		t.Errorf("10mbit counted as too slow")
	}
}
