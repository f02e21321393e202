package emutest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/tcpstack"
	"go.uber.org/goleak"
)

// Option adjusts the network that New builds. Options apply in order, so
// a later option overrides what an earlier one set. An option only sets
// fields of the emu.Config; New validates the result once, and fails the
// test naming the field that holds nonsense and the accepted range.
type Option struct {
	apply func(*settings) error
}

func option(f func(*settings) error) Option { return Option{apply: f} }

type settings struct {
	cfg       emu.Config
	leakCheck bool
	delack    bool     // DelayedACK was given
	mesh      []string // Mesh's hosts; nil for none
}

// Config starts from a whole emu.Config; options after it adjust it.
func Config(cfg emu.Config) Option {
	return option(func(s *settings) error { s.cfg, s.delack = cfg, false; return nil })
}

// Link sets the whole link configuration (see link.Config); options
// after it adjust it.
func Link(cfg link.Config) Option {
	return option(func(s *settings) error { s.cfg.Link, s.delack = cfg, false; return nil })
}

// RTT sets the round-trip time: each direction delays packets by half of
// it. 0 means no delay.
func RTT(rtt time.Duration) Option {
	return option(func(s *settings) error {
		s.cfg.Link.Delay = rtt / 2
		return nil
	})
}

// Rate sets the rate of each direction in bits per second: 10e6 is
// 10 Mbit/s. 0 means unlimited.
func Rate(bitsPerSecond float64) Option {
	return option(func(s *settings) error {
		s.cfg.Link.Rate = bitsPerSecond
		return nil
	})
}

// TraceDown makes t, a time-varying rate in mahimahi's format
// (link.ReadTrace, link.ParseTrace, or a generator such as
// link.OnOffTrace), the server→client direction's rate in place of Rate.
// Give it after Rate.
func TraceDown(t *link.Trace) Option {
	return option(func(s *settings) error { s.cfg.Link = s.cfg.Link.WithTrace(link.BtoA, t); return nil })
}

// TraceUp makes t the client→server direction's rate, as TraceDown.
func TraceUp(t *link.Trace) Option {
	return option(func(s *settings) error { s.cfg.Link = s.cfg.Link.WithTrace(link.AtoB, t); return nil })
}

// DelayedACK makes the link hold pure ACKs the way a Linux receiver
// delays them, for up to d: link.LinuxDelayedACK (40ms) is Linux's. 0
// turns the stage off (the default). The stage is for gVisor's TCP
// (TCPImpl(tcpstack.GVisor)), which ACKs every segment at once; netemu's
// TCP, the default, delays its own ACKs as Linux does, and New refuses
// the stage with it. A link.Config given whole (Link, Config) may carry
// a DelayedACK, as the reference cells' links do: emu runs it without
// the stage where both hosts run netemu's TCP.
func DelayedACK(d time.Duration) Option {
	return option(func(s *settings) error {
		s.cfg.Link.DelayedACK = d
		s.delack = d > 0
		return nil
	})
}

// Outage takes the link down from start to end: every packet that reaches
// the wire in between is dropped (link.DropOutage). Outage may be given
// several times.
//
// Both times count from New, when the network and its link are made (see
// link.Outage), not from each Run. On the virtual clock run time stands
// still until something waits on it, so that instant is clock.Epoch and
// is also the start of the first Run, unless the network was used before
// it (a Sleep, a connection): then the intervals are that much earlier
// in the Run. On the real clock the first Run starts later by the wall
// time spent between New and Run. For an interval that counts from the
// start of a Run, call n.Outage(start, end) (emu.Net.Outage) first thing
// in it.
func Outage(start, end time.Duration) Option {
	return option(func(s *settings) error {
		// Clip: never write into the array of a slice the caller passed in.
		s.cfg.Link.Outages = append(slices.Clip(s.cfg.Link.Outages), link.Outage{Start: start, End: end})
		return nil
	})
}

// Loss drops each packet with probability p (0.01 is 1 %), in both
// directions: netem's "loss random p".
func Loss(p float64) Option {
	return option(func(s *settings) error {
		s.cfg.Link.Loss = link.RandomLoss(p, 0)
		return nil
	})
}

// Jitter spreads each packet's delay uniformly over ±j around the RTT's
// half, in both directions: netem's "delay DELAY JITTER". Packets may
// arrive out of order, as with netem.
func Jitter(j time.Duration) Option {
	return option(func(s *settings) error {
		s.cfg.Link.Jitter = j
		return nil
	})
}

