package emu

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/clock"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
	"github.com/zeebo/xxh3"
)

// ClockMode selects the clock of a run.
type ClockMode int

const (
	// Virtual is a discrete-event clock: deterministic and fast.
	Virtual ClockMode = iota
	// Real is the wall clock.
	Real
	// Bubble is the clock of the testing/synctest bubble the network is
	// made in: the real clock's APIs (time.Now, time.AfterFunc), which
	// the bubble fakes, so the network and the code under test share one
	// clock, and time jumps when every goroutine of the bubble is
	// durably blocked. Only netemu's TCP runs there: it has no goroutine
	// of its own, where gVisor's TCP has goroutines that never block
	// durably, so the bubble's time would never move.
	Bubble
)

func (m ClockMode) String() string {
	switch m {
	case Real:
		return "real"
	case Bubble:
		return "bubble"
	}
	return "virtual"
}

// Addresses of the two hosts, in 198.18.0.0/15.
var (
	ClientAddr = netip.MustParseAddr("198.18.0.1")
	ServerAddr = netip.MustParseAddr("198.18.0.2")
)

// Config describes a network. The zero value is an ideal link between two
// hosts with default TCP settings on the virtual clock, seed 0.
type Config struct {
	// Link shapes both directions; see link.Config. Direction a>b runs
	// from the client to the server. A zero Link.Seed takes Seed. With a
	// Topology, it is not used: each link has its own.
	Link link.Config

	// Topology, if set, is the network: its hosts and routers joined by
	// its links (package topo). nil means two hosts, client and server,
	// joined by Link (topo.Pair). The first host is the client of Net's
	// Dial and the second its server; Between gives any other pair.
	Topology *topo.Topology

	// TCP pins both hosts' TCP settings; see tcpstack.TCPConfig.
	TCP tcpstack.TCPConfig

	// ServerTCP, if set, gives the server its own TCP settings (another
	// implementation, say, to run one against the other); nil means TCP.
	ServerTCP *tcpstack.TCPConfig

	// Clock is Virtual (default), Real or Bubble.
	Clock ClockMode

	// Seed seeds all randomness of the run.
	Seed uint64

	// StallTimeout is how long, in wall time, a virtual run may sit with
	// every goroutine blocked and nothing scheduled before Run gives up
	// with ErrStalled. 0 means one second.
	StallTimeout time.Duration

	// QuietLimit is how much virtual time a run may go on with no data
	// crossing the link (only ACKs, window probes and retransmission
	// timers) before Run gives up with ErrStalled: a writer blocked on a
	// peer that never reads, say. 0 means 24 hours; negative turns the
	// check off.
	QuietLimit time.Duration

	// Probe, if set, receives both hosts' TCP sender state each time a
	// connection processes a segment (see tcpstack.Config.Probe: it runs
	// in a quiet event, and one that readies a goroutine calls
	// clock.Stir).
	Probe func(tcpstack.Sample)
}

// ServerTCPConfig is the server's TCP settings: ServerTCP, or TCP where
// it is nil.
func (c Config) ServerTCPConfig() tcpstack.TCPConfig {
	if c.ServerTCP != nil {
		return *c.ServerTCP
	}
	return c.TCP
}

// OwnDelayedACKs reports whether both hosts' TCPs delay their own ACKs
// as a Linux receiver does (netemu's TCP, the default): the link then
// runs without its delayed-ACK stage, whatever Link.DelayedACK says.
func (c Config) OwnDelayedACKs() bool {
	return c.TCP.Impl.OrDefault() == tcpstack.Netemu && c.ServerTCPConfig().Impl.OrDefault() == tcpstack.Netemu
}

