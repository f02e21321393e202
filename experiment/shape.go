package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/stats"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// Shape is a network of more than two hosts that a case runs on: its
// topology for the case's link, which is the shape's bottleneck, and the
// flows its workload runs, one instance of it per flow, all at once.
type Shape struct {
	// Name labels the case and its record: "dumbbell:2".
	Name string
	// Build returns the topology whose bottleneck is lc, and its flows.
	Build func(lc link.Config) (topo.Topology, []topo.Flow)
	// Flows, if set, gives each flow (in Build's order) a workload of its
	// own and the instant it starts; nil: the case's workload, all at
	// the run's start.
	Flows []ShapeFlow
}

// ShapeFlow is what one flow of a shape runs, and when.
type ShapeFlow struct {
	Workload workloads.Workload // nil: the case's
	Start    time.Duration      // after the run's start
}

// ShapeDetail is a shape's run: each flow's result, their fairness, and
// what each link did.
type ShapeDetail struct {
	Shape string
	Flows []FlowResult
	// FlowGoodput is each flow's goodput, bits per second, in flow order,
	// and Share each one's part of their sum.
	FlowGoodput []float64
	Share       []float64
	Jain        float64 // Jain's fairness index of FlowGoodput
	Links       []LinkResult

	// series is each flow's goodput over time, for figures (Series).
	series []workloads.Series
}

// Series implements workloads.Plotter: each flow's goodput per 100 ms,
// from its connections' delivered counts (netemu's TCP and the kernel's
// count them; gVisor's do not, and its flows draw nothing).
func (d ShapeDetail) Series() []workloads.Series { return d.series }

// FlowShare is one flow's part of what the flows crossing a link
// direction got.
type FlowShare struct {
	Flow  string  `json:"flow"`
	Share float64 `json:"share"`
}

// FlowResult is one flow of a shape: its hosts and its workload's run.
type FlowResult struct {
	Name     string `json:"name"` // "from>to"
	From     string `json:"from"`
	To       string `json:"to"`
	Workload string `json:"workload"`
	// RTT is the round trip of the flow's path: both ways' delays.
	RTT         time.Duration    `json:"-"`
	Elapsed     time.Duration    `json:"-"`
	Goodput     float64          `json:"goodput_bps"`
	Retransmits int              `json:"retransmits"`
	Result      workloads.Result `json:"-"`
}

// LinkResult is one direction of a link over a shape's run.
type LinkResult struct {
	Link        string            `json:"link"`
	Dir         string            `json:"dir"` // "from>to", by its ends' names
	Delivered   uint64            `json:"delivered"`
	Dropped     uint64            `json:"dropped"`
	DropsBy     map[string]uint64 `json:"drops_by,omitempty"`
	Utilisation float64           `json:"utilisation"` // of its rate over the run; 0 without a rate
	// QueueDelay50 and QueueDelay99 are the median and 99th percentile
	// of the time packets waited before their serialization began.
	QueueDelay50 time.Duration `json:"-"`
	QueueDelay99 time.Duration `json:"-"`
	// Shares and Jain, where two flows or more cross the direction
	// (either way of their round trip): each one's part of their
	// goodputs' sum, and Jain's fairness index of those goodputs.
	Shares []FlowShare `json:"flows,omitempty"`
	Jain   float64     `json:"jain_index,omitempty"`
}

// Summary implements workloads.Detail: "Jain 0.999; s1>r1 9.8, s2>r2 9.7 Mbit/s".
func (d ShapeDetail) Summary() string {
	var parts []string
	for _, f := range d.Flows {
		parts = append(parts, fmt.Sprintf("%s %.1f", f.Name, f.Goodput/1e6))
	}
	return fmt.Sprintf("Jain %.3f; %s Mbit/s", d.Jain, strings.Join(parts, ", "))
}

