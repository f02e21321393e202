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

// Each TCP runs cubic and reno: netemu's as package tcp's registry says,
// gVisor's as gVisor has them; an unknown Impl runs none.
func TestImplCongestionControls(t *testing.T) {
	for _, i := range []Impl{"", Netemu, GVisor} {
		if got, want := i.CongestionControls(), []CongestionControl{Cubic, Reno}; !slices.Equal(got, want) {
			t.Errorf("Impl(%q).CongestionControls() = %v; want %v", i, got, want)
		}
		if got := i.CongestionControlChoices(); got != "cubic or reno" {
			t.Errorf("Impl(%q).CongestionControlChoices() = %q; want %q", i, got, "cubic or reno")
		}
	}
	if got := Impl("linux").CongestionControls(); got != nil {
		t.Errorf(`Impl("linux").CongestionControls() = %v; want none`, got)
	}
	if DefaultCongestionControl != Cubic {
		t.Errorf("DefaultCongestionControl = %q; want %q", DefaultCongestionControl, Cubic)
	}
}

// Both TCPs refuse a congestion control they do not run in the same
// words, bbr (which the registry knows) as vegas (which it does not).
func TestCongestionControlRefusals(t *testing.T) {
	clk := clock.Real{}
	for _, impl := range []Impl{Netemu, GVisor} {
		for _, cc := range []string{"bbr", "vegas"} {
			_, err := New(Config{Addr: addrA, Clock: clk, TCP: TCPConfig{Impl: impl, CongestionControl: CongestionControl(cc)}}, func([]byte) {})
			want := `tcpstack: CongestionControl "` + cc + `" is unknown; want "cubic" or "reno" ("" means "cubic")`
			if err == nil || err.Error() != want {
				t.Errorf("New with %s and %s: %v; want %q", impl, cc, err, want)
			}
		}
	}
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
		for _, cc := range []string{"bbr", "vegas"} {
			err := c.SetCongestionControl(cc)
			want := `tcpstack: congestion control "` + cc + `": gVisor has cubic and reno: `
			if !errors.Is(err, errors.ErrUnsupported) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s: SetCongestionControl(%s) = %v; want ErrUnsupported starting %q", impl, cc, err, want)
			}
		}
		c.Close()
	}
}
