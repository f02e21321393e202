package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/stats"
)

// Loaded's defaults: RRUL's shape (a probe every 100 ms beside four bulk
// flows), for 10 seconds of load.
const (
	DefaultLoadedFlows    = 4
	DefaultLoadedDuration = 10 * time.Second
	DefaultLoadedInterval = 100 * time.Millisecond
	// LoadedIdle is how long the probe runs alone before the load starts;
	// its round trips then are the base RTT.
	LoadedIdle = time.Second
	// LoadedProbe is the bytes of each probe request and of its reply.
	LoadedProbe = 100
)

const probePort = 7100

var loadedKind = Kind{
	Name:     "loaded",
	About:    "latency under load: a request/response probe every 100 ms while bulk flows saturate the link (RRUL's shape)",
	Headline: "probe RTT under load, median",
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		flows := positive(fs, "flows", DefaultLoadedFlows, "bulk flows that load the link, each on its own connection")
		dirs := variants(fs, "direction", string(Down), "which way the bulk flows send: down (server→client), up or both", Down, Up)
		dur := duration(fs, "duration", DefaultLoadedDuration, 100*time.Millisecond, "10s", "how long the load runs (the probe runs alone for 1s before)")
		interval := duration(fs, "interval", DefaultLoadedInterval, time.Millisecond, "100ms", "time between the probe's requests")
		return func() ([]Workload, error) {
			n, err := flows()
			if err != nil {
				return nil, err
			}
			ds, err := dirs()
			if err != nil {
				return nil, err
			}
			d, err := dur()
			if err != nil {
				return nil, err
			}
			iv, err := interval()
			if err != nil {
				return nil, err
			}
			if iv > d {
				return nil, fmt.Errorf("--interval %v is longer than --duration %v; want at least one probe under load", iv, d)
			}
			var ws []Workload
			for _, dir := range ds {
				ws = append(ws, Loaded{Flows: n, Direction: dir, Duration: d, Interval: iv})
			}
			return ws, nil
		}
	},
}

// Loaded measures latency under load, as RRUL (Realtime Response Under
// Load) does: a probe, a LoadedProbe-byte request answered by a
// LoadedProbe-byte reply on a TCP connection of its own, is sent every
// Interval (whether or not the replies of earlier ones are back, as ping
// does), first for LoadedIdle alone, then for Duration while Flows bulk
// TCP flows saturate the link in Direction. The probe's round-trip times
// with an empty queue (the base RTT) and under load tell how much delay
// the queue adds.
type Loaded struct {
	Flows     int           // 0 means DefaultLoadedFlows
	Direction Direction     // "" means Down
	Duration  time.Duration // of the load; 0 means DefaultLoadedDuration
	Interval  time.Duration // between probes; 0 means DefaultLoadedInterval
}

// Probe is one probe's request: when it was sent, since the result's
// Started, and its round-trip time, request written to reply read.
type Probe struct {
	At, RTT time.Duration
}

// LoadedDetail is Loaded's own figures.
type LoadedDetail struct {
	Direction Direction
	Probes    []Probe       // every probe, in order
	Base      time.Duration // median RTT of the probes before the load
	// Loaded is the probes sent while the load ran: their median, mean
	// and max; P99 their 99th percentile (nearest rank).
	Loaded          Spread
	P99             time.Duration
	ModelRTT        time.Duration // the probe's RTT with an empty queue
	LoadStart       time.Duration // since Started
	LoadDuration    time.Duration
	Goodput         float64     // bits per second of the load's payload, all flows
	FlowGoodput     []float64   // each flow's
	GoodputPerBin   [][]float64 // each flow's, per 100 ms from LoadStart
	ProbesUnderLoad int
	// ProbePort and FlowPorts are the client's ports of the probe's
	// connection and of each flow's: their names in figures (ConnNames).
	ProbePort uint16
	FlowPorts []uint16
}