// MarshalJSON writes the shape's fields into the run's record, with
// share's names for the flows' goodputs and fairness.
func (d ShapeDetail) MarshalJSON() ([]byte, error) {
	type flow struct {
		FlowResult
		RTTMs     float64 `json:"rtt_ms"`
		ElapsedMs float64 `json:"elapsed_ms"`
	}
	type dir struct {
		LinkResult
		Q50 float64 `json:"queue_delay_p50_ms"`
		Q99 float64 `json:"queue_delay_p99_ms"`
	}
	var flows []flow
	for _, f := range d.Flows {
		flows = append(flows, flow{f, Ms(f.RTT), Ms(f.Elapsed)})
	}
	var links []dir
	for _, l := range d.Links {
		links = append(links, dir{l, Ms(l.QueueDelay50), Ms(l.QueueDelay99)})
	}
	return json.Marshal(struct {
		Shape       string    `json:"topology"`
		Flows       []flow    `json:"flows"`
		FlowGoodput []float64 `json:"flow_goodput_bps"`
		Share       []float64 `json:"flow_share"`
		Jain        float64   `json:"jain_index"`
		Links       []dir     `json:"links"`
	}{d.Shape, flows, d.FlowGoodput, d.Share, d.Jain, links})
}

// runShape runs case c, whose link is lc, on its shape: every flow's
// workload at once, each between its two hosts, and what every link did.
func runShape(ctx context.Context, c Case, lc link.Config) (workloads.Result, emu.Stats, error) {
	p, err := planShape(c, lc)
	if err != nil {
		return workloads.Result{}, emu.Stats{}, err
	}
	n, err := emu.New(emu.Config{Topology: &p.t, TCP: c.TCP, Clock: c.Clock, Seed: c.Seed, Probe: p.probe(c)})
	if err != nil {
		return workloads.Result{}, emu.Stats{}, err
	}
	defer n.Close()
	waits, start := observeQueues(n, p.t, c)
	var results []workloads.Result
	err = n.Run(ctx, func(ctx context.Context) error {
		var err error
		results, err = p.runFlows(ctx, c, n.Between, n.Go)
		return err
	})
	st := n.Stats()
	if err != nil {
		return workloads.Result{}, st, err
	}
	return p.result(c, results, linkResults(p.t, st.Links, waits, n.Now().Sub(start))), st, nil
}

// shapePlan is a case's shape made ready to run on a backend: its
// topology and flows, each flow's path, and the retransmissions the
// hosts' TCP samples count.
type shapePlan struct {
	t         topo.Topology
	flows     []topo.Flow
	paths     []workloads.Path
	hops      [][]topo.Hop // each flow's links, both ways
	retrans   *retransmits
	delivered *deliveries
}

// planShape builds c's shape around lc and finds each flow's path.
func planShape(c Case, lc link.Config) (*shapePlan, error) {
	t, flows := c.Shape.Build(lc)
	// Every node takes its time (link.Config.Noise), on the access
	// links a shape builds without lc's other settings too.
	for i := range t.Links {
		if t.Links[i].Config.Noise.IsZero() {
			t.Links[i].Config.Noise = lc.Noise
		}
	}
	tables, err := t.Tables()
	if err != nil {
		return nil, err
	}
	paths := make([]workloads.Path, len(flows))
	hops := make([][]topo.Hop, len(flows))
	for i, f := range flows {
		p, err := flowPath(t, tables, f)
		if err != nil {
			return nil, err
		}
		paths[i] = p
		there, _ := t.RouteWith(tables, f.From, f.To)
		back, _ := t.RouteWith(tables, f.To, f.From)
		hops[i] = append(there, back...)
	}
	return &shapePlan{t: t, flows: flows, paths: paths, hops: hops, retrans: &retransmits{last: map[[2]netip.AddrPort]int{}},
		delivered: newDeliveries(t, flows)}, nil
}

// probe is the network's TCP probe: it counts retransmissions, then
// hands the sample to c's own probe, if any.
func (p *shapePlan) probe(c Case) func(tcpstack.Sample) {
	return func(s tcpstack.Sample) {
		p.retrans.add(s)
		p.delivered.add(s)
		if c.Probe != nil {
			c.Probe(s)
		}
	}
}

