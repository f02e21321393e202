package main

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/stats"
	"github.com/netemu/netemu/topo"
)

// Host noise: how much later than the link's schedule kernel mode's
// parts move each packet on, measured from the links' own events. The
// emulator's hosts and routers act at the instant a packet arrives; in
// kernel mode a packet the link delivers reaches its namespace when the
// bridge's thread writes it (lateness: the delivery's instant against
// its due instant), and what the node sends in return, or forwards,
// reaches the next link when a TUN pump reads it (a router's forwarding
// time: the same packet's delivery into the router against its send
// from it; a host's turnaround: a send against the last delivery into
// the host before it, when one came since the host's previous send).
// A traversal of a router is its delivery's lateness plus its
// forwarding time: what one hop adds beyond the link.

// noiseCells are the shapes measured: the bottleneck rates and flow
// counts of docs/QUESTIONS.md and GRID-DUMBBELLS.md, as netemu compare
// takes them.
var noiseCells = [][]string{
	{"bulk", "--rtt", "40ms", "--rate", "20mbit", "--size", "20MB"},
	{"share", "--topology", "dumbbell:2", "--rtt", "40ms", "--rate", "20mbit", "--duration", "10s"},
	{"share", "--topology", "dumbbell:2", "--rtt", "10ms", "--rate", "2mbit", "--queue", "20", "--duration", "10s"},
	{"share", "--topology", "dumbbell:8", "--rtt", "40ms", "--rate", "50mbit", "--duration", "10s"},
	{"share", "--topology", "chain:3", "--rtt", "20ms", "--rate", "20mbit", "--duration", "10s"},
}

// noiseEvent is one link event, as the meter keeps it: small, so that
// the meter allocates all it keeps before the run (an append that grows
// a large slice would stall the bridge's thread, on which observers
// run, for milliseconds).
type noiseEvent struct {
	kind     link.EventKind
	from, to uint16 // the nodes that sent it onto the link and it goes to, by index
	at, due  int64  // Unix nanoseconds; due for EventQueue
	key      uint64 // the packet, TTL and IP checksum aside
}

// noiseMeter gathers a run's events on every link, up to maxNoiseEvents.
type noiseMeter struct {
	mu     sync.Mutex
	seed   maphash.Seed
	nodes  []string // hosts, then routers
	events []noiseEvent
}

const maxNoiseEvents = 2 << 20

func newNoiseMeter(t topo.Topology) *noiseMeter {
	return &noiseMeter{seed: maphash.MakeSeed(), nodes: append(slices.Clone(t.Hosts), t.Routers...), events: make([]noiseEvent, 0, maxNoiseEvents)}
}

func (m *noiseMeter) observer(_ int, l topo.Link) link.Observer {
	a, b := uint16(slices.Index(m.nodes, l.A)), uint16(slices.Index(m.nodes, l.B))
	return func(e link.Event) {
		if e.Kind != link.EventSend && e.Kind != link.EventQueue && e.Kind != link.EventDeliver || len(e.Packet) < 20 {
			return
		}
		from, to := a, b
		if e.Dir == link.BtoA {
			from, to = to, from
		}
		ne := noiseEvent{kind: e.Kind, at: e.Time.UnixNano(), from: from, to: to, key: m.key(e.Packet)}
		if e.Kind == link.EventQueue {
			ne.due = ne.at + int64(e.Due-e.At)
		}
		m.mu.Lock()
		if len(m.events) < cap(m.events) {
			m.events = append(m.events, ne)
		}
		m.mu.Unlock()
	}
}

// key hashes an IPv4 packet without the fields a router rewrites.
func (m *noiseMeter) key(p []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.Write(p[:8])
	h.Write(p[9:10])
	h.Write(p[12:])
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
	h.Write(n[:])
	return h.Sum64()
}

// noiseFigures are a run's samples, in microseconds.
type noiseFigures struct {
	Late, Forward, Traverse, Turnaround []float64
}

