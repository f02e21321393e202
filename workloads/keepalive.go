package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/workloads/web"
)

// ConnMode says whether KeepAlive reuses its connection.
type ConnMode string

// Keep-alive modes.
const (
	Fresh ConnMode = "fresh" // a new connection per request, closed after it
	Reuse ConnMode = "reuse" // one connection for all requests
)

// KeepAlive's defaults.
const (
	DefaultKeepAliveRequests = 20
	DefaultKeepAliveSize     = 1000 // response bytes
)

var keepAliveKind = Kind{
	Name:  "keepalive",
	About: "sequential requests, each on a new connection or all on one",
	Flags: func(fs *flag.FlagSet) func() ([]Workload, error) {
		requests := positive(fs, "requests", DefaultKeepAliveRequests, "sequential requests")
		response := size(fs, "response", DefaultKeepAliveSize, 0, "1KB", "bytes of each response")
		modes := variants(fs, "mode", "both", "fresh, reuse or both", Fresh, Reuse)
		protos := protoFlags(fs)
		resume := boolVariants(fs, "resume", "false", "resume TLS sessions on fresh connections (h1s, h2): true, false or both")
		timings := fs.Bool("timings", false, timingsHelp)
		dns := boolVariants(fs, "dns", "false", dnsHelp)
		return func() ([]Workload, error) {
			n, err := requests()
			if err != nil {
				return nil, err
			}
			s, err := response()
			if err != nil {
				return nil, err
			}
			ms, err := modes()
			if err != nil {
				return nil, err
			}
			ps, err := protos()
			if err != nil {
				return nil, err
			}
			rs, err := resume()
			if err != nil {
				return nil, err
			}
			resumable := slices.ContainsFunc(ps, func(c web.Config) bool { return c.Proto.Protocol().Resumes() }) && slices.Contains(ms, Fresh)
			if slices.Contains(rs, true) && !resumable {
				return nil, fmt.Errorf("--resume: TLS sessions resume on fresh connections over TLS; add --proto h1s or h2 and --mode fresh (or both)")
			}
			ds, err := dns()
			if err != nil {
				return nil, err
			}
			var ws []Workload
			for _, p := range ps {
				for _, m := range ms {
					for _, r := range rs {
						// Resumption only matters where a fresh
						// connection makes a TLS handshake again.
						if r && (m != Fresh || !p.Proto.Secure()) {
							if len(rs) > 1 {
								continue
							}
							r = false
						}
						for _, d := range ds {
							ws = append(ws, KeepAlive{Requests: n, Mode: m, Size: s, Proto: p.Proto, TLS: p.TLS, Resume: r, DNS: d, Timings: *timings})
						}
					}
				}
			}
			return ws, nil
		}
	},
	References: []Reference{
		{"keepalive, RTT 0 (loopback)", "fresh", KeepAlive{Mode: Fresh}, 0, 0, 2 * msec},
		{"keepalive, RTT 0 (loopback)", "reuse", KeepAlive{Mode: Reuse}, 0, 0, 1 * msec},
		{"keepalive, RTT 55 ms", "fresh", KeepAlive{Mode: Fresh}, 55 * msec, 0, 2360 * msec},
		{"keepalive, RTT 55 ms", "reuse", KeepAlive{Mode: Reuse}, 55 * msec, 0, 1195 * msec},
	},
	Lossy: []Cell{
		// A lost SYN or SYN-ACK costs a 1 s timeout and a lost request
		// about 0.3 s, so the times have modes that far apart; over 5
		// seeds the medians of gVisor and Linux ranged 2505–3226 ms, over
		// 20 and 40 seeds they agreed within 1.2 %.
		{"keepalive, RTT 55 ms", "fresh, loss 1%", KeepAlive{Mode: Fresh}, lossyLink(0, 55*msec, func(c *link.Config) { c.Loss = link.RandomLoss(0.01, 0) }), 30},
		{"keepalive, RTT 55 ms", "reuse, loss 1%", KeepAlive{Mode: Reuse}, lossyLink(0, 55*msec, func(c *link.Config) { c.Loss = link.RandomLoss(0.01, 0) }), 0},
	},
}

// KeepAlive makes Requests sequential small requests, each on a fresh
// connection or all on one reused connection, over any of web's
// protocols.
type KeepAlive struct {
	Requests int            // 0 means DefaultKeepAliveRequests
	Mode     ConnMode       // Fresh or Reuse; "" means Reuse
	Size     int            // response bytes; 0 means DefaultKeepAliveSize
	Proto    web.Proto      // "" means web.DefaultProto
	TLS      web.TLSVersion // over TLS only; "" means web.DefaultTLS
	// Resume resumes TLS sessions from tickets: each fresh connection
	// after the first makes an abbreviated handshake. h1s and h2 only.
	Resume  bool
	DNS     bool // look the server's name up before the first connection (web/dns.go)
	Timings bool // record each request's timings (KeepAliveDetail.Requests)
}

// KeepAliveDetail is KeepAlive's own figures.
type KeepAliveDetail struct {
	Mode       ConnMode
	PerRequest time.Duration        // Elapsed ÷ Requests
	Proto      web.Proto            // "" for web.DefaultProto, which records leave out
	TLS        web.TLSVersion       // "" without TLS
	Resumed    int                  // connections whose TLS session resumed
	DNS        bool                 // the name was looked up
	Requests   []web.ResourceTiming // in request order; nil unless KeepAlive.Timings
}

