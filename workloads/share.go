package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/internal/english"
	"github.com/netemu/netemu/tcp"
)

// Share's defaults: two flows for 10 seconds; on a topology, one flow
// per pair of hosts, so that dumbbell:N carries N flows.
const (
	DefaultShareFlows      = 2
	DefaultShapeShareFlows = 1
	DefaultShareDuration   = 10 * time.Second
)

// shareCCs returns the names of the congestion controls --ccs accepts,
// in the order of package tcp's registry: every one the registry knows;
// of those, the ones netemu's TCP runs (cubic, reno and bbr), and the
// others, known by name only (none today), which a flow runs on kernel
// TCP where the kernel has them (Needs).
func shareCCs() (known, running, kernelOnly []string) {
	for _, c := range tcp.CongestionControls() {
		known = append(known, c.Name)
		if c.Runs() {
			running = append(running, c.Name)
		} else {
			kernelOnly = append(kernelOnly, c.Name)
		}
	}
	return known, running, kernelOnly
}

// shareCCsHelp is --ccs's list for its help text: "cubic,reno,bbr", with
// "(x in kernel mode)" for names netemu's TCP does not run.
func shareCCsHelp() string {
	_, running, kernelOnly := shareCCs()
	help := strings.Join(running, ",")
	if len(kernelOnly) > 0 {
		help += " (" + english.Or(kernelOnly...) + " in kernel mode)"
	}
	return help
}

var shareKind = Kind{
	Name:    "share",
	About:   "bulk flows sharing the bottleneck: each flow's goodput over time and Jain's fairness index",
	Details: true,
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		flows := fs.Int("flows", 0, fmt.Sprintf("bulk flows, each on its own connection (default %d; on a --topology, %d per host pair)", DefaultShareFlows, DefaultShapeShareFlows))
		ccs := fs.String("ccs", "", "congestion control of each flow's sender, in flow order and repeated: "+shareCCsHelp()+"; empty means --cc's")
		dirs := variants(fs, "direction", string(Down), "which way the flows send: down (server→client), up or both", Down, Up)
		dur := duration(fs, "duration", DefaultShareDuration, 100*time.Millisecond, "10s", "how long the flows run")
		return func() ([]Workload, error) {
			n := *flows
			if isSet(fs, "flows") && n <= 0 {
				return nil, fmt.Errorf("--flows %d: want 1 or more", n)
			}
			if err := checkCCs(*ccs); err != nil {
				return nil, fmt.Errorf("--ccs %q: %v", *ccs, err)
			}
			if err := (Share{Flows: n, CCs: *ccs}).checkCCCount(); n > 0 && err != nil {
				return nil, err // without --flows, the flows' count depends on where they run (Share.Flows)
			}
			ds, err := dirs()
			if err != nil {
				return nil, err
			}
			d, err := dur()
			if err != nil {
				return nil, err
			}
			var ws []Workload
			for _, dir := range ds {
				ws = append(ws, Share{Flows: n, CCs: *ccs, Direction: dir, Duration: d})
			}
			return ws, nil
		}
	},
}

// checkCCs checks a comma-separated list of congestion controls.
func checkCCs(list string) error {
	if list == "" {
		return nil
	}
	for _, cc := range strings.Split(list, ",") {
		if _, ok := tcp.LookupCongestionControl(cc); !ok {
			known, _, _ := shareCCs()
			return fmt.Errorf("%q is not one netemu knows; want a list of %s, like cubic,reno", cc, english.Or(known...))
		}
	}
	return nil
}

// Share runs Flows bulk TCP flows side by side in Direction for Duration,
// each on a connection of its own, and measures how they share the link:
// each flow's goodput, per 100 ms and in all, and Jain's fairness index
// of the totals. CCs picks each flow's congestion control.
type Share struct {
	// Flows is how many connections run: 0 means DefaultShareFlows, or
	// DefaultShapeShareFlows between a pair of a topology's hosts.
	Flows int
	// CCs lists the flows' congestion controls, comma-separated, in flow
	// order and repeated when there are more flows ("cubic,reno": the
	// odd flows cubic, the even reno). "" leaves every flow the hosts'.
	CCs       string
	Direction Direction     // "" means Down
	Duration  time.Duration // 0 means DefaultShareDuration
	// Gate, if not nil, holds the flows, once connected, until every
	// workload sharing the gate has connected its own: a shape's share
	// flows then measure a Duration each, all of them together but for
	// the gate's stagger.
	Gate *Gate
}

// ShareDetail is Share's own figures.
type ShareDetail struct {
	Direction     Direction
	CCs           []string    // each flow's, where Share.CCs set them
	FlowGoodput   []float64   // bits per second of each flow's payload
	Goodput       float64     // all flows'
	Jain          float64     // Jain's fairness index of FlowGoodput
	GoodputPerBin [][]float64 // each flow's, per 100 ms from LoadStart
	LoadStart     time.Duration
	FlowPorts     []uint16 // the client's port of each flow's connection: its name in figures (ConnNames)
}

