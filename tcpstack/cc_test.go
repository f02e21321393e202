package tcpstack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// netemu's TCP runs cubic, reno and bbr, as package tcp's registry
// says; gVisor's cubic and reno, as gVisor has them; an unknown Impl
// runs none.
func TestImplCongestionControls(t *testing.T) {
	for _, c := range []struct {
		impl    Impl
		want    []CongestionControl
		choices string
	}{
		// netemu's: the registry's, today's first (one added later
		// comes after them).
		{"", []CongestionControl{Cubic, Reno, "bbr"}, "cubic, reno"},
		{Netemu, []CongestionControl{Cubic, Reno, "bbr"}, "cubic, reno"},
		{GVisor, []CongestionControl{Cubic, Reno}, "cubic or reno"},
	} {
		got := c.impl.CongestionControls()
		if c.impl == GVisor && !slices.Equal(got, c.want) || len(got) < len(c.want) || !slices.Equal(got[:len(c.want)], c.want) {
			t.Errorf("Impl(%q).CongestionControls() = %v; want %v first", c.impl, got, c.want)
		}
		choices := c.impl.CongestionControlChoices()
		if c.impl == GVisor && choices != c.choices || c.impl != GVisor && (!strings.HasPrefix(choices, c.choices) || !strings.Contains(choices, " or ")) {
			t.Errorf("Impl(%q).CongestionControlChoices() = %q; want %q", c.impl, choices, c.choices)
		}
	}
	if got := Impl("linux").CongestionControls(); got != nil {
		t.Errorf(`Impl("linux").CongestionControls() = %v; want none`, got)
	}
	if DefaultCongestionControl != Cubic {
		t.Errorf("DefaultCongestionControl = %q; want %q", DefaultCongestionControl, Cubic)
	}
}

// Each TCP refuses a congestion control it does not run in words that
// list those it does: gVisor's bbr (which the registry knows) as vegas
// (which it does not); netemu's vegas.
func TestCongestionControlRefusals(t *testing.T) {
	clk := clock.Real{}
	for _, c := range []struct {
		impl Impl
		ccs  []string
		want string
	}{
		{Netemu, []string{"vegas"}, `want "cubic", "reno"`},
		{GVisor, []string{"bbr", "vegas"}, `want "cubic" or "reno" ("" means "cubic")`},
	} {
		for _, cc := range c.ccs {
			_, err := New(Config{Addr: addrA, Clock: clk, TCP: TCPConfig{Impl: c.impl, CongestionControl: CongestionControl(cc)}}, func([]byte) {})
			want := `tcpstack: CongestionControl "` + cc + `" is unknown; ` + c.want
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), `("" means "cubic")`) {
				t.Errorf("New with %s and %s: %v; want %q", c.impl, cc, err, want)
			}
		}
	}
	h, err := New(Config{Addr: addrA, Clock: clk, TCP: TCPConfig{CongestionControl: "bbr"}}, func([]byte) {})
	if err != nil {
		t.Fatalf("New with netemu's TCP and bbr: %v; want a host", err)
	}
	h.Close()
}

// SetCongestionControl switches a connection to a congestion control its
// TCP runs and refuses, as errors.ErrUnsupported, one it does not.
func TestSetCongestionControl(t *testing.T) {
	for _, impl := range []Impl{Netemu, GVisor} {
		p := newPair(t, link.Config{}, TCPConfig{Impl: impl})
		p.echoServer(t, 7, 0)
		c, err := p.a.Dial(context.Background(), p.b.AddrPort(7))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetCongestionControl("reno"); err != nil {
			t.Errorf("%s: SetCongestionControl(reno) = %v", impl, err)
		}
		var got tcpip.CongestionControlOption
		if err := c.Endpoint().GetSockOpt(&got); err != nil || got != "reno" {
			t.Errorf("%s: after SetCongestionControl(reno) the connection runs %q (%v)", impl, got, err)
		}
		refused, has := []string{"bbr", "vegas"}, "gVisor has cubic and reno"
		if impl == Netemu {
			if err := c.SetCongestionControl("bbr"); err != nil {
				t.Errorf("%s: SetCongestionControl(bbr) = %v", impl, err)
			}
			refused, has = []string{"vegas"}, "netemu's TCP has cubic, reno"
		}
		for _, cc := range refused {
			err := c.SetCongestionControl(cc)
			want := `tcpstack: congestion control "` + cc + `": ` + has
			if !errors.Is(err, errors.ErrUnsupported) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s: SetCongestionControl(%s) = %v; want ErrUnsupported starting %q", impl, cc, err, want)
			}
		}
		c.Close()
	}
}