// Netem applies tc's netem options to both directions, as typed after
// "tc qdisc add dev eth0 root netem": "delay 25ms 5ms loss 1% 25%
// reorder 10%". Options it names replace what earlier options set
// (tc.Netem.Apply).
func Netem(options string) Option { return netem(options, "Netem", tc.Both) }

// NetemUp applies tc's netem options to the client→server direction only.
// Give it after the options that shape both directions (RTT, Rate, Netem):
// from NetemUp or NetemDown on, the directions are set apart.
func NetemUp(options string) Option { return netem(options, "NetemUp", tc.Up) }

// NetemDown applies tc's netem options to the server→client direction
// only (downloads).
func NetemDown(options string) Option { return netem(options, "NetemDown", tc.Down) }

func netem(options, name string, side tc.Side) Option {
	return option(func(s *settings) error {
		n, err := tc.ParseNetem(options)
		if err != nil {
			return fmt.Errorf("emutest.%s(%q): %v", name, options, err)
		}
		s.cfg.Link = n.Apply(s.cfg.Link, side)
		return nil
	})
}

// TCP pins both hosts' TCP settings; see tcpstack.TCPConfig.
func TCP(cfg tcpstack.TCPConfig) Option {
	return option(func(s *settings) error { s.cfg.TCP = cfg; return nil })
}

// TCPImpl picks both hosts' TCP implementation, keeping the other TCP
// settings: tcpstack.Netemu (Linux's algorithms, which delay their own
// ACKs, so the link's delayed-ACK stage is off) or tcpstack.GVisor.
func TCPImpl(impl tcpstack.Impl) Option {
	return option(func(s *settings) error {
		s.cfg.TCP.Impl = impl
		return nil
	})
}

// Seed seeds all randomness of the run. Equal seeds give equal runs.
func Seed(seed uint64) Option {
	return option(func(s *settings) error { s.cfg.Seed = seed; return nil })
}

// RealClock runs the network on the wall clock instead of the virtual
// one. Runs then take as long as they simulate and are not
// deterministic. Inside a testing/synctest bubble the network runs on the
// bubble's clock, and RealClock is refused.
func RealClock() Option {
	return option(func(s *settings) error { s.cfg.Clock = emu.Real; return nil })
}

// StallTimeout sets how long (wall time) a virtual run may sit with every
// goroutine blocked and nothing scheduled before Run fails the test as
// stalled. The default is one second.
func StallTimeout(d time.Duration) Option {
	return option(func(s *settings) error {
		if d <= 0 {
			return fmt.Errorf("emutest.StallTimeout(%v): want a positive wall-clock duration, like time.Second", d)
		}
		s.cfg.StallTimeout = d
		return nil
	})
}

// NoLeakCheck turns off the goroutine-leak check of New, for a test that
// checks leaks itself (goleak.VerifyTestMain) or keeps goroutines on
// purpose.
func NoLeakCheck() Option {
	return option(func(s *settings) error { s.leakCheck = false; return nil })
}

// Net is an emulated network that belongs to a test: an *emu.Net (a
// client host and a server host joined by one link, or the hosts of a
// Mesh or a Topology, on one clock) with helpers that fail the test on
// error and clean up when it ends.
//
// The methods of emu.Net are available as they are, except Run, Host and
// the faults (Cut, Crash, ...), which Net replaces with forms for tests
// (n.Net.Crash returns the error instead). Net implements emu.Env, so
// workloads and the helpers of this package run on it; on a cluster, its
// Dial and Listen are the first host's and the second's.
type Net struct {
	*emu.Net
	tb testing.TB
}

var _ emu.Env = (*Net)(nil)