// topology is the network the configuration describes: Topology, or
// the pair joined by Link.
func (c Config) topology() topo.Topology {
	if c.Topology != nil {
		return *c.Topology
	}
	return topo.Pair(c.Link)
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if c.Topology != nil {
		if !reflect.ValueOf(c.Link).IsZero() {
			return errors.New("emu: Config has a Topology and a Link; give each link's configuration in the Topology")
		}
		if err := c.Topology.Validate(); err != nil {
			return err
		}
	} else if err := c.Link.Validate(); err != nil {
		return err
	}
	if err := c.TCP.Validate(); err != nil {
		return err
	}
	if c.ServerTCP != nil {
		if err := c.ServerTCP.Validate(); err != nil {
			return err
		}
	}
	if c.Clock != Virtual && c.Clock != Real && c.Clock != Bubble {
		return fmt.Errorf("emu: Clock is %d; want emu.Virtual, emu.Real or emu.Bubble", c.Clock)
	}
	if c.Clock == Bubble {
		if c.TCP.Impl == tcpstack.GVisor || c.ServerTCPConfig().Impl == tcpstack.GVisor {
			return errors.New("emu: gVisor's TCP cannot run in a testing/synctest bubble (its goroutines never block durably, so the bubble's time would never move); use netemu's TCP, the default (leave Impl unset or set tcpstack.Netemu)")
		}
	}
	if c.StallTimeout < 0 {
		return fmt.Errorf("emu: StallTimeout is %v; want 0 (one second) or more", c.StallTimeout)
	}
	return nil
}

// ErrStalled is returned by Run when a virtual run can make no progress:
// every goroutine is blocked and no timer is pending (for example, both
// sides wait to read).
var ErrStalled = clock.ErrStalled

// Net is an emulated network: hosts and routers joined by links, two
// hosts and one link unless Config.Topology says otherwise.
type Net struct {
	cfg     Config
	topo    topo.Topology
	clk     clock.Clock
	virtual *clock.Virtual // nil on the real clock
	precise *clock.Precise // the link's timers on the real clock; nil on the virtual one
	serial  *clock.Serial  // every timer in a bubble; nil elsewhere
	links   []*link.Link   // topo.Links' order
	hosts   []*tcpstack.Host
	routers []*router
	ends    [][2]node // each link's nodes, A and B
	byAddr  map[netip.Addr]int
	link    *link.Link     // links[0]: the pair's
	client  *tcpstack.Host // hosts[0]
	server  *tcpstack.Host // hosts[1]

	born    time.Time // when New made it; a bubble's trace counts from here
	traceMu sync.Mutex
	trace   *xxh3.Hasher
	// In a bubble, packets due at one instant are delivered by timers
	// that run in no fixed order, so each link's direction has its own
	// hash (dirTraces[2*link+dir]) and Stats combines them in order.
	dirTraces []*xxh3.Hasher
	hdr       [15]byte

	runMu   sync.Mutex
	abortMu sync.Mutex
	abort   func(cause error) bool // ends the active Run (stall, panic); nil outside Run; guarded by abortMu

	closeOnce sync.Once
	closed    atomic.Bool

	// lastData is when a packet with more than one byte of payload last
	// crossed the link (virtual time since Epoch); quiet guards the
	// QuietLimit check. Both under traceMu.
	lastData time.Duration
	quiet    time.Duration
}

// stallTimeout is StallTimeout with its default.
func (n *Net) stallTimeout() time.Duration {
	if n.cfg.StallTimeout == 0 {
		return time.Second
	}
	return n.cfg.StallTimeout
}

// defaultQuietLimit is QuietLimit's default.
const defaultQuietLimit = 24 * time.Hour