// runFlows runs every flow's workload, each in a goroutine spawn starts,
// between its hosts as between gives them, from its start on; it
// returns their results once all are done, or the first error.
func (p *shapePlan) runFlows(ctx context.Context, c Case, between func(from, to string) (emu.Env, error), spawn func(func())) ([]workloads.Result, error) {
	results := make([]workloads.Result, len(p.flows))
	errs := make(chan error, len(p.flows))
	// The share flows that start with the run pass one gate: they
	// measure the same window, the k-th to connect from k × flowStagger
	// on (workloads.Gate). A flow that fails ends the others' wait: ctx
	// ends when runFlows returns.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var gate *workloads.Gate
	if n := p.sharing(c); n > 1 {
		gate = workloads.NewGate(n, flowStagger)
	}
	sf := shapeFlows(c, len(p.flows))
	for i, f := range p.flows {
		env, err := between(f.From, f.To)
		if err != nil {
			return nil, err
		}
		// Flows to one host listen on ports of their own.
		env = offsetEnv{Env: env, off: uint16(i)}
		// One connection per pair; the pairs take --ccs's congestion
		// controls in turn, as the connections of one pair would.
		w, start := sf[i].run, sf[i].start
		if sw, ok := w.(workloads.Share); ok && start == 0 {
			sw.Gate = gate
			w = sw
		}
		spawn(func() {
			if start > 0 {
				if err := env.Sleep(ctx, start); err != nil {
					errs <- err
					return
				}
			}
			r, err := workloads.Run(ctx, w, env, p.paths[i])
			results[i] = r
			if err != nil {
				err = fmt.Errorf("flow %s>%s: %w", f.From, f.To, err)
			}
			errs <- err
		})
	}
	for range p.flows {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	return results, nil
}

// flowWork is flow i's workload and start: its own where c's shape
// gives them, c's workload from the run's start otherwise.
func flowWork(c Case, i int) (workloads.Workload, time.Duration) {
	if i >= len(c.Shape.Flows) {
		return c.Workload, 0
	}
	w := c.Workload
	if fw := c.Shape.Flows[i].Workload; fw != nil {
		w = fw
	}
	return w, c.Shape.Flows[i].Start
}

// shapeFlow is what one of a shape's n flows runs: its workload as
// given (counted against the flows that share it, for Validate) and as
// the flow runs it (a share without --flows: one connection, the k-th
// of the flows taking that workload getting --ccs's k-th control, the
// list repeating).
type shapeFlow struct {
	given, run workloads.Workload
	start      time.Duration
}

// shapeFlows gives each of c's n flows its shapeFlow.
func shapeFlows(c Case, n int) []shapeFlow {
	// A flow takes the case's workload (key -1) or one of its own
	// (its index): workloads are not all comparable.
	key := func(i int) int {
		if i < len(c.Shape.Flows) && c.Shape.Flows[i].Workload != nil {
			return i
		}
		return -1
	}
	out := make([]shapeFlow, n)
	taking := map[int]int{} // flows so far per workload
	count := map[int]int{}
	for i := range n {
		count[key(i)]++
	}
	for i := range n {
		w, start := flowWork(c, i)
		f := shapeFlow{given: w, run: w, start: start}
		if sw, ok := w.(workloads.Share); ok && sw.Flows == 0 {
			k := taking[key(i)]
			taking[key(i)]++
			check := sw
			check.Flows = count[key(i)]
			f.given = check
			sw.Flows = workloads.DefaultShapeShareFlows
			if sw.CCs != "" {
				ccs := strings.Split(sw.CCs, ",")
				sw.CCs = ccs[k%len(ccs)]
			}
			f.run = sw
		}
		out[i] = f
	}
	return out
}

// sharing counts c's flows that run share from the run's start.
func (p *shapePlan) sharing(c Case) int {
	n := 0
	for i := range p.flows {
		w, start := flowWork(c, i)
		if _, ok := w.(workloads.Share); ok && start == 0 {
			n++
		}
	}
	return n
}

// result is the run's result from each flow's: the longest time, the
// sums, and the shape's detail (each flow's goodput and share, their
// fairness, and links, what each link direction did).
func (p *shapePlan) result(c Case, results []workloads.Result, links []LinkResult) workloads.Result {
	d := ShapeDetail{Shape: c.Shape.Name, Links: links}
	var r workloads.Result
	for i, f := range p.flows {
		fr := FlowResult{Name: f.From + ">" + f.To, From: f.From, To: f.To, Workload: results[i].Workload, RTT: p.paths[i].RTT,
			Elapsed: results[i].Elapsed, Goodput: goodput(results[i]), Retransmits: p.retrans.between(p.t, f), Result: results[i]}
		d.Flows = append(d.Flows, fr)
		d.FlowGoodput = append(d.FlowGoodput, fr.Goodput)
		r.Elapsed = max(r.Elapsed, fr.Elapsed)
		r.Bytes += results[i].Bytes
		r.Conns += results[i].Conns
		r.Requests += results[i].Requests
	}
	var sum float64
	for _, g := range d.FlowGoodput {
		sum += g
	}
	for _, g := range d.FlowGoodput {
		share := 0.0
		if sum > 0 {
			share = g / sum
		}
		d.Share = append(d.Share, share)
	}
	d.Jain = workloads.Jain(d.FlowGoodput)
	p.share(&d)
	d.series = p.delivered.series(d.Flows, results[0].Started)
	r.Workload, r.Started, r.Detail = results[0].Workload, results[0].Started, d
	return r
}

// share gives each link direction of d that two flows or more cross its
// flows' shares and Jain's index.
func (p *shapePlan) share(d *ShapeDetail) {
	for k := range d.Links {
		lr := &d.Links[k]
		var crossing []int
		for i, hops := range p.hops {
			for _, h := range hops {
				tl := p.t.Links[h.Link]
				from := tl.A
				if h.Dir == link.BtoA {
					from = tl.B
				}
				if tl.Label() == lr.Link && strings.HasPrefix(lr.Dir, from+">") {
					crossing = append(crossing, i)
					break
				}
			}
		}
		if len(crossing) < 2 {
			continue
		}
		var goodputs []float64
		var sum float64
		for _, i := range crossing {
			goodputs = append(goodputs, d.FlowGoodput[i])
			sum += d.FlowGoodput[i]
		}
		for j, i := range crossing {
			share := 0.0
			if sum > 0 {
				share = goodputs[j] / sum
			}
			lr.Shares = append(lr.Shares, FlowShare{Flow: d.Flows[i].Name, Share: share})
		}
		lr.Jain = workloads.Jain(goodputs)
	}
}

// goodputBin is the width of the bins of the flows' goodput series.
const goodputBin = 100 * time.Millisecond

// flowStagger is how far apart a topology's share flows start, in the
// order they connected (workloads.Gate). Released at once, kernel
// mode's flows start 80–260 µs apart, and a first flight reaches a
// queue within about 150 µs of its first packet; a millisecond is
// larger than both, so on both backends senders equally far from a
// shared queue reach it in one order, each first flight whole. Started
// at one instant, the emulator's first flights interleaved and CUBIC's
// HyStart ended slow start at windows of 92–94 packets in three seeds of
// five where Linux's ended at 34–36 (docs/TOPOLOGIES.md). The stagger
// spaces the senders, not their arrivals at the queue: where senders'
// distances to it differ by more than the stagger, their first flights
// arrive in the order of those distances.
const flowStagger = time.Millisecond

// deliveries keeps, from the hosts' TCP samples, the bytes each flow's
// connections delivered, by instant.
type deliveries struct {
	flow map[[2]netip.Addr]int // a flow's two hosts, either way round: its index

	mu    sync.Mutex
	last  map[[2]netip.AddrPort]int // each connection's delivered count
	marks []delivered
}

// delivered is bytes a flow's connection delivered by an instant.
type delivered struct {
	at    time.Time
	flow  int
	bytes int64
}

func newDeliveries(t topo.Topology, flows []topo.Flow) *deliveries {
	d := &deliveries{flow: map[[2]netip.Addr]int{}, last: map[[2]netip.AddrPort]int{}}
	for i, f := range flows {
		a, _ := t.HostAddr(f.From)
		b, _ := t.HostAddr(f.To)
		for _, k := range [][2]netip.Addr{{a, b}, {b, a}} {
			if _, ok := d.flow[k]; !ok { // two flows between one pair: the first
				d.flow[k] = i
			}
		}
	}
	return d
}

func (d *deliveries) add(s tcpstack.Sample) {
	f, ok := d.flow[[2]netip.Addr{s.Local.Addr(), s.Remote.Addr()}]
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k := [2]netip.AddrPort{s.Local, s.Remote}
	if n := s.Delivered - d.last[k]; n > 0 {
		d.marks = append(d.marks, delivered{at: s.At, flow: f, bytes: int64(n) * int64(s.MSS)})
	}
	d.last[k] = max(d.last[k], s.Delivered)
}

// series is each flow's goodput per goodputBin from start, as steps; a
// flow with no deliveries has none.
func (d *deliveries) series(flows []FlowResult, start time.Time) []workloads.Series {
	d.mu.Lock()
	defer d.mu.Unlock()
	bins := make([][]float64, len(flows))
	for _, m := range d.marks {
		j := int(m.at.Sub(start) / goodputBin)
		if j < 0 {
			j = 0
		}
		for len(bins[m.flow]) <= j {
			bins[m.flow] = append(bins[m.flow], 0)
		}
		bins[m.flow][j] += float64(m.bytes) * 8 / goodputBin.Seconds()
	}
	var out []workloads.Series
	for i, b := range bins {
		if len(b) == 0 {
			continue
		}
		s := workloads.Series{Chart: "goodput per flow", Name: flows[i].Name, Of: workloads.BitRate, Step: true, Flow: flows[i].Name}
		for j, v := range b {
			s.At = append(s.At, time.Duration(j)*goodputBin)
			s.Values = append(s.Values, v)
		}
		s.At = append(s.At, time.Duration(len(b))*goodputBin)
		s.Values = append(s.Values, b[len(b)-1])
		out = append(out, s)
	}
	return out
}

// goodput is a flow's payload rate: share's own figure where the
// workload is share, its bytes over its time otherwise.
func goodput(r workloads.Result) float64 {
	if d, ok := r.Detail.(workloads.ShareDetail); ok {
		return d.Goodput
	}
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / r.Elapsed.Seconds()
}

// flowPath is what the model knows of flow f's path on t, whose
// routers' tables are tables: the round
// trip, and the narrowest rate and the loss of the way back, to the
// dialing host, where a workload's bytes flow.
func flowPath(t topo.Topology, tables map[string]map[string]topo.Hop, f topo.Flow) (workloads.Path, error) {
	there, err := t.RouteWith(tables, f.From, f.To)
	if err != nil {
		return workloads.Path{}, err
	}
	back, err := t.RouteWith(tables, f.To, f.From)
	if err != nil {
		return workloads.Path{}, err
	}
	var p workloads.Path
	for _, h := range there {
		p.RTT += t.DirConfig(h).Delay
	}
	keep := 1.0
	for _, h := range back {
		dc := t.DirConfig(h)
		p.RTT += dc.Delay
		if dc.Rate > 0 && (p.Rate == 0 || dc.Rate < p.Rate) {
			p.Rate = dc.Rate
		}
		if dc.Loss.Model == link.LossRandom {
			keep *= 1 - dc.Loss.P
		}
	}
	p.Loss = 1 - keep
	return p, nil
}

// offsetEnv is an Env whose ports are its own: each flow's are offset by
// its number, so that flows to one host listen apart.
type offsetEnv struct {
	emu.Env
	off uint16
}

func (e offsetEnv) Listen(port uint16) (net.Listener, error) { return e.Env.Listen(port + e.off) }

func (e offsetEnv) Dial(ctx context.Context, port uint16) (emu.Conn, error) {
	return e.Env.Dial(ctx, port+e.off)
}

func (e offsetEnv) ListenPacket(port uint16) (net.PacketConn, error) {
	return e.Env.ListenPacket(port + e.off)
}

func (e offsetEnv) DialPacket(ctx context.Context, port uint16) (net.PacketConn, net.Addr, error) {
	return e.Env.DialPacket(ctx, port+e.off)
}

// retransmits keeps each connection's latest count of retransmitted
// packets, from the hosts' TCP samples (netemu's TCP counts them;
// gVisor's samples give 0).
type retransmits struct {
	mu   sync.Mutex
	last map[[2]netip.AddrPort]int
}

func (r *retransmits) add(s tcpstack.Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]netip.AddrPort{s.Local, s.Remote}
	r.last[k] = max(r.last[k], s.TotalRetrans)
}