// New builds a network for the test and registers its teardown with
// tb.Cleanup. The teardown closes the network, which ends its connections
// and listeners, and then fails the test if any goroutine started since
// New is still running, listing their stacks: one blocked outside the
// network, or a server loop that does not return when its listener
// closes. A server or connection left open is closed, not reported.
//
// With parallel tests, the check runs when the last of the networks open
// at the same time closes, and counts the goroutines of all of them; test
// goroutines themselves are never counted.
//
// Inside a testing/synctest bubble the network runs on the bubble's
// clock with netemu's TCP, and the teardown waits on the bubble's time
// for its goroutines instead (see the package documentation).
//
// Invalid options fail the test with a message that names the option.
func New(tb testing.TB, opts ...Option) *Net {
	if tb == nil {
		panic("emutest.New: nil testing.TB; pass the test's t")
	}
	tb.Helper()
	s := settings{leakCheck: true}
	for i, o := range opts {
		if o.apply == nil {
			tb.Fatalf("emutest.New: option %d is the zero Option; use the functions that return one, like emutest.RTT", i)
		}
		if err := o.apply(&s); err != nil {
			tb.Fatalf("emutest.New: %v", err)
		}
	}
	if err := s.network(); err != nil {
		tb.Fatalf("emutest.New: %v", err)
	}
	bubble := clock.InBubble()
	if s.delack && s.cfg.OwnDelayedACKs() {
		fix := "drop DelayedACK, or add TCPImpl(tcpstack.GVisor)"
		if bubble {
			fix = "drop DelayedACK (gVisor's TCP cannot run in a testing/synctest bubble)"
		}
		tb.Fatalf("emutest.New: DelayedACK(%v) holds the ACKs of gVisor's TCP, which sends each at once; netemu's TCP, the default, delays its own as a Linux receiver does: %s", s.cfg.Link.DelayedACK, fix)
	}
	if bubble {
		if s.cfg.Clock == emu.Real {
			tb.Fatalf("emutest.New: the real clock inside a testing/synctest bubble: the network runs on the bubble's clock there; drop RealClock (or Config's Clock)")
		}
		s.cfg.Clock = emu.Bubble
	}
	// A network belongs to the process-wide leak group while it is open;
	// one in a bubble is not checked itself (see awaitBubble), but while
	// open it keeps a check of other tests' networks from counting its
	// goroutines.
	leaks.enter()
	en, err := emu.New(s.cfg)
	if err != nil {
		leaks.leave(false)
		tb.Fatalf("emutest.New: %v", err)
	}
	n := &Net{Net: en, tb: tb}
	tb.Cleanup(func() {
		n.Net.Close()
		if bubble {
			awaitBubble()
			leaks.leave(false)
			return
		}
		if err := leaks.leave(s.leakCheck); err != nil {
			tb.Errorf("emutest: goroutines outlived the network (close servers, connections and clients before the test ends, or pass emutest.NoLeakCheck()):\n%v", err)
		}
	})
	return n
}

// bubbleGrace is how much of a synctest bubble's time the teardown gives
// the bubble's goroutines to end after the network closed: code under
// test there sleeps and waits on the bubble's timers (a handler still
// sleeping off a slow response when its client gave up), and that time
// costs no wall time.
const bubbleGrace = time.Minute

// awaitBubble lets the bubble's time pass, up to bubbleGrace, while other
// goroutines of the bubble remain (not while one of them is blocked
// outside the bubble's reach, which stops its time); synctest then fails
// the test, naming them, if any outlive it. The process-wide leak check
// is not used in a bubble: it sees goroutines outside the bubble, whose
// wall time does not pass while the bubble's does.
func awaitBubble() {
	// spins counts the looks at a bubble whose time cannot move:
	// while nothing of it runs, up to 1000 in a row; in all, up to
	// 100000 (a goroutine that polls forever beside a stuck one).
	for waited, spins, total := time.Duration(0), 0, 0; waited < bubbleGrace && total < 100000; total++ {
		others, stuck, active := clock.BubbleOthers()
		switch {
		case others == 0:
			return
		case stuck > 0 && active > 0:
			// One that runs may free the stuck (a mutex's holder).
			spins = 0
			runtime.Gosched()
		case stuck > 0:
			// The bubble's time stands still while a goroutine is
			// blocked on something outside it; a later cleanup may
			// free it, so do not sleep on it.
			if spins++; spins > 1000 {
				return
			}
			runtime.Gosched()
		case active > 0:
			// One still running may yet block outside the bubble's
			// reach; sleeping now would stop on it for good.
			runtime.Gosched()
		default:
			spins = 0
			time.Sleep(time.Second) // the bubble's time
			waited += time.Second
		}
	}
}

