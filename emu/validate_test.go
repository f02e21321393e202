package emu

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"go.uber.org/goleak"
)

// Every public entry point of Net rejects nonsense with a message that
// names it and says what to do.
func TestNetRejectsBadInput(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := newNet(t, Config{})
	var nilCtx context.Context
	ok := func(context.Context) error { return nil }
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"Run(nil ctx)", n.Run(nilCtx, ok), "emu: Run needs a context; pass context.Background() or the test's context"},
		{"Run(nil f)", n.Run(context.Background(), nil), "emu: Run needs a function to run inside the network"},
		{"Sleep(nil ctx)", n.Sleep(nilCtx, 1), "emu: Sleep needs a context; pass the run's context"},
		{"Dial(nil ctx)", func() error { _, err := n.Dial(nilCtx, 80); return err }(), "dial tcp 198.18.0.2:80: nil context; pass context.Background() or the run's context"},
		{"Dial(port 0)", func() error { _, err := n.Dial(context.Background(), 0); return err }(), "dial tcp 198.18.0.2:0: want an IPv4 address in 198.18.0.0/15 and a non-zero port"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%s: %v; want %q", c.name, c.err, c.want)
		}
	}
	func() {
		defer func() {
			if r := recover(); r != "emu: Go called with a nil function" {
				t.Errorf("Go(nil) panicked with %v", r)
			}
		}()
		n.Go(nil)
	}()
	// Run while another Run is active, and after Close.
	err := n.Run(context.Background(), func(ctx context.Context) error {
		return n.Run(ctx, ok)
	})
	if want := "emu: Run called while another Run of the same Net is active"; err == nil || err.Error() != want {
		t.Errorf("nested Run: %v; want %q", err, want)
	}
	n.Close()
	if err := n.Run(context.Background(), ok); err == nil || err.Error() != "emu: Run called on a closed Net; build a new one with emu.New" {
		t.Errorf("Run after Close: %v", err)
	}
	n.Close() // idempotent
}

// Config rejections name the field, whichever part holds it.
func TestConfigRejectionsNameTheField(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Link: link.Config{Rate: -1}}, "link: Rate is -1; want bits per second"},
		{Config{Link: link.Config{Qdisc: link.Qdisc{LimitBytes: 100}}}, "link: Qdisc.LimitBytes is 100; want at least the MTU (1500 bytes)"},
		{Config{Link: link.Config{Outages: []link.Outage{{Start: 5, End: 5}}}}, "link: Outages[0] is 5ns to 5ns; want 0 ≤ Start < End"},
		{Config{TCP: tcpstack.TCPConfig{CongestionControl: "vegas"}}, `tcpstack: CongestionControl "vegas" is unknown; want "cubic", "reno"`},
		{Config{TCP: tcpstack.TCPConfig{ReceiveBuffer: 10}}, "tcpstack: ReceiveBuffer is 10 bytes; want at least"},
		{Config{TCP: tcpstack.TCPConfig{MaxSendBuffer: 1 << 16, SendBuffer: 1 << 20}}, "tcpstack: SendBuffer (1048576 bytes) exceeds its maximum, MaxSendBuffer (65536)"},
		{Config{TCP: tcpstack.TCPConfig{Impl: tcpstack.GVisor, MaxSendBuffer: 1 << 16}}, "tcpstack: SendBuffer (1048576 bytes) exceeds its maximum, MaxSendBuffer (65536)"},
		{Config{Clock: -1}, "emu: Clock is -1; want emu.Virtual, emu.Real or emu.Bubble"},
		{Config{Clock: Bubble, TCP: tcpstack.TCPConfig{Impl: tcpstack.GVisor}}, "emu: gVisor's TCP cannot run in a testing/synctest bubble"},
		{Config{Clock: Bubble, ServerTCP: &tcpstack.TCPConfig{Impl: tcpstack.GVisor}}, "emu: gVisor's TCP cannot run in a testing/synctest bubble"},
		{Config{StallTimeout: -5}, "emu: StallTimeout is -5ns; want 0 (one second) or more"},
	} {
		n, err := New(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an error starting %q", c.cfg, err, c.want)
		}
		if n != nil {
			n.Close()
		}
	}
}

// emu.Bubble runs only inside a testing/synctest bubble, and only it
// runs there: the other clocks' goroutines never block durably.
func TestBubbleClockWhereItRuns(t *testing.T) {
	if n, err := New(Config{Clock: Bubble}); err == nil || !strings.HasPrefix(err.Error(), "emu: Clock is emu.Bubble outside a testing/synctest bubble") {
		t.Errorf("New with emu.Bubble outside a bubble: %v; want a refusal", err)
		if n != nil {
			n.Close()
		}
	}
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []ClockMode{Virtual, Real} {
			if n, err := New(Config{Clock: c}); err == nil || !strings.HasPrefix(err.Error(), "emu: Clock is emu."+map[ClockMode]string{Virtual: "Virtual", Real: "Real"}[c]+" inside a testing/synctest bubble") {
				t.Errorf("New with the %v clock in a bubble: %v; want a refusal", c, err)
				if n != nil {
					n.Close()
				}
			}
		}
		n, err := New(Config{Clock: Bubble})
		if err != nil {
			t.Fatal(err)
		}
		n.Close()
	})
}
