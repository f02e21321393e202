package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads/web"
)

// Page's defaults: the page of the published experiment.
const (
	DefaultPageResources = 40
	DefaultPageTotal     = 120_000 // bytes
	DefaultPageConns     = 6       // a browser's connections per host
)

var pageKind = Kind{
	Name:  "page",
	About: "many small HTTP resources over keep-alive connections (HTTP/1.1, over TLS, HTTP/2 or HTTP/3)",
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		resources := positive(fs, "resources", DefaultPageResources, "resources on the page")
		total := size(fs, "total", DefaultPageTotal, 0, "120KB", "bytes of all resources together")
		conns := positive(fs, "conns", DefaultPageConns, "parallel keep-alive connections (h1, h1s; h2 uses one)")
		protos := protoFlags(fs)
		timings := fs.Bool("timings", false, timingsHelp)
		dns := boolVariants(fs, "dns", "false", dnsHelp)
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
			ps, err := protos()
			if err != nil {
				return nil, err
			}
			ds, err := dns()
			if err != nil {
				return nil, err
			}
			var ws []Workload
			for _, p := range ps {
				for _, d := range ds {
					ws = append(ws, Page{Resources: r, Total: t, Conns: c, Proto: p.Proto, TLS: p.TLS, DNS: d, Timings: *timings})
				}
			}
			return ws, nil
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
		{"page, 10 mbit, RTT 50 ms", "loss 1%", Page{}, lossyLink(10e6, 50*msec, func(c *link.Config) { c.Loss = link.RandomLoss(0.01, 0) }), 0},
	},
}

// Page fetches Resources resources totalling Total bytes, as a browser
// loads a page's assets: over HTTP/1.1 (plain or over TLS) with at most
// Conns parallel keep-alive connections, or over a multiplexed protocol
// (h2, h2c, h3) with every request at once on one connection.
type Page struct {
	Resources int            // 0 means DefaultPageResources
	Total     int            // bytes; 0 means DefaultPageTotal
	Conns     int            // 0 means DefaultPageConns; a multiplexed protocol opens one
	Proto     web.Proto      // "" means web.DefaultProto
	TLS       web.TLSVersion // over TLS only; "" means web.DefaultTLS
	DNS       bool           // look the server's name up first, once (web/dns.go)
	Timings   bool           // record each resource's timings (PageDetail.Resources)
}

// PageDetail is Page's own figures.
type PageDetail struct {
	RequestsPerConn float64
	Proto           web.Proto            // "" for web.DefaultProto, which records leave out
	TLS             web.TLSVersion       // "" without TLS
	DNS             bool                 // the name was looked up
	Resources       []web.ResourceTiming // in request order; nil unless Page.Timings
}

// Timings implements Timings.
func (d PageDetail) Timings() []web.ResourceTiming { return d.Resources }

// Summary implements Detail.
func (d PageDetail) Summary() string { return fmt.Sprintf("%.1f requests per conn", d.RequestsPerConn) }

// MarshalJSON writes the record's page fields.
func (d PageDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		RequestsPerConn float64              `json:"requests_per_conn"`
		Proto           web.Proto            `json:"proto,omitempty"`
		TLS             web.TLSVersion       `json:"tls,omitempty"`
		DNS             bool                 `json:"dns,omitempty"`
		Resources       []web.ResourceTiming `json:"resources,omitempty"`
	}{d.RequestsPerConn, d.Proto, d.TLS, d.DNS, d.Resources})
}

// Name implements Workload.
func (Page) Name() string { return "page" }

// Variant implements Workload: the protocol, "" for the default one, and
// "DNS" with DNS.
func (p Page) Variant() string { return withDNS(p.web().Label(), p.DNS) }

// Needs implements Needer: what the protocol needs.
func (p Page) Needs() []Need { return protoNeeds(p.Proto) }

// web is how the page's server and client talk.
func (p Page) web() web.Config { return web.Config{Proto: p.Proto, TLS: p.TLS, DNS: p.DNS} }

// WithTimings implements Timed.
func (p Page) WithTimings(on bool) Workload { p.Timings = on; return p }

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
	c := p.web().WithDefaults()
	p.Proto, p.TLS = c.Proto, c.TLS
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
	if err := p.web().Validate(); err != nil {
		return fmt.Errorf("page: %w", err)
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

// Model: with DNS one round trip for the lookup, then the handshakes'
// round trips (the connections' in parallel: TCP one, TLS 1.3 one more,
// TLS 1.2 two more, QUIC one in all), then the protocol's rounds of
// requests (web.Protocol.Rounds: over HTTP/1.1 one per wave of Conns
// requests, over HTTP/2 and HTTP/3 the rounds of the one connection's
// congestion window), plus the bytes at the link's rate.
func (p Page) Model(path Path) Model {
	p = p.WithDefaults().(Page)
	rounds := p.Proto.Protocol().Rounds(p.Resources, p.Total, p.Conns)
	return model(path, web.LookupRoundTrips(p.DNS)+p.web().Handshake(false)+float64(rounds), int64(p.Total), 0)
}

// files is the page's resources: /r/00, /r/01, ...
func (p Page) files() []web.File {
	files := make([]web.File, p.Resources)
	for i := range files {
		files[i] = web.File{Path: fmt.Sprintf("/r/%02d", i), Size: p.size(i)}
	}
	return files
}

// Run implements Workload: a browser's load of the page (web.Client.GetAll).
func (p Page) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	site, err := web.NewSite(env, p.web(), p.files())
	if err != nil {
		return Result{}, err
	}
	srv, err := site.Serve()
	if err != nil {
		return Result{}, err
	}
	defer srv.Stop()
	cl := site.Client(p.Conns)
	defer cl.Close()
	start := env.Now()
	if p.Timings {
		cl.Time(start)
	}
	bytes, err := cl.GetAll(ctx)
	elapsed := env.Now().Sub(start)
	if err != nil {
		return Result{}, err
	}
	if bytes != int64(p.Total) {
		return Result{}, fmt.Errorf("received %d bytes of %d", bytes, p.Total)
	}
	conns := cl.Conns()
	return Result{
		Started:  start,
		Elapsed:  elapsed,
		Bytes:    bytes,
		Conns:    conns,
		Requests: p.Resources,
		Detail:   PageDetail{RequestsPerConn: float64(p.Resources) / float64(conns), Proto: p.Proto.Recorded(), TLS: p.TLS, DNS: p.DNS, Resources: cl.Timings()},
	}, nil
}