// between is the retransmissions of flow f's connections, both ends'.
func (r *retransmits) between(t topo.Topology, f topo.Flow) int {
	a, _ := t.HostAddr(f.From)
	b, _ := t.HostAddr(f.To)
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	for k, n := range r.last {
		if (k[0].Addr() == a && k[1].Addr() == b) || (k[0].Addr() == b && k[1].Addr() == a) {
			total += n
		}
	}
	return total
}

// queueWaits holds, for each link direction (2*link+dir), the time each
// packet waited before its serialization began.
type queueWaits struct {
	mu    sync.Mutex
	waits [][]time.Duration
}

// links finds a network's links by name (topo.Link.Label): emu.Net's,
// kernel.TopoNet's.
type linkFinder interface {
	Link(name string) (*link.Link, bool)
}

// observeQueues watches every link of n for the waits of its packets,
// and returns them with the instant the links' times count from; c's
// own observer watches the first link (the shape's bottleneck) as it
// would the pair's, and c.ObserveLink's each link.
func observeQueues(n linkFinder, t topo.Topology, c Case) (*queueWaits, time.Time) {
	q := &queueWaits{waits: make([][]time.Duration, 2*len(t.Links))}
	var start time.Time
	for i, tl := range t.Links {
		l, _ := n.Link(tl.Label())
		if i == 0 {
			start = l.Start()
		}
		var also link.Observer
		if i == 0 {
			also = c.Observe
		}
		var own link.Observer
		if c.ObserveLink != nil {
			own = c.ObserveLink(i, tl)
		}
		l.Observe(func(e link.Event) {
			if e.Kind == link.EventQueue {
				q.mu.Lock()
				q.waits[2*i+int(e.Dir)] = append(q.waits[2*i+int(e.Dir)], e.Start-e.At)
				q.mu.Unlock()
			}
			if also != nil {
				also(e)
			}
			if own != nil {
				own(e)
			}
		})
	}
	return q, start
}