// New builds a network. Close releases it.
func New(cfg Config) (*Net, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch in := clock.InBubble(); {
	case cfg.Clock == Bubble && !in:
		return nil, errors.New("emu: Clock is emu.Bubble outside a testing/synctest bubble; call New inside synctest.Test, or use emu.Virtual")
	case cfg.Clock != Bubble && in:
		return nil, fmt.Errorf("emu: Clock is emu.%s inside a testing/synctest bubble, where its goroutines never block durably and the bubble's time would never move; use emu.Bubble", map[ClockMode]string{Virtual: "Virtual", Real: "Real"}[cfg.Clock])
	}
	n := &Net{cfg: cfg, topo: cfg.topology(), trace: xxh3.New(), quiet: cfg.QuietLimit, born: time.Now()}
	if cfg.Clock == Bubble {
		for range 2 * len(n.topo.Links) {
			n.dirTraces = append(n.dirTraces, xxh3.New())
		}
	}
	if n.quiet == 0 {
		n.quiet = defaultQuietLimit
	}
	if cfg.Clock == Virtual {
		n.virtual = clock.NewVirtual(cfg.StallTimeout, n.onStall)
		// A run that never settles makes no progress either: time stands
		// still while goroutines keep running.
		n.virtual.OnBusy(10*n.stallTimeout(), n.onBusy)
		n.clk = n.virtual
	} else if cfg.Clock == Bubble {
		// The bubble's timers fire exactly on its fake time, many at one
		// instant: Serial runs them in one order every run.
		n.serial = clock.NewSerial()
		n.clk = n.serial
	} else {
		n.clk = clock.Real{}
		// The link's timers fire on time. Go's timers fire up to a
		// millisecond late, which bunches deliveries: ACKs that left the
		// receiver 1.2 ms apart arrived 2.4 ms apart, the sender's HyStart
		// saw no ACK train and left slow start only at the first loss (bulk
		// through a 50-packet queue: 465–1512 drops where the virtual clock
		// and kernel TCP have 0–6; docs/ACCURACY.md). The hosts keep Go's
		// timers: theirs may block on a stack's locks.
		n.precise = clock.NewPrecise()
	}
	if err := n.build(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// deliver is link i's far end: it records the packet in the trace and
// hands it to the node at the end of direction dir.
func (n *Net) deliver(i int, dir link.Dir, pkt []byte) {
	n.traceMu.Lock()
	now := n.Elapsed()
	if n.virtual != nil && n.quiet > 0 { // the QuietLimit watchdog: virtual clock only
		if payload(pkt) > 1 {
			n.lastData = now
		} else if now-n.lastData > n.quiet {
			quiet := now - n.lastData
			n.lastData = now // report once
			n.traceMu.Unlock()
			n.abortRun(&StallError{At: now, Why: fmt.Sprintf("no data crossed the link for %v of virtual time: only ACKs, window probes and retransmission timers; a writer may be blocked on a peer that never reads (a zero window), or a sender keeps retrying into a dead link", quiet.Round(time.Second))})
			n.traceMu.Lock()
		}
	}
	// The record of a delivery: its instant, its direction, its length,
	// and, on a network of more than one link, the link's index (the
	// pair's records are what they always were); then, on the clocks
	// whose traces repeat, the packet's own 128-bit XXH3, computed in one
	// pass over the link's bytes rather than copied into the running
	// hash's buffer.
	hdr := n.hdr[:13]
	binary.BigEndian.PutUint64(hdr[0:8], uint64(now))
	hdr[8] = byte(dir)
	binary.BigEndian.PutUint32(hdr[9:13], uint32(len(pkt)))
	if len(n.links) > 1 {
		hdr = n.hdr[:15]
		binary.BigEndian.PutUint16(hdr[13:15], uint16(i))
	}
	tr := n.trace
	if n.dirTraces != nil {
		tr = n.dirTraces[2*i+int(dir)]
	}
	tr.Write(hdr)
	if n.virtual != nil || n.cfg.Clock == Bubble {
		// Only a virtual or bubble trace can repeat: on the real clock
		// arrival times never do, so the payload is left out of its hash
		// (docs/PERFORMANCE.md).
		sum := xxh3.Hash128(pkt).Bytes()
		tr.Write(sum[:])
	}
	n.traceMu.Unlock()
	to := n.ends[i][1]
	if dir == link.BtoA {
		to = n.ends[i][0]
	}
	n.arrive(to, pkt)
}

// Observe makes f receive every event of the pair's link (the first
// link of a topology): each packet sent, held, queued, dropped and
// delivered (see link.Observer). Set it before traffic flows.
func (n *Net) Observe(f link.Observer) { n.link.Observe(f) }

// Outage takes the link down from start to end after now, the instant of
// the call: called at the start of a Run, the interval counts from the
// Run's start (link.Config.Outages count from the network's creation).
// Every packet that reaches the wire in between is dropped
// (link.DropOutage).
func (n *Net) Outage(start, end time.Duration) error { return n.link.AddOutage(start, end) }

// SetLink changes the running link's per-direction parameters
// (link.Link.Reconfigure): delay, rate, impairments, the queue
// discipline. A zero Seed is the network's, as in New. Config().Link
// stays the configuration New was given.
func (n *Net) SetLink(cfg link.Config) error {
	if cfg.Seed == 0 {
		cfg.Seed = n.cfg.Seed
	}
	return n.link.Reconfigure(cfg)
}

// Client returns host A, 198.18.0.1.
func (n *Net) Client() *tcpstack.Host { return n.client }

// Server returns host B, 198.18.0.2.
func (n *Net) Server() *tcpstack.Host { return n.server }

// Clock returns the run's clock.
func (n *Net) Clock() clock.Clock { return n.clk }

// Now returns the current time of the run. On the virtual clock it starts
// at clock.Epoch.
func (n *Net) Now() time.Time { return n.clk.Now() }

// Sleep waits d on the run's clock. It returns ctx's error if ctx ends
// first. A d that reaches past the end of the clock's time (math.MaxInt64)
// lasts until ctx ends; on the virtual clock it is not something
// scheduled, so a run waiting only on it is stalled.
func (n *Net) Sleep(ctx context.Context, d time.Duration) error {
	if ctx == nil {
		return errors.New("emu: Sleep needs a context; pass the run's context")
	}
	if !clock.Sleep(ctx, n.clk, d) {
		return ctx.Err()
	}
	return nil
}

// Conn is a TCP connection of either backend: a net.Conn with the
// *net.TCPConn methods workloads use.
type Conn interface {
	net.Conn
	SetNoDelay(noDelay bool) error
	CloseWrite() error
}

// Env is what a workload needs of a network: a client that dials a
// server, the run's clock, ordered goroutine starts, and the run's seed,
// from which a workload draws whatever randomness it needs of its own
// (TLS keys and handshakes). *Net implements it; so does the kernel
// backend.
type Env interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
	Listen(port uint16) (net.Listener, error)
	Dial(ctx context.Context, port uint16) (Conn, error)
	// ListenPacket opens a UDP socket on the server's port.
	ListenPacket(port uint16) (net.PacketConn, error)
	// DialPacket opens a UDP socket on the client, on a free port, and
	// returns it with the address of the server's port to write to.
	DialPacket(ctx context.Context, port uint16) (net.PacketConn, net.Addr, error)
	Go(f func())
	Seed() uint64
}

var _ Env = (*Net)(nil)

// Seed returns the seed of the run's randomness, Config.Seed.
func (n *Net) Seed() uint64 { return n.cfg.Seed }

// Listen listens on the server's port; see tcpstack.Host.Listen.
func (n *Net) Listen(port uint16) (net.Listener, error) { return n.pair().Listen(port) }

// Dial connects from the client to the server's port. The connection
// offers SetNoDelay like *net.TCPConn.
func (n *Net) Dial(ctx context.Context, port uint16) (Conn, error) { return n.pair().Dial(ctx, port) }

// ListenPacket opens a UDP socket on the server's port; see
// tcpstack.Host.ListenUDP.
func (n *Net) ListenPacket(port uint16) (net.PacketConn, error) { return n.pair().ListenPacket(port) }

// DialPacket opens a UDP socket on the client, on a free port, and
// returns it with the server's address at port.
func (n *Net) DialPacket(ctx context.Context, port uint16) (net.PacketConn, net.Addr, error) {
	return n.pair().DialPacket(ctx, port)
}

// pair is the network between its client and its server.
func (n *Net) pair() *pairEnv { return &pairEnv{n: n, client: n.client, server: n.server} }

// Go starts f on a new goroutine. On the virtual clock the goroutine
// begins as an event of its own, once the run is idle, after the events
// queued before it: goroutines started together begin one at a time, in
// call order, so their first actions (a dial, a request) happen in the
// same order on every run. On the real clock it is a plain go statement.
// f must not be nil. After Close, f is never started.
//
// A panic in f while a Run is active ends that Run as a stall does (its
// context is canceled, the network closed) and Run returns a *PanicError;
// the first panic is the one reported. A panic in f while no Run is
// active is not recovered: it ends the process, as in any goroutine.
func (n *Net) Go(f func()) {
	if f == nil {
		panic("emu: Go called with a nil function")
	}
	n.clk.Wake(func() { go n.guard(f) })
}

// guard runs f and hands a panic to the active Run; with none, the panic
// goes on, with f's frames still on the stack it prints.
func (n *Net) guard(f func()) {
	defer func() {
		if r := recover(); r != nil {
			if !n.abortRun(&PanicError{Value: r, Stack: debug.Stack()}) {
				panic(r)
			}
		}
	}()
	f()
}

// abortRun ends the active Run with cause. It reports false if no Run is
// active.
func (n *Net) abortRun(cause error) bool {
	clock.Stir(n.clk) // the abort readies the run's goroutines
	n.abortMu.Lock()
	defer n.abortMu.Unlock()
	return n.abort != nil && n.abort(cause)
}

// PanicError is returned by Run when the function given to it, or a
// goroutine started with Go during it, panics. Value is what was passed
// to panic; Stack is the panicking goroutine's stack (runtime/debug.Stack).
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("emu: panic inside the run: %v", e.Value) }

