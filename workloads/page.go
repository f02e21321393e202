package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
)

// Page's defaults: the page of the published experiment.
const (
	DefaultPageResources = 40
	DefaultPageTotal     = 120_000 // bytes
	DefaultPageConns     = 6       // a browser's connections per host
)

var pageKind = Kind{
	Name:  "page",
	About: "many small HTTP/1.1 resources over keep-alive connections",
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		resources := positive(fs, "resources", DefaultPageResources, "resources on the page")
		total := size(fs, "total", DefaultPageTotal, 0, "120KB", "bytes of all resources together")
		conns := positive(fs, "conns", DefaultPageConns, "parallel keep-alive connections")
		return func() ([]Workload, error) {
			r, err := resources()
			if err != nil {
				return nil, err
			}
			t, err := total()
			if err != nil {
				return nil, err
			}
			if t < r {
				return nil, fmt.Errorf("--total %d: want at least one byte per resource (%d)", t, r)
			}
			c, err := conns()
			if err != nil {
				return nil, err
			}
			return []Workload{Page{Resources: r, Total: t, Conns: c}}, nil
		}
	},
	References: []Reference{
		{"page, RTT 50 ms", "2mbit", Page{}, 50 * msec, 2e6, 697 * msec},
		{"page, RTT 50 ms", "10mbit", Page{}, 50 * msec, 10e6, 521 * msec},
		{"page, RTT 50 ms", "50mbit", Page{}, 50 * msec, 50e6, 538 * msec},
		{"page, rate 10 mbit", "10ms", Page{}, 10 * msec, 10e6, 149 * msec},
		{"page, rate 10 mbit", "100ms", Page{}, 100 * msec, 10e6, 915 * msec},
		{"page, rate 10 mbit", "200ms", Page{}, 200 * msec, 10e6, 1749 * msec},
	},
	Lossy: []Cell{
		{"page, 10 mbit, RTT 50 ms", "loss 1%", Page{}, lossyLink(10e6, 50*msec, func(c *link.Config) { c.Loss = link.RandomLoss(0.01, 0) })},
	},
}

// Page fetches Resources resources totalling Total bytes over HTTP/1.1
// with at most Conns parallel keep-alive connections, as a browser loads
// a page's assets.
type Page struct {
	Resources int // 0 means DefaultPageResources
	Total     int // bytes; 0 means DefaultPageTotal
	Conns     int // 0 means DefaultPageConns
}

// PageDetail is Page's own figure.
type PageDetail struct {
	RequestsPerConn float64
}

// Summary implements Detail.
func (d PageDetail) Summary() string { return fmt.Sprintf("%.1f requests per conn", d.RequestsPerConn) }

// MarshalJSON writes the record's page fields.
func (d PageDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		RequestsPerConn float64 `json:"requests_per_conn"`
	}{d.RequestsPerConn})
}

// Name implements Workload.
func (Page) Name() string { return "page" }

// Variant implements Workload: a page has none.
func (Page) Variant() string { return "" }

// WithDefaults implements Workload.
func (p Page) WithDefaults() Workload {
	if p.Resources == 0 {
		p.Resources = DefaultPageResources
	}
	if p.Total == 0 {
		p.Total = DefaultPageTotal
	}
	if p.Conns == 0 {
		p.Conns = DefaultPageConns
	}
	return p
}

// Validate implements Workload.
func (p Page) Validate() error {
	switch {
	case p.Resources < 0:
		return fmt.Errorf("page: resources is %d; want 1 or more", p.Resources)
	case p.Total < 0:
		return fmt.Errorf("page: total is %d bytes; want 0 or more", p.Total)
	case p.Conns < 0:
		return fmt.Errorf("page: conns is %d; want 1 or more", p.Conns)
	}
	return nil
}

// size is resource i's size: Total spread evenly, the remainder on the
// first resources.
func (p Page) size(i int) int {
	s := p.Total / p.Resources
	if i < p.Total%p.Resources {
		s++
	}
	return s
}

// Model: one round trip for the handshakes (in parallel), then one per
// wave of Conns requests, plus the bytes at the link's rate.
func (p Page) Model(path Path) Model {
	p = p.WithDefaults().(Page)
	return model(path, float64(1+ceilDiv(p.Resources, p.Conns)), int64(p.Total), 0)
}

// Run implements Workload.
func (p Page) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	srv, err := startServer(env, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if err != nil || i < 0 || i >= p.Resources {
			http.NotFound(w, r)
			return
		}
		blob(w, p.size(i))
	}))
	if err != nil {
		return Result{}, err
	}
	defer srv.stop()
	cl := newClient(env, p.Conns)
	defer cl.tr.CloseIdleConnections()

	var (
		mu    sync.Mutex
		next  int
		bytes int64
		first error
		wg    sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= p.Resources || first != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	start := env.Now()
	// The workers start one at a time (env.Go), so each opens its
	// connection in the same order on every run; afterwards whichever
	// worker finishes first takes the next resource.
	for range min(p.Conns, p.Resources) {
		wg.Add(1)
		env.Go(func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				n, err := cl.get(ctx, fmt.Sprintf("http://server/r/%02d", i))
				mu.Lock()
				bytes += n
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := env.Now().Sub(start)
	if first != nil {
		return Result{}, first
	}
	if bytes != int64(p.Total) {
		return Result{}, fmt.Errorf("received %d bytes of %d", bytes, p.Total)
	}
	conns := cl.opened()
	return Result{
		Started:  start,
		Elapsed:  elapsed,
		Bytes:    bytes,
		Conns:    conns,
		Requests: p.Resources,
		Detail:   PageDetail{RequestsPerConn: float64(p.Resources) / float64(conns)},
	}, nil
}
