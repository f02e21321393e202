package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptrace"
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
					ws = append(ws, Page{Resources: r, Total: t, Conns: c, Proto: Proto(p[0]), TLS: TLSVersion(p[1]), DNS: d, Timings: *timings})
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
// Conns parallel keep-alive connections, or over HTTP/2 with every
// request at once on one connection.
type Page struct {
	Resources int        // 0 means DefaultPageResources
	Total     int        // bytes; 0 means DefaultPageTotal
	Conns     int        // 0 means DefaultPageConns; h2 opens one
	Proto     Proto      // "" means H1
	TLS       TLSVersion // h1s and h2 only; "" means DefaultTLS
	DNS       bool       // look the server's name up first, once (see dns.go)
	Timings   bool       // record each resource's timings (PageDetail.Resources)
}

// PageDetail is Page's own figures.
type PageDetail struct {
	RequestsPerConn float64
	Proto           Proto            // "" for h1, which records leave out
	TLS             TLSVersion       // "" without TLS
	DNS             bool             // the name was looked up
	Resources       []ResourceTiming // in request order; nil unless Page.Timings
}

// Timings implements Timings.
func (d PageDetail) Timings() []ResourceTiming { return d.Resources }

// Summary implements Detail.
func (d PageDetail) Summary() string { return fmt.Sprintf("%.1f requests per conn", d.RequestsPerConn) }

// MarshalJSON writes the record's page fields.
func (d PageDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		RequestsPerConn float64          `json:"requests_per_conn"`
		Proto           Proto            `json:"proto,omitempty"`
		TLS             TLSVersion       `json:"tls,omitempty"`
		DNS             bool             `json:"dns,omitempty"`
		Resources       []ResourceTiming `json:"resources,omitempty"`
	}{d.RequestsPerConn, d.Proto, d.TLS, d.DNS, d.Resources})
}

// Name implements Workload.
func (Page) Name() string { return "page" }

// Variant implements Workload: the protocol, "" for h1, and "DNS" with
// DNS.
func (p Page) Variant() string { return withDNS(protoLabel(protoDefaults(p.Proto, p.TLS)), p.DNS) }

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
	p.Proto, p.TLS = protoDefaults(p.Proto, p.TLS)
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
	return validateProto("page", p.Proto, p.TLS)
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

// Model: with DNS one round trip for the lookup, then the handshakes' round trips (the connections' in parallel: TCP
// one, TLS 1.3 one more, TLS 1.2 two more), then over HTTP/1.1 one per
// wave of Conns requests, over HTTP/2 one per round of the one
// connection's congestion window (see cwndRounds), plus the bytes at the
// link's rate.
func (p Page) Model(path Path) Model {
	p = p.WithDefaults().(Page)
	waves := ceilDiv(p.Resources, p.Conns)
	switch p.Proto {
	case H2:
		waves = cwndRounds(p.Total)
	case H3:
		waves = quicRounds(p.Total)
	}
	return model(path, dnsRTTs(p.DNS)+handshakeRTTs(p.Proto, p.TLS, false)+float64(waves), int64(p.Total), 0)
}

// initialWindow is the congestion window a connection starts with, in
// segments (RFC 6928; Linux's and gVisor's).
const initialWindow = 10

// cwndRounds is the round trips one connection takes to deliver n bytes
// requested at once from a fresh start: slow start sends 10 segments in
// the first, and doubles the window each round after.
func cwndRounds(n int) int {
	segs := ceilDiv(n, mss)
	rounds := 0
	for w := initialWindow; segs > 0; w *= 2 {
		segs -= w
		rounds++
	}
	return max(rounds, 1)
}

// Run implements Workload.
func (p Page) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	web, err := newWeb(env, p.Proto, p.TLS, false)
	if err != nil {
		return Result{}, err
	}
	web.dns = p.DNS
	// Over HTTP/2 the client sends its requests, the server writes its
	// responses and the client reads them, in page order (see turns).
	var sending, serving *turns
	if p.Proto == H2 {
		sending, serving = newTurns(p.Resources), newTurns(p.Resources)
	}
	srv, err := startServer(env, web, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if err != nil || i < 0 || i >= p.Resources {
			http.NotFound(w, r)
			return
		}
		if serving != nil {
			// The turn ends when the stream does: once its last frame
			// is written (see endWhenClosed).
			serving.wait(r.Context(), i)
			endWhenClosed(w, func() { serving.end(i) })
		}
		blob(w, p.size(i))
	}))
	if err != nil {
		return Result{}, err
	}
	defer srv.stop()
	cl := newClient(env, web, p.Conns)
	// A browser sends every request of an HTTP/2 page at once, each on a
	// stream of the one connection; over HTTP/1.1 a connection carries
	// one request at a time.
	workers := p.Conns
	if p.Proto == H2 || p.Proto == H3 {
		workers = p.Resources
	}
	defer cl.close()
	start := env.Now()
	if p.Timings {
		cl.timed(env, start)
	}

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
	// The workers start one at a time (env.Go), so each opens its
	// connection in the same order on every run; afterwards whichever
	// worker finishes first takes the next resource.
	for range min(workers, p.Resources) {
		wg.Add(1)
		env.Go(func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				rctx := ctx
				if cl.watch != nil {
					rctx = cl.watch.issued(rctx)
				}
				if sending != nil {
					sending.wait(ctx, i)
					rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{WroteHeaders: func() { sending.end(i) }})
				}
				n, err := cl.get(rctx, web, fmt.Sprintf("/r/%02d", i))
				if sending != nil {
					sending.end(i)
				}
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
		Detail:   PageDetail{RequestsPerConn: float64(p.Resources) / float64(conns), Proto: recorded(p.Proto), TLS: p.TLS, DNS: p.DNS, Resources: cl.timings()},
	}, nil
}
