package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netemu/netemu/emu"
)

// Direction says which way a workload's bulk flows send their data.
type Direction string

// The directions of the bulk flows.
const (
	Down Direction = "down" // server → client, as a download
	Up   Direction = "up"   // client → server, as an upload
)

// flowPort is the port the bulk flows of loaded and share connect to.
const flowPort = 7101

// flowBin is the width of the bins the flows' receivers count bytes in:
// goodput over time is bytes per bin.
const flowBin = 100 * time.Millisecond

// flowChunk is the size of each write and read of a bulk flow.
const flowChunk = 64 << 10

// flows are bulk TCP flows that saturate one direction of the link from
// start until stop: each on a connection of its own, its sender writing
// as fast as TCP takes the bytes, its receiver counting what arrives per
// flowBin. Their goroutines start through env.Go in flow order, so that
// the virtual clock orders their first writes the same way on every run.
type flows struct {
	env     emu.Env
	flows   []flow
	start   time.Time
	stopped atomic.Bool
	done    chan error // one per goroutine
}

type flow struct {
	send, recv net.Conn
	port       uint16  // of the client's end
	bins       []int64 // bytes received per flowBin since start; written by the receiver alone until stop returns
	bytes      int64
}

// ccSetter is a connection whose congestion control can be picked: an
// emulated host's, or a kernel socket (TCP_CONGESTION).
type ccSetter interface {
	SetCongestionControl(name string) error
}

// dialFlows connects n flows that send in dir, one after another (each
// dial, then its accept), so that they connect in the same order on every
// run; ln listens on flowPort and is closed on return. Where ccs is not
// empty, flow i's sender runs ccs[i%len(ccs)].
func dialFlows(ctx context.Context, env emu.Env, ln net.Listener, n int, dir Direction, ccs []string) (*flows, error) {
	defer ln.Close()
	f := &flows{env: env, done: make(chan error, 2*n)}
	for i := range n {
		c, err := env.Dial(ctx, flowPort)
		if err != nil {
			f.close()
			return nil, fmt.Errorf("flow %d: %w", i+1, err)
		}
		s, err := ln.Accept()
		if err != nil {
			c.Close()
			f.close()
			return nil, fmt.Errorf("flow %d: %w", i+1, err)
		}
		fl := flow{send: s, recv: c, port: localPort(c)}
		if dir == Up {
			fl.send, fl.recv = c, s
		}
		f.flows = append(f.flows, fl)
		if len(ccs) == 0 {
			continue
		}
		cc := ccs[i%len(ccs)]
		set, ok := fl.send.(ccSetter)
		if !ok {
			f.close()
			return nil, fmt.Errorf("flow %d: congestion control %s: the connection cannot pick its own: %w", i+1, cc, errors.ErrUnsupported)
		}
		if err := set.SetCongestionControl(cc); err != nil {
			f.close()
			return nil, fmt.Errorf("flow %d: %w", i+1, err)
		}
	}
	return f, nil
}

// run starts every flow's sender and receiver now.
func (f *flows) run() {
	f.start = f.env.Now()
	buf := pattern(flowChunk)
	for i := range f.flows {
		fl := &f.flows[i]
		f.env.Go(func() { f.done <- f.sendAll(fl.send, buf) })
		f.env.Go(func() { f.done <- f.receive(fl) })
	}
}

// sendAll writes until the connection is closed by stop.
func (f *flows) sendAll(c net.Conn, buf []byte) error {
	for {
		if _, err := c.Write(buf); err != nil {
			if f.stopped.Load() {
				return nil
			}
			return err
		}
	}
}

// receive reads until stop closes the connection, counting bytes per bin.
func (f *flows) receive(fl *flow) error {
	buf := make([]byte, flowChunk)
	for {
		n, err := fl.recv.Read(buf)
		if n > 0 {
			i := int(f.env.Now().Sub(f.start) / flowBin)
			for len(fl.bins) <= i {
				fl.bins = append(fl.bins, 0)
			}
			fl.bins[i] += int64(n)
			fl.bytes += int64(n)
		}
		switch {
		case err == nil:
		case f.stopped.Load():
			return nil
		case errors.Is(err, io.EOF):
			return errors.New("the sender closed the connection before the end")
		default:
			return err
		}
	}
}