// Unwrap returns Value if it is an error, so that errors.Is and errors.As
// see through the panic.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// errGoexit is returned by Run when its function ends by runtime.Goexit.
var errGoexit = errors.New("emu: the function given to Run called runtime.Goexit (t.FailNow, t.Fatal or t.SkipNow on a goroutine other than the test's?)")

// Config returns the network's configuration.
func (n *Net) Config() Config { return n.cfg }

// Run calls f inside the network and returns its error. On the virtual
// clock, if the run stalls (every goroutine blocked, nothing scheduled),
// Run cancels f's context, closes the network so that blocked calls return,
// and returns an error wrapping ErrStalled. If f panics, or calls
// runtime.Goexit, Run returns a *PanicError (or an error naming Goexit)
// and the network is closed as after a stall; a panic in a goroutine
// started with Go during the Run ends it the same way (see Go). Only one
// Run may be active at a time.
func (n *Net) Run(ctx context.Context, f func(ctx context.Context) error) error {
	switch {
	case ctx == nil:
		return errors.New("emu: Run needs a context; pass context.Background() or the test's context")
	case f == nil:
		return errors.New("emu: Run needs a function to run inside the network")
	case n.closed.Load():
		return errors.New("emu: Run called on a closed Net; build a new one with emu.New")
	}
	if !n.runMu.TryLock() {
		return errors.New("emu: Run called while another Run of the same Net is active")
	}
	defer n.runMu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		stall    *StallError // the first stall
		panicked *PanicError // the first panic of a Go goroutine
	)
	// abort ends the Run with cause: the hosts are closed to release the
	// blocked goroutines, so the network cannot run again. It runs, and
	// the variables above are read, with abortMu held.
	abort := func(cause error) bool {
		switch c := cause.(type) {
		case *PanicError:
			if panicked == nil {
				panicked = c
			}
		case *StallError:
			if stall == nil {
				stall = c
			}
		}
		n.closed.Store(true)
		cancel(cause)
		go n.closeHosts()
		return true
	}
	n.abortMu.Lock()
	n.abort = abort
	n.abortMu.Unlock()
	done := make(chan error, 1)
	abnormal := false // f panicked or called Goexit; written before done
	go func() {
		returned := false
		defer func() {
			if returned {
				return
			}
			abnormal = true
			if r := recover(); r != nil {
				done <- &PanicError{Value: r, Stack: debug.Stack()}
			} else {
				done <- errGoexit
			}
		}()
		err := f(ctx)
		returned = true
		done <- err
	}()
	err := <-done
	if abnormal {
		// Whatever f left blocked is released as after a stall.
		n.closed.Store(true)
		cancel(err)
		n.closeHosts()
	}
	n.abortMu.Lock()
	n.abort = nil
	var errs []error
	if panicked != nil {
		errs = append(errs, panicked)
	}
	if stall != nil {
		errs = append(errs, stall)
	}
	n.abortMu.Unlock()
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// onStall ends the run the scheduler found idle with nothing scheduled.
func (n *Net) onStall() {
	n.abortRun(&StallError{At: n.clk.Now().Sub(clock.Epoch), Why: stallWhy()})
}