// figures sorts the events out into samples; routers names the
// topology's routers.
func (m *noiseMeter) figures(routers []string) noiseFigures {
	m.mu.Lock()
	ev := slices.Clone(m.events)
	m.mu.Unlock()
	slices.SortStableFunc(ev, func(a, b noiseEvent) int { return cmp.Compare(a.at, b.at) })
	isRouter := func(n uint16) bool { return int(n) < len(m.nodes) && slices.Contains(routers, m.nodes[n]) }
	us := func(d int64) float64 { return float64(d) / 1e3 }
	type hop struct {
		key  uint64
		node uint16
	}
	due := map[hop][]int64{}     // queued towards node, not yet delivered
	into := map[hop][]int64{}    // delivered into a router, not yet sent on
	late := map[hop][]int64{}    // those deliveries' lateness
	lastIn := map[uint16]int64{} // a host's latest delivery since its last send
	var f noiseFigures
	for _, e := range ev {
		switch e.kind {
		case link.EventQueue:
			k := hop{e.key, e.to}
			due[k] = append(due[k], e.due)
		case link.EventDeliver:
			k := hop{e.key, e.to}
			var l int64
			if d := due[k]; len(d) > 0 {
				l, due[k] = e.at-d[0], d[1:]
				f.Late = append(f.Late, us(l))
			}
			if isRouter(e.to) {
				into[k] = append(into[k], e.at)
				late[k] = append(late[k], l)
			} else {
				lastIn[e.to] = e.at
			}
		case link.EventSend:
			if isRouter(e.from) {
				k := hop{e.key, e.from}
				if t := into[k]; len(t) > 0 {
					fw := e.at - t[0]
					f.Forward = append(f.Forward, us(fw))
					f.Traverse = append(f.Traverse, us(fw+late[k][0]))
					into[k], late[k] = t[1:], late[k][1:]
				}
			} else if t, ok := lastIn[e.from]; ok {
				f.Turnaround = append(f.Turnaround, us(e.at-t))
				delete(lastIn, e.from)
			}
		}
	}
	return f
}

