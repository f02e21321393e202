package workloads

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/workloads/web"
)

// A Workload is one experiment's traffic: it runs against a network and
// knows its analytical model. Implementations are comparable values whose
// zero fields mean the documented defaults.
type Workload interface {
	// Name is the workload's name on the command line, e.g. "page".
	Name() string
	// Variant tells this workload apart from its siblings of one command
	// line, e.g. "fresh" or "nagle on, split"; "" when it has none.
	Variant() string
	// WithDefaults returns the workload with its defaults filled in, so
	// that two spellings of one workload compare equal.
	WithDefaults() Workload
	// Validate reports the first invalid parameter.
	Validate() error
	// Model is the analytical estimate of the run on path.
	Model(path Path) Model
	// Run runs the workload on env. Callers use the package's Run, which
	// validates, fills the result's name and model, and names the
	// workload in errors.
	Run(ctx context.Context, env emu.Env, path Path) (Result, error)
}

// Run runs w on env: it validates w, refuses an env that lacks what w
// needs (a *NeedError), runs w with its defaults, and fills the result's
// Workload and Model. An error says which workload failed, once.
func Run(ctx context.Context, w Workload, env emu.Env, path Path) (Result, error) {
	if err := w.Validate(); err != nil {
		return Result{}, err
	}
	if err := unmet(w, env); err != nil {
		return Result{}, fmt.Errorf("%s: %w", w.Name(), err)
	}
	w = w.WithDefaults()
	r, err := w.Run(ctx, env, path)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", w.Name(), err)
	}
	r.Workload = w.Name()
	r.Model = w.Model(path)
	return r, nil
}

// Path is what the analytical model knows of the network.
type Path struct {
	RTT        time.Duration
	Rate       float64       // bits per second; 0 means unlimited
	DelayedACK time.Duration // 0 means none
	Loss       float64       // random loss probability of the data's direction; 0 means none
}

// mss is the segment payload the models assume: Ethernet's 1500-byte MTU
// less 40 bytes of IPv4 and TCP headers and 12 of timestamps.
const mss = 1448

// transfer is the time n bytes take at the path's rate.
func (p Path) transfer(n int64) time.Duration {
	if p.Rate == 0 {
		return 0
	}
	return time.Duration(float64(n) * 8 / p.Rate * 1e9)
}

// Model is the analytical estimate: RoundTrips × RTT + Bytes ÷ Rate, plus
// delayed-ACK stalls where the workload has them.
type Model struct {
	Elapsed    time.Duration
	RoundTrips float64       // round trips the model assumed
	Transfer   time.Duration // bytes ÷ rate
	Stalls     time.Duration // delayed-ACK waits (nagle)
	// LossBound is the time with TCP's throughput under random loss p
	// bounded by Mathis et al.'s MSS/RTT · 1.22/√p as well as by the rate;
	// 0 where the workload does not model loss or the path has none.
	LossBound time.Duration
}

// mathis is the bound of Mathis et al. on TCP's throughput under random
// loss p, in bits per second: MSS/RTT · √(3/2)/√p.
func mathis(p Path) float64 {
	if p.Loss <= 0 || p.RTT <= 0 {
		return 0
	}
	return mss * 8 / p.RTT.Seconds() * 1.22 / math.Sqrt(p.Loss)
}

func model(p Path, roundTrips float64, bytes int64, stalls time.Duration) Model {
	m := Model{RoundTrips: roundTrips, Transfer: p.transfer(bytes), Stalls: stalls}
	m.Elapsed = time.Duration(roundTrips*float64(p.RTT)) + m.Transfer + stalls
	return m
}

// Result is the outcome of one workload run: the figures every workload
// has, and the workload's own in Detail.
type Result struct {
	Workload string
	Started  time.Time     // on the run's clock, just before the first dial
	Elapsed  time.Duration // first dial to last byte
	Model    Model
	Bytes    int64 // payload bytes the client received
	Conns    int   // connections opened
	Requests int

	// Detail is the workload's own figures (PageDetail, BulkDetail, ...).
	Detail Detail
}

// Detail is a workload's own figures for one run. It marshals to a JSON
// object whose fields join the run's record; Summary is the table's last
// column.
type Detail interface {
	Summary() string
}

// Headliner is implemented by a Detail whose headline figure is not the
// whole run (nagle: the median round).
type Headliner interface {
	Headline() (got, model time.Duration)
}

// Headline is the figure a result is judged by, with its model: the
// Detail's Headline where it has one, the whole run otherwise.
func (r Result) Headline() (got, model time.Duration) {
	if h, ok := r.Detail.(Headliner); ok {
		return h.Headline()
	}
	return r.Elapsed, r.Model.Elapsed
}

// Same reports whether a and b are the same workload once defaults are
// filled in (Page{} and Page{Resources: 40} are the same), whether or not
// they record timings.
func Same(a, b Workload) bool {
	return untimed(a.WithDefaults()) == untimed(b.WithDefaults())
}

// ms is a duration in milliseconds, as the JSON records write it.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// Plotter is implemented by a Detail that has figures over time of its
// own (loaded: the probe's round-trip times; share: each flow's
// goodput). A run's figure draws them above the TCP senders and the
// link's queues.
type Plotter interface {
	Series() []Series
}

// ConnNamer is implemented by a Detail that names its connections
// ("probe", "flow 1"), each by the port of its client's end. A run's
// figure gives a connection's window that name, and the colour of the
// Detail's series of the same Flow.
type ConnNamer interface {
	ConnNames() map[uint16]string
}

// Quantity is what the values of a Series measure.
type Quantity uint8

// The quantities of a Series.
const (
	Time    Quantity = iota // seconds
	BitRate                 // bits per second
)

// Series is one line of a workload's own figures over time.
type Series struct {
	// Chart titles the chart the series is drawn in; series with the same
	// Chart share it, and its axes, so they measure the same Quantity.
	Chart string
	Name  string
	Of    Quantity
	// At are the instants of the values, since the result's Started.
	At     []time.Duration
	Values []float64
	// Step draws each value held until the next (a rate per bin); Dots
	// marks each value (a sample); Dashed draws the line dashed.
	Step, Dots, Dashed bool
	// Flow is the connection the series is of, as ConnNames names it
	// ("flow 1"): the series takes its colour, in every chart of the
	// figure. "" is a series of no one connection (a total), drawn in
	// black or grey.
	Flow string
}

// Timed is a workload that can record per-request timings (Timings in
// its Detail); WithTimings turns the recording on or off.
type Timed interface {
	Workload
	WithTimings(on bool) Workload
}

// Timings is implemented by a Detail that carries per-request timings.
type Timings interface {
	Timings() []web.ResourceTiming
}

// untimed returns w without its timings switch, so that a workload with
// timings is the same workload as one without.
func untimed(w Workload) Workload {
	if t, ok := w.(Timed); ok {
		return t.WithTimings(false)
	}
	return w
}

// withDNS adds "DNS" to a variant when on.
func withDNS(variant string, on bool) string {
	switch {
	case !on:
		return variant
	case variant == "":
		return "DNS"
	}
	return variant + ", DNS"
}