// Timings implements Timings.
func (d KeepAliveDetail) Timings() []web.ResourceTiming { return d.Requests }

// Summary implements Detail.
func (d KeepAliveDetail) Summary() string { return link.FormatDuration(d.PerRequest) + " per request" }

// MarshalJSON writes the record's keepalive fields.
func (d KeepAliveDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mode       ConnMode             `json:"mode"`
		PerRequest float64              `json:"per_request_ms"`
		Proto      web.Proto            `json:"proto,omitempty"`
		TLS        web.TLSVersion       `json:"tls,omitempty"`
		Resumed    *int                 `json:"resumed_conns,omitempty"`
		DNS        bool                 `json:"dns,omitempty"`
		Requests   []web.ResourceTiming `json:"resources,omitempty"`
	}{d.Mode, ms(d.PerRequest), d.Proto, d.TLS, resumedField(d), d.DNS, d.Requests})
}

// Name implements Workload.
func (KeepAlive) Name() string { return "keepalive" }

// Variant implements Workload: the mode, then the protocol unless h1,
// then "resumed" if sessions resume.
func (k KeepAlive) Variant() string {
	k = k.WithDefaults().(KeepAlive)
	v := string(k.Mode)
	if l := k.web().Label(); l != "" {
		v += ", " + l
	}
	if k.Resume {
		v += ", resumed"
	}
	return withDNS(v, k.DNS)
}

// Needs implements Needer: what the protocol needs.
func (k KeepAlive) Needs() []Need { return protoNeeds(k.Proto) }

// web is how the server and the client talk.
func (k KeepAlive) web() web.Config {
	return web.Config{Proto: k.Proto, TLS: k.TLS, Resume: k.Resume, DNS: k.DNS}
}

// WithTimings implements Timed.
func (k KeepAlive) WithTimings(on bool) Workload { k.Timings = on; return k }

// WithDefaults implements Workload.
func (k KeepAlive) WithDefaults() Workload {
	if k.Requests == 0 {
		k.Requests = DefaultKeepAliveRequests
	}
	if k.Mode == "" {
		k.Mode = Reuse
	}
	if k.Size == 0 {
		k.Size = DefaultKeepAliveSize
	}
	c := k.web().WithDefaults()
	k.Proto, k.TLS = c.Proto, c.TLS
	return k
}

// Validate implements Workload.
func (k KeepAlive) Validate() error {
	switch {
	case k.Requests < 0:
		return fmt.Errorf("keepalive: requests is %d; want 1 or more", k.Requests)
	case k.Mode != "" && k.Mode != Fresh && k.Mode != Reuse:
		return fmt.Errorf("keepalive: mode %q is unknown; want %q or %q", k.Mode, Fresh, Reuse)
	case k.Size < 0:
		return fmt.Errorf("keepalive: size is %d bytes; want 0 or more", k.Size)
	case k.Resume && !k.Proto.Secure():
		return fmt.Errorf("keepalive: resume needs TLS; want protocol h1s or h2, not %q", k.Proto)
	}
	if err := k.web().Validate(); err != nil {
		return fmt.Errorf("keepalive: %w", err)
	}
	return nil
}

// Model: each request costs one round trip, and each connection its
// handshakes (TCP one, TLS 1.3 one more, TLS 1.2 two more, one when a
// TLS 1.2 session resumes): fresh pays them per request, the first
// connection in full and the others resumed if sessions resume; reuse
// pays them once. With DNS the first connection waits one round trip
// more for the lookup; the others find the name cached.
func (k KeepAlive) Model(path Path) Model {
	k = k.WithDefaults().(KeepAlive)
	full := k.web().Handshake(false)
	rt := float64(k.Requests) + full
	if k.Mode == Fresh {
		rt = float64(k.Requests) + full + float64(k.Requests-1)*k.web().Handshake(k.Resume)
	}
	return model(path, web.LookupRoundTrips(k.DNS)+rt, int64(k.Requests*k.Size), 0)
}

// Run implements Workload.
func (k KeepAlive) Run(ctx context.Context, env emu.Env, path Path) (Result, error) {
	files := make([]web.File, k.Requests)
	for i := range files {
		files[i] = web.File{Path: fmt.Sprintf("/r/%02d", i), Size: k.Size}
	}
	site, err := web.NewSite(env, k.web(), files)
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
	var bytes int64
	start := env.Now()
	if k.Timings {
		cl.Time(start)
	}
	for i := range k.Requests {
		n, err := cl.Get(ctx, i)
		if err != nil {
			return Result{}, fmt.Errorf("request %d: %w", i, err)
		}
		bytes += n
		if k.Mode == Fresh {
			// The connection is idle once the body is read; closing it
			// here, on this goroutine, sends the FIN before the next SYN.
			cl.CloseIdle()
		}
	}
	elapsed := env.Now().Sub(start)
	return Result{
		Started:  start,
		Elapsed:  elapsed,
		Bytes:    bytes,
		Conns:    cl.Conns(),
		Requests: k.Requests,
		Detail:   KeepAliveDetail{Mode: k.Mode, PerRequest: elapsed / time.Duration(k.Requests), Proto: k.Proto.Recorded(), TLS: k.TLS, Resumed: cl.Resumed(), DNS: k.DNS, Requests: cl.Timings()},
	}, nil
}

// resumedField is the record's resumed_conns: present over TLS only.
func resumedField(d KeepAliveDetail) *int {
	if d.TLS == "" {
		return nil
	}
	return &d.Resumed
}
