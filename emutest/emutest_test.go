package emutest

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	netemutcp "github.com/netemu/netemu/tcp"
	"github.com/netemu/netemu/tcpstack"
)

// Nonsense from any option fails the test at New, with one message that
// names the field and the accepted range.
func TestNewRejectsBadOptions(t *testing.T) {
	for _, c := range []struct {
		opt  Option
		want string
	}{
		{RTT(-time.Millisecond), "emutest.New: link: Delay is -500µs; want a duration from 0 to 24h0m0s"},
		{Rate(math.NaN()), "emutest.New: link: Rate is NaN; want bits per second"},
		{Rate(math.Inf(1)), "emutest.New: link: Rate is +Inf; want bits per second"},
		{Rate(-1), "emutest.New: link: Rate is -1; want bits per second"},
		{Rate(4), "emutest.New: link: Rate is 4 bit/s; want at least 8 bit/s, or 0 for unlimited"},
		{DelayedACK(-time.Second), "emutest.New: link: DelayedACK is -1s; want a duration from 0"},
		{DelayedACK(link.LinuxDelayedACK), "emutest.New: DelayedACK(40ms) holds the ACKs of gVisor's TCP, which sends each at once; netemu's TCP, the default, delays its own as a Linux receiver does: drop DelayedACK, or add TCPImpl(tcpstack.GVisor)"},
		{Outage(-time.Second, time.Second), "emutest.New: link: Outages[0] is"},
		{Outage(2*time.Second, time.Second), "emutest.New: link: Outages[0] is"},
		{Outage(time.Second, time.Second), "emutest.New: link: Outages[0] is"},
		{StallTimeout(0), "emutest.StallTimeout(0s): want a positive wall-clock duration"},
		{Loss(1.5), "emutest.New: link: Loss.P is 1.5; want a fraction from 0 to 1"},
		{Jitter(-time.Millisecond), "emutest.New: link: Jitter is -1ms; want a duration from 0 to"},
		{Netem("loss lots"), `emutest.Netem("loss lots"): netem: loss "lots"`},
		{NetemDown("delay 10"), `emutest.NetemDown("delay 10"): netem: delay "10"`},
		{Option{}, "emutest.New: option 0 is the zero Option; use the functions that return one, like emutest.RTT"},
		{Link(link.Config{MTU: 10}), "emutest.New: link: MTU is 10; want 576 to 65535 bytes"},
		{Link(link.Config{Outages: []link.Outage{{Start: 2, End: 1}}}), "emutest.New: link: Outages[0] is 2ns to 1ns; want 0 ≤ Start < End"},
		{TCP(tcpstack.TCPConfig{CongestionControl: "vegas"}), `emutest.New: tcpstack: CongestionControl "vegas" is unknown; want "cubic", "reno"`},
		{TCP(tcpstack.TCPConfig{SendBuffer: -1}), "emutest.New: tcpstack: SendBuffer is -1 bytes; want at least"},
		{Config(emu.Config{Clock: 9}), "emutest.New: emu: Clock is 9; want emu.Virtual, emu.Real or emu.Bubble"},
		{Config(emu.Config{StallTimeout: -1}), "emutest.New: emu: StallTimeout is -1ns; want 0 (one second) or more"},
	} {
		f := newFakeTB(t)
		reached := false
		f.run(func(tb testing.TB) {
			New(tb, c.opt)
			reached = true
		})
		if reached || !strings.Contains(f.messages(), c.want) {
			t.Errorf("New with a bad option: returned %v, reported %q; want it to stop with %q", reached, f.messages(), c.want)
		}
	}
}

func TestNewNilTBPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "emutest.New: nil testing.TB; pass the test's t") {
			t.Errorf("New(nil) panicked with %v; want a message asking for the test's t", r)
		}
	}()
	New(nil)
}