// stop ends every flow now: it closes each flow's receiving end, then its
// sending end (what is still queued is dropped), and waits for their
// goroutines. It returns the first error a flow met before.
func (f *flows) stop() error {
	f.stopped.Store(true)
	f.close()
	var first error
	for range 2 * len(f.flows) {
		if err := <-f.done; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// close closes every flow's connections. It reads only their conns: the
// receivers may still be counting.
func (f *flows) close() {
	for i := range f.flows {
		f.flows[i].recv.Close()
		f.flows[i].send.Close()
	}
}

// goodputs returns each flow's goodput over d, in bits per second.
func (f *flows) goodputs(d time.Duration) []float64 {
	out := make([]float64, len(f.flows))
	for i, fl := range f.flows {
		out[i] = goodput(fl.bytes, d)
	}
	return out
}

// binned returns each flow's goodput per flowBin, in bits per second, over
// the whole bins of d (a partial last bin left out).
func (f *flows) binned(d time.Duration) [][]float64 {
	n := int(d / flowBin)
	out := make([][]float64, len(f.flows))
	for i, fl := range f.flows {
		out[i] = make([]float64, n)
		for j := 0; j < n && j < len(fl.bins); j++ {
			out[i][j] = goodput(fl.bins[j], flowBin)
		}
	}
	return out
}

// ports returns each flow's client-side port.
func (f *flows) ports() []uint16 {
	out := make([]uint16, len(f.flows))
	for i, fl := range f.flows {
		out[i] = fl.port
	}
	return out
}

// localPort is the port of c's own end; 0 if its address has none.
func localPort(c net.Conn) uint16 {
	ap, err := netip.ParseAddrPort(c.LocalAddr().String())
	if err != nil {
		return 0
	}
	return ap.Port()
}

// flowName names flow i (from 0) in figures: "flow 1".
func flowName(i int) string { return fmt.Sprintf("flow %d", i+1) }

// received is the bytes every flow received.
func (f *flows) received() int64 {
	var n int64
	for _, fl := range f.flows {
		n += fl.bytes
	}
	return n
}

// Jain is Jain's fairness index of xs: (Σx)² ÷ (n·Σx²), 1 when all are
// equal, 1/n when one has everything; 0 for none or all zero.
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// A Gate starts the flows of several workloads together: each passes it
// once its connections are up, and all go on when the last has. Flows
// that started one after another as they connected (a handshake whose
// SYN a full queue dropped waits a second for its retransmission) would
// each measure a window of their own, part of it with fewer
// competitors; past the gate they overlap but for the stagger.
//
// The last to arrive releases every party, itself included, in the
// order they arrived, the k-th (from 0) k × stagger after it arrived,
// each through env.Go: on the virtual clock each release is an event of
// its own, so which flow starts first does not depend on how the
// runtime schedules them. A gate is for one use, and its parties share
// one context: the releases sleep on the last arrival's.
//
// Senders released at one instant send their first flights at that
// instant, and where those meet at a queue their packets interleave;
// kernel TCP's flows, released at once, start 80–260 µs apart (a
// goroutine's wake-up and a write system call each), so the first
// flight of the first to connect reaches a queue equally far from both
// senders whole, before the next's. Which of the two happens decides
// when HyStart ends slow start on a shared bottleneck
// (docs/TOPOLOGIES.md). A stagger larger than that gap gives both
// backends one order.
type Gate struct {
	stagger time.Duration
	mu      sync.Mutex
	left    int             // parties yet to arrive; the gate opens at 0
	arrived []chan struct{} // one per party arrived, in order; closed to release it
}

// NewGate returns a gate for n workloads that releases them stagger
// apart.
func NewGate(n int, stagger time.Duration) *Gate { return &Gate{left: n, stagger: stagger} }

// pass waits until every workload of the gate has called pass, and its
// turn to go on has come, or ctx ends. A nil gate lets the caller
// through.
func (g *Gate) pass(ctx context.Context, env emu.Env) error {
	if g == nil {
		return nil
	}
	mine := make(chan struct{})
	g.mu.Lock()
	g.arrived = append(g.arrived, mine)
	g.left--
	var release []chan struct{}
	if g.left == 0 {
		release = g.arrived
	}
	g.mu.Unlock()
	for k, c := range release {
		wait := time.Duration(k) * g.stagger
		env.Go(func() {
			// A cancelled wait releases nobody: the party's own wait
			// below ends with the same context.
			if wait > 0 && env.Sleep(ctx, wait) != nil {
				return
			}
			close(c)
		})
	}
	select {
	case <-mine:
		// Released as ctx ended, the party does not go on: it would
		// start goroutines on a network that is closing.
		return ctx.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}