// onBusy ends a run whose goroutines keep running without letting time
// advance.
func (n *Net) onBusy() {
	n.abortRun(&StallError{At: n.clk.Now().Sub(clock.Epoch), Busy: true,
		Why: "goroutines kept running for " + (10 * n.stallTimeout()).String() + " of wall time without the virtual clock advancing: a loop that polls Now or work outside the run's clock (time.Sleep, time.After and the wall clock never move virtual time; use the run's Sleep and timers)"})
}

// stallWhy says what the goroutines of a stalled run wait on, when it is
// something the virtual clock cannot wake: the wall clock.
func stallWhy() string {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "\ntime.Sleep(") {
		return "a goroutine waits in time.Sleep, on the wall clock, which the virtual clock never wakes; use the run's Sleep (emu.Net.Sleep, emutest's n.Sleep)"
	}
	return "every goroutine waits on the network and nothing is scheduled (both sides waiting to read, say)"
}

// StallError is returned by Run when a virtual run can make no progress:
// every goroutine is blocked with nothing scheduled, goroutines keep
// running without letting time advance (Busy), or only timers fire with
// no data crossing the link (Config.QuietLimit). It wraps ErrStalled.
type StallError struct {
	At   time.Duration // virtual time since clock.Epoch
	Busy bool
	Why  string
}