// DelayedACK is refused with netemu's TCP only where it still holds when
// the options end: a later Link or Config replaces the link it set.
func TestDelayedACKRefusalFollowsTheOptions(t *testing.T) {
	for _, c := range []struct {
		opts    []Option
		refused bool
	}{
		{[]Option{DelayedACK(link.LinuxDelayedACK)}, true},
		{[]Option{DelayedACK(link.LinuxDelayedACK), Link(link.Config{Delay: time.Millisecond})}, false},
		{[]Option{DelayedACK(link.LinuxDelayedACK), Config(emu.Config{})}, false},
		{[]Option{Link(link.Config{Delay: time.Millisecond}), DelayedACK(link.LinuxDelayedACK)}, true},
		{[]Option{DelayedACK(link.LinuxDelayedACK), TCPImpl(tcpstack.GVisor)}, false},
		{[]Option{DelayedACK(link.LinuxDelayedACK), DelayedACK(0)}, false},
	} {
		f := newFakeTB(t)
		reached := false
		f.run(func(tb testing.TB) {
			New(tb, c.opts...)
			reached = true
		})
		if refused := strings.Contains(f.messages(), "emutest.New: DelayedACK("); refused != c.refused || reached == c.refused {
			t.Errorf("options %d: refused %v, reached %v (%q); want refused %v", len(c.opts), refused, reached, f.messages(), c.refused)
		}
	}
}

// Options land in the network's configuration, later ones overriding
// earlier ones.
func TestNewAppliesOptions(t *testing.T) {
	n := New(t, Config(emu.Config{Seed: 3, Link: link.Config{Qdisc: link.Qdisc{Limit: 7}}}),
		RTT(100*time.Millisecond), Rate(10e6), DelayedACK(link.LinuxDelayedACK),
		Outage(time.Second, 2*time.Second), Outage(5*time.Second, 6*time.Second),
		TCP(tcpstack.TCPConfig{Impl: tcpstack.GVisor, CongestionControl: tcpstack.Reno}), Seed(9), StallTimeout(time.Minute))
	got := n.Config()
	want := emu.Config{
		Link: link.Config{Delay: 50 * time.Millisecond, Rate: 10e6, Qdisc: link.Qdisc{Limit: 7}, DelayedACK: link.LinuxDelayedACK,
			Outages: []link.Outage{{Start: time.Second, End: 2 * time.Second}, {Start: 5 * time.Second, End: 6 * time.Second}}},
		TCP:          tcpstack.TCPConfig{Impl: tcpstack.GVisor, CongestionControl: tcpstack.Reno},
		Seed:         9,
		StallTimeout: time.Minute,
	}
	if got.Link.Delay != want.Link.Delay || got.Link.Rate != want.Link.Rate || got.Link.Qdisc.Limit != 7 ||
		got.Link.DelayedACK != want.Link.DelayedACK || len(got.Link.Outages) != 2 || got.Link.Outages[1] != want.Link.Outages[1] ||
		got.TCP != want.TCP || got.Seed != 9 || got.StallTimeout != time.Minute || got.Clock != emu.Virtual {
		t.Errorf("config %+v; want %+v", got, want)
	}
	if r := New(t, RealClock()); r.Config().Clock != emu.Real {
		t.Errorf("RealClock gave clock %v", r.Config().Clock)
	}
}

// Netem sets both directions in tc's words; NetemUp and NetemDown set
// one each, leaving the other as the shared options made it.
func TestNetemOptions(t *testing.T) {
	n := New(t, RTT(50*time.Millisecond), Rate(10e6), Netem("loss 1% 25%"), NetemDown("rate 20mbit delay 30ms"), NetemUp("rate 1mbit"))
	l := n.Config().Link
	if l.Rate != 1e6 || l.Delay != 25*time.Millisecond || l.Loss != link.RandomLoss(0.01, 0.25) {
		t.Errorf("client→server: rate %v, delay %v, loss %+v; want 1 mbit, 25ms, 1%% with 25%%", l.Rate, l.Delay, l.Loss)
	}
	if d := l.BtoA; d == nil || d.Rate != 20e6 || d.Delay != 30*time.Millisecond || d.Loss != link.RandomLoss(0.01, 0.25) {
		t.Errorf("server→client: %+v; want 20 mbit, 30ms, 1%% loss with 25%%", d)
	}
	m := New(t, Loss(0.02), Jitter(time.Millisecond), RTT(10*time.Millisecond))
	if l := m.Config().Link; l.Loss.P != 0.02 || l.Jitter != time.Millisecond || l.BtoA != nil {
		t.Errorf("Loss and Jitter: %+v", l)
	}
}

