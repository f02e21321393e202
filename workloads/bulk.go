package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads/web"
)

// DefaultBulkSize is Bulk's default download.
const DefaultBulkSize = 5 << 20

var bulkKind = Kind{
	Name:  "bulk",
	About: "one download over one connection",
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		bytes := size(fs, "size", DefaultBulkSize, 1, "5MiB", "bytes to download")
		return func() ([]Workload, error) {
			n, err := bytes()
			if err != nil {
				return nil, err
			}
			return []Workload{Bulk{Size: n}}, nil
		}
	},
	References: []Reference{
		{"bulk, RTT 50 ms", "5mbit", Bulk{}, 50 * msec, 5e6, 9035 * msec},
		{"bulk, RTT 50 ms", "10mbit", Bulk{}, 50 * msec, 10e6, 4624 * msec},
		{"bulk, RTT 50 ms", "50mbit", Bulk{}, 50 * msec, 50e6, 1207 * msec},
		{"bulk, rate 25 mbit", "10ms", Bulk{}, 10 * msec, 25e6, 1811 * msec},
		{"bulk, rate 25 mbit", "100ms", Bulk{}, 100 * msec, 25e6, 2399 * msec},
		{"bulk, rate 25 mbit", "200ms", Bulk{}, 200 * msec, 25e6, 3165 * msec},
	},
	Lossy: bulkLossy(),
}

// bulkLossy: 5 MiB at 10 mbit / 50 ms through small queues, and through
// random loss at the default queue.
func bulkLossy() []Cell {
	const table = "bulk 5 MiB, 10 mbit, RTT 50 ms"
	var cells []Cell
	for _, q := range []int{8, 20, 50, 100} {
		cells = append(cells, Cell{table, fmt.Sprintf("queue %d", q), Bulk{}, lossyLink(10e6, 50*msec, func(c *link.Config) { c.Qdisc.Limit = q }), 0})
	}
	for _, p := range []float64{0.001, 0.01, 0.03} {
		cells = append(cells, Cell{table, fmt.Sprintf("loss %g%%", p*100), Bulk{}, lossyLink(10e6, 50*msec, func(c *link.Config) { c.Loss = link.RandomLoss(p, 0) }), 0})
	}
	return cells
}

// Bulk downloads one Size-byte resource over one HTTP connection.
type Bulk struct {
	Size int // bytes; 0 means DefaultBulkSize
}

// BulkDetail is Bulk's own figure.
type BulkDetail struct {
	// Goodput is bits per second of payload; NaN when no time passed
	// (an ideal link on the virtual clock, or packets that skip delay and
	// rate, as netem's reorder does), where it has no value: the table
	// shows "—" and JSON null, never 0.
	Goodput float64
}

// Summary implements Detail.
func (d BulkDetail) Summary() string {
	if math.IsNaN(d.Goodput) {
		return "goodput — (no time passed)"
	}
	return fmt.Sprintf("goodput %.2f Mbit/s", d.Goodput/1e6)
}

// MarshalJSON writes the record's bulk fields: goodput_bps is null when
// it has no value.
func (d BulkDetail) MarshalJSON() ([]byte, error) {
	var g *float64
	if !math.IsNaN(d.Goodput) {
		g = &d.Goodput
	}
	return json.Marshal(struct {
		Goodput *float64 `json:"goodput_bps"`
	}{g})
}

// Name implements Workload.
func (Bulk) Name() string { return "bulk" }

// Variant implements Workload: a bulk download has none.
func (Bulk) Variant() string { return "" }

// WithDefaults implements Workload.
func (b Bulk) WithDefaults() Workload {
	if b.Size == 0 {
		b.Size = DefaultBulkSize
	}
	return b
}

// Validate implements Workload.
func (b Bulk) Validate() error {
	if b.Size < 0 {
		return fmt.Errorf("bulk: size is %d bytes; want 1 or more", b.Size)
	}
	return nil
}

// Model: a handshake and a request (two round trips), then the bytes at
// the link's rate; slow start is not modelled. Under random loss,
// LossBound takes the rate as the lesser of the link's and Mathis et
// al.'s bound.
func (b Bulk) Model(path Path) Model {
	b = b.WithDefaults().(Bulk)
	m := model(path, 2, int64(b.Size), 0)
	if r := mathis(path); r > 0 {
		if path.Rate > 0 {
			r = min(r, path.Rate)
		}
		m.LossBound = 2*path.RTT + time.Duration(float64(b.Size)*8/r*1e9)
	}
	return m
}

// Run implements Workload.
func (b Bulk) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	site, err := web.NewSite(env, web.Config{}, []web.File{{Path: "/file", Size: b.Size}})
	if err != nil {
		return Result{}, err
	}
	srv, err := site.Serve()
	if err != nil {
		return Result{}, err
	}
	defer srv.Stop()
	cl := site.Client(1)
	defer cl.Close()
	start := env.Now()
	n, err := cl.Get(ctx, 0)
	elapsed := env.Now().Sub(start)
	if err != nil {
		return Result{}, err
	}
	if n != int64(b.Size) {
		return Result{}, fmt.Errorf("received %d bytes of %d", n, b.Size)
	}
	return Result{
		Started:  start,
		Elapsed:  elapsed,
		Bytes:    n,
		Conns:    cl.Conns(),
		Requests: 1,
		Detail:   BulkDetail{Goodput: rate(n, elapsed)},
	}, nil
}

// rate is payload bits per second; NaN when no time passed, where it has
// no value.
func rate(n int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return math.NaN()
	}
	return float64(n) * 8 / elapsed.Seconds()
}

// goodput is payload bits per second; 0 when no time passed (an ideal
// link on the virtual clock), where it has no finite value.
func goodput(n int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) * 8 / elapsed.Seconds()
}