// Summary implements Detail.
func (d LoadedDetail) Summary() string {
	return fmt.Sprintf("probe p50 %s, p99 %s (base %s); load %.1f Mbit/s", link.FormatDuration(d.Loaded.Median),
		link.FormatDuration(d.P99), link.FormatDuration(d.Base), d.Goodput/1e6)
}

// Headline implements Headliner: the probe's median RTT under load,
// against its RTT with an empty queue.
func (d LoadedDetail) Headline() (got, model time.Duration) { return d.Loaded.Median, d.ModelRTT }

// MarshalJSON writes the record's loaded fields.
func (d LoadedDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Direction   Direction `json:"direction"`
		Base        float64   `json:"base_rtt_ms"`
		Median      float64   `json:"probe_rtt_ms_median"`
		P99         float64   `json:"probe_rtt_ms_p99"`
		Max         float64   `json:"probe_rtt_ms_max"`
		ModelRTT    float64   `json:"model_rtt_ms"`
		Probes      int       `json:"probes_under_load"`
		Goodput     float64   `json:"load_goodput_bps"`
		FlowGoodput []float64 `json:"flow_goodput_bps"`
	}{d.Direction, ms(d.Base), ms(d.Loaded.Median), ms(d.P99), ms(d.Loaded.Max), ms(d.ModelRTT),
		d.ProbesUnderLoad, d.Goodput, d.FlowGoodput})
}

// loadedProbeName names the probe's connection in figures.
const loadedProbeName = "probe"

// Series implements Plotter: the probe's RTT over time, its base RTT
// dashed in its colour, and the load's goodput per 100 ms, each flow's
// and their total. The goodput is what the receivers read in each bin
// (GoodputPerBin), and a bin may be above the link's rate: after a loss
// TCP holds what arrives behind the hole until the retransmission fills
// it, then hands it all to the reader at once (behind a full FIFO every
// flow stalls, then reads in one bin what the link delivered over
// several). The bytes read up to any bin's end never exceed what the
// link delivered.
func (d LoadedDetail) Series() []Series {
	rtt := Series{Chart: "probe round-trip time", Name: "probe RTT", Of: Time, Dots: true, Flow: loadedProbeName}
	for _, p := range d.Probes {
		rtt.At = append(rtt.At, p.At)
		rtt.Values = append(rtt.Values, p.RTT.Seconds())
	}
	base := Series{Chart: rtt.Chart, Name: "base RTT (before the load)", Of: Time, Dashed: true, Flow: loadedProbeName,
		At: []time.Duration{0, d.LoadStart + d.LoadDuration}, Values: []float64{d.Base.Seconds(), d.Base.Seconds()}}
	out := []Series{rtt, base}
	out = append(out, binSeries("load goodput, as read per 100 ms (a bin after a repaired loss holds what TCP held back)", d.LoadStart, d.GoodputPerBin, nil, true)...)
	return out
}

// ConnNames implements ConnNamer: "probe", and "flow 1" and on.
func (d LoadedDetail) ConnNames() map[uint16]string {
	names := flowNames(d.FlowPorts, nil)
	names[d.ProbePort] = loadedProbeName
	return names
}

// flowNames names each flow's connection by its client's port: "flow
// 1", with its congestion control where ccs has one ("flow 1 (cubic)").
func flowNames(ports []uint16, ccs []string) map[uint16]string {
	names := map[uint16]string{}
	for i, p := range ports {
		names[p] = flowLabel(i, ccs)
	}
	return names
}

// flowLabel is flow i's name in figures: "flow 1", or "flow 1 (cubic)"
// where ccs gives its congestion control.
func flowLabel(i int, ccs []string) string {
	if i < len(ccs) {
		return flowName(i) + " (" + ccs[i] + ")"
	}
	return flowName(i)
}