// measureHostNoise runs each cell once on kernel TCP and writes the
// report docs/HOSTNOISE.md holds: what it measures, each cell's
// figures, and the model the emulator draws from beside them.
func measureHostNoise(ctx context.Context, w io.Writer, env Environment, via kernel.Via, progress func(string)) error {
	fmt.Fprintf(w, "# Host noise\n\nGenerated by `%s` on %s: %s.\n\n", env.Command, env.Date, env.Machine)
	fmt.Fprint(w, hostNoiseAbout)
	fmt.Fprintf(w, "Each cell once on kernel TCP (kernel mode, via %s), as `netemu compare` takes it; microseconds, p10 / p50 / p90 / p99 (mean):\n\n", via)
	fmt.Fprintln(w, "| cell | lateness | router forwarding | router traversal | host turnaround |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	var facts string
	for _, args := range noiseCells {
		progress("netemu compare " + strings.Join(args, " "))
		f, fa, err := measureNoiseCell(ctx, args, via)
		if err != nil {
			return err
		}
		facts = fa
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", strings.Join(args, " "), quantiles(f.Late), quantiles(f.Forward), quantiles(f.Traverse), quantiles(f.Turnaround))
	}
	fmt.Fprintf(w, "| the emulator's model, `link.DefaultNoise` (%v), per delivery | | | %s | |\n\n", link.DefaultNoise, quantiles(noiseSample(link.DefaultNoise)))
	fmt.Fprintf(w, "Kernel: %s.\n", facts)
	return nil
}

// measureNoiseCell runs one cell of noiseCells once on kernel TCP with
// a meter on every link; it returns the samples and the kernel's facts.
func measureNoiseCell(ctx context.Context, args []string, via kernel.Via) (noiseFigures, string, error) {
	cmd := "netemu compare " + strings.Join(args, " ")
	o, cases, err := cli.ParseCases(ctx, &cli.CompareCommand, append(slices.Clone(args), "--link", string(via)))
	if err != nil {
		return noiseFigures{}, "", err
	}
	kern, err := o.NewBackend(experiment.Kernel{}.Name())
	if err != nil {
		return noiseFigures{}, "", err
	}
	c := cases[0]
	t := topo.Topology{Hosts: []string{"client", "server"}}
	if c.Shape != nil {
		t, _ = c.Shape.Build(c.Link)
	}
	m := newNoiseMeter(t)
	if c.Shape != nil {
		c.ObserveLink = m.observer
	} else {
		c.Observe = m.observer(0, topo.Link{A: "client", B: "server"})
	}
	_, rec, err := kern.Run(ctx, c)
	if err != nil {
		return noiseFigures{}, "", fmt.Errorf("%s: %w", cmd, err)
	}
	facts := ""
	if rec.Kernel != nil {
		facts = rec.Kernel.String()
	}
	return m.figures(t.Routers), facts, nil
}

// fitNoise fits the emulator's node noise to router traversals, in
// microseconds, as link.DefaultNoise was fitted to docs/HOSTNOISE.md's:
// the model's 10th percentile and mean are the traversals' (an
// exponential of mean S has its 10th percentile at S·ln(10/9), so Base
// + S·ln(10/9) is the 10th percentile and Base + S the mean). A node's
// time varies from machine to machine and from run to run (HOSTNOISE's
// traversals averaged 53–71 µs one day and 73–92 µs another on the same
// kind of machine), and a drop-tail queue of a few packets decides by
// it which flow loses a packet; a comparison of the emulator's TCP with
// the kernel's can give the emulated nodes the time the kernel's took.
func fitNoise(traversals []float64) link.Noise {
	s := stats.Sorted(traversals)
	var sum float64
	for _, x := range s {
		sum += x
	}
	p10, mean := stats.Quantile(s, 0.1), sum/float64(len(s))
	spread := max(mean-p10, 0) / (1 - math.Log(10.0/9))
	base := mean - spread
	if base < 0 {
		base, spread = 0, mean
	}
	us := func(v float64) time.Duration { return time.Duration(math.Round(v)) * time.Microsecond }
	return link.Noise{Base: us(base), Spread: us(spread)}
}

// nodeFit gathers kernel runs' router traversals to fit the emulated
// nodes' time by (fitNoise). A run whose bridge was late measured the
// bridge, not the nodes: its traversals are kept apart, and used only if
// every run's bridge was late.
type nodeFit struct {
	onTime, late []float64
}

// take adds the run that m measured, whose record is rec, and resets m
// for the next run.
func (f *nodeFit) take(m *noiseMeter, routers []string, rec experiment.Record) {
	t := m.figures(routers).Traverse
	if rec.BridgeLate == "" {
		f.onTime = append(f.onTime, t...)
	} else {
		f.late = append(f.late, t...)
	}
	m.reset()
}

// traversals are the samples to fit: the on-time runs', or the late
// ones' when every run was late; nil when no packet crossed a router.
func (f *nodeFit) traversals() []float64 {
	if len(f.onTime) > 0 {
		return f.onTime
	}
	return f.late
}

// reset forgets the events gathered so far.
func (m *noiseMeter) reset() {
	m.mu.Lock()
	m.events = m.events[:0]
	m.mu.Unlock()
}

// noiseSample is 100,000 draws of n, in microseconds.
func noiseSample(n link.Noise) []float64 {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]float64, 100_000)
	for i := range out {
		out[i] = float64(n.Draw(r)) / 1e3
	}
	return out
}

const hostNoiseAbout = `A real host or router acts on a packet some time after its last bit arrives, and by a different
time each packet; the emulator's nodes act at the very instant. Flows that share a drop-tail queue
without that noise meet it in fixed phase, and which flow loses packets follows from the phase
(Floyd and Jacobson, "On Traffic Phase Effects in Packet-Switched Gateways", 1992). So on the
virtual clock each link delays every arrival by the far node's time to take the packet in, a seeded
draw, in order: ` + "`link.Config.Noise`" + `, by default ` + "`link.DefaultNoise`" + `; ` + "`--exact`" + ` turns it off.

Its size is kernel mode's, measured here from the links' own events while kernel TCP runs through
them: **lateness** is how much later than due the TUN bridge wrote a packet into its namespace;
**router forwarding** is how long a kernel router took from that write to the pump's read of the same
packet on its next link; a **router traversal** is the two together, what one node adds to a hop
beyond the link, which is what the emulator draws per delivery; **host turnaround** is how long a
host took from a packet's arrival to its next send (an ACK, or the data an ACK released; its tail is
delayed ACKs and idle senders, not noise). The model is a fixed part and an exponential one, fitted
to the traversals' 10th percentile and mean.

`

// quantiles formats a sample's p10, p50, p90, p99 and mean.
func quantiles(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	s := stats.Sorted(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f / %.0f (%.0f)", stats.Quantile(s, 0.1), stats.Quantile(s, 0.5), stats.Quantile(s, 0.9), stats.Quantile(s, 0.99), sum/float64(len(v)))
}