// Summary implements Detail: "Jain 0.99; 4.8, 4.8 Mbit/s".
func (d ShareDetail) Summary() string {
	var parts []string
	for i, g := range d.FlowGoodput {
		p := fmt.Sprintf("%.1f", g/1e6)
		if len(d.CCs) > 0 {
			p = d.CCs[i] + " " + p
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("Jain %.3f; %s Mbit/s", d.Jain, strings.Join(parts, ", "))
}

// MarshalJSON writes the record's share fields.
func (d ShareDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Direction   Direction `json:"direction"`
		CCs         []string  `json:"flow_cc,omitempty"`
		FlowGoodput []float64 `json:"flow_goodput_bps"`
		Goodput     float64   `json:"goodput_bps"`
		Jain        float64   `json:"jain_index"`
	}{d.Direction, d.CCs, d.FlowGoodput, d.Goodput, d.Jain})
}

// Series implements Plotter: each flow's goodput per 100 ms.
func (d ShareDetail) Series() []Series {
	return binSeries("goodput per flow", d.LoadStart, d.GoodputPerBin, d.CCs, false)
}

// ConnNames implements ConnNamer: "flow 1" and on, each with its
// congestion control where the flows have their own.
func (d ShareDetail) ConnNames() map[uint16]string { return flowNames(d.FlowPorts, d.CCs) }

// Name implements Workload.
func (Share) Name() string { return "share" }

// Variant implements Workload: the direction, and the congestion controls
// where they are set.
func (s Share) Variant() string {
	s = s.WithDefaults().(Share)
	if s.CCs != "" {
		return string(s.Direction) + ", " + s.CCs
	}
	return string(s.Direction)
}

// WithDefaults implements Workload.
func (s Share) WithDefaults() Workload {
	if s.Flows == 0 {
		s.Flows = DefaultShareFlows
	}
	if s.Direction == "" {
		s.Direction = Down
	}
	if s.Duration == 0 {
		s.Duration = DefaultShareDuration
	}
	return s
}

// Validate implements Workload.
func (s Share) Validate() error {
	switch {
	case s.Flows < 0:
		return fmt.Errorf("share: flows is %d; want 1 or more", s.Flows)
	case s.Direction != "" && s.Direction != Down && s.Direction != Up:
		return fmt.Errorf("share: direction %q; want %s or %s", s.Direction, Down, Up)
	case s.Duration < 0:
		return fmt.Errorf("share: duration is %v; want more than 0", s.Duration)
	}
	if err := checkCCs(s.CCs); err != nil {
		return fmt.Errorf("share: congestion control: %v", err)
	}
	if err := s.checkCCCount(); err != nil {
		return fmt.Errorf("share: %v", err)
	}
	return nil
}

// checkCCCount reports a list of congestion controls longer than the
// flows it is for.
func (s Share) checkCCCount() error {
	flows := s.WithDefaults().(Share).Flows
	if n := len(strings.Split(s.CCs, ",")); s.CCs != "" && n > flows {
		return fmt.Errorf("--ccs %s names %d congestion controls for %d flows; give at most one per flow (the list repeats over the flows)", s.CCs, n, flows)
	}
	return nil
}

// Model: the flows' handshakes one after another, then the fixed
// duration.
func (s Share) Model(path Path) Model {
	s = s.WithDefaults().(Share)
	m := model(path, float64(s.Flows), 0, 0)
	m.Elapsed += s.Duration
	return m
}

// Needs implements Needer: a flow with a congestion control the registry
// knows but netemu's TCP does not run needs kernel TCP. (gVisor's TCP,
// which has cubic and reno only, refuses bbr when the flow sets it:
// tcpstack.Conn.SetCongestionControl.)
func (s Share) Needs() []Need {
	for _, cc := range strings.Split(s.CCs, ",") {
		if c, ok := tcp.LookupCongestionControl(cc); ok && !c.Runs() {
			_, running, _ := shareCCs()
			why := fmt.Sprintf("the emulated hosts (netemu's TCP and gVisor's) have %s; %s runs on kernel TCP", english.And(running...), cc)
			return []Need{{Of: KernelTCP, Param: "ccs", Value: s.CCs, Why: why}}
		}
	}
	return nil
}

// ccs is the flows' congestion controls, one per flow; nil where CCs is
// empty.
func (s Share) ccs() []string {
	if s.CCs == "" {
		return nil
	}
	list := strings.Split(s.CCs, ",")
	out := make([]string, s.Flows)
	for i := range out {
		out[i] = list[i%len(list)]
	}
	return out
}

// Run implements Workload.
func (s Share) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	ln, err := env.Listen(flowPort)
	if err != nil {
		return Result{}, err
	}
	start := env.Now()
	ccs := s.ccs()
	load, err := dialFlows(ctx, env, ln, s.Flows, s.Direction, ccs)
	if err != nil {
		return Result{}, err
	}
	if err := s.Gate.pass(ctx, env); err != nil {
		load.close()
		return Result{}, err
	}
	load.run()
	sleepErr := env.Sleep(ctx, s.Duration)
	if err := load.stop(); err != nil {
		return Result{}, err
	}
	if sleepErr != nil {
		return Result{}, sleepErr
	}
	d := ShareDetail{
		Direction:     s.Direction,
		CCs:           ccs,
		FlowGoodput:   load.goodputs(s.Duration),
		Goodput:       goodput(load.received(), s.Duration),
		GoodputPerBin: load.binned(s.Duration),
		LoadStart:     load.start.Sub(start),
		FlowPorts:     load.ports(),
	}
	d.Jain = Jain(d.FlowGoodput)
	return Result{
		Started: start,
		Elapsed: env.Now().Sub(start),
		Bytes:   load.received(),
		Conns:   s.Flows,
		Detail:  d,
	}, nil
}