// binSeries is goodput per flowBin from start: a series per flow, named
// as flowLabel names it, and their total when total is set. Each bin's
// value holds to the bin's end.
func binSeries(chart string, start time.Duration, bins [][]float64, ccs []string, total bool) []Series {
	var out []Series
	var sum []float64
	steps := func(s *Series, values []float64) {
		for j, v := range values {
			s.At = append(s.At, start+time.Duration(j)*flowBin)
			s.Values = append(s.Values, v)
		}
		if n := len(values); n > 0 {
			s.At = append(s.At, start+time.Duration(n)*flowBin)
			s.Values = append(s.Values, values[n-1])
		}
	}
	for i, b := range bins {
		name := flowLabel(i, ccs)
		s := Series{Chart: chart, Name: name, Of: BitRate, Step: true, Flow: name}
		steps(&s, b)
		for j, v := range b {
			if j >= len(sum) {
				sum = append(sum, 0)
			}
			sum[j] += v
		}
		out = append(out, s)
	}
	if total && len(bins) > 1 {
		s := Series{Chart: chart, Name: "all flows", Of: BitRate, Step: true}
		steps(&s, sum)
		out = append([]Series{s}, out...)
	}
	return out
}

// Name implements Workload.
func (Loaded) Name() string { return "loaded" }

// Variant implements Workload: the direction of the load.
func (l Loaded) Variant() string {
	return string(l.WithDefaults().(Loaded).Direction)
}

// WithDefaults implements Workload.
func (l Loaded) WithDefaults() Workload {
	if l.Flows == 0 {
		l.Flows = DefaultLoadedFlows
	}
	if l.Direction == "" {
		l.Direction = Down
	}
	if l.Duration == 0 {
		l.Duration = DefaultLoadedDuration
	}
	if l.Interval == 0 {
		l.Interval = DefaultLoadedInterval
	}
	return l
}

// Validate implements Workload.
func (l Loaded) Validate() error {
	switch {
	case l.Flows < 0:
		return fmt.Errorf("loaded: flows is %d; want 1 or more", l.Flows)
	case l.Direction != "" && l.Direction != Down && l.Direction != Up:
		return fmt.Errorf("loaded: direction %q; want %s or %s", l.Direction, Down, Up)
	case l.Duration < 0:
		return fmt.Errorf("loaded: duration is %v; want more than 0", l.Duration)
	case l.Interval < 0:
		return fmt.Errorf("loaded: interval is %v; want more than 0", l.Interval)
	case l.Interval > l.WithDefaults().(Loaded).Duration:
		return fmt.Errorf("loaded: interval %v is longer than the duration %v; want at least one probe under load", l.Interval, l.WithDefaults().(Loaded).Duration)
	}
	return nil
}

// Model: the probe's handshake, then the probe alone and the load for
// their fixed durations. The model of each probe is the link's RTT plus
// its request and reply at the rate: its RTT with an empty queue.
func (l Loaded) Model(path Path) Model {
	l = l.WithDefaults().(Loaded)
	m := model(path, 1, 0, 0)
	m.Elapsed += LoadedIdle + l.Duration
	return m
}

func (l Loaded) modelRTT(path Path) time.Duration {
	return path.RTT + path.transfer(2*LoadedProbe)
}