func (e *StallError) Error() string {
	return fmt.Sprintf("emu: run stalled at virtual time %v: %s", e.At, e.Why)
}

func (e *StallError) Unwrap() error { return ErrStalled }

// payload is the TCP payload length of an IPv4 packet; 0 for anything
// else.
func payload(pkt []byte) int {
	if len(pkt) < 20 || pkt[0]>>4 != 4 || pkt[9] != 6 {
		return 0
	}
	ihl := int(pkt[0]&0x0f) * 4
	if len(pkt) < ihl+20 {
		return 0
	}
	total := int(binary.BigEndian.Uint16(pkt[2:4]))
	return total - ihl - int(pkt[ihl+12]>>4)*4
}

// Stats describe a run so far.
type Stats struct {
	// Link is the pair's link's (a topology's first link's).
	Link link.Stats
	// Links are every link's, in the topology's order (the pair's one
	// included), and Routers every router's.
	Links   []link.Stats
	Routers []RouterStats
	// TraceHash is a 128-bit XXH3 hash (hex) over a record of every
	// packet delivered across the link: its arrival time (Elapsed:
	// nanoseconds since clock.Epoch on the virtual clock, since New on
	// the others), its direction, its length and the packet's own XXH3-128,
	// so that any change to a byte or an instant changes it. On the real
	// clock, where arrival times never repeat, the records leave the
	// packet's hash out. In a bubble, each direction is hashed apart and
	// the sums hashed together: packets of the two directions due at one
	// instant are delivered in no fixed order there. XXH3's output is
	// defined byte for byte, so a trace hashes alike on every machine; it
	// detects change, it is not a cryptographic digest
	// (docs/PERFORMANCE.md).
	TraceHash string
	// Events is the number of events the virtual scheduler ran (0 on the
	// real clock).
	Events uint64
}

// Stats returns the counters of the run so far.
func (n *Net) Stats() Stats {
	n.traceMu.Lock()
	sum := n.trace.Sum128().Bytes()
	if n.dirTraces != nil {
		var all []byte
		for _, h := range n.dirTraces {
			b := h.Sum128().Bytes()
			all = append(all, b[:]...)
		}
		sum = xxh3.Hash128(all).Bytes()
	}
	n.traceMu.Unlock()
	s := Stats{Link: n.link.Stats(), TraceHash: hex.EncodeToString(sum[:])}
	for _, l := range n.links {
		s.Links = append(s.Links, l.Stats())
	}
	for _, r := range n.routers {
		s.Routers = append(s.Routers, r.stats())
	}
	if n.virtual != nil {
		s.Events = n.virtual.Events()
	}
	return s
}

// closeHosts closes every host's stack of the moment: a Restart replaces
// n.hosts[i] under the faults' lock, so the list is read under it.
func (n *Net) closeHosts() {
	var hosts []*tcpstack.Host
	if len(n.ends) > 0 {
		f := n.faults()
		f.mu.Lock()
		hosts = slices.Clone(n.hosts)
		f.mu.Unlock()
	} else {
		hosts = n.hosts // New failed before any link: no faults
	}
	for _, h := range hosts {
		h.Close()
	}
}

func (n *Net) closeClock() {
	if n.virtual != nil {
		n.virtual.Close()
	}
	if n.precise != nil {
		n.precise.Close()
	}
	if n.serial != nil {
		n.serial.Close()
	}
}

// Close tears the network down: connections are aborted, the stacks' and
// the scheduler's goroutines end. It is idempotent and returns once
// nothing of the network runs any more.
func (n *Net) Close() error {
	n.closeOnce.Do(func() {
		n.closed.Store(true)
		n.closeHosts()
		for _, l := range n.links {
			l.Close()
		}
		n.closeClock()
	})
	return nil
}