// Run calls f on the test's goroutine, inside the network. f may call
// t.Fatal and the like.
//
// On the virtual clock, if the run stalls (every goroutine blocked and
// nothing scheduled, so run time can never move again), f's context is
// canceled, the hosts are closed so that blocked calls return, and the
// test fails with the virtual instant of the stall. A panic in a
// goroutine started with Go during the Run ends it the same way, and the
// test fails with the panic and its stack (see emu.Net.Go). Network calls
// made outside Run work too, but a stall there hangs until the test
// binary times out.
//
// The network outlives Run: call Run again, or use it directly. To get
// the stall as an error instead, use the Run of the embedded emu.Net.
func (n *Net) Run(f func(ctx context.Context)) {
	n.tb.Helper()
	if f == nil {
		n.tb.Fatal("emutest: Run needs a function to run inside the network")
	}
	ctxc := make(chan context.Context, 1)
	release := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- n.Net.Run(n.tb.Context(), func(ctx context.Context) error {
			ctxc <- ctx
			<-release
			return nil
		})
	}()
	var ctx context.Context
	select {
	case ctx = <-ctxc:
	case err := <-result:
		n.tb.Fatalf("emutest: %v", withStack(err))
	}
	returned := false
	defer func() {
		// Runs also when f calls t.FailNow or panics: the run ends either
		// way, and no goroutine is left behind.
		close(release)
		if err := <-result; err != nil {
			n.tb.Errorf("emutest: %v", withStack(err))
			if returned {
				n.tb.FailNow()
			}
		}
	}()
	f(ctx)
	returned = true
}

// withStack formats err, followed by the stack of the panic it carries,
// if any (emu.PanicError).
func withStack(err error) string {
	var pe *emu.PanicError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%v\n%s", err, pe.Stack)
	}
	return err.Error()
}

// Pipe returns both ends of a new TCP connection: client dialed from the
// client host, server accepted on the server host's port (0 picks a free
// one). It returns once both ends are established, 1.5 round trips after
// the call, and closes them when the test ends.
func (n *Net) Pipe(ctx context.Context, port uint16) (client, server emu.Conn) {
	n.tb.Helper()
	client, server, err := Pipe(ctx, n, port)
	if err != nil {
		n.tb.Fatalf("emutest: %v", err)
	}
	n.tb.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// Pipe returns both ends of a new TCP connection on env: client dialed
// from the client host, server accepted on the server host's port (0
// picks a free one). The caller closes both.
func Pipe(ctx context.Context, env emu.Env, port uint16) (client, server emu.Conn, err error) {
	if env == nil {
		return nil, nil, errors.New("emutest.Pipe: nil emu.Env; pass the network")
	}
	if ctx == nil {
		return nil, nil, errors.New("emutest.Pipe: nil context; pass the run's context")
	}
	ln, err := env.Listen(port)
	if err != nil {
		return nil, nil, fmt.Errorf("emutest.Pipe: %w", err)
	}
	defer ln.Close()
	if port == 0 {
		port = uint16(ln.Addr().(*net.TCPAddr).Port)
	}
	client, err = env.Dial(ctx, port)
	if err != nil {
		return nil, nil, fmt.Errorf("emutest.Pipe: %w", err)
	}
	// Accept returns when the handshake's last ACK reaches the server,
	// half a round trip after Dial returned, or fails when ctx ends.
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	c, err := ln.Accept()
	if !stop() && err != nil {
		err = ctx.Err()
	}
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("emutest.Pipe: accept: %w", err)
	}
	return client, c.(emu.Conn), nil
}

// WithTimeout is WithTimeout on the network's clock: the context ends
// with context.DeadlineExceeded exactly d of run time from now, or never
// for a d past the end of the clock's time (math.MaxInt64).
func (n *Net) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return WithTimeout(parent, n.Clock(), d)
}

// WithDeadline is WithDeadline on the network's clock.
func (n *Net) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return WithDeadline(parent, n.Clock(), deadline)
}

// leaks groups the networks open at the same time, so that one test's
// leak check does not count the goroutines of networks that parallel
// tests still use.
var leaks leakGroup

type leakGroup struct {
	mu     sync.Mutex
	open   int
	ignore goleak.Option // the goroutines that ran when the group began
}

func (g *leakGroup) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == 0 {
		g.ignore = goleak.IgnoreCurrent()
	}
	g.open++
}

// leave closes a network of the group. When it was the last one and check
// is set, it returns the goroutines started since the group began that
// still run, other than test goroutines.
func (g *leakGroup) leave(check bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open--
	if g.open > 0 || !check {
		return nil
	}
	return goleak.Find(g.ignore, goleak.IgnoreAnyFunction("testing.tRunner"))
}