// Run implements Workload.
func (l Loaded) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	stop, err := serveOne(env, probePort, RPC{Request: LoadedProbe, Response: LoadedProbe}.serve)
	if err != nil {
		return Result{}, err
	}
	defer stop()
	start := env.Now()
	pc, err := env.Dial(ctx, probePort)
	if err != nil {
		return Result{}, fmt.Errorf("probe: %w", err)
	}
	defer pc.Close()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &prober{env: env, c: pc, interval: l.Interval, start: env.Now(), end: env.Now().Add(LoadedIdle + l.Duration),
		cancel: cancel, done: make(chan error, 2)}
	p.run(pctx)

	ln, err := env.Listen(flowPort)
	if err != nil {
		p.abort()
		return Result{}, err
	}
	load, err := dialFlows(ctx, env, ln, l.Flows, l.Direction, nil)
	if err != nil {
		p.abort()
		return Result{}, err
	}
	if err := env.Sleep(ctx, p.start.Add(LoadedIdle).Sub(env.Now())); err != nil {
		load.stop()
		p.abort()
		return Result{}, err
	}
	load.run()
	sleepErr := env.Sleep(ctx, p.end.Sub(env.Now()))
	loadErr := load.stop()
	probeErr := p.wait()
	if err := errors.Join(sleepErr, loadErr, probeErr); err != nil {
		return Result{}, err
	}
	elapsed := env.Now().Sub(start)

	loadStart := load.start.Sub(start)
	d := LoadedDetail{
		Direction:     l.Direction,
		ModelRTT:      l.modelRTT(path),
		LoadStart:     loadStart,
		LoadDuration:  l.Duration,
		FlowGoodput:   load.goodputs(l.Duration),
		GoodputPerBin: load.binned(l.Duration),
		Goodput:       goodput(load.received(), l.Duration),
		ProbePort:     localPort(pc),
		FlowPorts:     load.ports(),
	}
	var base, loaded []time.Duration
	for i, rtt := range p.rtts {
		at := p.sent[i].Sub(start)
		d.Probes = append(d.Probes, Probe{At: at, RTT: rtt})
		if at < loadStart {
			base = append(base, rtt)
		} else {
			loaded = append(loaded, rtt)
		}
	}
	d.Base = spread(base).Median
	d.Loaded = spread(loaded)
	d.P99 = stats.Quantile(stats.Sorted(loaded), 0.99)
	d.ProbesUnderLoad = len(loaded)
	return Result{
		Started:  start,
		Elapsed:  elapsed,
		Bytes:    load.received() + int64(len(p.rtts))*LoadedProbe,
		Conns:    1 + l.Flows,
		Requests: len(p.rtts),
		Detail:   d,
	}, nil
}

// prober sends a probe every interval from start until end on c, one
// goroutine writing and one reading, and times each.
type prober struct {
	env        emu.Env
	c          emu.Conn
	interval   time.Duration
	start, end time.Time
	cancel     context.CancelFunc
	done       chan error

	mu   sync.Mutex
	sent []time.Time // when each probe was written; the reader reads them under mu

	rtts []time.Duration // the reader's, read after wait
}

func (p *prober) run(ctx context.Context) {
	p.env.Go(func() { p.done <- p.write(ctx) })
	p.env.Go(func() { p.done <- p.read() })
}

// write sends a probe at each interval's start, then half-closes the
// connection: the server answers the rest and closes, and the reader sees
// the end.
func (p *prober) write(ctx context.Context) error {
	req := pattern(LoadedProbe)
	for i := 0; ; i++ {
		at := p.start.Add(time.Duration(i) * p.interval)
		if !at.Before(p.end) {
			break
		}
		if err := p.env.Sleep(ctx, at.Sub(p.env.Now())); err != nil {
			return err
		}
		p.mu.Lock()
		p.sent = append(p.sent, p.env.Now())
		p.mu.Unlock()
		if _, err := p.c.Write(req); err != nil {
			return fmt.Errorf("probe %d: %w", i+1, err)
		}
	}
	return p.c.CloseWrite()
}

// read reads the replies in order until the server closes.
func (p *prober) read() error {
	reply := make([]byte, LoadedProbe)
	for i := 0; ; i++ {
		if _, err := io.ReadFull(p.c, reply); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("probe %d: %w", i+1, err)
		}
		now := p.env.Now()
		p.mu.Lock()
		if i >= len(p.sent) {
			p.mu.Unlock()
			return fmt.Errorf("probe %d: a reply before its request", i+1)
		}
		p.rtts = append(p.rtts, now.Sub(p.sent[i]))
		p.mu.Unlock()
	}
}

// wait waits for both goroutines and returns the first error.
func (p *prober) wait() error {
	return errors.Join(<-p.done, <-p.done)
}

// abort stops the writer, closes the connection and waits.
func (p *prober) abort() {
	p.cancel()
	p.c.Close()
	p.wait()
}