// A stalled run fails the test, naming the virtual instant, instead of
// hanging; nothing is left running.
func TestRunReportsStall(t *testing.T) {
	f := newFakeTB(t)
	var readErr error
	f.run(func(tb testing.TB) {
		n := New(tb, RTT(10*time.Millisecond), StallTimeout(50*time.Millisecond))
		n.Run(func(ctx context.Context) {
			client, _ := n.Pipe(ctx, 9)
			// Both ends wait to read: run time can never move again.
			_, readErr = client.Read(make([]byte, 1))
		})
	})
	// The last event is the handshake's final ACK reaching the server.
	want := "emutest: emu: run stalled at virtual time 15ms"
	if !strings.Contains(f.messages(), want) {
		t.Errorf("reported %q; want %q", f.messages(), want)
	}
	if readErr == nil {
		t.Errorf("the blocked Read returned no error after the stall")
	}
}

// Run's function runs on the test's goroutine, so it may call t.Fatal;
// the run still ends and leaves nothing behind.
func TestRunAllowsFatal(t *testing.T) {
	f := newFakeTB(t)
	after := false
	f.run(func(tb testing.TB) {
		n := New(tb)
		n.Run(func(ctx context.Context) {
			tb.Fatal("stop here")
		})
		after = true
	})
	if after || f.messages() != "stop here" {
		t.Errorf("after Fatal in Run: continued %v, reported %q; want a stop with only %q", after, f.messages(), "stop here")
	}
	// A second Run of a network works after the first returned.
	n := New(t)
	for range 2 {
		n.Run(func(ctx context.Context) { n.Sleep(ctx, time.Second) })
	}
	if got := n.Now().Sub(time.Time{}); got <= 0 {
		t.Errorf("clock %v", got)
	}
}

func TestRunRejections(t *testing.T) {
	f := newFakeTB(t)
	f.run(func(tb testing.TB) { New(tb).Run(nil) })
	if want := "emutest: Run needs a function to run inside the network"; f.messages() != want {
		t.Errorf("Run(nil) reported %q; want %q", f.messages(), want)
	}
	f = newFakeTB(t)
	f.run(func(tb testing.TB) {
		n := New(tb)
		n.Net.Close()
		n.Run(func(context.Context) {})
	})
	if want := "emutest: emu: Run called on a closed Net"; !strings.Contains(f.messages(), want) {
		t.Errorf("Run on a closed net reported %q; want %q", f.messages(), want)
	}
}

// A goroutine that outlives the test fails it, with its stack.
func TestLeakCheckReportsLeak(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	f := newFakeTB(t)
	f.run(func(tb testing.TB) {
		New(tb)
		go func() { <-block }()
	})
	msg := f.messages()
	if !strings.Contains(msg, "emutest: goroutines outlived the network") || !strings.Contains(msg, "TestLeakCheckReportsLeak") {
		t.Errorf("reported %q; want the leaked goroutine's stack", msg)
	}

	// NoLeakCheck turns it off.
	f = newFakeTB(t)
	f.run(func(tb testing.TB) {
		New(tb, NoLeakCheck())
		go func() { <-block }()
	})
	if f.Failed() {
		t.Errorf("NoLeakCheck: reported %q", f.messages())
	}
}