// linkResults is each link direction that carried packets, over a run
// of length d; st is every link's counters, in t's order.
func linkResults(t topo.Topology, st []link.Stats, q *queueWaits, d time.Duration) []LinkResult {
	var out []LinkResult
	for i, tl := range t.Links {
		for _, dir := range []link.Dir{link.AtoB, link.BtoA} {
			ds := st[i][dir]
			if ds.SentPackets == 0 {
				continue
			}
			from, to := tl.A, tl.B
			if dir == link.BtoA {
				from, to = to, from
			}
			lr := LinkResult{Link: tl.Label(), Dir: from + ">" + to, Delivered: ds.Packets, Dropped: ds.Drops.Total()}
			for r := range link.DropReason(0).Count() {
				if k := ds.Drops[r]; k > 0 {
					if lr.DropsBy == nil {
						lr.DropsBy = map[string]uint64{}
					}
					lr.DropsBy[r.String()] = k
				}
			}
			if rate := t.DirConfig(topo.Hop{Link: i, Dir: dir}).Rate; rate > 0 && d > 0 {
				lr.Utilisation = float64(ds.Bytes) * 8 / (rate * d.Seconds())
			}
			if w := stats.Sorted(q.waits[2*i+int(dir)]); len(w) > 0 {
				lr.QueueDelay50, lr.QueueDelay99 = stats.Quantile(w, 0.5), stats.Quantile(w, 0.99)
			}
			out = append(out, lr)
		}
	}
	return out
}