// Parallel tests with networks of their own do not see each other's
// goroutines as leaks.
func TestLeakCheckParallel(t *testing.T) {
	for i := range 4 {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			n := New(t, RTT(time.Duration(i+1)*time.Millisecond))
			n.HTTPServer(80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
			c := n.HTTPClient()
			n.Run(func(ctx context.Context) {
				for range 3 {
					resp, err := c.Get("http://server/")
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}

func TestPipe(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond))
	n.Run(func(ctx context.Context) {
		start := n.Now()
		c, s := n.Pipe(ctx, 0)
		// Dial returns after a round trip; the server's end exists once
		// the handshake's last ACK arrives, half a round trip later.
		if d := n.Now().Sub(start); d != 30*time.Millisecond {
			t.Errorf("Pipe took %v; want 1.5 round trips, 30ms", d)
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(s, b); err != nil || string(b) != "ping" {
			t.Fatalf("server read %q, %v", b, err)
		}
		if d := n.Now().Sub(start); d != 40*time.Millisecond {
			t.Errorf("data arrived at %v; want 40ms", d)
		}
		// Port 0 picks a free port each time.
		c2, _ := n.Pipe(ctx, 0)
		if c2.RemoteAddr().String() == c.RemoteAddr().String() {
			t.Errorf("two pipes on port 0 share the server address %v", c2.RemoteAddr())
		}
	})
}

func TestPipeRejections(t *testing.T) {
	n := New(t)
	var nilCtx context.Context
	for _, c := range []struct {
		env  emu.Env
		ctx  context.Context
		want string
	}{
		{nil, context.Background(), "emutest.Pipe: nil emu.Env; pass the network"},
		{n, nilCtx, "emutest.Pipe: nil context; pass the run's context"},
	} {
		if _, _, err := Pipe(c.ctx, c.env, 0); err == nil || err.Error() != c.want {
			t.Errorf("Pipe: %v; want %q", err, c.want)
		}
	}
	// A port in use: the error names the port and the way out.
	ln, err := n.Listen(7)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, _, err := Pipe(context.Background(), n, 7); err == nil || !strings.Contains(err.Error(), "emutest.Pipe: listen tcp 198.18.0.2:7: port in use; pick another port or 0 for any") {
		t.Errorf("Pipe on a port in use: %v", err)
	}
	f := newFakeTB(t)
	f.run(func(tb testing.TB) {
		m := New(tb)
		ln, _ := m.Listen(7)
		defer ln.Close()
		m.Pipe(context.Background(), 7)
	})
	if want := "emutest: emutest.Pipe: listen tcp 198.18.0.2:7: port in use"; !strings.Contains(f.messages(), want) {
		t.Errorf("Net.Pipe on a port in use reported %q; want %q", f.messages(), want)
	}
}

// outageDrops records when n's link drops packets for an outage, and
// returns a check, to call inside a Run that started at start, that sends
// a byte every 100 ms for 3 s and asserts every such drop fell in
// [1s, 2s) after start.
func outageDrops(t *testing.T, n *Net) func(ctx context.Context, start time.Time) {
	var mu sync.Mutex
	var drops []time.Time
	n.Observe(func(e link.Event) {
		if e.Kind == link.EventDrop && e.Reason == link.DropOutage {
			mu.Lock()
			drops = append(drops, e.Time)
			mu.Unlock()
		}
	})
	return func(ctx context.Context, start time.Time) {
		client, server := n.Pipe(ctx, 0)
		done := make(chan struct{})
		n.Go(func() {
			defer close(done)
			io.Copy(io.Discard, server)
		})
		for range 30 {
			if _, err := client.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			n.Sleep(ctx, 100*time.Millisecond)
		}
		client.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(drops) == 0 {
			t.Fatal("no packet dropped by the outage")
		}
		for _, at := range drops {
			if d := at.Sub(start); d < time.Second || d >= 2*time.Second {
				t.Errorf("outage drop %v after the Run's start; want within [1s, 2s)", d)
			}
		}
	}
}

// Outage intervals count from New. On the virtual clock no run time
// passes between New and the first Run, so they count from the Run's
// start: every drop falls in [1s, 2s) of the run.
func TestOutageCountsFromRunStart(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond), Outage(time.Second, 2*time.Second))
	created := n.Now()
	check := outageDrops(t, n)
	n.Run(func(ctx context.Context) {
		start := n.Now()
		if !start.Equal(created) || !start.Equal(clock.Epoch) {
			t.Errorf("Run starts at %v, New was at %v; want both at clock.Epoch", start, created)
		}
		check(ctx, start)
	})
}

// Net.Outage counts from the instant of the call: made at the start of a
// later Run, its drops fall in [1s, 2s) of that Run, not of the network's
// life.
func TestOutageFromNow(t *testing.T) {
	n := New(t, RTT(20*time.Millisecond))
	check := outageDrops(t, n)
	n.Run(func(ctx context.Context) { n.Sleep(ctx, 5*time.Second) })
	n.Run(func(ctx context.Context) {
		start := n.Now()
		if err := n.Outage(time.Second, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := n.Outage(2*time.Second, time.Second); err == nil || !strings.Contains(err.Error(), "want 0 ≤ start < end") {
			t.Errorf("Outage(2s, 1s) gave %v; want an error that says what works", err)
		}
		check(ctx, start)
	})
}

// A panic in a goroutine started with Go fails the test with the panic's
// value and stack, and ends the run instead of the process.
func TestRunReportsPanicInGo(t *testing.T) {
	f := newFakeTB(t)
	var readErr error
	f.run(func(tb testing.TB) {
		n := New(tb, RTT(10*time.Millisecond))
		n.Run(func(ctx context.Context) {
			client, _ := n.Pipe(ctx, 9)
			n.Go(func() { panicInGo() })
			_, readErr = client.Read(make([]byte, 1))
		})
	})
	msg := f.messages()
	if !strings.Contains(msg, "emutest: emu: panic inside the run: gone wrong") || !strings.Contains(msg, "emutest.panicInGo") {
		t.Errorf("reported %q; want the panic's value and a stack through panicInGo", msg)
	}
	if !errors.Is(readErr, net.ErrClosed) {
		t.Errorf("the blocked Read returned %v after the panic; want net.ErrClosed", readErr)
	}
}

func panicInGo() { panic("gone wrong") }

// TestTCPImpl: a GET between hosts running either TCP takes the
// handshake and the request, two round trips; an unknown TCP is refused.
func TestTCPImpl(t *testing.T) {
	for _, impl := range tcpstack.Impls {
		t.Run(string(impl), func(t *testing.T) {
			n := New(t, RTT(100*time.Millisecond), TCPImpl(impl))
			_, own := n.Client().Stack().TransportProtocolInstance(6).(*netemutcp.Protocol)
			if own != (impl == tcpstack.Netemu) {
				t.Fatalf("TCPImpl(%s): the host's TCP is %T", impl, n.Client().Stack().TransportProtocolInstance(6))
			}
			n.HTTPServer(80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
			c := n.HTTPClient()
			n.Run(func(ctx context.Context) {
				start := n.Now()
				resp, err := c.Get("http://server/")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "hello" {
					t.Fatalf("body %q", b)
				}
				if el := n.Now().Sub(start); el != 200*time.Millisecond {
					t.Errorf("GET took %v; want 2 RTT, 200ms", el)
				}
			})
		})
	}
	var s settings
	if err := TCPImpl("bsd").apply(&s); err != nil || s.cfg.TCP.Impl != "bsd" {
		t.Errorf(`TCPImpl("bsd") = %v, set %q; want the field set, for New to refuse`, err, s.cfg.TCP.Impl)
	}
	if err := s.cfg.Validate(); err == nil {
		t.Error(`TCPImpl("bsd") validates`)
	}
}
